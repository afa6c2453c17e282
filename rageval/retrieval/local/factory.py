"""The local, offline backend: FAISS for ``vector``, bm25s for ``bm25``, both fused for ``hybrid``.

``conf/backend/faiss.yaml`` instantiates :func:`local_retriever` with ``mode: ${search.mode}``,
so ``search=`` alone switches the mode and a sweep over it shares one embedding cache.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from rageval.errors import ConfigError
from rageval.retrieval.base import Retriever
from rageval.retrieval.fusion import HybridRetriever
from rageval.retrieval.local.dense import FaissRetriever
from rageval.retrieval.local.lexical import BM25Retriever


def _vector(cache_dir, faiss, bm25, fusion) -> Retriever:
    return FaissRetriever(cache_dir=cache_dir, **faiss)


def _bm25(cache_dir, faiss, bm25, fusion) -> Retriever:
    return BM25Retriever(cache_dir=cache_dir, **bm25)


def _hybrid(cache_dir, faiss, bm25, fusion) -> Retriever:
    return HybridRetriever(
        FaissRetriever(cache_dir=cache_dir, **faiss),
        BM25Retriever(cache_dir=cache_dir, **bm25),
        **fusion,
    )


MODES: dict[str, Callable[..., Retriever]] = {"vector": _vector, "bm25": _bm25, "hybrid": _hybrid}


def local_retriever(
    mode: str = "vector",
    cache_dir: str | None = None,
    faiss: Mapping[str, Any] | None = None,
    bm25: Mapping[str, Any] | None = None,
    fusion: str = "rrf",
    rrf_k: float = 60.0,
    weights: Sequence[float] = (0.5, 0.5),
    candidate_depth: int = 100,
) -> Retriever:
    """Build the local retriever for ``mode`` (vector, bm25 or hybrid)."""
    if mode not in MODES:
        raise ConfigError(
            f"search.mode must be one of {', '.join(MODES)} for the local backend, got {mode!r}"
        )
    fusion_args = {
        "method": fusion,
        "rrf_k": rrf_k,
        "weights": list(weights),
        "candidate_depth": candidate_depth,
    }
    try:
        return MODES[mode](cache_dir, dict(faiss or {}), dict(bm25 or {}), fusion_args)
    except TypeError as err:
        raise ConfigError(f"backend options for mode {mode!r}: {err}") from None
