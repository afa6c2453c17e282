"""What a retriever's ``search`` may return for a query, read into a :class:`RankedList`.

A plug-in retriever may return, per query: a ``RankedList``; a list of ids, best first (scored
by rank); or a list of ``(id, score)`` pairs. Anything else stops the run with one line naming
the type it got and the types it may return. A run whose results name nothing this run knows
(no chunk, document or labelled id) stops too, instead of printing zeros.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rageval.errors import ConfigError
from rageval.types import RankedList

ACCEPTED = "a RankedList(ids, scores), a list of ids (best first) or a list of (id, score) pairs"
# the share of returned ids this run must know before it warns that its metrics understate it
KNOWN_WARN_BELOW = 0.5


def _name(value: Any) -> str:
    return type(value).__name__


def as_ranked(value: Any, query: str) -> RankedList:
    """``value`` (one query's results) as a RankedList; ConfigError naming what came back."""
    if isinstance(value, RankedList):
        return value
    if isinstance(value, list | tuple):
        items = list(value)
        if all(isinstance(x, str) for x in items):
            return RankedList(tuple(items), tuple(float(len(items) - i) for i in range(len(items))))
        if all(_pair(x) for x in items):
            return RankedList(tuple(x[0] for x in items), tuple(float(x[1]) for x in items))
        bad = next(x for x in items if not isinstance(x, str) and not _pair(x))
        raise ConfigError(
            f"search() returned a {_name(value)} holding a {_name(bad)} ({bad!r:.60}) for query "
            f"{query!r:.80}; return {ACCEPTED}"
        )
    raise ConfigError(
        f"search() returned a {_name(value)} for query {query!r:.80}; return {ACCEPTED}"
    )


def _pair(x: Any) -> bool:
    return (
        isinstance(x, tuple | list)
        and len(x) == 2
        and isinstance(x[0], str)
        and isinstance(x[1], int | float)
        and not isinstance(x[1], bool)
    )


def unknown_ids(results: Sequence[RankedList], known: Iterable[str]) -> tuple[int, int]:
    """(returned ids this run knows, returned ids) over every query's results."""
    known = set(known)
    total = sum(len(r.ids) for r in results)
    matched = sum(1 for r in results for i in r.ids if i in known)
    return matched, total


def check_known(results: Sequence[RankedList], known: Iterable[str]) -> str | None:
    """ConfigError when no returned id is one this run knows (its metrics would all be 0); a
    warning's text when fewer than KNOWN_WARN_BELOW of them are; else None."""
    matched, total = unknown_ids(results, known)
    if not total:
        return None
    if matched == 0:
        raise ConfigError(
            f"0 of {total} returned ids match this run's chunks, documents or labels, so every "
            "metric would be 0: return the chunk ids rageval passed to index() or the documents' "
            "ids, or map your index's ids to them"
        )
    if matched / total < KNOWN_WARN_BELOW:
        return (
            f"only {matched} of {total} returned ids match this run's chunks, documents or "
            "labels; the others count as misses: return the chunk ids rageval passed to index() "
            "or the documents' ids"
        )
    return None
