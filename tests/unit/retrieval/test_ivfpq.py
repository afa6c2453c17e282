"""IVF-PQ: a compressed FAISS index (codes instead of vectors), streamed and cached like IVF, with
an optional exact re-scoring of its candidates from the embeddings it was built from."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.errors import ConfigError
from rageval.retrieval.local.dense import FaissRetriever
from rageval.retrieval.local.faiss_build import pq_m, train_rows


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Unit vectors around 40 random centers (noise 0.15): neighbours sit in the same cluster."""
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((40, dim)).astype(np.float32)
    x = centers[rng.integers(0, 40, n)] + 0.15 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


X = clustered(4000, 32)
_rng = np.random.default_rng(1)
Q = X[_rng.integers(0, len(X), 200)] + 0.05 * _rng.standard_normal((200, 32)).astype(np.float32)
Q /= np.linalg.norm(Q, axis=1, keepdims=True)
IDS = [f"c{i}" for i in range(len(X))]
# 16 lists, 4 searched; 64 codes a sub-quantizer (6 bits: trains in a second, where 8 takes ~15)
LISTS = {"ivf_nlist": 16, "ivf_nprobe": 4, "ivfpq_bits": 6}


def build(vectors=X, **params) -> FaissRetriever:
    r = FaissRetriever(index_type="ivfpq", progress=False, **{**LISTS, **params})
    r.add_vectors(IDS[: len(vectors)], vectors, fingerprint="fp")
    return r


def recall_against_flat(r: FaissRetriever, k: int = 10) -> float:
    exact = np.argsort(-(Q @ X.T), axis=1, kind="stable")[:, :k]
    got = r.search_vectors(Q, k)
    hits = [len(set(g.ids) & {IDS[j] for j in row}) / k for g, row in zip(got, exact, strict=True)]
    return float(np.mean(hits))


def test_codes_replace_the_vectors_and_recall_holds_against_flat():
    plain = build(ivfpq_m=16)  # 16 codes of 6 bits: 12 bytes a vector against 128 for flat
    # the codes and each vector's id (8 bytes), and the coarse quantizer's 16 centroids
    assert plain.index_bytes()["memory"] == len(X) * (12 + 8) + 16 * 32 * 4
    assert plain.approximate() and plain.built_type == "ivfpq"
    assert recall_against_flat(plain) >= 0.2  # 0.27 measured
    # re-scoring 10 x 10 candidates per query exactly: flat's top 10 nearly always, exact scores
    refined = build(ivfpq_m=8, ivfpq_refine=10)
    assert recall_against_flat(refined) >= 0.93  # 0.97 measured; 0.14 without re-scoring
    for row, got in zip(Q @ X.T, refined.search_vectors(Q, 10), strict=True):
        assert np.allclose(got.scores, row[[int(i[1:]) for i in got.ids]], atol=1e-5)
        assert list(got.scores) == sorted(got.scores, reverse=True)


def test_streamed_batches_build_the_same_index_as_one_batch_and_builds_repeat():
    import faiss

    one = build(batch_size=len(X), ivfpq_m=8)
    streamed = build(batch_size=700, ivfpq_m=8)
    again = build(batch_size=700, ivfpq_m=8)
    data = [faiss.serialize_index(r._index).tobytes() for r in (one, streamed, again)]
    assert data[0] == data[1] == data[2]  # seeded k-means, the same sample, the same codes


def test_re_scoring_reads_a_memory_mapped_store(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, X)
    mapped = build(np.load(path, mmap_mode="r"), ivfpq_m=8, ivfpq_refine=10)
    in_memory = build(ivfpq_m=8, ivfpq_refine=10)
    assert mapped.search_vectors(Q, 10) == in_memory.search_vectors(Q, 10)


def test_the_cached_index_is_keyed_by_every_setting_and_read_back(tmp_path):
    def key(kind="ivfpq", **params):
        r = FaissRetriever(index_type=kind, cache_dir=str(tmp_path), progress=False, **params)
        r.ids = IDS
        return r._cache_path(kind, "fp").name

    base = key()
    changed = [
        {"ivfpq_m": 8},
        {"ivfpq_bits": 5},
        {"ivfpq_refine": 4},
        {"ivf_nlist": 64},
        {"ivf_nprobe": 8},
        {"ivf_train_size": 1000},
    ]
    keys = [key(**c) for c in changed]
    assert len({base, *keys}) == len(changed) + 1
    assert all(k.startswith("faiss-ivfpq-") for k in keys)
    # other index types do not read the IVF-PQ settings, and their keys do not carry them
    assert key("ivf", ivfpq_m=8) == key("ivf") and key("hnsw", ivfpq_bits=4) == key("hnsw")

    first = FaissRetriever(index_type="ivfpq", cache_dir=str(tmp_path), progress=False, **LISTS)
    assert first.params["ivfpq_m"] is None  # 32 / 8 = 4 codes
    first.add_vectors(IDS, X, fingerprint="fp")
    assert not first.loaded_from_cache
    assert list((tmp_path / "indexes").glob("faiss-ivfpq-*/index.faiss"))
    cached = FaissRetriever(index_type="ivfpq", cache_dir=str(tmp_path), progress=False, **LISTS)
    cached.add_vectors(IDS, X, fingerprint="fp")
    assert cached.loaded_from_cache and cached._index.nprobe == 4
    assert cached.search_vectors(Q, 5) == first.search_vectors(Q, 5)


def test_auto_may_pick_ivfpq_and_the_sample_covers_the_codes():
    r = FaissRetriever(index_type="auto", auto_threshold=1000, auto_type="ivfpq")
    assert (r.kind_for(999), r.kind_for(1000)) == ("flat", "ivfpq")
    # 40 vectors per code of a sub-quantizer (256 at 8 bits) even when there are few lists
    assert len(train_rows(100_000, {"ivf_nlist": 10, "ivfpq_bits": 8}, "ivfpq")) == 10_240
    assert len(train_rows(100_000, {"ivf_nlist": 10}, "ivf")) == 400
    assert pq_m(384, {}) == 48 and pq_m(768, {}) == 96 and pq_m(100, {}) == 10
    assert pq_m(384, {"ivfpq_m": 96}) == 96


def test_a_sub_quantizer_count_that_does_not_divide_the_dimension_is_refused():
    with pytest.raises(ConfigError, match=r"ivfpq_m must divide the embedding dimension \(32\)"):
        build(ivfpq_m=5)
    assert ConfigError.exit_code == 2


@pytest.mark.parametrize(
    ("params", "key"),
    [
        ({"ivfpq_m": 0}, "ivfpq_m"),
        ({"ivfpq_bits": 0}, "ivfpq_bits"),
        ({"ivfpq_bits": 17}, "ivfpq_bits"),
        ({"ivfpq_refine": -1}, "ivfpq_refine"),
        ({"auto_type": "pq"}, "auto_type"),
    ],
)
def test_bad_settings_are_refused_before_any_work(params, key):
    with pytest.raises(ConfigError, match=rf"backend\.faiss\.{key}"):
        FaissRetriever(index_type="ivfpq", **params)


def test_too_few_chunks_to_train_the_codes_is_a_clear_error():
    with pytest.raises(ConfigError, match=r"needs at least that many chunks, got 200"):
        build(X[:200], ivfpq_m=8, ivfpq_bits=8)
    small = build(X[:200], ivfpq_m=8, ivfpq_bits=4, ivf_nlist=2)  # 16 codes: 200 chunks do
    assert len(small.search_vectors(Q, 3)[0].ids) == 3


def test_the_exact_reference_is_a_batched_scan_of_the_embeddings():
    # ann_recall@k compares with this: a flat pass, batch_size rows at a time, not the whole corpus
    class Queries:
        fingerprint, dim = "fp", 32

        def encode_queries(self, texts):
            return Q[[int(t) for t in texts]]

    r = build(ivfpq_m=8, batch_size=700)
    r.encoder = Queries()
    got = r.exact_search([str(i) for i in range(len(Q))], 10)
    want = np.argsort(-(Q @ X.T), axis=1, kind="stable")[:, :10]
    assert [set(g.ids) for g in got] == [{IDS[j] for j in row} for row in want]
    flat = FaissRetriever(progress=False)
    flat.add_vectors(IDS, X)
    assert flat.exact_search(["0"], 10) is None  # exact already: nothing to compare with
