"""`rageval score QRELS RUN`: numbers equal pytrec_eval's; errors are one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import pytrec_eval
from trec_oracle import KS, random_case, trec_ordered

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


def expected_means(qrels, lines, ks=KS, complete=False):
    """pytrec_eval's own means (trec_eval's default averaging: the queries it evaluates), or with
    ``complete`` trec_eval -c's: its per-query sums over every qrels query."""
    ranked = trec_ordered(lines)
    run = {q: dict(pairs) for q, pairs in ranked.items()}
    names = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map"}
    measures = {f"{m}_{k}" for m in names for k in ks}
    per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"})
    values = {}
    for measure in measures:
        prefix, k = measure.rsplit("_", 1)
        values[f"{names[prefix]}@{k}"] = [row[measure] for row in per_query.values()]
    for k in ks:
        cut = rr.evaluate({q: dict(pairs[:k]) for q, pairs in ranked.items()})
        assert cut.keys() == per_query.keys()
        values[f"mrr@{k}"] = [row["recip_rank"] for row in cut.values()]
        values[f"hit_rate@{k}"] = [float(row["recip_rank"] > 0) for row in cut.values()]
    n = len(qrels) if complete else len(per_query)
    return n, {key: sum(v) / n for key, v in values.items()}


def run_cli(capsys, *argv):
    code = main(["score", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def assert_means_equal(got, want):
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key


def with_all_zero_queries(qrels, lines):
    """random_case plus judged queries whose judgements are all grade 0, in the run or not."""
    qrels = {**qrels, "zero-in-run": {"d01": 0, "d02": 0}, "zero-not-in-run": {"d03": 0}}
    return qrels, [*lines, ("zero-in-run", "d01", 0.5), ("zero-in-run", "d05", 0.9)]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("complete", [False, True])
def test_json_means_equal_pytrec_eval(tmp_path, capsys, seed, complete):
    qrels, lines = with_all_zero_queries(*random_case(seed))
    paths = write_case(tmp_path, qrels, lines, beir=seed % 2 == 1)
    flags = ["-c"] * complete
    code, out, _ = run_cli(capsys, *paths, "--k", ",".join(map(str, KS)), "--json", *flags)
    assert code == 0
    n, want = expected_means(qrels, lines, complete=complete)
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
    assert n == len(set(qrels) & {q for q, _, _ in lines})
    report = json.loads(proc.stdout)
    assert report["queries"] == n
    assert_means_equal(report["metrics"], want)
    assert "rageval: warning: " in proc.stderr  # random_case repeats some docids


def test_table_output(tmp_path, capsys):
    paths = write_case(tmp_path, {"q1": {"a": 1}, "q2": {"b": 1}}, [("q1", "a", 1.0)])
    code, out, err = run_cli(capsys, *paths, "--k", "1,10", "-c")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["metric", "@1", "@10"]
    assert lines[1].split() == ["precision", "0.5000", "0.0500"]
    assert lines[4].split() == ["mrr", "0.5000", "0.5000"]
    assert lines[-1] == "queries: 2"
    assert len({len(line) for line in lines[:-1]}) == 1  # aligned
    assert "1 judged queries have no results in the run (scored 0 (-c))" in err
    code, out, err = run_cli(capsys, *paths, "--k", "1,10")  # trec_eval's default: q2 left out
    assert out.splitlines()[1].split() == ["precision", "1.0000", "0.1000"]
    assert out.splitlines()[-1] == "queries: 1" and "pass -c to score them 0" in err


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


COMMENT_QRELS = """# trec_eval's test/qrels.comment.test style: comments, and a query judged only 0
q1 0 a 1
q1 0 b 1
#q2 0 d9 1
q3 0 c 0
q3 0 d 0
"""


def test_a_query_judged_only_zero_counts_and_comments_are_skipped(tmp_path, capsys):
    qrels = tmp_path / "qrels"
    qrels.write_text(COMMENT_QRELS)
    run = tmp_path / "run"
    run.write_text("# a run comment\nq1 Q0 a 1 2.0 t\nq1 Q0 x 2 1.0 t\nq3 Q0 c 1 1.0 t\n")
    code, out, err = run_cli(capsys, str(qrels), str(run), "--k", "1,2", "--json")
    report = json.loads(out)
    assert code == 0 and report["queries"] == 2 and report["averaging"] == "trec_eval"
    assert report["metrics"]["precision@1"] == pytest.approx(0.5)  # q1: 1, q3: 0
    assert report["metrics"]["recall@2"] == pytest.approx(0.25)
    assert "#q2" not in err


def test_trunc_style_run_with_extra_fields_scores_like_the_plain_run(tmp_path, capsys):
    qrels, lines = random_case(3)
    paths = write_case(tmp_path, qrels, lines)
    trunc = tmp_path / "results.trunc"
    trunc.write_text("".join(f"{q} Q0 {d} 1 {s!r} tag {s!r} more\n" for q, d, s in lines))
    _, plain, _ = run_cli(capsys, *paths, "--json")
    code, out, _ = run_cli(capsys, paths[0], str(trunc), "--json")
    assert code == 0 and json.loads(out) == json.loads(plain)


def test_two_tab_trec_qrels_line_is_read_as_trec(tmp_path, capsys):
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0\ta\t1\nq1 0 b 1\n")
    run = tmp_path / "run"
    run.write_text("q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n")
    code, out, err = run_cli(capsys, str(qrels), str(run), "--k", "2", "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["metrics"]["recall@2"] == 1.0


def test_no_shared_query_is_a_one_line_error(tmp_path, capsys):
    paths = write_case(tmp_path, {"q1": {"a": 1}}, [("other", "a", 1.0)])
    code, out, err = run_cli(capsys, *paths)
    assert (code, out) == (2, "")
    assert "no query of the run is judged" in err and err.count("\n") == 1


def test_help_documents_the_averaging_and_imports_nothing_heavy():
    code = (
        "import sys; from rageval.cli.main import main\n"
        "try: main(['score', '--help'])\nexcept SystemExit: pass\n"
        "print(sorted(m for m in ('numpy', 'rageval.scoring.metrics', 'rageval.formats.trec') "
        "if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert "trec_eval -c" in proc.stdout and "--complete" in proc.stdout
    assert proc.stdout.strip().splitlines()[-1] == "[]"
