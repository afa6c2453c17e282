"""The gate's comparison logic on hand-made reports (no model)."""

import copy

import pytest

from rageval.gate.compare import GOLDEN_CHANGED, LABELS_CHANGED, PASS, REGRESSED, compare

METRICS = ["recall@5", "mrr@5"]


def report(values, ranks, golden="g1"):
    rows = []
    for i, ((r, m), rank) in enumerate(zip(values, ranks, strict=True)):
        rows.append(
            {
                "id": f"q{i:02d}",
                "query": f"question {i}",
                "recall@5": r,
                "mrr@5": m,
                "hit_rate@5": 1.0 if rank and rank <= 5 else 0.0,
                "first_relevant_rank": rank,
            }
        )
    n = len(rows)
    means = {k: sum(r[k] for r in rows) / n for k in ("recall@5", "mrr@5", "hit_rate@5")}
    return {"metrics": means, "per_query": rows, "digests": {"golden": golden}, "k": 5}


BASE = report([(1.0, 1.0)] * 20, [1] * 20)


def test_identical_reports_pass():
    cmp = compare(BASE, copy.deepcopy(BASE), METRICS)
    assert cmp.status == PASS and cmp.exit_code == 0
    assert all(r.verdict == "ok" and r.p_value == 1.0 for r in cmp.rows)


def test_a_drop_beyond_tolerance_regresses_and_names_metric_and_queries():
    # 8 of 20 queries lose their hit: -0.4, and the paired test rejects no change (p 0.008)
    cur = report([(1.0, 1.0)] * 12 + [(0.0, 0.0)] * 8, [1] * 12 + [0] * 8)
    cmp = compare(BASE, cur, METRICS)
    assert cmp.status == REGRESSED and cmp.exit_code == 1
    assert [r.verdict for r in cmp.rows] == ["regressed", "regressed"]
    assert [q["id"] for q in cmp.lost_hits] == [f"q{i}" for i in range(12, 20)]
    text = cmp.console()
    assert "MISS q12 no longer retrieved (rank 1 -> beyond the search depth): question 12" in text
    assert "FAIL: recall@5, mrr@5 regressed" in text
    assert "| recall@5 | 1.0000 | 0.6000 | -0.4000 | 0.0300 |" in cmp.markdown()
    assert [(r.wins, r.ties, r.losses) for r in cmp.rows] == [(0, 12, 8)] * 2
    r = cmp.rows[0]
    assert r.high < -0.03 and r.low < r.delta < r.high


def hundreds(n=200, dropped=8, to=0.75, rank=2):
    """``n`` queries, ``dropped`` of them from 1.0 to ``to`` (their first relevant rank
    ``rank``): a small, precisely measured change."""
    return report(
        [(1.0, 1.0)] * (n - dropped) + [(to, to)] * dropped, [1] * (n - dropped) + [rank] * dropped
    )


def test_tolerance_per_metric_and_small_drops_pass():
    base, cur = hundreds(dropped=0), hundreds()  # -0.01 on both, interval [-0.017, -0.003]
    assert compare(base, cur, METRICS).status == PASS
    cmp = compare(base, cur, METRICS, tolerances={"mrr_at_5": 0.005})
    assert [r.verdict for r in cmp.rows] == ["ok", "regressed"]
    assert len(cmp.rank_drops) == 8 and cmp.rank_drops[0] == {
        "id": "q192",
        "query": "question 192",
        "baseline_rank": 1,
        "current_rank": 2,
        "fall": 1,
    }
    spelled = compare(base, cur, METRICS, tolerances={"mrr@5": 0.005})
    assert [r.tolerance for r in spelled.rows] == [0.03, 0.005]
    better = compare(cur, base, METRICS, tolerance=0.005)
    assert [r.verdict for r in better.rows] == ["improved", "improved"]
    assert any("improved beyond tolerance: recall@5, mrr@5" in n for n in better.notes)


def test_a_drop_the_test_cannot_confirm_is_inconclusive_not_a_regression():
    from rageval.gate.compare import INCONCLUSIVE

    cur = report([(1.0, 1.0)] * 19 + [(0.0, 0.0)], [1] * 19 + [0])  # one query: p = 1.0
    cmp = compare(BASE, cur, METRICS)
    assert cmp.status == INCONCLUSIVE and cmp.exit_code == 0  # warn: said, not blocking
    assert [r.verdict for r in cmp.rows] == [INCONCLUSIVE] * 2
    last = cmp.console().splitlines()[-1]
    assert last.startswith("INCONCLUSIVE: recall@5 -0.050 [-0.155, +0.055]; detects a drop of")
    assert "tolerance 0.03 (about" in last and "queries would decide)" in last
    assert "**Inconclusive:** recall@5 -0.050" in cmp.markdown()
    assert compare(BASE, cur, METRICS, on_inconclusive="fail").exit_code == 1
    assert compare(BASE, cur, METRICS, on_inconclusive="pass").status == PASS
    from rageval.errors import ConfigError

    with pytest.raises(ConfigError, match="on_inconclusive must be one of warn, fail, pass"):
        compare(BASE, cur, METRICS, on_inconclusive="maybe")


def test_rank_drops_sorted_by_fall_and_lost_and_gained_hits():
    base = report([(0.5, 0.5)] * 4, [1, 2, 1, 0])
    cur = report([(0.5, 0.2)] * 3 + [(1.0, 1.0)], [7, 3, 0, 1])
    cmp = compare(base, cur, ["recall@5"])
    assert [(d["id"], d["current_rank"]) for d in cmp.rank_drops] == [("q01", 3)]
    assert [(q["id"], q["why"]) for q in cmp.lost_hits] == [
        ("q00", "out_of_top_k"),
        ("q02", "not_retrieved"),
    ]
    assert [q["id"] for q in cmp.gained_hits] == ["q03"]
    assert "MISS q02` no longer retrieved" in cmp.markdown() and "HIT q03" in cmp.console()
    assert "MISS q00` fell out of the top 5 (rank 1 -> 7)" in cmp.markdown()
    assert cmp.rows[0].verdict == "inconclusive"  # +0.125 on 4 queries: nothing is shown


def test_a_changed_golden_set_is_neither_pass_nor_regression():
    cur = report([(0.0, 0.0)] * 20, [0] * 20, golden="g2")
    cmp = compare(BASE, cur, METRICS)
    assert cmp.status == GOLDEN_CHANGED and cmp.exit_code == 2
    assert "GOLDEN SET CHANGED" in cmp.console()


def test_a_metric_missing_from_either_report_is_bad_input():
    from rageval.errors import InputError

    with pytest.raises(InputError, match="metric 'ndcg@5' is missing"):
        compare(BASE, BASE, ["ndcg@5"])


def test_markdown_names_baseline_config_queries_tolerance_and_holm():
    base = {
        **BASE,
        "promoted_from": {"run_id": "abc123", "promoted_at": "2026-11-30T10:00:00Z"},
        "config": {"chunk": 256, "k": 5, "cache_dir": "/x"},
        "choices": {"search": "vector"},
    }
    cur = {
        **copy.deepcopy(BASE),
        "config": {"chunk": 512, "k": 5, "cache_dir": "/y"},
        "choices": {"search": "vector"},
        "overrides": ["chunk=512"],
    }
    md = compare(base, cur, METRICS).markdown()
    assert "Baseline: run abc123, promoted 2026-11-30T10:00:00Z: chunk=256 k=5 search=vector" in md
    assert "Current: chunk=512 k=5 search=vector (overrides: chunk=512)" in md
    assert "Config changes: chunk: 256 -> 512" in md and "cache_dir" not in md
    assert "Queries compared: 20" in md and "Holm-adjusted over 2 metrics" in md
    assert "| tolerance | detects | p (Holm) |" in md


def test_the_miss_list_is_capped_with_the_rest_in_details():
    cur = report([(0.0, 0.0)] * 15 + [(1.0, 1.0)] * 5, [0] * 15 + [1] * 5)
    cmp = compare(BASE, cur, METRICS)
    md, text = cmp.markdown(), cmp.console()
    assert md.count("`MISS ") == 15 and "<details><summary>5 more</summary>" in md
    assert md.index("`MISS q09`") < md.index("<details>") < md.index("`MISS q10`")
    assert text.count("MISS ") == 10 and "... and 5 more (see gate.md)" in text


def test_miss_lines_show_readable_labels_when_the_report_has_them():
    cur = report([(1.0, 1.0)] * 19 + [(0.0, 0.0)], [1] * 19 + [9])
    cur["per_query"][19].update(retrieved_labels=["faq:3", "faq:4"], expected_docs=["policy"])
    line = compare(BASE, cur, METRICS).console()
    assert (
        "MISS q19 fell out of the top 5 (rank 1 -> 9): question 19 "
        "[expected policy; got faq:3, faq:4]" in line
    )


def test_another_label_set_is_never_compared():
    cur = {**copy.deepcopy(BASE), "label_set": "llm"}
    cmp = compare(BASE, cur, METRICS)
    assert cmp.status == LABELS_CHANGED and cmp.exit_code == 2
    assert "never compares across label sets" in cmp.console()


def test_a_cost_metric_regresses_when_it_rises():
    def with_tokens(rep, tokens):
        rep = copy.deepcopy(rep)
        for row in rep["per_query"]:
            row["tokens@5"] = tokens
        rep["metrics"]["tokens@5"] = float(tokens)
        return rep

    base, more = with_tokens(BASE, 1000), with_tokens(BASE, 1500)
    cmp = compare(base, more, ["tokens@5"], tolerance=10.0)
    assert cmp.status == REGRESSED and cmp.rows[0].verdict == "regressed"
    assert compare(more, base, ["tokens@5"], tolerance=10.0).rows[0].verdict == "improved"


def test_the_config_summary_names_the_tuned_keys_inside_the_groups_and_masks_secrets():
    from rageval.gate.baseline import config_summary

    report = {
        "config": {"chunk": 256, "chunk_overlap": 0, "k": 5},
        "choices": {"dataset": "demo", "backend": "faiss", "search": "hybrid"},
        "overrides": [
            "chunk=256",
            "search=hybrid",
            "search.fusion=weighted",
            "search.bm25.k1=0.8666",
            "split=all",
            "mlflow.tracking_uri=http://127.0.0.1:5000",
            f"cache_dir={'/tmp/cache'}",
            "+backend.api_key=hunter2",
        ],
    }
    line = config_summary(report)
    assert line.startswith("chunk=256 chunk_overlap=0 k=5 dataset=demo backend=faiss search=hybrid")
    assert line.endswith("search.fusion=weighted search.bm25.k1=0.8666 backend.api_key=***")
    assert "split=" not in line and "mlflow" not in line and "cache_dir" not in line
    assert "hunter2" not in line and line.count("chunk=") == 1


def test_a_config_change_is_listed_once_not_again_where_it_is_interpolated():
    from rageval.app.config import compose
    from rageval.gate.compare import config_diff, interpolated_keys

    mirrors = interpolated_keys(compose(["search=hybrid"]))
    assert {"backend.bm25", "backend.mode", "backend.rrf_k"} <= set(mirrors)
    assert "cache_dir" not in mirrors and "dataset.golden" not in mirrors  # resolvers, not keys
    a = {"config": {"search": {"bm25": {"k1": 1.5}}, "backend": {"bm25": {"k1": 1.5}}}}
    b = {"config": {"search": {"bm25": {"k1": 1.2}}, "backend": {"bm25": {"k1": 1.2}}}}
    assert config_diff(a, b) == ["backend.bm25.k1: 1.5 -> 1.2", "search.bm25.k1: 1.5 -> 1.2"]
    assert config_diff(a, b, mirrors=mirrors) == ["search.bm25.k1: 1.5 -> 1.2"]
