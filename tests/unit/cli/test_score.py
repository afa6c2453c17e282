"""`rageval score QRELS RUN`: numbers equal pytrec_eval's; errors are one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from trec_oracle import KS, oracle_scores, random_case, relevant_queries

from rageval.cli.main import main

ROOT = Path(__file__).resolve().parents[3]


def write_case(tmp_path, qrels, lines, beir=False):
    """Write qrels (TREC or BEIR tsv) and a run whose rank column says nothing useful."""
    qrels_path = tmp_path / ("qrels.tsv" if beir else "qrels.txt")
    pattern = "{}\t{}\t{}" if beir else "{} 0 {} {}"
    rows = [pattern.format(q, d, g) for q, judged in qrels.items() for d, g in judged.items()]
    qrels_path.write_text("\n".join(["query-id\tcorpus-id\tscore"] * beir + rows) + "\n")
    run_path = tmp_path / "run.txt"
    run_path.write_text("".join(f"{q} Q0 {d} 1 {s!r} tag\n" for q, d, s in lines))
    return str(qrels_path), str(run_path)


def expected_means(qrels, lines, ks=KS):
    per_query = oracle_scores(qrels, lines, ks)
    queries = relevant_queries(qrels)
    keys = per_query[queries[0]]
    return len(queries), {key: np.mean([per_query[q][key] for q in queries]) for key in keys}


def run_cli(capsys, *argv):
    code = main(["score", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_means_equal(got, want):
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key


@pytest.mark.parametrize("seed", range(8))
def test_json_means_equal_pytrec_eval(tmp_path, capsys, seed):
    qrels, lines = random_case(seed)
    paths = write_case(tmp_path, qrels, lines, beir=seed % 2 == 1)
    code, out, _ = run_cli(capsys, *paths, "--k", ",".join(map(str, KS)), "--json")
    assert code == 0
    n, want = expected_means(qrels, lines)
    report = json.loads(out)
    assert report["queries"] == n
    assert_means_equal(report["metrics"], want)


def test_subprocess_json_and_default_cutoffs(tmp_path):
    qrels, lines = random_case(100)
    paths = write_case(tmp_path, qrels, lines)
    command = [sys.executable, "-m", "rageval", "score", *paths, "--json"]
    proc = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, check=False)
    assert proc.returncode == 0, proc.stderr
    n, want = expected_means(qrels, lines, ks=(1, 5, 10))
    report = json.loads(proc.stdout)
    assert report["queries"] == n
    assert_means_equal(report["metrics"], want)
    assert "rageval: warning: " in proc.stderr  # random_case repeats some docids


def test_table_output(tmp_path, capsys):
    paths = write_case(tmp_path, {"q1": {"a": 1}, "q2": {"b": 1}}, [("q1", "a", 1.0)])
    code, out, err = run_cli(capsys, *paths, "--k", "1,10")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "@1", "@10"]
    assert lines[1].split() == ["precision", "0.5000", "0.0500"]
    assert lines[4].split() == ["mrr", "0.5000", "0.5000"]
    assert lines[-1] == "queries: 2"
    assert len({len(line) for line in lines[:-1]}) == 1  # aligned
    assert "1 judged queries have no results in the run" in err


@pytest.mark.parametrize("k", ["0", "-1", "a,b", "5,", "", "1.5"])
def test_bad_k_is_a_one_line_error(tmp_path, capsys, k):
    paths = write_case(tmp_path, {"q1": {"a": 1}}, [("q1", "a", 1.0)])
    code, out, err = run_cli(capsys, *paths, "--k", k)
    assert (code, out) == (2, "")
    assert err.startswith("rageval: error: ") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("which", "content", "where"),
    [
        ("qrels", "q1 0 a 1\nq1 0 b\n", "qrels.txt:2: "),
        ("run", "q1 Q0 a 1 1.0 t\nq1 Q0 b 2 NaN t\n", "run.txt:2: "),
        ("run", b"q1 Q0 \xff 1 1.0 t\n", "run.txt:1: "),
        ("qrels", "q1 0 a 0\n", "qrels.txt: no query has a relevant judgement"),
    ],
)
def test_bad_files_exit_2_naming_file_and_line(tmp_path, capsys, which, content, where):
    qrels_path, run_path = write_case(tmp_path, {"q1": {"a": 1}}, [("q1", "a", 1.0)])
    path = Path(qrels_path if which == "qrels" else run_path)
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    code, out, err = run_cli(capsys, qrels_path, run_path)
    assert (code, out) == (2, "")
    assert err.startswith(f"rageval: error: {path.parent}/{where}") and err.count("\n") == 1
