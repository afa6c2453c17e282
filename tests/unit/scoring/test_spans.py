"""Span, quote and token-budget metrics on hand-computed cases (docs/metrics.md)."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rageval.inputs.chunking import ChunkingSpec, chunk_documents
from rageval.scoring.budget import (
    budget_context,
    budget_metrics,
    depth_for,
    proportional_truncate,
    token_counts,
    tokenizer_truncate,
)
from rageval.scoring.relevance import Span
from rageval.scoring.spans import chunk_extents, span_metrics
from rageval.types import Chunk, Document


def _chunks(doc_id, bounds, text, tokens=None):
    return [
        Chunk(f"{doc_id}#{i}", doc_id, i, text[s:e], s, e, tokens or (e - s))
        for i, (s, e) in enumerate(bounds)
    ]


TEXT = "aaaa bbbb cccc dddd"  # 19 characters; the tokenizer skips the spaces between chunks
TILED = _chunks("d", [(0, 4), (5, 9), (10, 14), (15, 19)], TEXT, tokens=2)
EXT = chunk_extents(TILED, {"d": len(TEXT)})
QUOTE = {"q": [Span("d", 5, 14, 1)]}  # "bbbb cccc", across the boundary of chunks 1 and 2


def spans(ranking, ks=(1, 2, 4), spans=QUOTE, ext=EXT):
    out = span_metrics(["q"], [ranking], spans, ext, ks)
    return {k: v[0] for k, v in out.items()}


def test_chunk_extents_take_in_the_gap_before_the_next_chunk_so_the_chunks_tile_the_document():
    assert [EXT[c.id][1:] for c in TILED] == [(0, 5), (5, 10), (10, 15), (15, 19)]


def test_retrieving_every_chunk_that_holds_the_evidence_scores_exactly_one():
    m = spans(["d#1", "d#2"], ks=(2,))
    # without the gap the two chunks hold 8 of the quote's 9 characters (0.888...)
    assert m["evidence_recall@2"] == 1.0
    assert m["evidence_precision@2"] == 9 / 10  # the chunks stand for 10 characters
    assert m["evidence_iou@2"] == 9 / (9 + 10 - 9)
    assert m["evidence_precision_max"] == 9 / 10
    assert m["quote_recall@2"] == 1.0 and m["quote_ndcg@2"] == 1 / math.log2(3)


def test_a_quote_across_a_boundary_is_found_only_when_all_its_chunks_are_retrieved():
    m = spans(["d#1", "d#3", "d#2"], ks=(1, 2, 3))
    assert m["quote_recall@1"] == m["quote_recall@2"] == 0.0 and m["quote_recall@3"] == 1.0
    assert m["evidence_recall@1"] == 5 / 9 and m["evidence_recall@2"] == 5 / 9
    assert m["quote_ndcg@3"] == pytest.approx(1 / math.log2(4))
    assert m["evidence_precision@3"] == 9 / 14  # 5 + 4 + 5 characters retrieved


def test_overlapping_chunks_count_every_retrieved_character_duplicates_included():
    text = "aaaa bbbb cccc"
    chunks = _chunks("d", [(0, 9), (5, 14)], text)  # 'aaaa bbbb' and 'bbbb cccc' share 'bbbb'
    ext = chunk_extents(chunks, {"d": len(text)})
    assert [ext[c.id][1:] for c in chunks] == [(0, 9), (5, 14)]
    m = spans(["d#0", "d#1"], ks=(2,), spans={"q": [Span("d", 5, 9, 1)]}, ext=ext)
    assert m["evidence_recall@2"] == 1.0
    # 18 characters sent for 4 of evidence (merging the overlap first would say 4 / 14)
    assert m["evidence_precision@2"] == 4 / 18 and m["evidence_iou@2"] == 4 / 18
    # one quote, two chunks that each cover it: one quote found, not two relevant chunks
    assert m["quote_recall@2"] == 1.0 and m["quote_ndcg@2"] == 1.0
    assert m["evidence_precision_max"] == 4 / 18


def test_evidence_in_two_documents_counts_only_chunks_of_the_right_document():
    text = "xxxx yyyy"
    a, b = _chunks("a", [(0, 4), (5, 9)], text), _chunks("b", [(0, 4), (5, 9)], text)
    ext = chunk_extents(a + b, {"a": 9, "b": 9})
    ev = {"q": [Span("a", 0, 4, 2), Span("b", 5, 9, 1)]}
    m = spans(["b#0", "a#0", "b#1"], ks=(1, 2, 3), spans=ev, ext=ext)
    assert m["evidence_recall@1"] == 0.0  # b#0 holds the same offsets, in the other document
    assert m["evidence_recall@2"] == 4 / 8 and m["evidence_recall@3"] == 8 / 8
    # graded: the grade-2 quote found at rank 2, the grade-1 quote at rank 3
    ideal = 2 + 1 / math.log2(3)
    assert m["quote_ndcg@3"] == pytest.approx((2 / math.log2(3) + 1 / math.log2(4)) / ideal)
    assert m["quote_recall@2"] == 0.5


def test_duplicate_and_overlapping_quotes_count_their_characters_once():
    ev = {"q": [Span("d", 5, 14, 1), Span("d", 5, 14, 1), Span("d", 10, 14, 1)]}
    m = spans(["d#2"], ks=(1,), spans=ev)
    assert m["evidence_recall@1"] == 4 / 9  # chunk 2 covers 'cccc' of 'bbbb cccc'
    assert m["quote_recall@1"] == 1 / 2  # two distinct quotes, the short one found


def test_queries_without_evidence_get_nan_and_grade_zero_is_no_evidence():
    out = span_metrics(["q", "r"], [["d#1"], ["d#1"]], {"q": [Span("d", 5, 9, 0)]}, EXT, (1,))
    assert np.isnan(out["evidence_recall@1"]).all() and np.isnan(out["quote_recall@1"]).all()


def test_budget_context_keeps_whole_chunks_then_truncates_the_first_that_does_not_fit():
    n = {"a": 3, "b": 4, "c": 2}
    assert budget_context(["a", "b", "c"], 5, n) == [("a", None), ("b", 2)]
    assert budget_context(["a", "b", "c"], 7, n) == [("a", None), ("b", None)]
    assert budget_context(["a", "b", "c"], 100, n) == [("a", None), ("b", None), ("c", None)]
    assert budget_context(["b"], 2, n) == [("b", 2)]
    assert depth_for([5], [3, 1, 2, 9]) == 3  # 1 + 2 + 3 tokens reach 5
    assert depth_for([10_000], [1] * 5000, cap=1000) == 1000


def _budget(ranking, budgets, qrels=None, ev=QUOTE, level="chunk", chunks=TILED, ext=EXT):
    by_id = {c.id: c for c in chunks}
    doc_of = {c.id: c.doc_id for c in chunks}
    out = budget_metrics(
        ["q"],
        [ranking],
        chunks_by_id=by_id,
        extents=ext,
        spans=ev,
        qrels=qrels or {},
        unit_of=doc_of.get if level == "doc" else str,
        budgets=budgets,
    )
    return {k: v[0] for k, v in out.items()}


def test_budget_span_metrics_cut_the_last_chunk_where_the_budget_ends():
    m = _budget(["d#1", "d#2", "d#3"], (3, 4))
    # 3 tokens: d#1 whole (2 tokens), then 1 of d#2's 2 tokens: characters [10, 12)
    assert m["evidence_recall@3t"] == 7 / 9 and m["evidence_precision@3t"] == 7 / 7
    assert m["recall@3t"] == 0.0  # the quote is not whole in the context
    assert m["evidence_recall@4t"] == 1.0 and m["recall@4t"] == 1.0
    assert m["evidence_iou@4t"] == 9 / 10


def test_budget_recall_of_chunk_and_document_labels():
    qrels = {"q": {"d#2": 1, "d#3": 1, "d#0": 0}}
    m = _budget(["d#1", "d#2", "d#3"], (3, 6), qrels=qrels, ev={})
    assert m["recall@3t"] == 1 / 2 and m["recall@6t"] == 1.0  # truncated d#2 counts
    assert np.isnan(m["evidence_recall@3t"])
    text = "xxxx yyyy"
    chunks = _chunks("a", [(0, 4), (5, 9)], text, 2) + _chunks("b", [(0, 4)], text, 2)
    ext = chunk_extents(chunks, {"a": 9, "b": 9})
    m = _budget(
        ["a#0", "a#1", "b#0"],
        (4, 5),
        qrels={"q": {"b": 1, "a": 1}},
        ev={},
        level="doc",
        chunks=chunks,
        ext=ext,
    )
    assert m["recall@4t"] == 1 / 2 and m["recall@5t"] == 1.0


def test_tokens_at_k_sums_the_top_k_chunks():
    out = token_counts([["a", "b", "c"], []], {"a": 3, "b": 4, "c": 2}, (1, 2, 5))
    assert out["tokens@1"].tolist() == [3, 0] and out["tokens@5"].tolist() == [9, 0]


def test_truncation_with_the_model_tokenizer_ends_on_a_token_boundary(tokenizer):
    text = "Intro. The payments service is deployed to westeurope."
    (chunk,) = chunk_documents([Document("d", text)], ChunkingSpec(0), tokenizer)
    end = tokenizer_truncate(tokenizer)(chunk, 3)
    assert text[:end] == "Intro. The"
    assert tokenizer_truncate(tokenizer)(chunk, 10_000) == len(text)
    assert proportional_truncate(chunk, chunk.n_tokens) == chunk.end
    # an exact ceiling: 25 characters * 7 / 25 tokens is 7 characters, not 7.000000000000001 -> 8
    wide = Chunk("w", "d", 1, "z" * 25, 1, 26, 25)
    assert proportional_truncate(wide, 7) == 8 and proportional_truncate(wide, 0) == 1


def test_full_retrieval_scores_one_on_real_chunks_across_boundaries(tokenizer, mini):
    from rageval.inputs.corpus import load_corpus

    docs = load_corpus(mini / "corpus")
    doc = max(docs, key=lambda d: len(d.text))
    chunks = chunk_documents([doc], ChunkingSpec(8, 3), tokenizer)
    ext = chunk_extents(chunks, {doc.id: len(doc.text)})
    lo, hi = len(doc.text) // 4, len(doc.text) // 2
    ev = {"q": [Span(doc.id, lo, hi, 1)]}
    touching = [c.id for c in chunks if ext[c.id][2] > lo and ext[c.id][1] < hi]
    assert len(touching) > 2
    m = spans(touching, ks=(len(touching),), spans=ev, ext=ext)
    assert m[f"evidence_recall@{len(touching)}"] == 1.0
    assert m[f"quote_recall@{len(touching)}"] == 1.0
    assert m["evidence_precision_max"] == m[f"evidence_precision@{len(touching)}"] < 1.0


@st.composite
def _chunking(draw, n):
    cuts = sorted(draw(st.sets(st.integers(1, n - 1), max_size=8)))
    bounds = list(zip([0, *cuts], [*cuts, n], strict=True))
    return _chunks("d", bounds, "z" * n, tokens=None)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_more_evidence_within_the_budget_never_scores_lower(data):
    """The sweep's deciding metric (evidence_recall@Bt) is evidence characters in the context
    over evidence characters: brute-force that on random chunkings and rankings, and check the
    metric orders two chunkings as the evidence they send does."""
    n = 60
    lo = data.draw(st.integers(0, n - 2))
    hi = data.draw(st.integers(lo + 1, n))
    ev = {"q": [Span("d", lo, hi, 1)]}
    budget = data.draw(st.integers(1, 80))
    got = []
    for _ in range(2):
        chunks = data.draw(_chunking(n))
        ext = chunk_extents(chunks, {"d": n})
        ranking = data.draw(st.permutations([c.id for c in chunks]))
        m = _budget(list(ranking), (budget,), chunks=chunks, ext=ext, ev=ev)
        sent, used = set(), 0
        for cid in ranking:  # characters are tokens here: send while the budget lasts
            c = next(c for c in chunks if c.id == cid)
            take = min(c.end - c.start, budget - used)
            sent |= set(range(c.start, c.start + take))
            used += take
        covered = len(sent & set(range(lo, hi)))
        assert m[f"evidence_recall@{budget}t"] == pytest.approx(covered / (hi - lo), abs=1e-12)
        got.append((covered, m[f"evidence_recall@{budget}t"]))
    (ca, ma), (cb, mb) = got
    if ca > cb:
        assert ma > mb
    elif ca == cb:
        assert ma == mb


def test_new_metric_names_round_trip_through_metric_spec():
    from rageval.scoring.spec import MetricSpec, mlflow_key

    for name, key in [
        ("evidence_precision@5", "evidence_precision_at_5"),
        ("evidence_iou@1024t", "evidence_iou_at_1024t"),
        ("quote_recall@10", "quote_recall_at_10"),
        ("recall@512t", "recall_at_512t"),
        ("tokens@5", "tokens_at_5"),
    ]:
        spec = MetricSpec.parse(key)
        assert str(spec) == name and spec.mlflow_key == key
    assert not MetricSpec.parse("tokens@5").higher_is_better
    assert MetricSpec.parse("evidence_recall@1024t").higher_is_better
    assert mlflow_key("evidence_precision_max") == "evidence_precision_max"


def test_chunk_extents_as_columns_equal_the_dict_in_keys_values_and_order():
    """The run's extents (ChunkExtents: two integer arrays beside the chunks) are the dict
    chunk_extents gives: same keys, same extents (plain ints), same order; chunks out of their
    documents' order, or a repeated id, give that dict itself."""
    from rageval.scoring.spans import ChunkExtents, chunk_extents
    from rageval.types import Chunk

    def cut(doc, bounds):
        return [
            Chunk.of_document(f"{doc}{i}", doc, i, "x" * 99, s, e, 1)
            for i, (s, e) in enumerate(bounds)
        ]

    chunks = cut("a", [(2, 10), (8, 20), (25, 30)]) + cut("b", [(0, 5)]) + cut("c", [(3, 9)])
    lengths = {"a": 40, "b": 5}
    for chunks_ in (
        chunks,
        chunks[::-1],  # out of order
        chunks[:3] + chunks[3:4] + [Chunk.of_document("a9", "a", 9, "x" * 99, 31, 33, 1)],
        chunks + chunks[:1],  # a repeated id
        [],
    ):
        want = chunk_extents(chunks_, lengths)
        got = ChunkExtents(chunks_, lengths)
        assert dict(got) == want and list(got) == list(want) and len(got) == len(want)
        assert list(got.values()) == list(want.values()) == list(got.values())
        assert all(got[k] == want[k] and type(got[k][1]) is int for k in want)
        assert "nope" not in got and got.get("nope") is None
    assert ChunkExtents(chunks, lengths)._dict is None  # in order: held as columns
    assert ChunkExtents(chunks[::-1], lengths)._dict is not None
    assert ChunkExtents(chunks, lengths)["a0"] == ("a", 0, 10)
    assert ChunkExtents(chunks, lengths)["a2"] == ("a", 25, 40)
