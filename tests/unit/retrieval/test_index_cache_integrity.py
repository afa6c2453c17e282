"""Cached indexes (FAISS HNSW, IVF and IVF-PQ, BM25) are verified against the sha256 written with
them: a truncated, overwritten (random bytes, or another index of the same size) or unreadable
cache is rebuilt with a warning naming it, and the rebuilt index searches as a clean build does."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from rageval.types import Chunk

N, DIM = 300, 16


def _vectors(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).standard_normal((N, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


IDS = [f"d{i}" for i in range(N)]
PARAMS = {
    "hnsw": {},
    "ivf": {"ivf_nlist": 4, "ivf_nprobe": 4},
    "ivfpq": {"ivf_nlist": 4, "ivf_nprobe": 4, "ivfpq_bits": 4, "ivfpq_refine": 2},
}


def _faiss(kind: str, cache: Path, vectors: np.ndarray):
    from rageval.retrieval.local.dense import FaissRetriever

    r = FaissRetriever(index_type=kind, cache_dir=str(cache), progress=False, **PARAMS[kind])
    r.add_vectors(IDS, vectors, fingerprint="fp")
    return r


def _faiss_results(r) -> list[list[str]]:
    return [x.ids for x in r.search_vectors(_vectors(0)[:40], 5)]


def _chunks(words: int = 0) -> list[Chunk]:
    rng = np.random.default_rng(words)
    vocab = [f"w{i}" for i in range(60)]
    texts = [" ".join(rng.choice(vocab, 12)) for _ in range(N)]
    return [Chunk(f"c{i}", f"doc{i}", 0, t, 0, len(t), 12) for i, t in enumerate(texts)]


def _bm25(cache: Path, chunks: list[Chunk]):
    from rageval.retrieval.local.lexical import BM25Retriever

    r = BM25Retriever(cache_dir=str(cache))
    r.index(chunks)
    return r


def _bm25_results(r) -> list[list[str]]:
    return [x.ids for x in r.search(["w1 w2 w3", "w7 w40", "w59 w0 w13"], 5)]


def _largest_file(cache: Path, prefix: str) -> Path:
    files = [p for p in (cache / "indexes").rglob("*") if p.is_file() and prefix in str(p)]
    files = [p for p in files if not p.name.endswith(".json") or "params" in p.name]
    return max(files, key=lambda p: p.stat().st_size)


def _truncate(f: Path, _other) -> None:
    f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])


def _random_bytes(f: Path, _other) -> None:
    f.write_bytes(os.urandom(f.stat().st_size))


def _other_index(f: Path, other: bytes) -> None:
    assert len(other) == f.stat().st_size  # same size: only a digest tells them apart
    f.write_bytes(other)


DAMAGE = {"truncated": _truncate, "random bytes": _random_bytes, "another index": _other_index}


@pytest.mark.parametrize("damage", DAMAGE)
@pytest.mark.parametrize("kind", ["hnsw", "ivf", "ivfpq"])
def test_a_damaged_faiss_index_cache_is_rebuilt_with_a_warning(tmp_path, kind, damage):
    cache = tmp_path / "cache"
    clean = _faiss_results(_faiss(kind, cache, _vectors(0)))
    index_file = _largest_file(cache, f"faiss-{kind}")
    # the same index type and size over other vectors: what a silent swap would score
    _faiss(kind, tmp_path / "other", _vectors(1))
    other = _largest_file(tmp_path / "other", f"faiss-{kind}").read_bytes()
    DAMAGE[damage](index_file, other)

    with pytest.warns(UserWarning, match=rf"cached FAISS index .*faiss-{kind}.* is damaged"):
        again = _faiss(kind, cache, _vectors(0))
    assert not again.loaded_from_cache
    assert _faiss_results(again) == clean
    reread = _faiss(kind, cache, _vectors(0))  # rebuilt and cached again, whole
    assert reread.loaded_from_cache and _faiss_results(reread) == clean


def test_a_whole_faiss_index_cache_is_read_without_a_warning(tmp_path, recwarn):
    cache = tmp_path / "cache"
    clean = _faiss_results(_faiss("hnsw", cache, _vectors(0)))
    again = _faiss("hnsw", cache, _vectors(0))
    assert again.loaded_from_cache and _faiss_results(again) == clean
    assert not [w for w in recwarn if "damaged" in str(w.message)]


@pytest.mark.parametrize("damage", ["truncated", "random bytes"])
def test_a_damaged_bm25_index_cache_is_rebuilt_with_a_warning(tmp_path, damage):
    cache, chunks = tmp_path / "cache", _chunks()
    clean = _bm25_results(_bm25(cache, chunks))
    DAMAGE[damage](_largest_file(cache, "bm25-"), b"")
    with pytest.warns(UserWarning, match=r"cached BM25 index .*bm25-.* is damaged"):
        again = _bm25(cache, chunks)
    assert _bm25_results(again) == clean
    assert _bm25_results(_bm25(cache, chunks)) == clean


def test_a_bm25_cache_whose_scores_were_swapped_for_another_corpus_is_rebuilt(tmp_path):
    cache, chunks = tmp_path / "cache", _chunks()
    clean = _bm25_results(_bm25(cache, chunks))
    folder = next((cache / "indexes").glob("bm25-*"))
    _bm25(tmp_path / "other", _chunks(words=1))
    theirs = next((tmp_path / "other" / "indexes").glob("bm25-*"))
    for f in theirs.iterdir():  # every file of another index, under this index's name
        if f.name != "rageval-sha256.json":
            (folder / f.name).write_bytes(f.read_bytes())
    with pytest.warns(UserWarning, match="cached BM25 index"):
        again = _bm25(cache, chunks)
    assert _bm25_results(again) == clean
