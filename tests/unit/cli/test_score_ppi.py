"""`rageval score QRELS RUN --llm-qrels FILE`: PPI++ estimates on the per-query values
pytrec_eval gives, with Student-t intervals by default and, with `--interval z`, ppi_py's; errors
name the file and line and exit 2."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from trec_oracle import oracle_scores, random_case

from rageval.cli.main import main
from rageval.scoring.ppi import ppi_mean


@pytest.fixture(scope="module")
def ppi_py():
    """The reference implementation, a dev dependency (pyproject); imported by the test that
    uses it, not at collection (~1 s in every pytest-xdist worker)."""
    return pytest.importorskip("ppi_py")


def write_qrels(path, qrels):
    path.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items())
    )
    return str(path)


def noisy_judge(qrels, seed):
    """An LLM judge's qrels: misses a fifth of the relevant, calls a tenth of the rest relevant."""
    rng = random.Random(seed)
    out = {}
    for q, judged in qrels.items():
        out[q] = {}
        for d, g in judged.items():
            if g >= 1 and rng.random() < 0.2:
                g = 0
            elif g == 0 and rng.random() < 0.1:
                g = rng.randint(1, 3)
            out[q][d] = g
    return out


def case(tmp_path, seed, n_human=15):
    qrels, lines = random_case(seed, n_queries=60)
    llm = noisy_judge(qrels, seed)
    sample = random.Random(seed).sample(sorted(qrels), n_human)
    human = {q: qrels[q] for q in sample}
    run = tmp_path / "run.txt"
    run.write_text("".join(f"{q} Q0 {d} 1 {s!r} tag\n" for q, d, s in lines))
    paths = (write_qrels(tmp_path / "human.txt", human), str(run))
    return paths, write_qrels(tmp_path / "llm.txt", llm), human, llm, lines


def run_cli(capsys, *argv):
    code = main(["score", *argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("seed", range(4))
def test_json_estimates_equal_ppi_py_on_pytrec_eval_values(tmp_path, capsys, seed, ppi_py):
    (qrels, run), llm_path, human, llm, lines = case(tmp_path, seed)
    code, out, _ = run_cli(
        capsys,
        qrels,
        run,
        "--llm-qrels",
        llm_path,
        "-c",
        "--k",
        "5,10",
        "--json",
        "--interval",
        "z",
    )
    assert code == 0
    report = json.loads(out)
    assert (report["n_human"], report["n_llm"]) == (len(human), len(llm))
    truth_h, truth_l = (
        oracle_scores(human, lines, ks=(5, 10)),
        oracle_scores(llm, lines, ks=(5, 10)),
    )
    others = [q for q in llm if q not in human]
    for key in ("ndcg@10", "recall@10", "precision@5", "mrr@5"):
        y = np.array([truth_h[q][key] for q in human])
        yhat = np.array([truth_l[q][key] for q in human])
        unl = np.array([truth_l[q][key] for q in others])
        got = report["metrics"][key]
        low, high = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, yhat, unl, alpha=0.05))
        point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, unl))[0])
        assert got["estimate"] == pytest.approx(point, abs=1e-9), key
        assert (got["ci_low"], got["ci_high"]) == pytest.approx((low, high), abs=1e-9), key
        c_low, c_high = (float(np.ravel(v)[0]) for v in ppi_py.classical_mean_ci(y, alpha=0.05))
        assert got["human_only"]["estimate"] == pytest.approx(y.mean(), abs=1e-9)
        assert (got["human_only"]["ci_low"], got["human_only"]["ci_high"]) == pytest.approx(
            (c_low, c_high), abs=1e-9
        )
        every = np.concatenate([yhat, unl])
        assert got["llm_only"]["estimate"] == pytest.approx(every.mean(), abs=1e-9)
        assert got["llm_only"]["bias"] == pytest.approx((yhat - y).mean(), abs=1e-9)
        assert (got["n_human"], got["n_llm"]) == (len(human), len(llm))
        assert (got["interval"], got["df"]) == ("z", None)
    assert "normal (z)" in report["method"]


def test_the_default_intervals_are_student_t(tmp_path, capsys):
    (qrels, run), llm_path, human, llm, lines = case(tmp_path, 6)
    code, out, _ = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "-c", "--k", "10", "--json")
    assert code == 0
    report = json.loads(out)
    assert "Student-t" in report["method"]
    truth_h, truth_l = oracle_scores(human, lines, ks=(10,)), oracle_scores(llm, lines, ks=(10,))
    others = [q for q in llm if q not in human]
    for key in ("ndcg@10", "recall@10"):
        y = np.array([truth_h[q][key] for q in human])
        yhat = np.array([truth_l[q][key] for q in human])
        unl = np.array([truth_l[q][key] for q in others])
        want, z = ppi_mean(y, yhat, unl), ppi_mean(y, yhat, unl, interval="z")
        got = report["metrics"][key]
        assert (got["ci_low"], got["ci_high"]) == pytest.approx(
            (want.ppi.low, want.ppi.high), abs=1e-9
        )
        assert got["interval"] == "t" and got["df"] == pytest.approx(want.ppi.df, rel=1e-9)
        assert len(human) - 1 <= got["df"] <= len(llm) - 2
        assert got["ci_high"] - got["ci_low"] > z.ppi.high - z.ppi.low  # wider than ppi_py's
    code, out, _ = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "-c", "--k", "10")
    assert code == 0 and "Student-t intervals" in out.splitlines()[-1]


def test_an_unknown_interval_or_one_without_llm_qrels_is_refused(tmp_path, capsys):
    (qrels, run), llm_path, *_ = case(tmp_path, 7)
    code, out, err = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "--interval", "normal")
    assert (code, out) == (2, "") and "one of t, z" in err
    code, out, err = run_cli(capsys, qrels, run, "--interval", "z")
    assert (code, out) == (2, "") and "add --llm-qrels" in err


def test_default_averaging_leaves_out_queries_without_results_on_both_sides(tmp_path, capsys):
    (qrels, run), llm_path, human, llm, lines = case(tmp_path, 11, n_human=25)
    in_run = {q for q, _, _ in lines}
    code, out, err = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "--json")
    assert code == 0
    report = json.loads(out)
    assert report["n_human"] == len([q for q in human if q in in_run])
    assert report["n_llm"] == len([q for q in llm if q in in_run])
    assert "human qrels: " in err and "LLM qrels: " in err


def test_table(tmp_path, capsys):
    (qrels, run), llm_path, human, llm, _ = case(tmp_path, 2)
    code, out, _ = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "-c", "--k", "10")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:2] == ["metric", "estimate"]
    assert [line.split()[0] for line in lines[1:-1]] == [
        "precision@10",
        "recall@10",
        "hit_rate@10",
        "mrr@10",
        "ndcg@10",
        "map@10",
    ]
    assert lines[-1].startswith(
        f"queries: {len(llm)} LLM-judged, {len(human)} of them human-graded"
    )


def test_llm_qrels_missing_a_human_query_is_refused(tmp_path, capsys):
    (qrels, run), llm_path, human, llm, _ = case(tmp_path, 3)
    dropped = next(iter(human))
    write_qrels(tmp_path / "llm.txt", {q: j for q, j in llm.items() if q != dropped})
    code, out, err = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "-c")
    assert (code, out) == (2, "")
    assert err.startswith(f"rageval: error: {llm_path}: 1 of the") and repr(dropped) in err


@pytest.mark.parametrize("content", ["q1 0 a 1\nq1 0 b\n", "q1 0 a 1\nq1 0 b x\n"])
def test_a_bad_llm_qrels_line_names_file_and_line(tmp_path, capsys, content):
    (qrels, run), llm_path, *_ = case(tmp_path, 4)
    (tmp_path / "llm.txt").write_text(content)
    code, out, err = run_cli(capsys, qrels, run, "--llm-qrels", llm_path)
    assert (code, out) == (2, "")
    assert err.startswith(f"rageval: error: {llm_path}:2: ") and err.count("\n") == 1


def test_a_sample_of_everything_is_refused(tmp_path, capsys):
    (qrels, run), llm_path, human, llm, _ = case(tmp_path, 5)
    code, _, err = run_cli(capsys, llm_path, run, "--llm-qrels", llm_path, "-c")
    assert code == 2 and "nothing for the LLM labels to add" in err


def test_fewer_than_40_graded_queries_are_warned_about_with_the_count(tmp_path, capsys):
    (qrels, run), llm_path, human, _, _ = case(tmp_path, 5, n_human=15)
    code, out, err = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "-c", "--json")
    assert code == 0 and json.loads(out)["n_human"] == 15
    assert "warning: only 15 human-graded queries: with fewer than 40" in err
    (qrels, run), llm_path, human, _, _ = case(tmp_path, 5, n_human=40)
    code, out, err = run_cli(capsys, qrels, run, "--llm-qrels", llm_path, "-c", "--json")
    assert code == 0 and json.loads(out)["n_human"] == 40
    assert "human-graded queries" not in err
