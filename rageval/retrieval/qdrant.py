"""Qdrant retriever: dense, BM25 or hybrid search, embedded (``:memory:``, ``path=``) or on a server.

BM25 needs no model: each chunk's sparse vector holds, per token id, the saturated term frequency
tf*(k1+1)/(tf + k1*(1-b+b*len/avgdl)); the collection's IDF modifier multiplies the query's term
counts by ln(1 + (N-df+0.5)/(df+0.5)) at search time. The dot product is Lucene BM25 (bm25s
``method="lucene"``) times (k1+1), a constant factor that leaves the ranking unchanged.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import uuid
from collections import Counter
from collections.abc import Sequence
from functools import partial
from typing import Any

from rageval.errors import BackendError, ConfigError, RagevalError
from rageval.retrieval.base import Encoder
from rageval.retrieval.fusion import rrf, weighted
from rageval.retrieval.ordering import break_ties, ranked
from rageval.types import Chunk, RankedList

log = logging.getLogger(__name__)

DENSE, SPARSE = "dense", "bm25"  # vector names in the collection
MODES = {"vector": (True, False), "bm25": (False, True), "hybrid": (True, True)}  # (dense, sparse)
FUSIONS = ("rrf", "dbsf", "weighted")  # weighted: min-max score fusion, done by rageval
QDRANT_RRF_K = 2  # Qdrant's default: 0-based position p in a prefetch adds 1 / (k + p)
INSTALL_HINT = "pip install 'rageval[qdrant]'"
_QUERY_BATCH = 128  # requests per query_batch_points call
_NO_PAYLOAD = {"with_payload": False}  # chunk ids come from the point ids
SparseRow = tuple[list[int], list[float]]


def _qdrant() -> Any:
    """Import qdrant_client, or say how to install it."""
    try:
        import qdrant_client
    except ImportError as exc:
        raise RagevalError(f"the qdrant backend needs qdrant-client: {INSTALL_HINT}") from exc
    return qdrant_client


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


class BM25Vectors:
    """Tokenises with bm25s (regex split, stopwords, PyStemmer) and builds BM25 sparse vectors."""

    def __init__(self, k1: float, b: float, stemmer: str | None, stopwords: Any) -> None:
        import bm25s
        import Stemmer

        self.k1, self.b, self.vocab = k1, b, {}
        words = stopwords if isinstance(stopwords, str | None) else [str(w) for w in stopwords]
        try:
            stem = Stemmer.Stemmer(stemmer) if stemmer else None
            bm25s.tokenize("", stopwords=words, show_progress=False)  # unknown language: now
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"qdrant backend: bad BM25 stemmer or stopwords: {exc}") from exc
        # lower-cased, stopword-free, stemmed tokens of each text
        self.tokens = partial(
            bm25s.tokenize, stopwords=words, stemmer=stem, return_ids=False, show_progress=False
        )

    def fit_documents(self, texts: Sequence[str]) -> list[SparseRow]:
        """Set the vocabulary (sorted tokens -> ids) and return each text's (ids, weights)."""
        docs = self.tokens(list(texts))
        self.vocab = {tok: i for i, tok in enumerate(sorted({t for d in docs for t in d}))}
        avgdl = (sum(map(len, docs)) / len(docs)) or 1.0
        rows = []
        for doc in docs:
            norm = self.k1 * (1.0 - self.b + self.b * len(doc) / avgdl)
            tf = sorted((self.vocab[t], n) for t, n in Counter(doc).items())
            rows.append(([i for i, _ in tf], [n * (self.k1 + 1.0) / (n + norm) for _, n in tf]))
        return rows

    def queries(self, texts: Sequence[str]) -> list[SparseRow]:
        """Each query's known token ids with their counts (unknown tokens cannot match)."""
        rows = []
        for toks in self.tokens(list(texts)):
            tf = sorted(Counter(self.vocab[t] for t in toks if t in self.vocab).items())
            rows.append(([i for i, _ in tf], [float(n) for _, n in tf]))
        return rows


def _throwaway_name(run_key: str | None) -> str:
    if run_key is None:
        return f"rageval-{uuid.uuid4().hex[:12]}"
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", run_key)[:48].strip("-")
    return f"rageval-{slug}-{hashlib.sha256(run_key.encode()).hexdigest()[:8]}"


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
        models = _qdrant().models  # fails now, with the install hint, if the client is missing
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
        self.collection = collection or _throwaway_name(run_key)
        self._throwaway = collection is None
        self._embedded = url is None and (path is not None or location == ":memory:")
        self._dense, sparse = MODES[mode]
        self._bm25 = BM25Vectors(k1, b, stemmer, stopwords) if sparse else None
        self._client: Any = None
        self._created = False
        self._encoder: Encoder | None = None
        self._chunk_ids: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return f"QdrantRetriever(mode={self.mode!r}, collection={self.collection!r}, {self.where})"

    @property
    def where(self) -> str:
        """Where the collection lives, for messages (credentials in a URL are masked)."""
        if self.path:
            return f"path={self.path}"
        if self._embedded:
            return "in memory"
        return "server " + re.sub(r"//[^@/]*@", "//***@", self.url or self.location)

    def _connect(self) -> Any:
        if self._client is None:
            client_class = _qdrant().QdrantClient
            if self.path:
                self._client = client_class(path=str(self.path))
            elif self._embedded:
                self._client = client_class(location=":memory:")
            else:  # the key goes straight to the client: never stored on self, never logged
                key = os.environ.get(self.api_key_env) if self.api_key_env else None
                target = {"url": self.url} if self.url else {"location": self.location}
                self._client = client_class(**target, api_key=key or None)
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
        models = _qdrant().models
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
        vectors, sparse_vectors = {}, None
        if dense is not None:
            hnsw = models.HnswConfigDiff(m=self.hnsw_m) if self.hnsw_m is not None else None
            vectors[DENSE] = models.VectorParams(
                size=int(encoder.dim), distance=models.Distance.COSINE, hnsw_config=hnsw
            )
        if sparse is not None:
            sparse_vectors = {SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)}
        create = partial(client.create_collection, vectors_config=vectors)
        self._call("create", create, self.collection, sparse_vectors_config=sparse_vectors)
        self._created = True
        from tqdm.auto import tqdm

        with tqdm(total=len(chunks), desc="qdrant upload", unit="chunk", disable=None) as bar:
            for start in range(0, len(chunks), self.upload_batch_size):
                batch = chunks[start : start + self.upload_batch_size]
                points = [
                    models.PointStruct(
                        id=i,
                        vector=self._point_vectors(models, i, dense, sparse),
                        payload={"chunk_id": c.id, "doc_id": c.doc_id, "label": c.label},
                    )
                    for i, c in enumerate(batch, start)
                ]
                self._call("upsert", client.upsert, self.collection, points=points, wait=True)
                bar.update(len(points))
        self._encoder = encoder if self._dense else None
        self._chunk_ids = tuple(c.id for c in chunks)
        log.info("qdrant: indexed %d chunks into %r (%s)", len(chunks), self.collection, self.where)

    @staticmethod
    def _point_vectors(models: Any, i: int, dense: Any, sparse: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if dense is not None:
            out[DENSE] = dense[i].tolist()
        if sparse is not None:  # empty ones too, so that N in the IDF counts every chunk
            out[SPARSE] = models.SparseVector(indices=sparse[i][0], values=sparse[i][1])
        return out

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Top ``depth`` chunk ids with Qdrant's scores for each query, in the order given."""
        if self._client is None:
            raise RagevalError("qdrant backend: call index() before search()")
        _check(depth >= 1, f"depth must be >= 1, got {depth}")
        if not queries:
            return []
        models = _qdrant().models
        dense = self._encoder.encode_queries(list(queries)) if self._encoder else None
        sparse = self._bm25.queries(queries) if self._bm25 else None
        per_query = [self._requests(models, i, dense, sparse, depth) for i in range(len(queries))]
        flat = [request for requests in per_query for request in requests]
        answers: list[Any] = []
        for start in range(0, len(flat), _QUERY_BATCH):
            batch = flat[start : start + _QUERY_BATCH]
            answers += self._call("query", self._client.query_batch_points, self.collection, batch)
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
        hybrid = self.mode == "hybrid"
        in_qdrant = hybrid and not self._fuse_here
        pool = max(self.candidate_depth, depth) if hybrid else depth
        leg, extra = (models.Prefetch, {}) if in_qdrant else (models.QueryRequest, _NO_PAYLOAD)
        legs = []
        if dense is not None:  # embedded Qdrant always searches exactly, and warns on params
            params = None if self._embedded else models.SearchParams(**self._search_params)
            legs.append(
                leg(query=dense[i].tolist(), using=DENSE, limit=pool, params=params, **extra)
            )
        if sparse is not None and sparse[i][0]:  # a query with no known term has no sparse leg
            vector = models.SparseVector(indices=sparse[i][0], values=sparse[i][1])
            legs.append(leg(query=vector, using=SPARSE, limit=pool, **extra))
        if not in_qdrant:
            return legs
        # every fused candidate, so that a tie at the cut is broken by the rule, not by chance
        query, limit = self._fusion_query, pool * len(legs)
        return [models.QueryRequest(prefetch=legs, query=query, limit=limit, **_NO_PAYLOAD)]

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
