"""What a retriever's ``search`` may return for a query, read into a :class:`RankedList`.

A retriever may return, per query: a ``RankedList``; a list of ids, best first (scored by rank);
a list of ``(id, score)`` pairs; or a list of passages (rageval.retrieval.passages: dicts or
objects with a text, an optional id and a document id), which a :class:`PassageStore` keeps so the
run is scored on the text that came back. Anything else stops the run with one line naming the
type it got and the types it may return.

No silent zeros: a run whose results name nothing this run knows (no chunk, document or labelled
id, and no passage text), or that got no result for any query, stops; one where fewer than
``KNOWN_WARN_BELOW`` (half) of the returned ids are known, or some queries got nothing, warns
(docs/your-retriever.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from rageval.errors import ConfigError
from rageval.retrieval.passages import PASSAGE, Passage, PassageStore, has_text, read_passage
from rageval.types import RankedList

ACCEPTED = f"a RankedList(ids, scores), a list of ids (best first), (id, score) pairs or {PASSAGE}"
# the share of returned ids this run must know before it warns that its metrics understate it
KNOWN_WARN_BELOW = 0.5


def _name(value: Any) -> str:
    return type(value).__name__


def as_ranked(
    value: Any,
    query: str,
    store: PassageStore | None = None,
    reader: Callable[[Any], Passage] = read_passage,
) -> RankedList:
    """``value`` (one query's results) as a RankedList; passages go into ``store``; ConfigError
    naming what came back."""
    if isinstance(value, RankedList):
        return value
    if not isinstance(value, list | tuple):
        raise ConfigError(
            f"search() returned a {_name(value)} for query {query!r:.80}; return {ACCEPTED}"
        )
    ids: list[str] = []
    scores: list[float | None] = []
    for x in value:
        if isinstance(x, str):
            ids.append(x)
            scores.append(None)
        elif _pair(x):
            ids.append(x[0])
            scores.append(float(x[1]))
        elif isinstance(x, Passage) or has_text(x):
            p = x if isinstance(x, Passage) else reader(x)
            if store is None:
                raise ConfigError(
                    f"search() returned passages for query {query!r:.80} where only ids can be "
                    "scored; return ids or (id, score) pairs"
                )
            store.add(p)
            ids.append(p.id)
            scores.append(p.score)
        else:
            raise ConfigError(
                f"search() returned a {_name(value)} holding a {_name(x)} ({x!r:.60}) for query "
                f"{query!r:.80}; return {ACCEPTED}"
            )
    if any(s is None for s in scores):  # a score missing anywhere: the order is the ranking
        scores = [float(len(ids) - i) for i in range(len(ids))]
    return RankedList(tuple(ids), tuple(float(s) for s in scores))  # type: ignore[arg-type]


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
    warning's text when fewer than KNOWN_WARN_BELOW of them are; else None. ``known``: the run's
    chunk and document ids, the labelled ids, and the ids of passages that came back with text."""
    matched, total = unknown_ids(results, known)
    empty = sum(1 for r in results if not r.ids)
    if results and empty == len(results):
        raise ConfigError(
            f"the retriever returned no results for any of the {len(results)} queries, so every "
            "metric would be 0: check that it can reach its index (and reads the data you meant) "
            "before evaluating it"
        )
    if not total:
        return None
    fix = (
        "return passage text (with the document id) or map your index's ids to the chunk ids "
        "rageval passed to index() or to the documents' ids (docs/your-retriever.md)"
    )
    if matched == 0:
        raise ConfigError(
            f"0 of {total} returned ids match this run's chunks, documents or labels, so every "
            f"metric would be 0: {fix}"
        )
    notes = []
    if matched / total < KNOWN_WARN_BELOW:
        notes.append(
            f"only {matched} of {total} returned ids match this run's chunks, documents or "
            f"labels; the others count as misses: {fix}"
        )
    if empty:
        notes.append(
            f"the retriever returned no results for {empty} of {len(results)} queries; they "
            "count as misses"
        )
    return "; ".join(notes) or None
