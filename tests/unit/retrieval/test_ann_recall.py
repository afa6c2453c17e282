"""ann_recall@k: the share of the exact top k (a flat pass over the same vectors) an approximate
index returned; 1.0 for an exact index without the pass; nothing for non-vector runs."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.retrieval.local.dense import FaissRetriever
from rageval.retrieval.retry import RetryingRetriever
from rageval.run.measure import ann_recall
from rageval.types import Chunk

N, DIM = 2000, 32


class Vectors:
    """Fixed random unit vectors per text (documents) and per query; counts the passes."""

    dim = DIM
    fingerprint = "random-32"

    def __init__(self):
        rng = np.random.default_rng(5)
        self.docs = rng.standard_normal((N, DIM)).astype(np.float32)
        self.docs /= np.linalg.norm(self.docs, axis=1, keepdims=True)
        self.queries = rng.standard_normal((50, DIM)).astype(np.float32)
        self.queries /= np.linalg.norm(self.queries, axis=1, keepdims=True)
        self.document_calls = 0

    def encode_documents(self, texts):
        self.document_calls += 1
        return self.docs[[int(t) for t in texts]]

    def encode_queries(self, texts):
        return self.queries[[int(t[1:]) for t in texts]]


CHUNKS = [Chunk(f"c{i:05d}", "d", i, str(i), 0, 1, 1) for i in range(N)]
QUERIES = [f"q{i}" for i in range(50)]
KS = (1, 5, 10)


def run(index_type: str, **params):
    enc = Vectors()
    r = FaissRetriever(index_type=index_type, progress=False, **params)
    r.index(CHUNKS, enc)
    results = r.search(QUERIES, 10)
    calls = enc.document_calls
    out = ann_recall(RetryingRetriever(r), CHUNKS, QUERIES, results, enc, KS)
    return out, enc.document_calls - calls


def test_an_exact_index_reports_one_without_the_extra_pass():
    out, passes = run("flat")
    assert passes == 0 and all((out[f"ann_recall@{k}"] == 1.0).all() for k in KS)


@pytest.mark.parametrize(
    ("index_type", "params"),
    [
        ("hnsw", {"hnsw_m": 4, "hnsw_ef_construction": 8, "hnsw_ef_search": 1}),
        ("ivf", {"ivf_nlist": 40, "ivf_nprobe": 1}),
        ("ivfpq", {"ivf_nlist": 40, "ivf_nprobe": 1, "ivfpq_bits": 6}),
    ],
)
def test_an_approximate_index_gives_up_recall_and_says_how_much(index_type, params):
    out, passes = run(index_type, **params)
    assert passes == 1
    mean = float(out["ann_recall@10"].mean())
    assert 0.0 < mean < 0.95
    generous = {
        "hnsw": {"hnsw_ef_search": 256},
        "ivf": {"ivf_nlist": 40, "ivf_nprobe": 40},
        # random vectors are hard to code: 16 codes and 20 x 10 candidates re-scored
        "ivfpq": {
            **{"ivf_nlist": 40, "ivf_nprobe": 40},
            **{"ivfpq_m": 16, "ivfpq_bits": 6, "ivfpq_refine": 20},
        },
    }
    full, _ = run(index_type, **generous[index_type])
    assert float(full["ann_recall@10"].mean()) > max(0.97, mean)


def test_not_measured_outside_vector_runs():
    class Lexical:
        mode = "bm25"

        def approximate(self):
            return True

    assert ann_recall(Lexical(), CHUNKS, QUERIES, [], Vectors(), KS) == {}
