"""Qdrant retriever: dense, BM25 or hybrid search, embedded (``:memory:``, ``path=``) or on a
server.

BM25 needs no model: chunks and queries become sparse vectors (see :mod:`.bm25_vectors`) whose
dot product, with the collection's IDF modifier, is Lucene BM25 times a constant.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import partial
from typing import Any

from rageval.errors import BackendError, ConfigError, RagevalError
from rageval.retrieval.base import Encoder
from rageval.retrieval.fusion import rrf, weighted
from rageval.retrieval.qdrant.bm25_vectors import BM25Vectors
from rageval.retrieval.qdrant.connect import connect, describe, qdrant_module, throwaway_name
from rageval.retrieval.qdrant.requests import chunk_points, search_requests, vector_configs
from rageval.scoring.ranking import break_ties, ranked
from rageval.types import Chunk, RankedList

log = logging.getLogger(__name__)

MODES = {"vector": (True, False), "bm25": (False, True), "hybrid": (True, True)}  # (dense, sparse)
FUSIONS = ("rrf", "dbsf", "weighted")  # weighted: min-max score fusion, done by rageval
QDRANT_RRF_K = 2  # Qdrant's default: 0-based position p in a prefetch adds 1 / (k + p)
_QUERY_BATCH = 128  # requests per query_batch_points call


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise ConfigError(f"qdrant backend: {message}")


def _qdrant_fusion(models: Any, fusion: str, rrf_k: float | None) -> Any:
    """The fusion query Qdrant can run for these settings, or None when rageval must fuse."""
    if fusion == "weighted":
        return None
    if fusion == "dbsf" or rrf_k is None:
        kind = getattr(getattr(models, "Fusion", None), fusion.upper(), None)
        return models.FusionQuery(fusion=kind) if hasattr(models, "FusionQuery") and kind else None
    k = rrf_k + 1  # rageval ranks from 1 (1 / (rrf_k + rank)); Qdrant counts positions from 0
    if float(k).is_integer() and hasattr(models, "RrfQuery"):
        return models.RrfQuery(rrf=models.Rrf(k=int(k)))
    return None


class QdrantRetriever:
    """Retriever on a Qdrant collection that it creates, fills and, when throwaway, drops.

    ``mode``: ``vector`` (dense, cosine), ``bm25`` (sparse) or ``hybrid`` (a dense and a sparse
    prefetch of ``candidate_depth`` each, fused by Qdrant with ``fusion`` rrf or dbsf, or by rageval
    for ``weighted``, ``fuse_in_qdrant=False`` or an old client). ``rrf_k`` follows rageval's
    fusion module, 1 / (rrf_k + 1-based rank); None keeps Qdrant's default (its k=2, rrf_k=1).
    """

    def __init__(
        self,
        location: str = ":memory:",
        path: str | None = None,
        url: str | None = None,
        api_key_env: str | None = "QDRANT_API_KEY",
        collection: str | None = None,
        run_key: str | None = None,
        mode: str = "vector",
        fusion: str = "rrf",
        rrf_k: float | None = None,
        weights: Sequence[float] = (0.5, 0.5),
        fuse_in_qdrant: bool = True,
        candidate_depth: int = 100,
        exact: bool = True,
        hnsw_m: int | None = None,
        hnsw_ef: int | None = None,
        upload_batch_size: int = 256,
        keep_collection: bool = False,
        k1: float = 1.5,
        b: float = 0.75,
        stemmer: str | None = "english",
        stopwords: str | Sequence[str] | None = "en",
        bm25_method: str = "lucene",
    ) -> None:
        _check(mode in MODES, f"mode must be one of {sorted(MODES)}, got {mode!r}")
        _check(fusion in FUSIONS, f"fusion must be one of {list(FUSIONS)}, got {fusion!r}")
        _check(rrf_k is None or rrf_k >= 0, f"rrf_k must be >= 0, got {rrf_k}")
        _check(fusion != "weighted" or len(weights) == 2, "weights: one for vector, one for bm25")
        _check(bm25_method == "lucene", "bm25_method: Qdrant's IDF modifier is Lucene's")
        _check(min(candidate_depth, upload_batch_size) >= 1, "depths and batch sizes are >= 1")
        _check(path is None or url is None, "give path= (embedded) or url= (server), not both")
        _check(k1 >= 0 and 0 <= b <= 1, f"BM25 needs k1 >= 0 and 0 <= b <= 1, got {k1}, {b}")
        models = (
            qdrant_module().models
        )  # fails now, with the install hint, if the client is missing
        qdrant_fuses = mode == "hybrid" and fuse_in_qdrant
        self._fusion_query = _qdrant_fusion(models, fusion, rrf_k) if qdrant_fuses else None
        self._fuse_here = mode == "hybrid" and self._fusion_query is None
        _check(fusion != "dbsf" or not self._fuse_here, "dbsf: Qdrant fuses it, on a newer client")
        self.location, self.path, self.url, self.api_key_env = location, path, url, api_key_env
        self.mode, self.fusion, self.rrf_k, self.weights = mode, fusion, rrf_k, list(weights)
        self.exact, self.hnsw_m, self.hnsw_ef = exact, hnsw_m, hnsw_ef
        self.candidate_depth = candidate_depth
        self._search_params = {"exact": exact, "hnsw_ef": hnsw_ef}
        self.upload_batch_size, self.keep_collection = upload_batch_size, keep_collection
        self.collection = collection or throwaway_name(run_key)
        self._throwaway = collection is None
        self._embedded = url is None and (path is not None or location == ":memory:")
        self._dense, sparse = MODES[mode]
        self._bm25 = BM25Vectors(k1, b, stemmer, stopwords) if sparse else None
        self._client: Any = None
        self._created = False
        # calls to the Qdrant client: upserts (index) and batched queries (search)
        self.requests = {"index": 0, "search": 0}
        self._encoder: Encoder | None = None
        self._chunk_ids: tuple[str, ...] = ()

    def approximate(self) -> bool:
        """HNSW unless ``exact`` (ann_recall@k measures what that gives up)."""
        return not self.exact

    def __repr__(self) -> str:
        return f"QdrantRetriever(mode={self.mode!r}, collection={self.collection!r}, {self.where})"

    @property
    def where(self) -> str:
        """Where the collection lives, for messages (credentials in a URL are masked)."""
        return describe(self.location, self.path, self.url, self._embedded)

    def _connect(self) -> Any:
        if self._client is None:
            self._client = connect(
                self.location, self.path, self.url, self.api_key_env, self._embedded
            )
        return self._client

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RagevalError:
            raise
        except Exception as exc:  # the client raises many types; the user needs one message
            raise BackendError(
                f"qdrant {what} failed for collection {self.collection!r} ({self.where}): {exc}"
            ) from exc

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """(Re)create the collection and upload every chunk with its dense and/or BM25 vector."""
        _check(not self._dense or encoder is not None, f"mode {self.mode!r} needs an encoder")
        _check(len(chunks) > 0, "there are no chunks to index")
        models = qdrant_module().models
        texts = [c.text for c in chunks]
        dense = encoder.encode_documents(texts) if self._dense and encoder else None
        if dense is not None:
            _check(dense.shape == (len(chunks), encoder.dim), f"encoder gave shape {dense.shape}")
        sparse = self._bm25.fit_documents(texts) if self._bm25 else None
        client = self._connect()
        if self._call("lookup", client.collection_exists, self.collection):
            if not self._created:  # not one this retriever made earlier
                log.warning("qdrant: replacing collection %r (%s)", self.collection, self.where)
            self._call("delete", client.delete_collection, self.collection)
        dim = encoder.dim if dense is not None and encoder else None
        vectors, sparse_vectors = vector_configs(models, dim, self.hnsw_m, sparse is not None)
        create = partial(client.create_collection, vectors_config=vectors)
        self._call("create", create, self.collection, sparse_vectors_config=sparse_vectors)
        self._created = True
        from tqdm.auto import tqdm

        with tqdm(total=len(chunks), desc="qdrant upload", unit="chunk", disable=None) as bar:
            for start in range(0, len(chunks), self.upload_batch_size):
                batch = chunk_points(
                    models, chunks[start : start + self.upload_batch_size], start, dense, sparse
                )
                self._call("upsert", client.upsert, self.collection, points=batch, wait=True)
                self.requests["index"] += 1
                bar.update(len(batch))
        self._encoder = encoder if self._dense else None
        self._chunk_ids = tuple(c.id for c in chunks)
        log.info("qdrant: indexed %d chunks into %r (%s)", len(chunks), self.collection, self.where)

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Top ``depth`` chunk ids with Qdrant's scores for each query, in the order given."""
        if self._client is None:
            raise RagevalError("qdrant backend: call index() before search()")
        _check(depth >= 1, f"depth must be >= 1, got {depth}")
        if not queries:
            return []
        models = qdrant_module().models
        dense = self._encoder.encode_queries(list(queries)) if self._encoder else None
        sparse = self._bm25.queries(queries) if self._bm25 else None
        per_query = [self._requests(models, i, dense, sparse, depth) for i in range(len(queries))]
        flat = [request for requests in per_query for request in requests]
        answers: list[Any] = []
        for start in range(0, len(flat), _QUERY_BATCH):
            batch = flat[start : start + _QUERY_BATCH]
            answers += self._call("query", self._client.query_batch_points, self.collection, batch)
            self.requests["search"] += 1
        results, cursor = [], 0
        for requests in per_query:
            mine, cursor = answers[cursor : cursor + len(requests)], cursor + len(requests)
            lists = [self._ranked(answer.points) for answer in mine]
            if self._fuse_here:  # vector list first; a query with no known term has no bm25 list
                lists += [RankedList((), ())] * (2 - len(lists))
                results.append(self._fuse(lists, depth))
            elif self.mode == "hybrid":  # the whole fused list came back: cut after the tie rule
                results.append(ranked(zip(lists[0].ids, lists[0].scores, strict=True), depth))
            else:
                results.append(lists[0] if lists else RankedList((), ()))
        return results

    def _ranked(self, points: Sequence[Any]) -> RankedList:
        ids = tuple(self._chunk_ids[p.id] for p in points)
        return break_ties(RankedList(ids=ids, scores=tuple(float(p.score) for p in points)))

    def _fuse(self, lists: list[RankedList], depth: int) -> RankedList:
        """Fusion in rageval: weighted, or RRF where this client cannot ask Qdrant for it."""
        if self.fusion == "weighted":
            return weighted(lists, self.weights, depth)
        return rrf(lists, QDRANT_RRF_K - 1 if self.rrf_k is None else self.rrf_k, depth)

    def _requests(self, models: Any, i: int, dense: Any, sparse: Any, depth: int) -> list[Any]:
        """Query ``i``'s requests: one search, or the rankings to fuse (in Qdrant or here)."""
        pool = max(self.candidate_depth, depth) if self.mode == "hybrid" else depth
        # embedded Qdrant always searches exactly, and warns on params
        params = None if self._embedded else models.SearchParams(**self._search_params)
        vector = dense[i].tolist() if dense is not None else None
        row = sparse[i] if sparse is not None else None
        return search_requests(models, vector, row, pool, self._fusion_query, params)

    def close(self) -> None:
        """Drop a throwaway collection (unless ``keep_collection``) and release the client."""
        if self._client is None:
            return
        try:
            if self._created and self._throwaway and not self.keep_collection:
                self._call("delete", self._client.delete_collection, self.collection)
        finally:
            self._client.close()
            self._client, self._created, self._encoder, self._chunk_ids = None, False, None, ()

    def __enter__(self) -> QdrantRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
