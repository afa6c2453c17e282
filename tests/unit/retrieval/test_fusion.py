import pytest

from rageval.errors import ConfigError
from rageval.retrieval.fusion import HybridRetriever, rrf, weighted
from rageval.scoring.ranking import break_ties, ranked
from rageval.types import RankedList


def test_rrf_equals_hand_computation():
    dense = RankedList(("a", "b", "c"), (0.9, 0.8, 0.7))
    lexical = RankedList(("c", "d", "a"), (12.0, 9.0, 3.0))
    fused = rrf([dense, lexical], k=60)
    expect = {
        "a": 1 / 61 + 1 / 63,
        "b": 1 / 62,
        "c": 1 / 63 + 1 / 61,
        "d": 1 / 62,
    }
    # a and c tie, b and d tie: ties go by id descending, the trec_eval rule
    assert fused.ids == ("c", "a", "d", "b")
    assert fused.scores == pytest.approx([expect[i] for i in fused.ids], abs=1e-15)
    assert rrf([dense, lexical], k=60, depth=2).ids == ("c", "a")


def test_rrf_k_changes_scores_not_membership():
    a = RankedList(("x", "y"), (2.0, 1.0))
    assert rrf([a], k=1).scores == pytest.approx([1 / 2, 1 / 3])


def test_weighted_min_max_fusion_by_hand():
    dense = RankedList(("a", "b", "c"), (0.9, 0.5, 0.1))
    lexical = RankedList(("b", "d"), (10.0, 4.0))
    fused = weighted([dense, lexical], [0.7, 0.3])
    expect = {"a": 0.7 * 1.0, "b": 0.7 * 0.5 + 0.3 * 1.0, "c": 0.0, "d": 0.0}
    assert dict(zip(fused.ids, fused.scores, strict=True)) == pytest.approx(expect)
    assert fused.ids == ("a", "b", "d", "c")


def test_weighted_constant_scores_normalise_to_one_and_weights_must_match():
    flat = RankedList(("a", "b"), (3.0, 3.0))
    assert weighted([flat], [1.0]).scores == (1.0, 1.0)
    with pytest.raises(ConfigError, match="one weight per ranking"):
        weighted([flat, flat], [1.0])


def test_tie_rule_orders_equal_scores_by_id_descending_only():
    rl = RankedList(("a", "c", "b", "z", "y"), (3.0, 2.0, 2.0, 1.0, 0.5))
    assert break_ties(rl).ids == ("a", "c", "b", "z", "y")
    rl = RankedList(("a", "b", "c"), (1.0, 1.0, 1.0))
    assert break_ties(rl).ids == ("c", "b", "a")
    assert ranked([("a", 1.0), ("b", 1.0), ("c", 2.0)]).ids == ("c", "b", "a")


class _Fixed:
    def __init__(self, lists):
        self.lists, self.depths = lists, []

    def index(self, chunks, encoder):
        pass

    def search(self, queries, depth):
        self.depths.append(depth)
        return self.lists


def test_hybrid_fetches_candidate_depth_and_fuses():
    d = _Fixed([RankedList(("a", "b"), (0.9, 0.8))])
    lx = _Fixed([RankedList(("b", "c"), (5.0, 1.0))])
    h = HybridRetriever(d, lx, method="rrf", candidate_depth=30)
    out = h.search(["q"], 2)
    assert d.depths == [30] and lx.depths == [30]
    assert out[0].ids == ("b", "a")
    with pytest.raises(ConfigError, match="search.fusion"):
        HybridRetriever(d, lx, method="max")


def test_ties_are_judged_in_single_precision_like_trec_eval():
    # 1.0 and 1.0 + 1e-9 are the same float32: trec_eval orders them by id descending
    rl = RankedList(("a", "b"), (1.0 + 1e-9, 1.0))
    assert break_ties(rl).ids == ("b", "a")
    assert break_ties(rl).scores == (1.0, 1.0 + 1e-9)  # scores travel with their ids
    assert ranked([("a", 1.0 + 1e-9), ("b", 1.0), ("c", 0.5)]).ids == ("b", "a", "c")
