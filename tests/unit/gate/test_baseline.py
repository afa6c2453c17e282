"""The gate's comparison logic on hand-made reports (no model)."""

import copy

import pytest

from rageval.gate.baseline import GOLDEN_CHANGED, PASS, REGRESSED, compare

METRICS = ["recall@5", "mrr@5"]


def report(values, ranks, golden="g1"):
    rows = []
    for i, ((r, m), rank) in enumerate(zip(values, ranks, strict=True)):
        rows.append({"id": f"q{i:02d}", "query": f"question {i}", "recall@5": r, "mrr@5": m,
                     "hit_rate@5": 1.0 if rank and rank <= 5 else 0.0, "first_relevant_rank": rank})  # fmt: skip
    n = len(rows)
    means = {k: sum(r[k] for r in rows) / n for k in ("recall@5", "mrr@5", "hit_rate@5")}
    return {"metrics": means, "per_query": rows, "digests": {"golden": golden}, "k": 5}


BASE = report([(1.0, 1.0)] * 20, [1] * 20)


def test_identical_reports_pass():
    cmp = compare(BASE, copy.deepcopy(BASE), METRICS)
    assert cmp.status == PASS and cmp.exit_code == 0
    assert all(r.verdict == "ok" and r.p_value == 1.0 for r in cmp.rows)


def test_a_drop_beyond_tolerance_regresses_and_names_metric_and_queries():
    cur = report([(1.0, 1.0)] * 17 + [(0.0, 0.0)] * 3, [1] * 17 + [0, 0, 0])
    cmp = compare(BASE, cur, METRICS)
    assert cmp.status == REGRESSED and cmp.exit_code == 1
    assert [r.verdict for r in cmp.rows] == ["regressed", "regressed"]
    assert [q["id"] for q in cmp.lost_hits] == ["q17", "q18", "q19"]
    text = cmp.console()
    assert "MISS q17: question 17" in text and "FAIL: recall@5, mrr@5 regressed" in text
    assert "| recall@5 | 1.0000 | 0.8500 | -0.1500 |" in cmp.markdown()


def test_tolerance_per_metric_and_small_drops_pass():
    cur = report([(1.0, 1.0)] * 19 + [(0.5, 0.5)], [1] * 19 + [2])  # -0.025 on both
    assert compare(BASE, cur, METRICS).status == PASS
    cmp = compare(BASE, cur, METRICS, tolerances={"mrr_at_5": 0.01})
    assert [r.verdict for r in cmp.rows] == ["ok", "regressed"]
    assert cmp.rank_drops == [
        {"id": "q19", "query": "question 19", "baseline_rank": 1, "current_rank": 2, "fall": 1}
    ]


def test_significance_requirement_spares_a_drop_the_test_cannot_confirm():
    cur = report([(1.0, 1.0)] * 19 + [(0.0, 0.0)], [1] * 19 + [0])  # one query: p = 1.0
    assert compare(BASE, cur, METRICS).status == REGRESSED
    assert compare(BASE, cur, METRICS, require_significance=True).status == PASS


def test_rank_drops_sorted_by_fall_and_improvements_noted():
    base = report([(0.5, 0.5)] * 4, [1, 2, 1, 0])
    cur = report([(0.5, 0.2)] * 3 + [(1.0, 1.0)], [7, 3, 0, 1])
    cmp = compare(base, cur, ["recall@5"])
    assert [(d["id"], d["current_rank"]) for d in cmp.rank_drops] == [
        ("q02", 0),
        ("q00", 7),
        ("q01", 3),
    ]
    assert [q["id"] for q in cmp.gained_hits] == ["q03"]
    assert "rank 1 -> miss" in cmp.markdown() and "HIT q03" in cmp.console()
    assert any("improved beyond tolerance: recall@5" in n for n in cmp.notes)


def test_a_changed_golden_set_is_neither_pass_nor_regression():
    cur = report([(0.0, 0.0)] * 20, [0] * 20, golden="g2")
    cmp = compare(BASE, cur, METRICS)
    assert cmp.status == GOLDEN_CHANGED and cmp.exit_code == 2
    assert "GOLDEN SET CHANGED" in cmp.console()


def test_a_metric_missing_from_either_report_is_bad_input():
    from rageval.errors import InputError

    with pytest.raises(InputError, match="metric 'ndcg@5' is missing"):
        compare(BASE, BASE, ["ndcg@5"])
