"""Stage traces: what a retriever built from stages (hybrid fusion, reranking) did on the way to
its final rankings.

A staged retriever declares a class attribute ``trace = None``. While the pipeline searches, it
sets a :class:`StageTrace` there (:func:`tracing`, through wrappers such as retries and rerankers)
and the retriever records each stage's rankings, in query order, and the seconds the stage took.
A stage is recorded only once its call succeeded, so a retried call leaves no half record. The
pipeline scores the recorded stages like the final rankings (recall@depth of a candidate list is
the ceiling a reranker can reach) and reports how much each stage added.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from rageval.types import RankedList

# Attributes through which a retriever holds the retrievers it is built from.
_HELD = ("inner", "base", "dense", "lexical")


@dataclass
class StageTrace:
    """Rankings and seconds per stage, in the order the stages first ran."""

    order: list[str] = field(default_factory=list)
    lists: dict[str, list[RankedList]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    depths: dict[str, int] = field(default_factory=dict)
    # the stages a stage's rankings were made from (fusion: dense and lexical; rerank: its base)
    inputs: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # how deep into its inputs' rankings a stage reads (a reranker: its candidates)
    reach: dict[str, int] = field(default_factory=dict)
    records: int = 0

    def record(
        self,
        stage: str,
        lists: Sequence[RankedList],
        seconds: float,
        depth: int,
        inputs: Sequence[str] = (),
        reach: int | None = None,
    ) -> None:
        """Append one successful call's rankings of ``stage`` (searched to ``depth``)."""
        if stage not in self.lists:
            self.order.append(stage)
            self.lists[stage] = []
            self.seconds[stage] = 0.0
        self.lists[stage].extend(lists)
        self.seconds[stage] += seconds
        self.depths[stage] = max(depth, self.depths.get(stage, 0))
        self.inputs[stage] = tuple(inputs)
        if reach is not None:
            self.reach[stage] = reach
        self.records += 1

    @property
    def last(self) -> str | None:
        """The stage recorded last (the output of the outermost staged retriever so far)."""
        return self.order[-1] if self.order else None


def parts(retriever) -> list:
    """``retriever`` and every retriever it holds (through ``inner``, ``base``, ``dense``,
    ``lexical``), outermost first."""
    found, todo, seen = [], [retriever], set()
    while todo:
        r = todo.pop(0)
        if r is None or id(r) in seen:
            continue
        seen.add(id(r))
        found.append(r)
        held = getattr(r, "__dict__", {})
        todo += [held[a] for a in _HELD if a in held]
    return found


def staged_parts(retriever) -> list:
    """The staged retrievers (a class attribute ``trace``) in ``retriever``, itself included."""
    return [r for r in parts(retriever) if hasattr(type(r), "trace")]


@contextlib.contextmanager
def tracing(retriever, trace: StageTrace) -> Iterator[StageTrace]:
    """Let every staged part of ``retriever`` record into ``trace`` for the block's duration."""
    parts = staged_parts(retriever)
    for p in parts:
        p.trace = trace
    try:
        yield trace
    finally:
        for p in parts:
            p.trace = None


class Stopwatch:
    """``with Stopwatch() as sw: ...`` then ``sw.seconds``."""

    def __enter__(self) -> Stopwatch:
        self.t0 = time.perf_counter()
        self.seconds = 0.0
        return self

    def __exit__(self, *exc: object) -> None:
        self.seconds = time.perf_counter() - self.t0
