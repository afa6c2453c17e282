"""The retriever a team deployed, evaluated as it is: no subclassing, no re-indexing.

- ``backend=function backend.function=myapp.search:search``: a plain function
  ``search(query: str, k: int)`` (or ``async def``; ``k`` optional) returning ids, ``(id, score)``
  pairs or passages (dicts or objects with a text, an id and a document id);
- ``backend=langchain backend.factory=myapp.rag:build_retriever``: a factory returning a LangChain
  retriever (``invoke(query) -> list[Document]``);
- ``backend=llamaindex backend.factory=myapp.rag:build_retriever``: a factory returning a
  LlamaIndex retriever (``retrieve(query) -> list[NodeWithScore]``).

A factory that takes ``k`` (or LlamaIndex's ``similarity_top_k``) is called with the run's search
depth; ``backend.kwargs`` are passed too. The document id is read from the key
``backend.doc_id_key`` (default ``doc_id``), else from the keys LangChain, LlamaIndex and Haystack
use for a source (``source``, ``file_path``, ``file_name``, ``document_id``; a file path names the
corpus document it is), and the run says which key matched; the passage id from
``backend.id_key`` when set, else derived from the passage's document and text
(rageval.retrieval.passages), so rankings compare across runs even when a store assigns random
ids.

Queries run ``parallelism`` at a time (threads; an ``async`` function on one event loop), each
call with a ``timeout`` in seconds and ``retries`` (waiting ``backoff * 2**attempt``); queries that
still fail stop the run with a BackendError naming them, and nothing partial is kept. Each call's
latency is recorded: the report's latency is that of the run's own calls, so a deployed service
is not searched again to time it. A progress bar shows the queries done.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from rageval.errors import BackendError, ConfigError, RagevalError, did_you_mean
from rageval.retrieval.passages import (
    DOC_KEYS,
    DocumentIds,
    Passage,
    has_text,
    note_documents,
    read_passage,
)
from rageval.types import Chunk

MAX_NAMED = 10


def load_object(path: str, key: str) -> Any:
    """``package.module:name`` (or ``package.module.name``) imported; ConfigError naming ``key``,
    what failed and how to write it."""
    if not isinstance(path, str) or not path.strip() or path == "???":
        raise ConfigError(
            f"{key} is not set: name your function as package.module:name, e.g. "
            f"{key}=myapp.search:search"
        )
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"{key}={path!r}: write package.module:name, e.g. myapp.search:search")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ConfigError(
            f"{key}={path!r}: cannot import {module_name!r} ({err}); run from your project's "
            "root, list its folder in rageval.yaml's python_path, or pip install it"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            names = [n for n in dir(module) if not n.startswith("_")]
            hint = did_you_mean(part, names, quoted=True)
            raise ConfigError(f"{key}={path!r}: {module_name!r} has no {part!r}{hint}")
        obj = getattr(obj, part)
    return obj


def _accepts(fn: Callable, name: str) -> bool:
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _positional(fn: Callable) -> int:
    """How many positional arguments ``fn`` takes (2 for ``*args``)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    return sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)


class FunctionRetriever:
    """A search function of the team's app as a rageval retriever (see the module docstring)."""

    embeds = False  # searches an index of its own: nothing is embedded by rageval
    external = True

    def __init__(
        self,
        function: str | Callable[..., Any],
        *,
        parallelism: int = 4,
        timeout: float | None = 30.0,
        retries: int = 2,
        backoff: float = 0.5,
        doc_id_key: str = "doc_id",
        id_key: str | None = None,
        progress: bool = True,
        what: str = "backend.function",
    ):
        if isinstance(parallelism, bool) or not isinstance(parallelism, int) or parallelism < 1:
            raise ConfigError(
                f"backend.parallelism must be a whole number >= 1, got {parallelism!r}"
            )
        if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
            raise ConfigError(f"backend.timeout must be seconds > 0 (or null), got {timeout!r}")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
            raise ConfigError(f"backend.retries must be a whole number >= 0, got {retries!r}")
        self.function = load_object(function, what) if isinstance(function, str) else function
        if not callable(self.function):
            raise ConfigError(
                f"{what}={function!r} is a {type(self.function).__name__}, not a function"
            )
        self.what = what
        self.parallelism, self.timeout = parallelism, timeout
        self.retries, self.backoff = retries, float(backoff)
        self.doc_id_key, self.id_key, self.progress = doc_id_key, id_key, progress
        # calls made, retries included (the costs block's requests, as remote backends count)
        self.requests = {"index": 0, "search": 0}
        self._latency_ms: list[float] = []
        self._takes_k = _positional(self.function) >= 2
        self._doc_ids: frozenset[str] | None = None  # the corpus's, once index() ran
        self._noted = False  # said where the passages' documents were read from

    def __repr__(self) -> str:
        name = getattr(self.function, "__qualname__", type(self.function).__name__)
        return f"{type(self).__name__}({name}, parallelism={self.parallelism})"

    # -- the Retriever protocol ------------------------------------------------------------
    def index(self, chunks: Sequence[Chunk], encoder) -> None:
        """Nothing to build: the deployed index is searched as it is. The corpus's document ids
        are kept, to read returned passages' documents (a file path included) against them."""
        self._doc_ids = DocumentIds(c.doc_id for c in chunks)

    def search(self, queries: Sequence[str], depth: int) -> list[list[Any]]:
        """Each query's results (ids, pairs or :class:`Passage`), in query order."""
        queries = list(queries)
        call = self._caller(depth)
        if _is_async(self.function):
            outcomes = asyncio.run(self._run_async(queries, call))
        else:
            outcomes = self._run_threads(queries, call)
        failed = [(i, e) for i, (ok, e) in enumerate(outcomes) if not ok]
        if failed:
            listed = "; ".join(
                f"#{i} {queries[i]!r:.80}: {_describe(e)}" for i, e in failed[:MAX_NAMED]
            )
            more = f" (and {len(failed) - MAX_NAMED} more)" if len(failed) > MAX_NAMED else ""
            raise BackendError(
                f"{self!r} failed {len(failed)} of {len(queries)} queries after {self.retries} "
                f"retries: {listed}{more}. No results were kept; fix the service, or raise "
                "backend.timeout, retries or retry_backoff",
                failed_queries=[queries[i] for i, _ in failed],
            )
        read = [self._read(value) for _, value in outcomes]
        if not self._noted:
            self._noted = note_documents(read, self.doc_id_key, self._doc_ids)
        return read

    def latency_ms(self) -> list[float]:
        """Milliseconds of every successful call of this run (the report's latency)."""
        return list(self._latency_ms)

    @property
    def calls(self) -> int:
        """Calls made so far, retries included."""
        return self.requests["search"]

    # -- internals -----------------------------------------------------------------------------
    def _caller(self, depth: int) -> Callable[[str], Any]:
        fn = self.function
        return (lambda q: fn(q, depth)) if self._takes_k else (lambda q: fn(q))

    def _read(self, value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value  # as_ranked names the type
        return [self._passage(x) if has_text(x) else x for x in value]

    def _passage(self, item: Any) -> Passage:
        return read_passage(
            item, doc_id_key=self.doc_id_key, id_key=self.id_key, doc_ids=self._doc_ids
        )

    def _bar(self, n: int):
        from tqdm.auto import tqdm

        return tqdm(
            total=n,
            desc=f"searching ({self.what.split('.')[-1]})",
            unit="query",
            disable=not self.progress or n < 2,
            file=sys.stderr,
        )

    def _run_threads(self, queries: list[str], call) -> list[tuple[bool, Any]]:
        outcomes: list[tuple[bool, Any]] = [(False, None)] * len(queries)
        with self._bar(len(queries)) as bar:
            pending = list(range(len(queries)))
            for attempt in range(self.retries + 1):
                if attempt:
                    time.sleep(self.backoff * 2 ** (attempt - 1))
                self.requests["search"] += len(pending)
                again = []
                for i, ok, value, ms in _DaemonPool(call, self.parallelism, self.timeout).run(
                    [(i, queries[i]) for i in pending]
                ):
                    outcomes[i] = (ok, value)
                    if ok:
                        self._latency_ms.append(ms)
                        bar.update(1)
                    else:
                        again.append(i)
                pending = sorted(again)
                if not pending:
                    break
        return outcomes

    async def _run_async(self, queries: list[str], call) -> list[tuple[bool, Any]]:
        gate = asyncio.Semaphore(self.parallelism)
        bar = self._bar(len(queries))

        async def one(q: str) -> tuple[bool, Any]:
            error: Exception | None = None
            for attempt in range(self.retries + 1):
                if attempt:
                    await asyncio.sleep(self.backoff * 2 ** (attempt - 1))
                async with gate:
                    self.requests["search"] += 1
                    t = time.perf_counter()
                    try:
                        value = await asyncio.wait_for(call(q), self.timeout)
                    except TimeoutError:
                        error = TimeoutError(f"no answer in {self.timeout:g} s")
                        continue
                    except Exception as exc:
                        error = exc
                        continue
                    self._latency_ms.append((time.perf_counter() - t) * 1000)
                    bar.update(1)
                    return True, value
            return False, error

        try:
            return list(await asyncio.gather(*(one(q) for q in queries)))
        finally:
            bar.close()


class _DaemonPool:
    """``parallelism`` daemon threads calling ``call`` on queued queries, each call allowed
    ``timeout`` seconds from its own start. A call past its time counts as failed and its thread
    is left behind (a Python thread cannot be stopped) with a new one started in its place:
    daemon threads, so a hung call never keeps the process from exiting."""

    def __init__(self, call: Callable[[str], Any], parallelism: int, timeout: float | None):
        self.call, self.parallelism, self.timeout = call, parallelism, timeout

    def run(self, items: list[tuple[int, str]]):
        """Yield ``(index, ok, value or error, milliseconds)`` as calls finish or time out."""
        import queue
        import threading

        todo: queue.Queue = queue.Queue()
        for item in items:
            todo.put(item)
        done: queue.Queue = queue.Queue()
        started: dict[int, float] = {}
        lock = threading.Lock()

        def work() -> None:
            while True:
                try:
                    i, q = todo.get_nowait()
                except queue.Empty:
                    return
                with lock:
                    started[i] = time.monotonic()
                t = time.perf_counter()
                try:
                    value = self.call(q)
                except Exception as exc:  # the service's own error: retried by the caller
                    done.put((i, False, exc, 0.0))
                else:
                    done.put((i, True, value, (time.perf_counter() - t) * 1000))

        def start() -> None:
            threading.Thread(target=work, daemon=True, name="rageval-search").start()

        for _ in range(min(self.parallelism, len(items))):
            start()
        finished: set[int] = set()
        while len(finished) < len(items):
            try:
                i, ok, value, ms = done.get(timeout=0.05)
            except queue.Empty:
                pass
            else:
                if i not in finished:
                    finished.add(i)
                    yield i, ok, value, ms
            if self.timeout is None:
                continue
            now = time.monotonic()
            with lock:
                late = [
                    i for i, t0 in started.items() if i not in finished and now - t0 > self.timeout
                ]
            for i in late:
                finished.add(i)
                start()  # the stuck thread's place
                yield i, False, TimeoutError(f"no answer in {self.timeout:g} s"), 0.0


def _is_async(fn: Callable) -> bool:
    """An ``async def`` function (or an object whose ``__call__`` is one)."""
    call = type(fn).__dict__.get("__call__")
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


def _describe(e: Any) -> str:
    return f"{type(e).__name__}: {str(e).strip()[:200]}"


def _build(factory: str | Callable, what: str, depth: int, kwargs: Mapping[str, Any], k_names):
    """Call the factory once, with the search depth when it takes one of ``k_names``."""
    make = load_object(factory, what) if isinstance(factory, str) else factory
    if not callable(make):
        raise ConfigError(f"{what}={factory!r} is a {type(make).__name__}, not a function")
    args = dict(kwargs)
    for name in k_names:
        if name not in args and _accepts(make, name) and not _var_kw_only(make, name):
            args[name] = depth
            break
    try:
        inspect.signature(make).bind(**args)
    except TypeError as err:
        raise ConfigError(
            f"{what}={factory!r} cannot be called with {sorted(args) or 'no arguments'}: {err}; "
            "fix backend.kwargs"
        ) from None
    except ValueError:  # no signature to check (a builtin): call it and see
        pass
    try:
        return make(**args)
    except RagevalError:
        raise
    except Exception as err:  # the team's code failed: say where, in one line
        raise ConfigError(
            f"{what}={factory!r} failed while building the retriever: "
            f"{type(err).__name__}: {str(err).strip()[:300]}"
        ) from err


def _var_kw_only(fn: Callable, name: str) -> bool:
    """True when ``fn`` takes ``name`` only through ``**kwargs`` (then it is not passed)."""
    try:
        return name not in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return True


class _FactoryRetriever(FunctionRetriever):
    """A framework's retriever built once per search depth by the team's ``factory`` and
    called through its method ``METHOD``; subclasses read what it returns."""

    METHOD = ""
    K_NAMES: tuple[str, ...] = ()
    EXAMPLE = ""

    def __init__(
        self,
        factory: str | Callable[..., Any],
        *,
        kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ):
        self.factory, self.kwargs = factory, dict(kwargs or {})
        self._retriever: Any = None
        self._depth: int | None = None
        super().__init__(lambda q: q, what="backend.factory", **options)
        self._takes_k = False

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.factory!r}, parallelism={self.parallelism})"

    def _caller(self, depth: int) -> Callable[[str], Any]:
        if self._retriever is None or depth != self._depth:
            self._retriever = _build(self.factory, self.what, depth, self.kwargs, self.K_NAMES)
            self._depth = depth
        method = getattr(self._retriever, self.METHOD, None)
        if not callable(method):
            raise ConfigError(
                f"backend.factory={self.factory!r} returned a {type(self._retriever).__name__}, "
                f"which has no {self.METHOD}(query); return {self.EXAMPLE}"
            )
        return method


class LangChainRetriever(_FactoryRetriever):
    """A LangChain retriever built by ``factory`` (``invoke(query) -> list[Document]``)."""

    METHOD, K_NAMES = "invoke", ("k",)
    EXAMPLE = "a LangChain retriever (e.g. vectorstore.as_retriever())"

    def _passage(self, item: Any) -> Passage:
        meta = getattr(item, "metadata", None) or {}
        score = meta.get("score", meta.get("relevance_score"))
        own = {"id": getattr(item, "id", None)} if self.id_key == "id" else {}
        return read_passage(
            {"text": getattr(item, "page_content", None), "metadata": meta, **own},
            doc_id_key=self.doc_id_key,
            id_key=self.id_key,
            score=float(score) if isinstance(score, int | float) else None,
            doc_ids=self._doc_ids,
        )


class LlamaIndexRetriever(_FactoryRetriever):
    """A LlamaIndex retriever built by ``factory`` (``retrieve(query) -> list[NodeWithScore]``)."""

    METHOD, K_NAMES = "retrieve", ("similarity_top_k", "k")
    EXAMPLE = "a LlamaIndex retriever (e.g. index.as_retriever())"

    def _read(self, value: Any) -> Any:
        if not isinstance(value, list | tuple):
            return value
        return [self._node(x) for x in value]

    def _node(self, item: Any) -> Any:
        node = getattr(item, "node", item)
        get_content = getattr(node, "get_content", None)
        if not callable(get_content):
            return item  # as_ranked names the type
        meta = dict(getattr(node, "metadata", None) or {})
        score = getattr(item, "score", None)
        ref = getattr(node, "ref_doc_id", None)
        if ref is not None and not any(meta.get(k) for k in (self.doc_id_key, *DOC_KEYS)):
            meta[self.doc_id_key] = ref  # no source in the metadata: the node's own document
        own = {"id": getattr(node, "node_id", None)} if self.id_key == "id" else {}
        return read_passage(
            {"text": get_content(), "metadata": meta, **own},
            doc_id_key=self.doc_id_key,
            id_key=self.id_key,
            score=float(score) if isinstance(score, int | float) else None,
            doc_ids=self._doc_ids,
        )


class _Given:
    """A factory returning an object the caller built already (``rageval.evaluate(retriever)``)."""

    def __init__(self, obj: Any):
        self.obj = obj

    def __call__(self) -> Any:
        return self.obj

    def __repr__(self) -> str:
        return f"<{type(self.obj).__name__}>"


def adapt(retriever: Any, **options: Any) -> Any:
    """``retriever`` as a rageval retriever, through the adapters the config path uses: an object
    with ``index()`` and ``search()`` as it is; a LangChain retriever (``invoke``); a LlamaIndex
    retriever (``retrieve``); a plain search function (``search(query, k)``). ``options``: the
    adapters' settings (``doc_id_key``, ``id_key``, ``parallelism``, ``timeout``, ...)."""
    if callable(getattr(retriever, "index", None)) and callable(getattr(retriever, "search", None)):
        return retriever
    if callable(getattr(retriever, "invoke", None)):
        return LangChainRetriever(_Given(retriever), **options)
    if callable(getattr(retriever, "retrieve", None)):
        return LlamaIndexRetriever(_Given(retriever), **options)
    if callable(retriever):
        return FunctionRetriever(retriever, what="retriever", **options)
    raise ConfigError(
        f"a {type(retriever).__name__} is not a retriever: pass a search function "
        "(search(query, k) returning ids, (id, score) pairs or passages), a LangChain or "
        "LlamaIndex retriever, an object with index() and search(), or one of the local modes"
    )


def latency_of(ms: Sequence[float]) -> dict[str, Any]:
    """The latency block of calls timed during the run itself."""
    if not ms:
        return {}
    return {
        "p50_ms": float(np.percentile(ms, 50)),
        "p95_ms": float(np.percentile(ms, 95)),
        "queries_sampled": len(ms),
        "searches": 0,  # no extra search was made to time these
        "timed": "the run's own calls",
    }
