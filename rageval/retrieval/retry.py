"""Retries around any backend: a failed search is retried, then narrowed down to the queries that
fail, and the run stops naming them. Nothing partial is ever returned.

The app wraps every backend in :class:`RetryingRetriever`. When ``search`` raises something that
is not a :class:`~rageval.errors.RagevalError` (a plug-in's timeout, a dropped connection, a 503
surfaced as the client library's own exception), the call is retried ``retries`` times, waiting
``backoff * 2**attempt`` seconds. If it still fails, the queries are halved and each half searched
again (with the same retries) until the failing queries are single ones; a
:class:`~rageval.errors.BackendError` then lists them (probing stops after ``MAX_NAMED``). A
RagevalError from the backend itself (Azure's BackendError after its own retries, a ConfigError)
passes through untouched.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from rageval.errors import BackendError, RagevalError
from rageval.types import Chunk, RankedList

MAX_NAMED = 10


class _Failed(Exception):
    def __init__(self, error: Exception):
        self.error = error


class RetryingRetriever:
    """Wraps a retriever; ``index`` and ``close`` pass through, ``search`` retries (see module)."""

    def __init__(
        self,
        inner,
        retries: int = 2,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
    ):
        self.inner, self.retries, self.backoff, self._sleep = inner, retries, backoff, sleep

    def __getattr__(self, name: str):  # the backend's own attributes (index_name, mode, ...)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"RetryingRetriever({self.inner!r}, retries={self.retries})"

    def index(self, chunks: Sequence[Chunk], encoder) -> None:
        """Index ``chunks`` in the wrapped retriever (no retries)."""
        self.inner.index(chunks, encoder)

    def close(self) -> None:
        """Close the wrapped retriever if it has a ``close`` method."""
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """The wrapped retriever's results, with retries; BackendError naming failing queries."""
        queries = list(queries)
        failed: list[tuple[int, Exception]] = []
        results = self._search(queries, 0, depth, failed)
        if failed:
            listed = "; ".join(
                f"#{i} {queries[i]!r}: {type(e).__name__}: {str(e).strip()[:200]}"
                for i, e in failed
            )
            more = " (stopped looking after these)" if len(failed) >= MAX_NAMED else ""
            raise BackendError(
                f"the backend failed {len(failed)} of {len(queries)} queries{more} after "
                f"{self.retries} retries: {listed}. No results were kept; fix the backend or "
                "raise retries / retry_backoff",
                failed_queries=[queries[i] for i, _ in failed],
            ) from failed[0][1]
        return results  # type: ignore[return-value]  (no failure: every slot is filled)

    def _search(
        self, queries: list[str], offset: int, depth: int, failed: list[tuple[int, Exception]]
    ) -> list[RankedList | None]:
        """Results for ``queries`` (``offset`` into the call's queries), None where one failed."""
        if len(failed) >= MAX_NAMED:
            return [None] * len(queries)
        try:
            return list(self._attempt(queries, depth))
        except _Failed as f:
            if len(queries) == 1:
                failed.append((offset, f.error))
                return [None]
        mid = len(queries) // 2
        return self._search(queries[:mid], offset, depth, failed) + self._search(
            queries[mid:], offset + mid, depth, failed
        )

    def _attempt(self, queries: list[str], depth: int) -> list[RankedList]:
        attempt = 0
        while True:
            try:
                return self.inner.search(queries, depth)
            except RagevalError:
                raise
            except Exception as exc:
                if attempt >= self.retries:
                    raise _Failed(exc) from exc
                self._sleep(self.backoff * 2**attempt)
                attempt += 1
