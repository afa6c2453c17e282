"""judged@k and the condensed-list metrics: hand-computed rules, then randomized agreement with
pytrec_eval (trec_eval's code): ``-J`` (judged_docs_only_flag) for the condensed metrics, and P@k
over grades shifted so that every judged item is relevant for judged@k (ir_measures' Judged)."""

from __future__ import annotations

import math

import pytest
import pytrec_eval
from trec_oracle import KS, random_case, trec_ordered

from rageval.scoring.judged import condense, judged_at, judged_metrics
from rageval.scoring.spec import CONDENSED, FAMILIES, MetricSpec


def one(ranking, judged, ks=KS):
    values = judged_metrics(["q"], [ranking], {"q": judged}, ks)
    return {name: float(v[0]) for name, v in values.items()}


def test_judged_at_k_counts_any_grade_and_divides_by_k():
    row = one(["a", "x", "b", "y"], {"a": 1, "b": 0, "c": 2})
    assert row["judged@1"] == 1.0
    assert row["judged@3"] == pytest.approx(2 / 3)  # b judged 0 counts as judged
    assert row["judged@5"] == pytest.approx(2 / 5)  # fewer than 5 results: still / 5
    assert one([], {"a": 1})["judged@3"] == 0.0
    # a duplicate is dropped (first kept) before the cut
    assert one(["a", "a", "x"], {"a": 1, "x": 0})["judged@3"] == pytest.approx(2 / 3)


def test_condensed_list_drops_unjudged_results_before_the_cut():
    judged = {"a": 1, "b": 0, "c": 2}
    assert condense(["q"], [["x", "a", "y", "b", "z", "c"]], {"q": judged}) == [["a", "b", "c"]]
    row = one(["x", "y", "a", "b", "c"], judged)
    # standard: a at rank 3; condensed: a at rank 1, c at rank 3
    assert row["mrr_cond@1"] == 1.0 and row["hit_rate_cond@1"] == 1.0
    assert row["precision_cond@3"] == pytest.approx(2 / 3)
    assert row["recall_cond@3"] == 1.0
    dcg = 1 + 2 / math.log2(4)
    assert row["ndcg_cond@3"] == pytest.approx(dcg / (2 + 1 / math.log2(3)))


def test_condensed_equals_standard_when_every_result_is_judged():
    from rageval.scoring.metrics import score_rankings

    judged = {"a": 1, "b": 0, "c": 2, "d": 0}
    ranking = ["b", "a", "d", "c"]
    std = score_rankings(["q"], [ranking], {"q": judged}, KS).to_rows()[0]
    row = one(ranking, judged)
    for name in ("precision", "recall", "hit_rate", "mrr", "ndcg", "map"):
        for k in KS:
            assert row[f"{name}_cond@{k}"] == pytest.approx(std[f"{name}@{k}"])
    assert row["judged@3"] == 1.0


def test_names_round_trip_through_metric_spec_and_mlflow_keys():
    for family in ("judged", *CONDENSED):
        assert family in FAMILIES
        spec = MetricSpec.parse(f"{family}@5")
        assert MetricSpec.parse(spec.mlflow_key) == spec and str(spec) == f"{family}@5"
        assert "@" not in spec.mlflow_key and spec.group == "judged"
    assert MetricSpec.parse("ndcg_cond_at_10") == MetricSpec("ndcg_cond", 10)


def _cut_after_kth_judged(pairs, judged, k):
    """The run down to its k-th judged result: its -J list is the condensed list cut at k."""
    out, seen = [], 0
    for docid, score in pairs:
        out.append((docid, score))
        seen += docid in judged
        if seen == k:
            break
    return dict(out)


@pytest.mark.parametrize("seed", range(6))
def test_agrees_with_trec_eval_judged_only_on_random_runs(seed):
    qrels, lines = random_case(seed)
    ranked = trec_ordered(lines)
    qids = list(qrels)
    rankings = [[d for d, _ in ranked.get(q, [])] for q in qids]
    ours = judged_metrics(qids, rankings, qrels, KS)

    run = {q: dict(p) for q, p in ranked.items()}
    measures = {f"{m}_{k}" for m in ("P", "recall", "ndcg_cut", "map_cut") for k in KS}
    cond = pytrec_eval.RelevanceEvaluator(qrels, measures, judged_docs_only_flag=True)
    cond = cond.evaluate(run)
    name = {"P": "precision", "recall": "recall", "ndcg_cut": "ndcg", "map_cut": "map"}
    shifted = {q: {d: g + 1 for d, g in j.items()} for q, j in qrels.items()}
    judged = pytrec_eval.RelevanceEvaluator(shifted, {f"P_{k}" for k in KS}).evaluate(run)
    rr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}, judged_docs_only_flag=True)
    checked = 0
    for i, q in enumerate(qids):
        for measure, value in cond.get(q, {}).items():
            prefix, k = measure.rsplit("_", 1)
            assert ours[f"{name[prefix]}_cond@{k}"][i] == pytest.approx(value), (q, measure)
            checked += 1
        for k in KS:
            want = judged.get(q, {}).get(f"P_{k}", 0.0)
            assert ours[f"judged@{k}"][i] == pytest.approx(want), (q, k)
            cut = _cut_after_kth_judged(ranked.get(q, []), qrels[q], k)
            want_rr = rr.evaluate({q: cut}).get(q, {}).get("recip_rank", 0.0) if cut else 0.0
            assert ours[f"mrr_cond@{k}"][i] == pytest.approx(want_rr), (q, k)
            assert ours[f"hit_rate_cond@{k}"][i] == float(want_rr > 0)
    assert checked > 100  # the oracle did score most queries


def test_judged_at_handles_runs_longer_and_shorter_than_k():
    values = judged_at(["a", "b"], [["d1", "d2"], ["d3"] * 3], {"a": {"d2": 0}}, [1, 2])
    assert values["judged@1"].tolist() == [0.0, 0.0]
    assert values["judged@2"].tolist() == [0.5, 0.0]
