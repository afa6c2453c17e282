"""Build a FAISS index from vectors that arrive in batches, with its storage sized once.

FAISS grows an index's storage like a ``std::vector``: each ``add`` that overflows doubles the
capacity and copies, so adding a million vectors in batches can briefly hold three times the
embeddings. Here the storage is reserved for all ``n`` vectors before the first batch (for IVF,
each inverted list for the vectors assigned to it), so the index never holds more than its data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

Rows = Callable[[slice | np.ndarray], np.ndarray]


def f32(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous float32 array (what FAISS accepts), copied only if needed."""
    return np.ascontiguousarray(a, dtype=np.float32)


def ivf_nlist(n: int, params: Mapping[str, Any]) -> int:
    """Inverted lists for ``n`` vectors: ``ivf_nlist``, else 4 * sqrt(n), fewer on a small corpus so
    each list has the 39 training vectors FAISS asks for (at most one list per vector)."""
    default = min(int(4 * math.sqrt(n)), n // 39)
    return max(1, min(n, params.get("ivf_nlist") or default))


def train_rows(n: int, params: Mapping[str, Any]) -> np.ndarray:
    """Evenly spaced rows to train IVF on: ``ivf_train_size``, else 40 per list (FAISS wants 39)."""
    size = min(n, params.get("ivf_train_size") or 40 * ivf_nlist(n, params))
    return np.unique(np.linspace(0, n - 1, num=size).astype(np.int64))


def new_index(kind: str, dim: int, n: int, params: Mapping[str, Any]):
    """An empty inner-product index of ``kind`` (flat, hnsw, else untrained IVF)."""
    import faiss

    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, params["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params["hnsw_ef_construction"]
        return index
    quantizer = faiss.IndexFlatIP(dim)
    return faiss.IndexIVFFlat(quantizer, dim, ivf_nlist(n, params), faiss.METRIC_INNER_PRODUCT)


def _reserve(codes, nbytes: int) -> None:
    """Give a FAISS byte vector the capacity for ``nbytes`` while keeping its size (0)."""
    size = codes.size()
    codes.resize(nbytes)
    codes.resize(size)


def stream_build(
    kind: str, n: int, rows: Rows, params: Mapping[str, Any], batch_size: int, bar=None
):
    """An index of ``kind`` over ``rows(slice)`` for rows 0..n, ``batch_size`` at a time (None when
    n is 0). ``bar`` (optional) is told how many rows each step handled."""
    import faiss

    if n == 0:
        return None
    starts = range(0, n, batch_size)
    first = f32(rows(slice(0, min(batch_size, n))))
    index = new_index(kind, first.shape[1], n, params)
    if kind == "ivf":
        del first
        return _stream_ivf(index, n, rows, params, batch_size, bar)
    storage = index if kind == "flat" else faiss.downcast_index(index.storage)
    _reserve(storage.codes, n * storage.code_size)
    for lo in starts:
        vec = first if lo == 0 else f32(rows(slice(lo, min(lo + batch_size, n))))
        first = None
        index.add(vec)
        if bar is not None:
            bar.update(len(vec))
        del vec  # before the next batch is read: one batch in memory at a time
    return index


def _stream_ivf(index, n: int, rows: Rows, params: Mapping[str, Any], batch_size: int, bar):
    """Train on a sample, assign every vector to its list (one pass), size each list for its
    vectors, then add with the assignment already known (a second pass; no re-assignment)."""
    import faiss

    sample = f32(rows(train_rows(n, params)))
    index.train(sample)
    del sample
    assign = np.empty(n, dtype=np.int64)
    for lo in range(0, n, batch_size):
        vec = f32(rows(slice(lo, min(lo + batch_size, n))))
        assign[lo : lo + len(vec)] = index.quantizer.assign(vec, 1).ravel()
        del vec
    invlists = index.invlists
    counts = np.bincount(assign, minlength=index.nlist)
    for lst in np.flatnonzero(counts).tolist():
        invlists.resize(lst, int(counts[lst]))
        invlists.resize(lst, 0)
    for lo in range(0, n, batch_size):
        vec = f32(rows(slice(lo, min(lo + batch_size, n))))
        hi = lo + len(vec)
        ids = np.arange(lo, hi, dtype=np.int64)
        part = np.ascontiguousarray(assign[lo:hi])
        index.add_core(len(vec), faiss.swig_ptr(vec), faiss.swig_ptr(ids), faiss.swig_ptr(part))
        if bar is not None:
            bar.update(len(vec))
        del vec
    return index
