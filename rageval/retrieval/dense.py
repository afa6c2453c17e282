"""Dense retrieval with FAISS over normalised embeddings (inner product = cosine).

``index_type``: ``flat`` (exact, the default), ``hnsw``, ``ivf``, or ``auto`` (flat below
``auto_threshold`` chunks, HNSW above). Built HNSW/IVF indexes are cached on disk, keyed by the
chunk ids (content-derived, so they stand for corpus and chunking), the model fingerprint and the
index parameters; a flat index is rebuilt from cached embeddings, which is as fast as loading it.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rageval.errors import ConfigError
from rageval.retrieval.base import Encoder
from rageval.retrieval.ordering import break_ties
from rageval.types import Chunk, RankedList

INDEX_TYPES = ("flat", "hnsw", "ivf", "auto")


class FaissRetriever:
    """Exact or approximate inner-product search over chunk embeddings; one FAISS call per run."""

    def __init__(
        self,
        index_type: str = "flat",
        hnsw_m: int = 32,
        hnsw_ef_construction: int = 200,
        hnsw_ef_search: int = 128,
        ivf_nlist: int | None = None,
        ivf_nprobe: int = 16,
        auto_threshold: int = 200_000,
        cache_dir: str | None = None,
    ):
        if index_type not in INDEX_TYPES:
            raise ConfigError(
                f"backend.index_type must be one of {', '.join(INDEX_TYPES)}, got {index_type!r}"
            )
        self.index_type = index_type
        self.params = {
            "hnsw_m": hnsw_m,
            "hnsw_ef_construction": hnsw_ef_construction,
            "hnsw_ef_search": hnsw_ef_search,
            "ivf_nlist": ivf_nlist,
            "ivf_nprobe": ivf_nprobe,
        }
        self.auto_threshold = auto_threshold
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.encoder: Encoder | None = None
        self.ids: list[str] = []
        self._index = None
        self.built_type = ""
        self.build_seconds = 0.0

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        if encoder is None:
            raise ConfigError("vector search needs an embedding model (the embedding group)")
        self.encoder = encoder
        self.ids = [c.id for c in chunks]
        vectors = encoder.encode_documents([c.text for c in chunks])
        self.add_vectors(self.ids, vectors, encoder.fingerprint)

    def add_vectors(self, ids: Sequence[str], vectors: np.ndarray, fingerprint: str = "") -> None:
        """Build the index from precomputed, normalised vectors (rows aligned with ``ids``)."""
        import faiss

        self.ids = list(ids)
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        kind = self.index_type
        if kind == "auto":
            kind = "flat" if len(ids) < self.auto_threshold else "hnsw"
        self.built_type = kind
        start = time.perf_counter()
        path = self._cache_path(kind, fingerprint)
        if path is not None and path.is_file():
            self._index = faiss.read_index(str(path))
        else:
            self._index = self._build(kind, vectors)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{time.time_ns()}.tmp")
                faiss.write_index(self._index, str(tmp))
                tmp.replace(path)
        if kind == "hnsw":
            self._index.hnsw.efSearch = self.params["hnsw_ef_search"]
        elif kind == "ivf":
            self._index.nprobe = self.params["ivf_nprobe"]
        self.build_seconds = time.perf_counter() - start

    def _build(self, kind: str, vectors: np.ndarray):
        import faiss

        dim = vectors.shape[1]
        if kind == "flat":
            index = faiss.IndexFlatIP(dim)
        elif kind == "hnsw":
            index = faiss.IndexHNSWFlat(dim, self.params["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = self.params["hnsw_ef_construction"]
        else:
            nlist = self.params["ivf_nlist"] or max(1, int(4 * np.sqrt(len(vectors))))
            nlist = min(nlist, len(vectors))
            quantizer = faiss.IndexFlatIP(dim)
            index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
            index.train(vectors)
        index.add(vectors)
        return index

    def _cache_path(self, kind: str, fingerprint: str) -> Path | None:
        if self.cache_dir is None or kind == "flat" or not fingerprint:
            return None
        h = hashlib.sha256("\n".join(self.ids).encode())
        h.update(fingerprint.encode())
        h.update(json.dumps([kind, self.params], sort_keys=True).encode())
        return self.cache_dir / "indexes" / f"faiss-{kind}-{h.hexdigest()[:24]}.faiss"

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        if self._index is None or self.encoder is None:
            raise RuntimeError("index() must run before search()")
        return self.search_vectors(self.encoder.encode_queries(list(queries)), depth)

    def search_vectors(self, query_vectors: np.ndarray, depth: int) -> list[RankedList]:
        """One FAISS call for all query vectors."""
        k = min(depth, len(self.ids))
        if k <= 0 or len(query_vectors) == 0:
            return [RankedList((), ()) for _ in range(len(query_vectors))]
        scores, idx = self._index.search(np.ascontiguousarray(query_vectors, dtype=np.float32), k)
        out = []
        ids = self.ids
        for row_i, row_s in zip(idx, scores, strict=True):
            keep = row_i >= 0
            out.append(
                break_ties(
                    RankedList(
                        ids=tuple(ids[i] for i in row_i[keep]),
                        scores=tuple(float(s) for s in row_s[keep]),
                    )
                )
            )
        return out
