"""Integration: the real packaged model, FAISS and bm25s on the fixture corpus."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from rageval.embedding import SentenceTransformerEncoder
from rageval.embedding.guard import check_query_model
from rageval.errors import IndexMismatchError
from rageval.inputs.chunking import ChunkingSpec, chunk_documents
from rageval.inputs.corpus import load_corpus
from rageval.retrieval.local.dense import FaissRetriever
from rageval.retrieval.local.factory import local_retriever
from rageval.retrieval.local.lexical import BM25Retriever

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def chunks(mini, tokenizer):
    return chunk_documents(load_corpus(mini / "corpus"), ChunkingSpec(48, 8), tokenizer)


@pytest.fixture(scope="module")
def encoder(shared_cache):
    return SentenceTransformerEncoder(cache_dir=str(shared_cache), progress=False)


QUERIES = [
    "Which regions is the payments service deployed to?",
    "hotel limit in Amsterdam",
    "sick note",
]


def test_dense_equals_a_minimal_exact_pipeline(chunks, encoder, model_dir):
    from sentence_transformers import SentenceTransformer

    r = FaissRetriever()
    r.index(chunks, encoder)
    got = r.search(QUERIES, 5)
    model = SentenceTransformer(model_dir, device="cpu")
    doc = model.encode([c.text for c in chunks], normalize_embeddings=True)
    qv = model.encode(QUERIES, normalize_embeddings=True)
    sims = qv @ doc.T
    for i, rl in enumerate(got):
        order = np.argsort(-sims[i], kind="stable")[:5]
        assert list(rl.ids) == [chunks[j].id for j in order]
        assert np.allclose(rl.scores, sims[i][order], atol=1e-5)


def test_approximate_indexes_agree_with_exact_on_a_small_corpus(chunks, encoder, tmp_path):
    exact = FaissRetriever()
    exact.index(chunks, encoder)
    want = exact.search(QUERIES, 3)
    for kind, extra in (
        ("hnsw", {}),
        ("ivf", {"ivf_nlist": 2, "ivf_nprobe": 2}),
        # 16 codes of 4 bits a vector, every candidate re-scored from the embedding cache
        ("ivfpq", {"ivf_nlist": 2, "ivf_nprobe": 2, "ivfpq_bits": 4, "ivfpq_refine": 100}),
    ):
        r = FaissRetriever(index_type=kind, cache_dir=str(tmp_path), **extra)
        r.index(chunks, encoder)
        assert [x.ids for x in r.search(QUERIES, 3)] == [x.ids for x in want]
        assert list((tmp_path / "indexes").glob(f"faiss-{kind}-*/index.faiss"))


def test_bm25_ranks_the_lexical_match_first_and_drops_non_matches(chunks, tmp_path):
    r = BM25Retriever(cache_dir=str(tmp_path))
    r.index(chunks)
    out = r.search(["Spendwise receipt", "zzzzqqq"], 10)
    top = next(c for c in chunks if c.id == out[0].ids[0])
    assert "Spendwise" in top.text
    assert out[1].ids == ()
    # a second build loads the cached index and answers the same
    again = BM25Retriever(cache_dir=str(tmp_path))
    again.index(chunks)
    assert again.search(["Spendwise receipt"], 10)[0] == out[0]


def test_hybrid_mode_fuses_vector_and_bm25(chunks, encoder):
    r = local_retriever("hybrid", candidate_depth=20)
    r.index(chunks, encoder)
    dense = r.dense.search(QUERIES, 20)
    lexical = r.lexical.search(QUERIES, 20)
    from rageval.retrieval.fusion import rrf

    assert r.search(QUERIES, 5) == [rrf([a, b], 60, 5) for a, b in zip(dense, lexical, strict=True)]


def test_fully_cached_run_makes_no_model_call_and_never_imports_sentence_transformers(
    chunks, shared_cache
):
    texts = [c.text for c in chunks]
    SentenceTransformerEncoder(cache_dir=str(shared_cache), progress=False).encode_documents(texts)
    code = f"""
import json, sys
from rageval.embedding import SentenceTransformerEncoder
e = SentenceTransformerEncoder(cache_dir={str(shared_cache)!r}, progress=False)
v = e.encode_documents(json.loads(sys.stdin.read()))
print(json.dumps({{"encoded": e.texts_encoded, "loaded": e.model_loaded,
                  "st": "sentence_transformers" in sys.modules, "torch": "torch" in sys.modules,
                  "shape": list(v.shape)}}))
"""
    out = subprocess.run(
        [sys.executable, "-c", code],
        input=json.dumps(texts),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {
        "encoded": 0,
        "loaded": False,
        "st": False,
        "torch": False,
        "shape": [len(texts), 384],
    }


def test_each_distinct_text_is_embedded_once(tmp_path):
    e = SentenceTransformerEncoder(cache_dir=str(tmp_path), progress=False)
    v = e.encode_documents(["alpha", "beta", "alpha", "beta", "gamma"])
    assert e.texts_encoded == 3
    assert np.array_equal(v[0], v[2]) and np.array_equal(v[1], v[3])
    e.encode_queries(["alpha", "delta"])
    assert e.texts_encoded == 4


def test_a_query_model_that_differs_from_the_index_is_refused(tmp_path, model_dir, shared_cache):
    other = tmp_path / "other-model"
    shutil.copytree(model_dir, other)
    cfg = other / "sentence_bert_config.json"
    cfg.write_text(json.dumps({"max_seq_length": 128, "do_lower_case": False}))
    a = SentenceTransformerEncoder(cache_dir=str(shared_cache), progress=False)
    b = SentenceTransformerEncoder(model=str(other), cache_dir=str(shared_cache), progress=False)
    assert a.fingerprint != b.fingerprint
    with pytest.raises(IndexMismatchError, match="different model than the index"):
        check_query_model(a, b, allow=False)
    assert check_query_model(a, a, allow=False) is a
    with pytest.warns(UserWarning):
        paired = check_query_model(a, b, allow=True)
    assert paired.fingerprint == a.fingerprint


def ranking(path):
    """run.trec as {query: [(chunk id, score), ...]} in rank order."""
    out: dict[str, list[tuple[str, float]]] = {}
    for line in path.read_text().splitlines():
        qid, _, doc, _, score, _ = line.split()
        out.setdefault(qid, []).append((doc, float(score)))
    return out


def test_a_flat_index_over_its_memory_limit_is_scanned_and_ranks_the_same(
    mini, shared_cache, tmp_path
):
    from mini_runs import run_mini

    held = run_mini(mini, shared_cache, tmp_path, "held", "search=vector")
    scanned = run_mini(
        mini, shared_cache, tmp_path, "scanned", "search=vector", "backend.faiss.flat_memory_mb=0"
    )
    assert scanned["costs"]["texts_embedded"] == 0  # the scan reads the cache: nothing re-embedded
    # one batch (the whole mini corpus: fewer chunks than batch_size) instead of an index
    assert scanned["costs"]["index_disk_bytes"] == held["costs"]["index_disk_bytes"] > 0
    a, b = ranking(tmp_path / "held" / "run.trec"), ranking(tmp_path / "scanned" / "run.trec")
    assert a.keys() == b.keys()
    for qid, want in a.items():
        got = b[qid]
        assert len(got) == len(want)
        assert np.allclose([s for _, s in got], [s for _, s in want], atol=1e-6), qid
        # ids where no neighbour is within 1e-5 (the last: its successor is not in the file)
        for i, (doc, score) in enumerate(want[:-1]):
            near = [s for _, s in want[max(0, i - 1) : i + 2]]
            if sum(abs(s - score) <= 1e-5 for s in near) == 1:
                assert got[i][0] == doc, (qid, i)
