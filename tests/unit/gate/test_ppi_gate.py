"""The gate on labels=ppi reports: the paired change is the PPI++ estimate from the LLM-label
differences of every query and the human-label ones of the sample; another judge or sample is a
label change; the baseline keeps the people's per-query values."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from rageval.gate.baseline import read_baseline, write_baseline
from rageval.gate.compare import LABELS_CHANGED, PASS, REGRESSED, compare
from rageval.scoring.ppi import ppi_mean

N, SAMPLE = 80, 20
METRICS = ["ndcg@5"]


def report(llm, human, judge="llm:fake", sample_digest="s" * 64):
    """A labels=ppi report: LLM-label values for every query, people's on the first SAMPLE."""
    rows = []
    for i, v in enumerate(llm):
        row = {"id": f"q{i:02d}", "query": f"question {i}", "ndcg@5": float(v), "hit_rate@5": 1.0}
        if i < SAMPLE:
            row["human:ndcg@5"] = float(human[i])
        rows.append(row)
    sample = {"judge": judge, "size": SAMPLE, "seed": 0, "digest": sample_digest}
    return {
        "metrics": {"ndcg@5": float(np.mean(llm)), "hit_rate@5": 1.0},
        "per_query": rows,
        "digests": {"golden": "g1", "judgements": "j" * 64},
        "k": 5,
        "label_set": "ppi",
        "judgements": {"counted": 10, "digest": "j" * 64},
        "ppi": {"sample": sample, "metrics": {"ndcg@5": {}}},
    }


def pair(seed, human_drop):
    """Baseline and run: the LLM labels see no change; the people see ``human_drop``."""
    rng = np.random.default_rng(seed)
    base_llm = rng.uniform(0.3, 0.9, N)
    base_human = np.clip(base_llm[:SAMPLE] + rng.normal(0, 0.05, SAMPLE), 0, 1)
    cur_llm = base_llm + rng.normal(0, 0.02, N)
    cur_human = base_human - human_drop + rng.normal(0, 0.03, SAMPLE)
    return report(base_llm, base_human), report(cur_llm, cur_human)


def test_the_change_is_the_ppi_estimate_of_the_paired_differences():
    base, cur = pair(1, 0.1)
    cmp = compare(base, cur, METRICS, tolerance=0.03)
    row = cmp.rows[0]
    d_hat = np.array(
        [
            c["ndcg@5"] - b["ndcg@5"]
            for b, c in zip(base["per_query"], cur["per_query"], strict=True)
        ]
    )
    d = np.array(
        [
            c["human:ndcg@5"] - b["human:ndcg@5"]
            for b, c in zip(base["per_query"][:SAMPLE], cur["per_query"][:SAMPLE], strict=True)
        ]
    )
    want = ppi_mean(d, d_hat[:SAMPLE], d_hat[SAMPLE:], alpha=0.05)
    assert row.delta == pytest.approx(want.ppi.estimate, abs=1e-12)
    assert (row.low, row.high) == pytest.approx((want.ppi.low, want.ppi.high), abs=1e-12)
    # the people saw a drop of 0.1 the LLM labels missed: regressed, not a pass
    assert row.high < -0.03 and row.verdict == "regressed" and cmp.status == REGRESSED
    plain = copy.deepcopy((base, cur))
    for rep in plain:
        del rep["ppi"]
        rep["label_set"] = "all"
    assert compare(*plain, METRICS, tolerance=0.03).status == PASS  # the LLM labels alone


def test_no_change_under_both_label_sources_passes():
    base, cur = pair(2, 0.0)
    cmp = compare(base, cur, METRICS, tolerance=0.05)
    assert cmp.status == PASS and cmp.rows[0].low > -0.05


def test_another_judge_or_sample_is_a_label_change():
    base, cur = pair(3, 0.0)
    other = copy.deepcopy(cur)
    other["ppi"]["sample"]["judge"] = "llm:other"
    cmp = compare(base, other, METRICS)
    assert cmp.status == LABELS_CHANGED and cmp.exit_code == 2
    assert "the LLM judge changed (llm:fake (baseline) -> llm:other (now))" in cmp.console()
    other = copy.deepcopy(cur)
    other["ppi"]["sample"]["digest"] = "t" * 64
    cmp = compare(base, other, METRICS)
    assert cmp.status == LABELS_CHANGED and "the human sample changed" in cmp.console()


def test_the_baseline_keeps_the_peoples_values_and_the_sample(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base, cur = pair(4, 0.1)
    path = write_baseline(base, tmp_path / "baseline.json", {"run_id": "r1"})
    loaded = read_baseline(path).report
    assert loaded["ppi"]["sample"]["judge"] == "llm:fake"
    assert loaded["per_query"][0]["human:ndcg@5"] == pytest.approx(
        base["per_query"][0]["human:ndcg@5"]
    )
    assert loaded["per_query"][-1]["human:ndcg@5"] is None
    a, b = compare(loaded, cur, METRICS).rows[0], compare(base, cur, METRICS).rows[0]
    assert (a.delta, a.low, a.high) == pytest.approx((b.delta, b.low, b.high), abs=1e-9)


def test_another_sample_is_reported_not_raised():
    base, cur = pair(5, 0.0)
    for row in cur["per_query"]:  # the people graded other queries
        row.pop("human:ndcg@5", None)
    for row in cur["per_query"][SAMPLE : 2 * SAMPLE]:
        row["human:ndcg@5"] = row["ndcg@5"]
    cur["ppi"]["sample"]["digest"] = "t" * 64
    cmp = compare(base, cur, METRICS)
    assert cmp.status == LABELS_CHANGED and "the human sample changed" in cmp.console()


@pytest.mark.parametrize("interval", ["t", "z"])
def test_the_change_uses_the_runs_interval_and_its_test_matches_it(interval):
    from scipy import stats

    base, cur = pair(6, 0.02)
    cur["ppi"]["interval"] = interval
    row = compare(base, cur, METRICS, tolerance=0.03).rows[0]
    d_hat = np.array(
        [
            c["ndcg@5"] - b["ndcg@5"]
            for b, c in zip(base["per_query"], cur["per_query"], strict=True)
        ]
    )
    d = np.array(
        [
            c["human:ndcg@5"] - b["human:ndcg@5"]
            for b, c in zip(base["per_query"][:SAMPLE], cur["per_query"][:SAMPLE], strict=True)
        ]
    )
    want = ppi_mean(d, d_hat[:SAMPLE], d_hat[SAMPLE:], interval=interval)
    assert (row.low, row.high) == pytest.approx((want.ppi.low, want.ppi.high), abs=1e-12)
    dist = stats.t(want.ppi.df) if interval == "t" else stats.norm()
    se = want.ppi.se
    assert row.high - row.delta == pytest.approx(dist.ppf(0.975) * se, rel=1e-12)
    # one metric: no Holm adjustment; the p-value is the same distribution's
    assert row.p_value == pytest.approx(2 * dist.sf(abs(row.delta) / se), rel=1e-9)
    assert row.detects == pytest.approx((dist.ppf(0.975) + dist.ppf(0.8)) * se, rel=1e-9)
    if interval == "t":
        assert 19 <= want.ppi.df <= 98  # between n - 1 and n + N - 2
    # a report that does not name its interval (from before the choice) gets the default, t
    del cur["ppi"]["interval"]
    plain = compare(base, cur, METRICS, tolerance=0.03).rows[0]
    t = ppi_mean(d, d_hat[:SAMPLE], d_hat[SAMPLE:])
    assert (plain.low, plain.high) == pytest.approx((t.ppi.low, t.ppi.high), abs=1e-12)
