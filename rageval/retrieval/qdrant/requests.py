"""The qdrant-client models the Qdrant retriever sends: the collection's vector configs, the
points it uploads and the search requests for one query."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rageval.retrieval.qdrant.bm25_vectors import SparseRow
from rageval.types import Chunk

DENSE, SPARSE = "dense", "bm25"  # vector names in the collection
NO_PAYLOAD = {"with_payload": False}  # chunk ids come from the point ids


def vector_configs(
    models: Any, dim: int | None, hnsw_m: int | None, sparse: bool
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The collection's named vectors: dense cosine ones of size ``dim`` (None: none), and with
    ``sparse`` BM25 ones that Qdrant weights by IDF."""
    vectors, sparse_vectors = {}, None
    if dim is not None:
        hnsw = models.HnswConfigDiff(m=hnsw_m) if hnsw_m is not None else None
        vectors[DENSE] = models.VectorParams(
            size=int(dim), distance=models.Distance.COSINE, hnsw_config=hnsw
        )
    if sparse:
        sparse_vectors = {SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)}
    return vectors, sparse_vectors


def chunk_points(
    models: Any, chunks: Sequence[Chunk], start: int, dense: Any, sparse: Any
) -> list[Any]:
    """Points for ``chunks``, numbered from ``start``: row ``i`` of ``dense`` (an array) and of
    ``sparse`` (BM25 rows) as vectors, the chunk's ids and label as payload."""
    return [
        models.PointStruct(
            id=i,
            vector=_point_vectors(models, i, dense, sparse),
            payload={"chunk_id": c.id, "doc_id": c.doc_id, "label": c.label},
        )
        for i, c in enumerate(chunks, start)
    ]


def _point_vectors(models: Any, i: int, dense: Any, sparse: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if dense is not None:
        out[DENSE] = dense[i].tolist()
    if sparse is not None:  # empty ones too, so that N in the IDF counts every chunk
        out[SPARSE] = models.SparseVector(indices=sparse[i][0], values=sparse[i][1])
    return out


def search_requests(
    models: Any,
    dense: list[float] | None,
    sparse: SparseRow | None,
    pool: int,
    fusion: Any,
    params: Any,
) -> list[Any]:
    """One query's requests: a search of ``pool`` results per ranking (dense with ``params``,
    sparse when the query has a known term), or with a ``fusion`` query one request in which
    Qdrant fuses them."""
    leg, extra = (models.Prefetch, {}) if fusion is not None else (models.QueryRequest, NO_PAYLOAD)
    legs = []
    if dense is not None:
        legs.append(leg(query=dense, using=DENSE, limit=pool, params=params, **extra))
    if sparse is not None and sparse[0]:  # a query with no known term has no sparse leg
        vector = models.SparseVector(indices=sparse[0], values=sparse[1])
        legs.append(leg(query=vector, using=SPARSE, limit=pool, **extra))
    if fusion is None:
        return legs
    # every fused candidate, so that a tie at the cut is broken by the rule, not by chance
    limit = pool * len(legs)
    return [models.QueryRequest(prefetch=legs, query=fusion, limit=limit, **NO_PAYLOAD)]
