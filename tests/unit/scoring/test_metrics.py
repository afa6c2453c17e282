"""rageval.scoring.metrics: hand-computed semantics, and randomized agreement with pytrec_eval.

The oracle (random_case, oracle_scores) is tests/support/trec_oracle.py, shared with the CLI and
BEIR tests.
"""

from __future__ import annotations

import math
import warnings
from collections import defaultdict

import numpy as np
import pytest
from trec_oracle import KS, oracle_scores, random_case

from rageval.errors import ConfigError, InputError
from rageval.scoring.metrics import METRICS, MetricSpec, check_ks, score_rankings
from rageval.scoring.ranking import order_like_trec_eval
from rageval.types import RankedList


def score_one(ranking, judged, ks=KS, **kw):
    """Score one query; returns {metric@k: value} plus first_relevant_rank."""
    scores = score_rankings(["q"], [ranking], {"q": judged}, ks, **kw)
    return scores.to_rows()[0]


# --- hand-computed cases: one per rule -------------------------------------------------------


def test_precision_divides_by_k_even_with_fewer_results():
    row = score_one(["a"], {"a": 1})
    assert row["precision@1"] == 1.0
    assert row["precision@5"] == pytest.approx(1 / 5)


def test_graded_relevance_counts_once_for_precision_and_recall():
    row = score_one(["a", "x", "b"], {"a": 3, "b": 1, "c": 2, "x": 0})
    assert row["precision@3"] == pytest.approx(2 / 3)
    assert row["recall@3"] == pytest.approx(2 / 3)  # 3 judged relevant; grade 0 is not
    assert row["recall@1"] == pytest.approx(1 / 3)


def test_hit_rate_and_mrr_use_the_first_relevant_rank():
    row = score_one(["x", "y", "a", "b"], {"a": 1, "b": 2})
    assert row["first_relevant_rank"] == 3
    assert (row["hit_rate@1"], row["hit_rate@3"]) == (0.0, 1.0)
    assert (row["mrr@1"], row["mrr@3"], row["mrr@10"]) == (0.0, pytest.approx(1 / 3), 1 / 3)


def test_ndcg_uses_linear_gain_and_ideal_from_all_judged_grades():
    row = score_one(["x", "b", "c"], {"b": 1, "c": 3, "d": 2})
    dcg = 1 / math.log2(3) + 3 / math.log2(4)
    ideal = 3 + 2 / math.log2(3) + 1 / math.log2(4)  # d is judged but never retrieved
    assert row["ndcg@3"] == pytest.approx(dcg / ideal)
    assert row["ndcg@1"] == 0.0
    assert row["ndcg@10"] == pytest.approx(dcg / ideal)  # ideal is cut at k too


def test_map_cut_divides_by_all_relevant():
    row = score_one(["a", "x", "b"], {"a": 1, "b": 1, "c": 1})
    assert row["map@1"] == pytest.approx(1 / 3)
    assert row["map@3"] == pytest.approx((1 + 2 / 3) / 3)


def test_empty_ranking_scores_zero_and_stays_in_the_mean():
    scores = score_rankings(["q1", "q2"], [["a"], []], {"q1": {"a": 1}, "q2": {"b": 1}}, (1,))
    assert scores.values["precision@1"].tolist() == [1.0, 0.0]
    assert scores.mean()["precision@1"] == 0.5
    assert scores.mean()["ndcg@1"] == 0.5


def test_query_without_relevant_judgement_scores_zero_on_every_metric():
    scores = score_rankings(["q1", "q2"], [["a"], ["a"]], {"q1": {"a": 0}}, KS)
    assert all(v.tolist() == [0.0, 0.0] for v in scores.values.values())
    assert scores.first_relevant_rank.tolist() == [0, 0]


def test_negative_grades_are_non_relevant():
    row = score_one(["a", "b"], {"a": -1, "b": 1})
    assert row["precision@1"] == 0.0
    assert row["mrr@3"] == 0.5
    assert row["ndcg@3"] == pytest.approx(1 / math.log2(3))


def test_duplicates_are_dropped_first_kept_with_one_warning():
    rankings = [["a", "a", "b"], ["c", "c"], ["d"]]
    qrels = {"q1": {"b": 1}, "q2": {"c": 1}, "q3": {"d": 1}}
    with pytest.warns(UserWarning, match="2 of 3 rankings held duplicate ids") as caught:
        scores = score_rankings(["q1", "q2", "q3"], rankings, qrels, (2,))
    assert len(caught) == 1
    assert scores.first_relevant_rank.tolist() == [2, 1, 1]
    assert scores.values["precision@2"].tolist() == [0.5, 0.5, 0.5]  # c is not counted twice


def test_duplicates_before_a_deep_first_relevant_shift_its_rank():
    with pytest.warns(UserWarning, match="1 of 1 rankings"):
        row = score_one(["x", "y", "z", "y", "x", "a"], {"a": 1}, ks=(1, 2))
    assert row["first_relevant_rank"] == 4
    with pytest.warns(UserWarning):
        row = score_one(["x", "x", "y", "y", "a"], {"a": 1}, ks=(1, 3))
    assert row["mrr@3"] == pytest.approx(1 / 3)


def test_duplicates_no_metric_reads_are_not_reported():
    # Below both the top max(k) and the first relevant result a duplicate changes no number.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        row = score_one(["a", "x", "y", "x"], {"a": 1}, ks=(1, 2))
    assert row["precision@2"] == 0.5


def test_ranked_list_and_plain_sequences_score_the_same():
    qrels = {"q": {"b": 2, "c": 1}}
    plain = score_rankings(["q"], [("a", "b", "c")], qrels, KS).to_rows()
    ranked = score_rankings(["q"], [RankedList(("a", "b", "c"), (3.0, 2.0, 1.0))], qrels, KS)
    assert ranked.to_rows() == plain


def test_inputs_are_not_mutated():
    rankings, qrels = [["a", "a", "b"]], {"q": {"b": 1, "z": 0}}
    with pytest.warns(UserWarning):
        score_rankings(["q"], rankings, qrels, KS)
    assert rankings == [["a", "a", "b"]] and qrels == {"q": {"b": 1, "z": 0}}


def test_keys_cover_every_metric_and_k_and_a_subset_can_be_asked_for():
    scores = score_rankings(["q"], [["a"]], {"q": {"a": 1}}, (10, 5))
    assert list(scores.values) == [f"{m}@{k}" for m in METRICS for k in (10, 5)]
    only = score_rankings(["q"], [["a"]], {"q": {"a": 1}}, (5,), metrics=("ndcg", "mrr"))
    assert list(only.values) == ["ndcg@5", "mrr@5"]
    assert list(only.to_rows()[0]) == ["query_id", "ndcg@5", "mrr@5", "first_relevant_rank"]


def test_no_queries_gives_nan_means():
    assert math.isnan(score_rankings([], [], {}, (5,)).mean()["precision@5"])


def test_mismatched_lengths_and_bad_cutoffs_are_errors():
    with pytest.raises(InputError, match="2 query ids but 1 rankings"):
        score_rankings(["a", "b"], [["x"]], {}, (5,))
    for bad in ([], [0], [-3], [2.5], [True]):
        with pytest.raises(ConfigError):
            check_ks(bad)
    with pytest.raises(ConfigError, match="valid metrics: precision, recall"):
        score_rankings(["q"], [["a"]], {}, (5,), metrics=("ndgc",))


def test_metric_spec_is_a_value():
    spec = MetricSpec.parse(" nDCG@10 ")
    assert spec == MetricSpec("ndcg", 10) and {spec: 1}[MetricSpec("ndcg", 10)] == 1
    assert str(spec) == "ndcg@10" and MetricSpec.parse(str(spec)) == spec
    assert spec.mlflow_key == "ndcg_at_10"
    with pytest.raises(ConfigError, match="valid metrics: precision, recall, hit_rate, mrr"):
        MetricSpec.parse("bleu@4")
    for bad in ("ndcg", "ndcg@", "ndcg@0", "ndcg@-1", "ndcg@x", "@5"):
        with pytest.raises(ConfigError):
            MetricSpec.parse(bad)


# --- randomized agreement with pytrec_eval ---------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_score_rankings_equals_pytrec_eval_per_query(seed):
    qrels, lines = random_case(seed)
    expected = oracle_scores(qrels, lines)
    grouped = defaultdict(list)
    for qid, docid, score in lines:
        grouped[qid].append((docid, score))
    query_ids = list(qrels)
    rankings = [order_like_trec_eval(grouped.get(q, [])) for q in query_ids]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # duplicates are expected here
        scores = score_rankings(query_ids, rankings, qrels, KS)
    for key, values in scores.values.items():
        want = [expected[q][key] for q in query_ids]
        np.testing.assert_allclose(values, want, rtol=0, atol=1e-9, err_msg=key)


def test_metric_spec_reads_both_spellings_and_budgets():
    from rageval.scoring.spec import MetricSpec as Spec
    from rageval.scoring.spec import canonical, mlflow_key

    assert Spec.parse("recall_at_5") == Spec.parse("Recall@5") == Spec("recall", 5)
    budget = Spec.parse("evidence_recall@1024t")
    assert budget == Spec("evidence_recall", 1024, budget=True) != Spec("evidence_recall", 1024)
    assert (
        str(budget) == "evidence_recall@1024t" and budget.mlflow_key == "evidence_recall_at_1024t"
    )
    assert Spec.parse(budget.mlflow_key) == budget and budget.group == "span"
    assert canonical("NDCG_at_5") == "ndcg@5" and mlflow_key("ndcg@5") == "ndcg_at_5"
    with pytest.raises(ConfigError, match=r"e\.g\. ndcg@5"):
        Spec.parse("ndcg")  # a cutoff is required: no silent choice of one
