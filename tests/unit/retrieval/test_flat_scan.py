"""A flat index larger than ``flat_memory_mb`` is never held: its vectors stay in the embedding
cache (or a memory-mapped array) and each search scans them a batch at a time. Same ranking as
the flat index held in memory, nothing embedded twice, one batch read at a time."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.embedding.cache import EmbeddingCache, text_key
from rageval.errors import ConfigError
from rageval.retrieval.local.dense import FaissRetriever
from rageval.types import Chunk

N, DIM, K, BATCH = 3000, 32, 10, 700
_rng = np.random.default_rng(11)
DOCS = _rng.standard_normal((N, DIM)).astype(np.float32)
DOCS /= np.linalg.norm(DOCS, axis=1, keepdims=True)
QV = _rng.standard_normal((60, DIM)).astype(np.float32)
QV /= np.linalg.norm(QV, axis=1, keepdims=True)
CHUNKS = [Chunk(f"c{i:05d}", "d", i, str(i), 0, 1, 1) for i in range(N)]
QUERIES = [f"q{i}" for i in range(len(QV))]


class CachedVectors:
    """Fixed random unit vectors through a real embedding cache, filled ahead like rageval's
    encoder (``prefill``, which reads nothing back): counts the texts it embeds (cache misses),
    the vectors it returns and the largest batch it was asked for."""

    fingerprint, dim = "random-32", DIM

    def __init__(self, root):
        self.cache = EmbeddingCache(root, self.fingerprint)
        self.embedded = self.returned = self.widest = 0

    def _embed_missing(self, texts, keys) -> list[int]:
        missing = self.cache.missing(keys)
        if missing:
            rows = DOCS[[int(texts[i]) for i in missing]]
            self.cache.put([keys[i] for i in missing], rows)
            self.embedded += len(missing)
        return missing

    def prefill(self, documents, queries=()):
        return len(self._embed_missing(documents, [text_key(t) for t in documents]))

    def encode_documents(self, texts):
        self.widest = max(self.widest, len(texts))
        self.returned += len(texts)
        keys = [text_key(t) for t in texts]
        self._embed_missing(texts, keys)
        cached, missing = self.cache.lookup(keys)
        assert not missing
        return cached

    def encode_queries(self, texts):
        return QV[[int(t[1:]) for t in texts]]


class Uncached(CachedVectors):
    """The same vectors from an encoder that keeps none (a plug-in without a cache)."""

    prefill = None

    def __init__(self):
        self.embedded = self.returned = self.widest = 0

    def encode_documents(self, texts):
        self.widest = max(self.widest, len(texts))
        self.embedded += len(texts)
        return DOCS[[int(t) for t in texts]]


def truth(depth: int) -> tuple[np.ndarray, np.ndarray]:
    scores = QV @ DOCS.T
    order = np.argsort(-scores, axis=1, kind="stable")[:, :depth]
    return np.take_along_axis(scores, order, axis=1), order


def assert_same_ranking(got, k: int = K) -> None:
    """Ids equal to the exact ranking for every query whose top k+1 scores are more than 1e-5
    apart (closer ones may swap between two float paths); scores equal to 1e-6."""
    scores, order = truth(k + 1)
    separated = np.diff(scores, axis=1).min(axis=1) < -1e-5
    assert separated.mean() > 0.9  # the comparison covers nearly every query
    for q, ranked in enumerate(got):
        assert np.allclose(ranked.scores, scores[q, :k], atol=1e-6)
        if separated[q]:
            assert list(ranked.ids) == [CHUNKS[j].id for j in order[q, :k]]


def test_a_large_flat_index_is_scanned_from_the_cache_with_the_same_ranking(tmp_path):
    enc = CachedVectors(tmp_path)
    r = FaissRetriever(flat_memory_mb=0, batch_size=BATCH, progress=False)
    r.index(CHUNKS, enc)
    assert r.scanned and r._index is None  # no index holds the vectors
    assert enc.embedded == N  # the fill embedded (and cached) each text once
    assert enc.returned == BATCH  # and read back only the first batch (the vectors' width)
    got = r.search(QUERIES, K)
    assert enc.embedded == N  # the scan read them back: nothing embedded again
    assert enc.returned == BATCH + N  # every vector read once by the search
    assert enc.widest <= BATCH  # one batch at a time, never the corpus
    assert_same_ranking(got)
    assert r.index_bytes() == {"disk": N * DIM * 4, "memory": BATCH * DIM * 4}


def test_below_the_limit_the_flat_index_is_held_and_ranks_the_same(tmp_path):
    enc = CachedVectors(tmp_path)
    r = FaissRetriever(batch_size=BATCH, progress=False)  # 512 MiB: far above 375 KiB
    r.index(CHUNKS, enc)
    assert not r.scanned and r._index is not None
    assert_same_ranking(r.search(QUERIES, K))
    assert r.index_bytes()["memory"] == N * DIM * 4


def test_the_limit_is_compared_with_the_vectors_bytes(tmp_path):
    just_under = N * DIM * 4 / 2**20  # MiB: not more than the limit, so held
    held = FaissRetriever(flat_memory_mb=just_under, batch_size=BATCH, progress=False)
    held.index(CHUNKS, CachedVectors(tmp_path / "a"))
    scanned = FaissRetriever(flat_memory_mb=just_under * 0.99, batch_size=BATCH, progress=False)
    scanned.index(CHUNKS, CachedVectors(tmp_path / "b"))
    assert (held.scanned, scanned.scanned) == (False, True)


def test_an_encoder_without_a_cache_keeps_the_index_in_memory():
    # scanning would embed the corpus again at every search: held instead, whatever the limit
    enc = Uncached()
    r = FaissRetriever(flat_memory_mb=0, batch_size=BATCH, progress=False)
    r.index(CHUNKS, enc)
    assert not r.scanned
    assert_same_ranking(r.search(QUERIES, K))
    assert enc.embedded == N


def test_a_memory_mapped_array_is_scanned_too(tmp_path):
    path = tmp_path / "vectors.npy"
    np.save(path, DOCS)
    r = FaissRetriever(flat_memory_mb=0, batch_size=BATCH, progress=False)
    r.add_vectors([c.id for c in CHUNKS], np.load(path, mmap_mode="r"))
    assert r.scanned
    assert_same_ranking(r.search_vectors(QV, K))


def test_a_depth_beyond_the_batch_and_the_corpus(tmp_path):
    r = FaissRetriever(flat_memory_mb=0, batch_size=BATCH, progress=False)
    r.index(CHUNKS[:900], CachedVectors(tmp_path))  # two batches: 700 and 200 rows
    got = r.search(QUERIES[:3], 5000)
    assert [len(g.ids) for g in got] == [900] * 3
    for g in got:
        assert len(set(g.ids)) == 900 and list(g.scores) == sorted(g.scores, reverse=True)


@pytest.mark.parametrize("value", [-1, "big", True, float("nan")])
def test_a_bad_limit_is_refused_naming_the_key(value):
    with pytest.raises(ConfigError, match="backend.faiss.flat_memory_mb"):
        FaissRetriever(flat_memory_mb=value)
