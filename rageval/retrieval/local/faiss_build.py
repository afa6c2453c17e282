"""Build a FAISS index from vectors that arrive in batches, with its storage sized once.

FAISS grows an index's storage like a ``std::vector``: each ``add`` that overflows doubles the
capacity and copies, so adding a million vectors in batches can briefly hold three times the
embeddings. Here the storage is reserved for all ``n`` vectors before the first batch (for IVF and
IVF-PQ, each inverted list for the vectors assigned to it), so the index never holds more than its
data.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from rageval.errors import ConfigError

Rows = Callable[[slice | np.ndarray], np.ndarray]
SEED = 1234  # FAISS's own default k-means seed, set here so every build trains the same lists


def f32(a: np.ndarray) -> np.ndarray:
    """``a`` as a C-contiguous float32 array (what FAISS accepts), copied only if needed."""
    return np.ascontiguousarray(a, dtype=np.float32)


def ivf_nlist(n: int, params: Mapping[str, Any]) -> int:
    """Inverted lists for ``n`` vectors: ``ivf_nlist``, else 4 * sqrt(n), fewer on a small corpus so
    each list has the 39 training vectors FAISS asks for (at most one list per vector)."""
    default = min(int(4 * math.sqrt(n)), n // 39)
    return max(1, min(n, params.get("ivf_nlist") or default))


def train_rows(n: int, params: Mapping[str, Any], kind: str = "ivf") -> np.ndarray:
    """Evenly spaced rows to train IVF on: ``ivf_train_size``, else 40 per list (FAISS wants 39);
    for IVF-PQ at least 40 per code of a sub-quantizer (2 ** ``ivfpq_bits``) as well."""
    want = 40 * ivf_nlist(n, params)
    if kind == "ivfpq":
        want = max(want, 40 * 2 ** params["ivfpq_bits"])
    size = min(n, params.get("ivf_train_size") or want)
    return np.unique(np.linspace(0, n - 1, num=size).astype(np.int64))


def pq_m(dim: int, params: Mapping[str, Any]) -> int:
    """Sub-quantizers of an IVF-PQ index over ``dim`` dimensions: ``ivfpq_m``, which must divide
    ``dim``, else the largest divisor of ``dim`` up to dim / 8 (one byte per 8 dimensions at 8
    bits: 48 for 384 dimensions, 96 for 768)."""
    m = params.get("ivfpq_m")
    if m is None:
        return max(k for k in range(1, max(1, dim // 8) + 1) if dim % k == 0)
    if dim % m:
        divisors = [k for k in range(1, dim + 1) if dim % k == 0 and k <= 4 * m]
        raise ConfigError(
            f"backend.faiss.ivfpq_m must divide the embedding dimension ({dim}), got {m}; "
            f"divisors of {dim} near it: {', '.join(map(str, divisors[-6:]))}"
        )
    return m


def new_index(kind: str, dim: int, n: int, params: Mapping[str, Any]):
    """An empty inner-product index of ``kind`` (flat, hnsw, else untrained IVF or IVF-PQ)."""
    import faiss

    if kind == "flat":
        return faiss.IndexFlatIP(dim)
    if kind == "hnsw":
        index = faiss.IndexHNSWFlat(dim, params["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params["hnsw_ef_construction"]
        return index
    quantizer = faiss.IndexFlatIP(dim)
    nlist = ivf_nlist(n, params)
    if kind == "ivfpq":
        m, bits = pq_m(dim, params), params["ivfpq_bits"]
        if n < 2**bits:
            raise ConfigError(
                f"index_type ivfpq trains 2 ** ivfpq_bits = {2**bits} codes per sub-quantizer "
                f"and needs at least that many chunks, got {n:,}; use flat at this size"
            )
        index = faiss.IndexIVFPQ(quantizer, dim, nlist, m, bits, faiss.METRIC_INNER_PRODUCT)
        index.cp.seed = index.pq.cp.seed = SEED  # the k-means of the lists and of the codes
        return index
    index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = SEED
    return index


def _reserve(codes, nbytes: int) -> None:
    """Give a FAISS byte vector the capacity for ``nbytes`` while keeping its size (0)."""
    size = codes.size()
    codes.resize(nbytes)
    codes.resize(size)


def stream_build(
    kind: str,
    n: int,
    rows: Rows,
    params: Mapping[str, Any],
    batch_size: int,
    bar=None,
    first: np.ndarray | None = None,
):
    """An index of ``kind`` over ``rows(slice)`` for rows 0..n, ``batch_size`` at a time (None when
    n is 0). ``bar`` (optional) is told how many rows each step handled; ``first``: the first
    batch, when the caller read it already."""
    import faiss

    if n == 0:
        return None
    starts = range(0, n, batch_size)
    first = f32(rows(slice(0, min(batch_size, n)))) if first is None else first
    index = new_index(kind, first.shape[1], n, params)
    if kind in ("ivf", "ivfpq"):
        del first
        return _stream_ivf(index, n, rows, train_rows(n, params, kind), batch_size, bar)
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


def _stream_ivf(index, n: int, rows: Rows, sample_rows: np.ndarray, batch_size: int, bar):
    """Train on a sample (IVF-PQ: the lists, then the codes of the residuals), assign every vector
    to its list (one pass), size each list for its vectors, then add with the assignment already
    known (a second pass; no re-assignment; IVF-PQ encodes each batch as it is added)."""
    import faiss

    sample = f32(rows(sample_rows))
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
