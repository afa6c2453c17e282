"""QdrantRetriever's rankings against the real qdrant-client in embedded mode (``:memory:``).

Oracles are independent of the backend: exact inner products in numpy for vector mode, bm25s
(``method="lucene"``) for BM25, and RRF written out by hand for hybrid.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("qdrant_client")

import bm25s  # noqa: E402
import Stemmer  # noqa: E402
from qdrant_client import models  # noqa: E402
from qdrant_fixture import HashEncoder, make_chunks, make_corpus  # noqa: E402

from rageval.retrieval.qdrant import retriever as qmod  # noqa: E402
from rageval.retrieval.qdrant.retriever import QdrantRetriever  # noqa: E402

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def corpus():
    return make_corpus()


def bm25s_scores(texts, queries, k1=1.5, b=0.75):
    """(queries x docs) Lucene BM25 from bm25s, tokenised the way the retriever tokenises."""
    stem = Stemmer.Stemmer("english")
    kw = {"stopwords": "english", "stemmer": stem, "show_progress": False}
    model = bm25s.BM25(method="lucene", k1=k1, b=b)
    model.index(bm25s.tokenize(texts, **kw), show_progress=False)
    tokens = bm25s.tokenize(queries, return_ids=False, **kw)
    return np.stack([model.get_scores(t) for t in tokens])


def by_score_then_id_desc(scores):
    """The project's tie rule (trec_eval's): score descending, equal scores by id descending."""
    return sorted(sorted(scores.items(), reverse=True), key=lambda kv: -kv[1])


def test_vector_mode_equals_exact_numpy_search(corpus):
    chunks, queries = corpus
    enc, depth = HashEncoder(), 10
    docs = enc.encode_documents([c.text for c in chunks])
    with QdrantRetriever(mode="vector", exact=True, upload_batch_size=7) as r:
        r.index(chunks, enc)
        got = r.search(queries, depth)
    for q, result in zip(enc.encode_queries(queries), got, strict=True):
        scores = docs @ q
        order = np.argsort(-scores, kind="stable")[: depth + 1]
        assert len(set(scores[order].tolist())) == depth + 1, "ties in test data"
        assert result.ids == tuple(chunks[i].id for i in order[:depth])
        np.testing.assert_allclose(result.scores, scores[order[:depth]], rtol=0, atol=1e-6)


def test_bm25_mode_ranks_exact_lexical_match_first():
    chunks = make_chunks(
        [
            "Employees get twenty days of annual leave.",
            "The payments service is deployed to three regions.",
            "Contractors get ten days of parental leave per year.",
            "Parental leave requests go through the HR portal.",
        ]
    )
    with QdrantRetriever(mode="bm25") as r:
        r.index(chunks, None)
        (got,) = r.search(["parental leave for contractors"], 10)
    assert got.ids[0] == "c002"
    assert "c001" not in got.ids  # no shared term: sparse search does not return it
    assert list(got.scores) == sorted(got.scores, reverse=True)


def test_bm25_scores_are_lucene_bm25_times_k1_plus_1(corpus):
    chunks, queries = corpus
    k1, b = 1.2, 0.6
    expected = bm25s_scores([c.text for c in chunks], queries, k1, b)
    with QdrantRetriever(mode="bm25", k1=k1, b=b) as r:
        r.index(chunks, None)
        got = r.search(queries, len(chunks))
    for row, result in zip(expected, got, strict=True):
        want = {chunks[i].id: (k1 + 1) * float(row[i]) for i in np.flatnonzero(row > 0)}
        got_scores = dict(zip(result.ids, result.scores, strict=True))
        assert got_scores == pytest.approx(want, rel=1e-5)
        assert result.ids == tuple(i for i, _ in by_score_then_id_desc(got_scores))  # tie rule


def rrf_by_hand(rankings, k, depth):
    """Qdrant's RRF written out: 1 / (k + 0-based position), then the tie rule, then the cut."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for position, chunk_id in enumerate(ranking):
            fused[chunk_id] = fused.get(chunk_id, 0.0) + 1.0 / (k + position)
    return by_score_then_id_desc(fused)[:depth]


def qdrant_rankings(r, chunks, queries, limit):
    """The dense and sparse rankings as Qdrant itself orders them, equal scores included."""

    def ids(query, using):
        points = r._client.query_points(r.collection, query=query, using=using, limit=limit).points
        return [chunks[p.id].id for p in points]

    dense = HashEncoder().encode_queries(queries)
    sparse = [models.SparseVector(indices=i, values=v) for i, v in r._bm25.queries(queries)]
    return [(ids(d.tolist(), "dense"), ids(s, "bm25")) for d, s in zip(dense, sparse, strict=True)]


# rrf_k is rageval's 1 / (rrf_k + rank); Qdrant's own k counts positions from 0: k = rrf_k + 1.
@pytest.mark.parametrize(("rrf_k", "k", "pool", "depth"), [(None, 2, 6, 4), (60, 61, 3, 8)])
def test_hybrid_fused_by_qdrant_equals_hand_computed_rrf(corpus, rrf_k, k, pool, depth):
    chunks, queries = corpus
    with QdrantRetriever(mode="hybrid", candidate_depth=pool, rrf_k=rrf_k) as r:
        assert not r._fuse_here
        r.index(chunks, HashEncoder())
        got = r.search(queries, depth)
        rankings = qdrant_rankings(r, chunks, queries, max(pool, depth))
    for ranking_pair, result in zip(rankings, got, strict=True):
        want = rrf_by_hand(ranking_pair, k, depth)
        assert result.ids == tuple(i for i, _ in want)
        assert result.scores == pytest.approx([s for _, s in want])
    assert got[0].scores[0] > 1 / k  # the lists overlap at the top: a real fusion took place


@pytest.mark.parametrize(
    ("how", "kwargs", "k"),
    [
        ("asked", {"fuse_in_qdrant": False, "rrf_k": 60}, 61),
        ("k is not an integer", {"rrf_k": 59.5}, 60.5),
        ("old client", {}, 2),
    ],
)
def test_hybrid_fused_by_rageval_equals_hand_computed_rrf(corpus, monkeypatch, how, kwargs, k):
    """rageval fuses the vector and bm25 lists as they come back (ties by the rule)."""
    chunks, queries = corpus
    enc, pool, depth = HashEncoder(), 6, 8
    lists = []
    for mode in ("vector", "bm25"):
        with QdrantRetriever(mode=mode) as r:
            r.index(chunks, enc)
            lists.append(r.search(queries, max(pool, depth)))
    if how == "old client":
        monkeypatch.setattr(qmod, "_qdrant_fusion", lambda *args: None)
    with QdrantRetriever(mode="hybrid", candidate_depth=pool, **kwargs) as r:
        assert r._fuse_here
        r.index(chunks, enc)
        got = r.search(queries, depth)
    for dense, sparse, result in zip(*lists, got, strict=True):
        want = rrf_by_hand([dense.ids, sparse.ids], k, depth)
        assert result.ids == tuple(i for i, _ in want)
        assert result.scores == pytest.approx([s for _, s in want])


def test_weighted_fusion_equals_hand_computed_min_max(corpus):
    chunks, queries = corpus
    enc, weights = HashEncoder(), (0.7, 0.3)
    lists = []
    for mode in ("vector", "bm25"):
        with QdrantRetriever(mode=mode) as r:
            r.index(chunks, enc)
            lists.append(r.search(queries, 10))
    with QdrantRetriever(
        mode="hybrid", fusion="weighted", weights=weights, candidate_depth=10
    ) as r:
        r.index(chunks, enc)
        got = r.search(queries, 5)
    for dense, sparse, result in zip(*lists, got, strict=True):
        fused: dict[str, float] = {}
        for ranked, w in zip((dense, sparse), weights, strict=True):
            lo, hi = min(ranked.scores), max(ranked.scores)
            for chunk_id, s in zip(ranked.ids, ranked.scores, strict=True):
                fused[chunk_id] = fused.get(chunk_id, 0.0) + w * (s - lo) / (hi - lo)
        want = by_score_then_id_desc(fused)[:5]
        assert result.ids == tuple(i for i, _ in want)
        assert result.scores == pytest.approx([s for _, s in want])


def test_server_requests_carry_search_params(corpus):
    """Server mode is not run here; this checks the requests it would send validate and work."""
    chunks, queries = corpus
    with QdrantRetriever(mode="hybrid", hnsw_ef=64) as r:
        r.index(chunks, HashEncoder())
        embedded = r.search(queries, 5)
        sent = []
        query_batch_points = r._client.query_batch_points
        r._client.query_batch_points = lambda name, batch: (
            sent.extend(batch) or query_batch_points(name, batch)
        )
        r._embedded = False
        assert r.search(queries, 5) == embedded
    (dense_leg, _) = sent[0].prefetch
    assert dense_leg.params.exact is True and dense_leg.params.hnsw_ef == 64


def test_hybrid_query_without_known_terms_uses_dense_list_alone(corpus):
    chunks, _ = corpus
    with QdrantRetriever(mode="hybrid") as r:
        r.index(chunks, HashEncoder())
        (hybrid,) = r.search(["the and of zzz"], 4)
    assert hybrid.scores == pytest.approx([1 / 2, 1 / 3, 1 / 4, 1 / 5])
    with QdrantRetriever(mode="bm25") as r:
        r.index(chunks, None)
        assert r.search(["the and of zzz"], 4)[0].ids == ()


def test_dbsf_fusion_runs(corpus):
    chunks, queries = corpus
    with QdrantRetriever(mode="hybrid", fusion="dbsf") as r:
        r.index(chunks, HashEncoder())
        got = r.search(queries, 5)
    assert all(len(g.ids) == 5 and list(g.scores) == sorted(g.scores, reverse=True) for g in got)
