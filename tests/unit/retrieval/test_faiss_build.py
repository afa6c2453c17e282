"""FAISS index builds: streamed batches answer like one exact search; `auto` picks the type by
size."""

import numpy as np

from rageval.retrieval.local.dense import FaissRetriever
from rageval.retrieval.local.faiss_build import ivf_nlist


def unit(n, dim, seed=0):
    x = np.random.default_rng(seed).standard_normal((n, dim), dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_streamed_indexes_answer_like_a_one_shot_exact_search():
    x, q = unit(3000, 16), unit(40, 16, seed=1)
    ids = [f"c{i}" for i in range(len(x))]
    want = np.argsort(-(q @ x.T), axis=1, kind="stable")[:, :5]
    for kind, extra in (("flat", {}), ("ivf", {"ivf_nlist": 20, "ivf_nprobe": 20})):
        r = FaissRetriever(index_type=kind, batch_size=700, progress=False, **extra)
        r.add_vectors(ids, x)
        assert r._index.ntotal == len(x)
        got = r.search_vectors(q, 5)
        assert [list(g.ids) for g in got] == [[ids[j] for j in row] for row in want]


def test_auto_picks_flat_below_the_threshold_and_the_configured_type_above():
    r = FaissRetriever(index_type="auto", auto_threshold=1000, auto_type="ivf", progress=False)
    assert (r.kind_for(999), r.kind_for(1000)) == ("flat", "ivf")
    assert FaissRetriever(index_type="auto", auto_threshold=10).kind_for(10) == "hnsw"
    assert ivf_nlist(10_000, {}) == 256 and ivf_nlist(1_000_000, {}) == 4000
