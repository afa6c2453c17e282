"""``rageval compare`` and ``rageval plan`` on files from anywhere: trec_eval -q output, CSV,
report.json, run folders and sweep folders."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from rageval.cli.main import main


def trec_q(path, values: dict[str, float], measure: str = "ndcg_cut_5") -> None:
    lines = ["runid\tall\tx", *(f"{measure}\t{q}\t{v:.6f}" for q, v in values.items())]
    lines.append(f"{measure}\tall\t{np.mean(list(values.values())):.4f}")
    path.write_text("\n".join(lines) + "\n")


def report(path, values: dict[str, float], metric: str = "ndcg@5") -> None:
    path.mkdir(parents=True, exist_ok=True)
    rows = [{"id": q, "query": f"text {q}", metric: v} for q, v in values.items()]
    data = {"metrics": {metric: float(np.mean(list(values.values())))}, "per_query": rows}
    (path / "report.json").write_text(json.dumps({**data, "digests": {}, "k": 5}))


def runs(n=80, drop=0.05, seed=1):
    rng = np.random.default_rng(seed)
    a = rng.random(n)
    b = np.clip(a - drop + rng.normal(0, 0.2, n) * (rng.random(n) < 0.6), 0, 1)
    ids = [f"q{i:03d}" for i in range(n)]
    return dict(zip(ids, a.round(6), strict=True)), dict(zip(ids, b.round(6), strict=True))


def test_compare_two_trec_eval_files_equals_scipy_and_a_randomization_reference(tmp_path, capsys):
    a, b = runs()
    trec_q(tmp_path / "a.txt", a)
    trec_q(tmp_path / "b.txt", {**b, "extra": 0.5})  # a query only B has: left out
    assert main(["compare", str(tmp_path / "a.txt"), str(tmp_path / "b.txt"), "--json"]) in (0, 1)
    out = json.loads(capsys.readouterr().out)
    (row,) = out["rows"]
    x, y = np.array(list(a.values())), np.array(list(b.values()))
    assert row["metric"] == "ndcg_cut_5" and row["n"] == 80 and out["only_b"] == 1
    assert row["p_t"] == pytest.approx(stats.ttest_rel(y, x).pvalue, rel=1e-6)
    d = y - x
    flips = np.random.default_rng(5).choice([-1.0, 1.0], size=(100_000, d.size))
    ref = float((np.abs((flips * d).mean(1)) >= abs(d.mean()) - 1e-12).mean())
    se = math.sqrt(max(ref * (1 - ref), 1e-4) / 10_000)
    assert abs(row["p_randomization"] - ref) <= 4 * se
    assert row["diff"] == pytest.approx(d.mean())


def test_compare_reads_csv_and_run_folders_and_says_the_verdict(tmp_path, capsys):
    a, b = runs(n=400, drop=0.1)
    (tmp_path / "a.csv").write_text(
        "query_id,query,ndcg@5\n" + "".join(f"{q},text,{v}\n" for q, v in a.items())
    )
    report(tmp_path / "b", b)
    code = main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert code == 1 and "ndcg@5 -0.0" in out and ": FAIL" in out
    assert "(paired t-test)" in out and "(paired randomization test)" in out
    report(tmp_path / "same", a)
    assert main(["compare", str(tmp_path / "a.csv"), str(tmp_path / "same")]) == 0
    assert ": PASS" in capsys.readouterr().out
    few_a, few_b = runs(n=12, drop=0.03, seed=4)
    report(tmp_path / "fa", few_a)
    report(tmp_path / "fb", few_b)
    assert main(["compare", str(tmp_path / "fa"), str(tmp_path / "fb")]) == 0
    out = capsys.readouterr().out
    assert ": INCONCLUSIVE (about" in out and "queries would decide" in out


def test_compare_says_what_is_wrong_with_its_input(tmp_path, capsys):
    a, b = runs()
    trec_q(tmp_path / "a.txt", a)
    trec_q(tmp_path / "b.txt", b, measure="P_5")
    assert main(["compare", str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]) == 2
    assert "no metric is in both files" in capsys.readouterr().err
    (tmp_path / "bad.txt").write_text("ndcg_cut_5 q1\n")
    assert main(["compare", str(tmp_path / "bad.txt"), str(tmp_path / "a.txt")]) == 2
    assert "bad.txt:1: expected trec_eval -q lines" in capsys.readouterr().err


def test_plan_from_a_sweep_pairs_every_job_and_sizes_the_set(tmp_path, capsys):
    sweep = tmp_path / "multirun"
    a, b = runs(n=168, drop=0.0, seed=2)
    _, c = runs(n=168, drop=0.02, seed=3)
    for i, values in enumerate((a, b, c)):
        report(sweep / str(i), values)
    (sweep / "multirun.yaml").write_text("x: 1\n")
    assert main(["plan", str(sweep), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert [r["pair"] for r in plan["rows"]] == [
        "job 0 vs job 1",
        "job 0 vs job 2",
        "job 1 vs job 2",
    ]
    x, y = np.array(list(a.values())), np.array(list(b.values()))
    first = plan["rows"][0]
    assert first["sd"] == pytest.approx(float((y - x).std(ddof=1)))
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    assert first["mde"] == pytest.approx(z * first["sd"] / math.sqrt(168), rel=0.02)
    assert first["needed"] == pytest.approx((z * first["sd"] / 0.03) ** 2, rel=0.02)
    assert main(["plan", str(sweep / "0"), "--drop", "0.05"]) == 0
    out = capsys.readouterr().out
    assert "a bound from one run" in out and "queries for 0.05" in out


def gate_report(values: dict[str, float]) -> dict:
    rows = [{"id": q, "query": q, "ndcg@5": v, "hit_rate@5": 1.0} for q, v in values.items()]
    return {
        "metrics": {"ndcg@5": float(np.mean(list(values.values()))), "hit_rate@5": 1.0},
        "per_query": rows,
        "digests": {"golden": "g", "corpus": "c"},
        "k": 5,
    }


def test_the_check_says_what_its_golden_set_can_detect():
    from rageval.gate.compare import compare
    from rageval.scoring.power import mde

    a, b = runs(n=25, drop=0.03, seed=4)
    cmp = compare(gate_report(a), gate_report(b), ["ndcg@5"], tolerance=0.03, resamples=2000)
    (row,) = cmp.rows
    d = np.array(list(b.values())) - np.array(list(a.values()))
    assert row.detects == pytest.approx(mde(float(d.std(ddof=1)), 25))
    assert row.detects > 0.03 and row.needed > 25
    text = cmp.console()
    assert "detects" in text.splitlines()[5] and f"{row.detects:7.4f}" in text
    note = next(ln for ln in text.splitlines() if ln.startswith("power:"))
    assert "on these 25 queries" in note and f"ndcg@5 detects {row.detects:.3f}" in note
    assert f"about {row.needed:,} queries" in note and "power:" in cmp.markdown()
    big_a, big_b = runs(n=2000, drop=0.03, seed=4)
    big = compare(gate_report(big_a), gate_report(big_b), ["ndcg@5"], resamples=500)
    assert big.rows[0].detects < 0.03 and "power:" not in big.console()
    assert cmp.to_dict()["rows"][0]["detects"] == row.detects


def test_a_real_three_point_drop_on_25_queries_is_inconclusive_not_pass():
    from rageval.gate.compare import INCONCLUSIVE, PASS, REGRESSED, compare

    a, b = runs(n=25, drop=0.03, seed=4)  # a real drop; 25 queries cannot establish it
    cmp = compare(gate_report(a), gate_report(b), ["ndcg@5"], tolerance=0.03, resamples=2000)
    assert cmp.status == INCONCLUSIVE and cmp.rows[0].verdict == INCONCLUSIVE
    assert "queries would decide" in cmp.console().splitlines()[-1]
    big_a, big_b = runs(n=3000, drop=0.08, seed=4)  # a larger drop on 3,000 queries: shown
    assert compare(gate_report(big_a), gate_report(big_b), ["ndcg@5"], resamples=500).status == (
        REGRESSED
    )
    same = compare(gate_report(a), gate_report(a), ["ndcg@5"], resamples=500)
    assert same.status == PASS


def test_golden_stats_says_what_the_set_detects_when_a_baseline_measured_it(
    capsys, monkeypatch, tmp_path
):
    from rageval.app.config import DEMO_DIR
    from rageval.project import ENV

    monkeypatch.setenv(ENV, "")
    monkeypatch.chdir(tmp_path)  # no golden/ here: the demo's set and baseline
    assert main(["golden", "stats", "--json"]) == 0
    detects = json.loads(capsys.readouterr().out)["detects"]
    rows = json.loads((DEMO_DIR / "baseline.json").read_text())
    assert set(detects) == {
        f"{m}@5" for m in ("precision", "recall", "hit_rate", "mrr", "ndcg", "map")
    }
    assert 0.03 < detects["ndcg@5"]["detects"] < 0.2 and detects["ndcg@5"]["queries_for_0.03"] > 168
    assert rows["n_queries"] == 168
