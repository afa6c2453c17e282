"""A local stand-in for the Azure AI Search REST API, for tests of the Azure retriever.

It speaks the subset that ``azure-search-documents`` sends for rageval: index create/get/delete/
list, document upload, ``$count`` and ``search.post.search`` (BM25 text, exact vector kNN, RRF
hybrid, a deterministic fake semantic reranker: see azure_search_ranking.py). It checks the
``api-key`` header, records every request and injects 429/503 answers with ``Retry-After`` on
demand. It is not Azure: no analyzers, filters, facets, paging links, HNSW approximation or real
semantic model.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from .azure_search_ranking import (
    RRF_K,
    bm25,
    check_definition,
    fake_reranker_score,
    knn,
    rrf,
    semantic_rerank,
    tokens,
)

# the ranking helpers tests use, re-exported so that they import everything from here
__all__ = ["RRF_K", "FakeAzureSearch", "Fault", "SeenRequest", "fake_reranker_score", "tokens"]
_IDX = r"/indexes(?:\('([^'/]+)'\)|/([^/()']+))"
_ROUTES = [
    ("GET", re.compile(r"/indexes"), "list_indexes"),
    ("POST", re.compile(r"/indexes"), "create_index"),
    ("PUT", re.compile(_IDX), "create_index"),
    ("GET", re.compile(_IDX), "get_index"),
    ("DELETE", re.compile(_IDX), "delete_index"),
    ("GET", re.compile(_IDX + r"/docs/\$count"), "count"),
    ("POST", re.compile(_IDX + r"/docs/search\.index"), "index_documents"),
    ("POST", re.compile(_IDX + r"/docs/search\.post\.search"), "search"),
]
_SEARCH_KEYS = {"search", "vectorQueries", "queryType", "semanticConfiguration", "top", "skip"}
_SEARCH_KEYS |= {"select", "count", "searchMode", "semanticErrorHandling"}
_INDEX_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,126}[a-z0-9])?$")
_DOC_KEY = re.compile(r"^[A-Za-z0-9_\-=]{1,1024}$")


@dataclass
class Fault:
    """Answer matching requests with ``status`` (and ``Retry-After``), ``times`` times or always;
    ``delay``: wait that many seconds first (a client with a shorter timeout gives up)."""

    status: int = 429
    op: str | None = "search"
    times: int | None = 1
    search_contains: str | None = None
    retry_after: str | None = "1"
    delay: float = 0.0

    def hit(self, op: str, body: Any) -> bool:
        if self.op is not None and op != self.op:
            return False
        text = body.get("search") if isinstance(body, dict) else None
        if self.search_contains is not None and self.search_contains not in (text or ""):
            return False
        if self.times is not None:
            if self.times <= 0:
                return False
            self.times -= 1
        return True


@dataclass
class SeenRequest:
    """One request as the stand-in saw it (the ``api-key`` header is kept out of ``headers``)."""

    method: str
    url: str
    op: str
    index: str | None
    body: Any
    headers: dict[str, str]
    authorized: bool
    started: float
    status: int = 0
    finished: float = 0.0


@dataclass
class _Answer:
    status: int
    payload: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def _error(status: int, message: str, code: str = "BadRequest") -> _Answer:
    return _Answer(status, {"error": {"code": code, "message": message}})


class FakeAzureSearch:
    """A threaded HTTP server on 127.0.0.1 that answers like Azure AI Search. Use as a context
    manager; ``endpoint`` is its base URL. ``visibility_delay`` makes uploads searchable only after
    that many seconds (Azure indexing is near-real-time); ``search_delay`` slows each search."""

    def __init__(
        self, api_key: str = "fake-key", *, visibility_delay: float = 0.0, search_delay: float = 0.0
    ) -> None:
        self.api_key = api_key
        self.visibility_delay = visibility_delay
        self.search_delay = search_delay
        self.indexes: dict[str, dict[str, Any]] = {}
        self.docs: dict[str, dict[str, tuple[float, dict[str, Any]]]] = {}
        self.requests: list[SeenRequest] = []
        self.faults: list[Fault] = []
        self.doc_faults: dict[str, list[int]] = {}  # key -> statuses still to answer
        self.max_in_flight = 0
        self._in_flight = 0
        self._lock = threading.RLock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------------
    def __enter__(self) -> FakeAzureSearch:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.fake = self  # type: ignore[attr-defined]
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def endpoint(self) -> str:
        assert self._server is not None, "use FakeAzureSearch as a context manager"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    # test controls ---------------------------------------------------------------------------
    def fail(self, status: int = 429, **kwargs: Any) -> Fault:
        """Add a :class:`Fault`; see its fields for the keyword arguments."""
        fault = Fault(status=status, **kwargs)
        with self._lock:
            self.faults.append(fault)
        return fault

    def fail_documents(self, keys: list[str], status: int = 503, times: int = 1) -> None:
        """Fail these keys inside an otherwise fine upload batch (a 207 answer), ``times`` times."""
        with self._lock:
            for key in keys:
                self.doc_faults[key] = [status] * times

    def seen(self, op: str | None = None) -> list[SeenRequest]:
        with self._lock:
            return [r for r in self.requests if op is None or r.op == op]

    # request handling ------------------------------------------------------------------------
    def handle(self, method: str, url: str, headers: dict[str, str], raw: bytes) -> _Answer:
        parts = urlsplit(url)
        path = unquote(parts.path).rstrip("/") or "/"
        op, name = "unknown", None
        for verb, pattern, candidate in _ROUTES:
            match = pattern.fullmatch(path)
            if verb == method and match:
                op, name = candidate, (match.group(1) or match.group(2)) if match.groups() else None
                break
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        seen = SeenRequest(method, url, op, name, body, headers, False, time.monotonic())
        seen.authorized = headers.pop("api-key", None) == self.api_key
        with self._lock:
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            answer = self._answer(op, name, dict(parse_qsl(parts.query)), body, seen, raw)
        finally:
            with self._lock:
                self._in_flight -= 1
                seen.status, seen.finished = answer.status, time.monotonic()
                self.requests.append(seen)
        return answer

    def _answer(self, op, name, query, body, seen: SeenRequest, raw: bytes) -> _Answer:
        if op == "unknown":
            return _error(404, f"no such resource: {seen.method} {seen.url}", "NotFound")
        if "api-version" not in query:
            return _error(400, "the api-version query parameter is required")
        if not seen.authorized:
            return _error(403, "missing or invalid api-key", "Forbidden")
        if raw and body is None:
            return _error(400, "the request body is not valid JSON")
        with self._lock:
            fault = next((f for f in self.faults if f.hit(op, body)), None)
        if fault is not None:
            time.sleep(fault.delay)
            code = "TooManyRequests" if fault.status == 429 else "ServiceUnavailable"
            answer = _error(fault.status, "injected fault", code)
            if fault.retry_after is not None:
                answer.headers["Retry-After"] = fault.retry_after
            return answer
        if op == "list_indexes":
            with self._lock:
                defs = list(self.indexes.values())
            if query.get("$select") == "name":
                defs = [{"name": d["name"]} for d in defs]
            return _Answer(200, {"value": defs})
        if op == "create_index":
            return self._create_index(name, body, seen.method)
        with self._lock:
            index = self.indexes.get(name or "")
        if index is None:
            return _error(404, f"index {name!r} not found", "ResourceNotFound")
        if op == "get_index":
            return _Answer(200, index)
        if op == "delete_index":
            with self._lock:
                self.indexes.pop(index["name"], None)
                self.docs.pop(index["name"], None)
            return _Answer(204)
        if op == "count":
            return _Answer(200, str(len(self._visible(index["name"]))))
        if op == "index_documents":
            return self._index_documents(index, body)
        if self.search_delay:
            time.sleep(self.search_delay)
        return self._search(index, body if isinstance(body, dict) else {})

    def _visible(self, name: str) -> dict[str, dict[str, Any]]:
        now = time.monotonic()
        with self._lock:
            docs = self.docs.get(name, {})
            return {k: d for k, (t, d) in sorted(docs.items()) if t <= now}

    # indexes ---------------------------------------------------------------------------------
    def _create_index(self, name: str | None, body: Any, method: str) -> _Answer:
        if not isinstance(body, dict) or not body.get("name"):
            return _error(400, "an index definition with a name is required")
        name = name or body["name"]
        if body["name"] != name or not _INDEX_NAME.match(name) or "--" in name:
            return _error(400, f"invalid index name {body['name']!r}")
        problem = check_definition(body)
        if problem:
            return _error(400, problem)
        definition = {k: v for k, v in body.items() if not k.startswith("@odata")}
        with self._lock:
            old = self.indexes.get(name)
            if old is not None and method == "POST":
                return _error(409, f"index {name!r} already exists", "ResourceNameAlreadyInUse")
            if old is not None and old["fields"] != definition["fields"]:
                return _error(400, "existing fields cannot be changed", "OperationNotAllowed")
            definition["@odata.etag"] = f'"{time.monotonic_ns():x}"'
            self.indexes[name] = definition
            self.docs.setdefault(name, {})
        return _Answer(200 if old else 201, definition)

    def _index_documents(self, index: dict[str, Any], body: Any) -> _Answer:
        actions = body.get("value") if isinstance(body, dict) else None
        if not isinstance(actions, list) or not 1 <= len(actions) <= 1000:
            return _error(400, "value must hold 1 to 1000 index actions")
        fields = {f["name"]: f for f in index["fields"]}
        key_field = next(f["name"] for f in index["fields"] if f.get("key"))
        for action in actions:
            for prop, value in action.items():
                spec = fields.get(prop)
                if prop != "@search.action" and spec is None:
                    return _error(400, f"the property {prop!r} does not exist in the index")
                dims = (spec or {}).get("dimensions")
                if dims and value is not None and len(value) != dims:
                    return _error(400, f"{prop!r} needs {dims} dimensions, got {len(value)}")
        results, store = [], self.docs[index["name"]]
        for action in actions:
            kind, key = action.get("@search.action", "upload"), action.get(key_field)
            doc = {k: v for k, v in action.items() if k != "@search.action"}
            with self._lock:
                pending = self.doc_faults.get(str(key)) or []
                status, message = 200, None
                if not isinstance(key, str) or not _DOC_KEY.match(key):
                    status, message = 400, f"invalid document key {key!r}"
                elif pending:
                    status, message = pending.pop(0), "injected document fault"
                elif kind == "delete":
                    store.pop(key, None)
                elif kind == "merge" and key not in store:
                    status, message = 404, "document not found"
                elif kind in ("upload", "merge", "mergeOrUpload"):
                    old = store[key][1] if kind != "upload" and key in store else {}
                    status = 200 if key in store else 201
                    store[key] = (time.monotonic() + self.visibility_delay, {**old, **doc})
                else:
                    status, message = 400, f"unknown action {kind!r}"
            ok = status in (200, 201)
            results.append(
                {"key": key, "status": ok, "errorMessage": message, "statusCode": status}
            )
        all_ok = all(r["status"] for r in results)
        return _Answer(200 if all_ok else 207, {"value": results})

    # search ----------------------------------------------------------------------------------
    def _search(self, index: dict[str, Any], body: dict[str, Any]) -> _Answer:
        unsupported = sorted(set(body) - _SEARCH_KEYS)
        if unsupported:
            return _error(400, f"the stand-in does not support {unsupported}")
        fields = {f["name"]: f for f in index["fields"]}
        docs = self._visible(index["name"])
        top, skip = body.get("top", 50), body.get("skip", 0)
        if not isinstance(top, int) or not 0 <= top <= 1000:
            return _error(400, "top must be between 0 and 1000")
        text, vector_queries = body.get("search"), body.get("vectorQueries") or []
        lists: list[list[tuple[float, str]]] = []
        if text is not None and not (text.strip() == "*" and vector_queries):
            lists.append(bm25(index, docs, text))
        for vq in vector_queries:
            ranked = knn(index, fields.get(vq.get("fields", "")), docs, vq)
            if isinstance(ranked, str):
                return _error(400, ranked)
            lists.append(ranked)
        ranking = lists[0] if len(lists) == 1 else rrf(lists) if lists else [(1.0, k) for k in docs]
        reranked: dict[str, float] = {}
        if body.get("queryType") == "semantic":
            ranking = semantic_rerank(index, docs, body, ranking, reranked)
            if isinstance(ranking, str):
                return _error(400, ranking)
        select = [s.strip() for s in body["select"].split(",")] if body.get("select") else None
        select = select or [n for n, f in fields.items() if f.get("retrievable", True)]
        if any(s not in fields for s in select):
            return _error(400, f"select names unknown fields: {select}")
        value = []
        for score, key in ranking[skip : skip + top]:
            hit: dict[str, Any] = {"@search.score": score}
            if key in reranked:
                hit["@search.rerankerScore"] = reranked[key]
            hit.update({s: docs[key].get(s) for s in select})
            value.append(hit)
        payload: dict[str, Any] = {"value": value}
        if body.get("count"):
            payload["@odata.count"] = len(ranking)
        return _Answer(200, payload)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else each answer waits ~40 ms on delayed ACKs

    def _serve(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake: FakeAzureSearch = self.server.fake  # type: ignore[attr-defined]
        answer = fake.handle(self.command, self.path, headers, raw)
        if answer.status == 204:
            data, ctype = b"", None
        elif isinstance(answer.payload, str):
            data, ctype = answer.payload.encode(), "text/plain"
        else:
            data, ctype = json.dumps(answer.payload).encode(), "application/json; charset=utf-8"
        self.send_response(answer.status)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if ctype:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PUT = do_POST = do_DELETE = _serve

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # not a client that timed out
            super().handle_error(request, client_address)
