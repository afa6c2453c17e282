"""Azure AI Search as a rageval retriever, through the ``azure-search-documents`` SDK.

Either builds a throwaway index from the run's chunks (deleted by :meth:`close`) or queries an
existing one. The API key is read from an environment variable when a client is built; it is
never stored on the retriever, logged or put into an error message.
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from itertools import islice
from typing import Any

from rageval.errors import BackendError, ConfigError, IndexMismatchError, InputError, RagevalError
from rageval.retrieval.azure.client import INDEX_NAME as _INDEX_NAME
from rageval.retrieval.azure.client import (
    INSTALL_HINT,
    AzureConnection,
    credential,
    index_definition,
    throwaway_index_name,
)
from rageval.retrieval.base import Encoder
from rageval.retrieval.passages import Passage
from rageval.types import Chunk, RankedList

log = logging.getLogger(__name__)

MODES = ("vector", "bm25", "hybrid", "semantic")  # semantic = hybrid + Azure's semantic ranker
_VECTOR_MODES = {"vector", "hybrid", "semantic"}
_TEXT_MODES = {"bm25", "hybrid", "semantic"}
SEMANTIC_WINDOW = 50  # Azure reranks this many results; the rest keep their hybrid order
DEFAULT_SEMANTIC_CONFIG = "rageval-semantic"
VISIBILITY_TIMEOUT_S = 120.0  # uploads turn searchable within seconds; wait at most this long
_FIELD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
_DOC_KEY = re.compile(r"^[A-Za-z0-9_\-=]{1,1024}$")
_RETRYABLE_ITEM = {409, 422, 429, 503}  # per-document statuses in a 207 answer worth retrying


def _service_problems(
    endpoint: str,
    mode: str,
    existing: bool,
    index_name: str | None,
    retry_backoff: float,
    timeout: float,
) -> list[tuple[bool, str]]:
    """(failed, message) of the settings of the service and its calls: the endpoint a URL, a
    known mode, an existing index named (legally), a backoff >= 0 and a timeout > 0."""
    return [
        (
            not re.match(r"^https?://[^/\s]+", endpoint or ""),
            f"endpoint {endpoint!r} is not a URL like https://<service>.search.windows.net",
        ),
        (mode not in MODES, f"mode must be one of {', '.join(MODES)}, got {mode!r}"),
        (existing and not index_name, "existing=true needs index_name: the index to query"),
        (
            bool(index_name) and not _INDEX_NAME.match(index_name or ""),
            f"index_name {index_name!r} is not legal: use a-z, 0-9 and single dashes",
        ),
        (
            not isinstance(retry_backoff, int | float) or retry_backoff < 0,
            f"retry_backoff must be >= 0, got {retry_backoff!r}",
        ),
        (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0,
            f"timeout must be a number of seconds > 0, got {timeout!r}",
        ),
    ]


def _field_problems(
    existing: bool,
    id_field: str,
    text_field: str,
    vector_field: str,
    doc_id_field: str | None,
) -> list[tuple[bool, str]]:
    """(failed, message) of the index's field names: legal names, and a document id field
    only for an existing index."""
    problems = []
    names = {"id_field": id_field, "text_field": text_field, "vector_field": vector_field}
    if doc_id_field is not None:
        names["doc_id_field"] = doc_id_field
        problems.append(
            (
                not existing,
                "doc_id_field is for an existing index (existing=true): a throwaway index "
                "holds rageval's own chunks",
            )
        )
    for name, value in names.items():
        problems.append((not _FIELD_NAME.match(value or ""), f"{name} {value!r} is not legal"))
    return problems


def _count_problems(
    upload_batch_size: int, parallelism: int, max_retries: int
) -> list[tuple[bool, str]]:
    """(failed, message) of the whole-number settings, each within its range."""
    counts = {
        "upload_batch_size": (upload_batch_size, 1, 1000),
        "parallelism": (parallelism, 1, 64),
        "max_retries": (max_retries, 0, 50),
    }
    problems = []
    for name, (value, low, high) in counts.items():
        bad = not isinstance(value, int) or not low <= value <= high
        problems.append((bad, f"{name} must be an integer from {low} to {high}, got {value!r}"))
    return problems


class AzureSearchRetriever:
    """Retriever backed by an Azure AI Search index (see docs/backends-azure.md)."""

    def __init__(
        self,
        endpoint: str,
        index_name: str | None = None,
        api_key_env: str = "AZURE_SEARCH_API_KEY",
        mode: str = "hybrid",
        semantic_configuration: str | None = None,
        existing: bool = False,
        id_field: str = "id",
        text_field: str = "text",
        vector_field: str = "vector",
        keep_index: bool = False,
        upload_batch_size: int = 500,
        parallelism: int = 4,
        max_retries: int = 5,
        retry_backoff: float = 0.5,
        run_key: str = "",
        timeout: float = 60.0,
        doc_id_field: str | None = None,
    ) -> None:
        problems = [
            *_service_problems(endpoint, mode, existing, index_name, retry_backoff, timeout),
            *_field_problems(existing, id_field, text_field, vector_field, doc_id_field),
            *_count_problems(upload_batch_size, parallelism, max_retries),
        ]
        for failed, message in problems:
            if failed:
                raise ConfigError(message, path="backend (azure)")
        self.endpoint = endpoint.rstrip("/")
        self.api_key_env, self.mode = api_key_env, mode
        self.existing, self.keep_index = existing, keep_index
        self.id_field, self.text_field, self.vector_field = id_field, text_field, vector_field
        # an existing index's passages are scored on their text when it names their document
        # (rageval.retrieval.passages): its own ids and chunking need no mapping
        self.doc_id_field = doc_id_field
        self.external = doc_id_field is not None
        self.semantic_configuration = semantic_configuration
        self.upload_batch_size, self.parallelism = upload_batch_size, parallelism
        self.max_retries, self.retry_backoff = max_retries, retry_backoff
        self.timeout = float(timeout)  # per request; a request that takes longer is retried
        self.index_name = index_name  # a throwaway index is named by index(), from its content
        self.run_key = run_key
        self._named_by_user = index_name is not None
        self._encoder: Encoder | None = None
        self._created = False
        self._clients: dict[str, Any] = {}
        self._exhaustive = False
        # calls rageval made to the service (the SDK's own retries of a call not counted)
        self.requests = {"index": 0, "search": 0}

    def __repr__(self) -> str:
        name, mode = self.index_name, self.mode
        return f"AzureSearchRetriever({self.endpoint!r}, index_name={name!r}, mode={mode!r})"

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """Build the throwaway index from ``chunks`` and their embeddings; with ``existing``,
        check that the existing index has the configured fields and vector size instead."""
        _require_azure()
        if self.mode in _VECTOR_MODES and encoder is None:
            raise ConfigError(f"mode {self.mode!r} needs an encoder for the vectors")
        self._encoder = encoder
        if self.existing:
            return self._check_existing(len(chunks))
        if not self._named_by_user:
            name = self._throwaway_name(chunks, encoder)
            if name != self.index_name:
                self.close()  # a second index() with other content: drop the first index
                self.index_name = name
        ids = [c.id for c in chunks]
        bad = next((i for i in ids if not _DOC_KEY.match(i)), None)
        if bad is not None:
            raise InputError(
                f"chunk id {bad!r} cannot be an Azure document key: use letters, digits, _ - ="
            )
        if len(set(ids)) != len(ids):
            raise InputError("chunk ids are not unique; Azure would keep only the last of each")
        docs = [{self.id_field: c.id, self.text_field: c.text} for c in chunks]
        dim = None
        if encoder is not None and self.mode in _VECTOR_MODES:
            dim, vectors = encoder.dim, encoder.encode_documents([c.text for c in chunks])
            if vectors.shape != (len(chunks), dim):
                raise RagevalError(
                    f"encoder gave shape {vectors.shape}, not ({len(chunks)}, {dim})"
                )
            for doc, row in zip(docs, vectors.tolist(), strict=True):
                doc[self.vector_field] = row
        step = self.upload_batch_size
        batches = [docs[i : i + step] for i in range(0, len(docs), step)]
        try:
            self._create_index(dim)
            client = self._search_client()  # built here: worker threads share one client
            with ThreadPoolExecutor(max_workers=self.parallelism) as pool:
                list(pool.map(lambda batch: self._upload(client, batch), batches))
            self._wait_until_searchable(client, len(docs))
        except Exception as exc:
            self.close()
            if isinstance(exc, RagevalError) or not _is_azure_error(exc):
                raise
            raise BackendError(
                f"building Azure index {self.index_name!r}: {self._why(exc)}"
            ) from None
        log.info("indexed %d chunks into Azure index %s", len(docs), self.index_name)

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Top ``depth`` ids per query, best first. Every query succeeds or BackendError names
        the ones that failed after retries; nothing partial is returned."""
        _require_azure()
        if depth < 1:
            raise ConfigError(f"depth must be >= 1, got {depth}")
        if self.index_name is None or (self.mode in _VECTOR_MODES and self._encoder is None):
            raise RagevalError("call index() before search(): there is no index or encoder yet")
        queries = list(queries)
        if not queries:
            return []
        vectors: list[Any] = [None] * len(queries)
        if self.mode in _VECTOR_MODES and self._encoder is not None:
            vectors = self._encoder.encode_queries(queries).tolist()
        client = self._search_client()  # built here: worker threads share one client
        with ThreadPoolExecutor(max_workers=min(self.parallelism, len(queries))) as pool:
            futures = [
                pool.submit(self._search_one, client, q, v, depth)
                for q, v in zip(queries, vectors, strict=True)
            ]
        failed = [(i, f.exception()) for i, f in enumerate(futures) if f.exception() is not None]
        for _, exc in failed:
            if not _is_azure_error(exc):
                raise exc  # type: ignore[misc]
        if failed:
            listed = "; ".join(f"#{i} {queries[i]!r}: {self._why(e)}" for i, e in failed[:10])
            more = f"; and {len(failed) - 10} more" if len(failed) > 10 else ""
            raise BackendError(
                f"Azure AI Search failed {len(failed)} of {len(queries)} queries on index "
                f"{self.index_name!r} after {self.max_retries} retries: {listed}{more}. No results "
                "were kept; check the service's limits, raise max_retries or lower parallelism.",
                failed_queries=[queries[i] for i, _ in failed],
            )
        self.requests["search"] += len(queries)  # one search call per query
        return [f.result() for f in futures]

    def approximate(self) -> bool:
        """An existing index's HNSW is approximate; the throwaway index searches exhaustively."""
        return self.existing

    def exact_search(self, queries: Sequence[str], depth: int) -> list[Any] | None:
        """The same vector queries with ``exhaustive: true`` (Azure compares every vector): the
        exact reference of ann_recall@k for an existing index."""
        if not self.existing or self.mode != "vector":
            return None
        self._exhaustive = True
        try:
            got = self.search(queries, depth)
        finally:
            self._exhaustive = False
        return [
            r
            if isinstance(r, RankedList)
            else RankedList(tuple(p.id for p in r), tuple(float(p.score or 0) for p in r))
            for r in got
        ]

    def close(self) -> None:
        """Delete the throwaway index unless ``keep_index``; close the HTTP sessions."""
        if self._created and not self.keep_index:
            try:
                self._index_client().delete_index(self.index_name)
                log.info("deleted Azure index %s", self.index_name)
            except Exception as exc:
                if not _is_azure_error(exc):
                    raise
                log.warning("could not delete Azure index %s: %s", self.index_name, self._why(exc))
            self._created = False
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def __enter__(self) -> AzureSearchRetriever:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _search_one(
        self, client: Any, text: str, vector: Any, depth: int
    ) -> RankedList | list[Passage]:
        from azure.search.documents.models import VectorizedQuery

        select = [self.id_field]
        if self.doc_id_field:
            select += [self.text_field, self.doc_id_field]
        kwargs: dict[str, Any] = {"top": depth, "select": select}
        if self.mode in _TEXT_MODES:
            kwargs["search_text"] = text
        if vector is not None:
            k = depth if self.mode == "vector" else max(depth, SEMANTIC_WINDOW)
            query = VectorizedQuery(vector=vector, k_nearest_neighbors=k, fields=self.vector_field)
            if self._exhaustive:  # the exact reference of ann_recall: every vector compared
                query.exhaustive = True
            kwargs["vector_queries"] = [query]
        if self.mode == "semantic":
            kwargs.update(query_type="semantic", semantic_configuration_name=self._semantic_name())
            kwargs["semantic_error_mode"] = "fail"  # never score unreranked results as reranked
        ids: list[str] = []
        scores: list[float] = []
        passages: list[Passage] = []
        for hit in islice(client.search(**kwargs), depth):
            ids.append(str(hit[self.id_field]))
            if self.doc_id_field:
                doc = hit.get(self.doc_id_field)
                text = hit.get(self.text_field)
                passages.append(Passage(ids[-1], "" if doc is None else str(doc), str(text or "")))
            reranker = hit.get("@search.reranker_score")
            if self.mode != "semantic":
                scores.append(float(hit["@search.score"]))
            elif reranker is not None:
                scores.append(float(reranker))
            else:  # past the reranked window: keep Azure's order, below every reranker score (>= 0)
                scores.append(-float(len(ids)))
        if self.doc_id_field:
            return [replace(p, score=s) for p, s in zip(passages, scores, strict=True)]
        return RankedList(ids=tuple(ids), scores=tuple(scores))

    def _create_index(self, dim: int | None) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        semantic = self._semantic_name() if self.mode == "semantic" else None
        fields = (self.id_field, self.text_field, self.vector_field)
        definition = index_definition(self.index_name, *fields, dim=dim, semantic=semantic)
        client = self._index_client()
        try:
            client.get_index(self.index_name)
            log.warning("Azure index %s exists (a crashed run?): recreating it", self.index_name)
            client.delete_index(self.index_name)
        except ResourceNotFoundError:
            pass
        client.create_or_update_index(definition)
        self._created = True
        log.info("created Azure index %s for mode %s", self.index_name, self.mode)

    def _upload(self, client: Any, docs: list[dict[str, Any]]) -> None:
        pending = docs
        for attempt in range(self.max_retries + 1):
            self.requests["index"] += 1  # threads: += on an int attribute is atomic enough here
            results = client.upload_documents(documents=pending)
            failed = {r.key: r for r in results if not r.succeeded}
            if not failed:
                return
            permanent = any(r.status_code not in _RETRYABLE_ITEM for r in failed.values())
            if permanent or attempt == self.max_retries:
                sample = ", ".join(
                    f"{r.key} ({r.status_code}: {r.error_message})" for r in [*failed.values()][:5]
                )
                raise BackendError(
                    f"Azure rejected {len(failed)} documents in {self.index_name!r}: {sample}"
                )
            pending = [d for d in pending if d[self.id_field] in failed]
            time.sleep(self.retry_backoff * 2**attempt)

    def _wait_until_searchable(self, client: Any, expected: int) -> None:
        deadline, pause = time.monotonic() + VISIBILITY_TIMEOUT_S, 0.05
        while (count := client.get_document_count()) < expected:
            if time.monotonic() > deadline:
                raise BackendError(
                    f"index {self.index_name!r} shows {count} of {expected} uploaded documents "
                    f"after {VISIBILITY_TIMEOUT_S:.0f} s; is the service overloaded?"
                )
            time.sleep(pause)
            pause = min(pause * 2, 2.0)

    def _check_existing(self, n_chunks: int) -> None:
        from azure.core.exceptions import ResourceNotFoundError

        name = self.index_name
        try:
            index = self._index_client().get_index(name)
        except ResourceNotFoundError:
            raise ConfigError(
                f"index {name!r} does not exist at {self.endpoint}; fix index_name, or set "
                "existing=false to build a throwaway index from the run's chunks"
            ) from None
        fields = {f.name: f for f in index.fields}
        need = [(self.id_field, "key")]
        need += [(self.text_field, "searchable")] if self.mode in _TEXT_MODES else []
        need += [(self.vector_field, "vector_search_dimensions")] * (self.mode in _VECTOR_MODES)
        if self.doc_id_field:  # passages come back with their text and document
            need += [(self.text_field, "retrievable"), (self.doc_id_field, "retrievable")]
        for field, prop in need:
            if (
                field not in fields
                or getattr(fields[field], prop, None) is False
                or (prop != "retrievable" and not getattr(fields[field], prop, None))
            ):
                raise ConfigError(
                    f"index {name!r} has no {prop} field {field!r} (its fields: {sorted(fields)}); "
                    "set id_field / text_field / vector_field / doc_id_field to the index's names"
                )
        dim = (
            fields[self.vector_field].vector_search_dimensions if self.vector_field in fields else 0
        )
        if self._encoder is not None and self.mode in _VECTOR_MODES and dim != self._encoder.dim:
            raise IndexMismatchError(
                f"index {name!r} holds {dim}-d vectors in {self.vector_field!r} but the encoder "
                f"makes {self._encoder.dim}-d ones: the index was built with another model"
            )
        if self.mode == "semantic":
            sem = index.semantic_search
            known = [c.name for c in sem.configurations or []] if sem else []
            wanted = self.semantic_configuration or (
                sem.default_configuration_name if sem else None
            )
            if wanted not in known:
                raise ConfigError(
                    f"index {name!r} has no semantic configuration {wanted!r}; set "
                    f"semantic_configuration to one of {known}"
                )
            self.semantic_configuration = wanted
        count = self._search_client().get_document_count()
        if count != n_chunks:
            log.warning(
                "Azure index %s holds %d documents, the run %d chunks", name, count, n_chunks
            )

    def _semantic_name(self) -> str:
        return self.semantic_configuration or DEFAULT_SEMANTIC_CONFIG

    def _search_client(self) -> Any:
        if "search" not in self._clients:
            self._clients["search"] = self._connection().search_client(self.index_name)
        return self._clients["search"]

    def _index_client(self) -> Any:
        if "index" not in self._clients:
            self._clients["index"] = self._connection().index_client()
        return self._clients["index"]

    def _connection(self) -> AzureConnection:
        settings = (self.parallelism, self.max_retries, self.retry_backoff, self.timeout)
        return AzureConnection(self.endpoint, self.api_key_env, *settings)

    def _credential(self) -> Any:
        return credential(self.api_key_env)

    def _why(self, exc: BaseException) -> str:
        """One line about a failure, with the API key (should the service echo it) masked."""
        status = getattr(exc, "status_code", None)
        text = str(getattr(exc, "message", None) or exc).strip()
        first = text.splitlines()[0][:200] if text else type(exc).__name__
        why = (f"HTTP {status}: " if status else "") + first
        key = os.environ.get(self.api_key_env, "")
        return why.replace(key, "***") if key else why

    def _throwaway_name(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> str:
        """The throwaway index's name, from this config, the encoder and the chunk ids."""
        keys = ("endpoint", "mode", "semantic_configuration", "id_field", "text_field")
        config: dict[str, Any] = {k: getattr(self, k) for k in (*keys, "vector_field", "run_key")}
        config["encoder"] = encoder.fingerprint if encoder and self.mode in _VECTOR_MODES else None
        return throwaway_index_name(config, (c.id for c in chunks), _git_short_commit())


def _git_short_commit() -> str:
    """The current checkout's short commit, or ``nogit``."""
    command = ["git", "rev-parse", "--short=7", "HEAD"]
    try:
        run = subprocess.run(command, capture_output=True, text=True, timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return "nogit"
    out = run.stdout.strip().lower()
    return out if re.fullmatch(r"[0-9a-f]{4,40}", out) else "nogit"


def _require_azure() -> None:
    try:
        import azure.search.documents  # noqa: F401
    except ImportError:
        raise RagevalError(
            f"the Azure backend needs azure-search-documents: {INSTALL_HINT}"
        ) from None


def _is_azure_error(exc: BaseException | None) -> bool:
    from azure.core.exceptions import AzureError

    return isinstance(exc, AzureError)
