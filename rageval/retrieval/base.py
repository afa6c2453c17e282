"""The retrieval plug point: a batch-first ``Retriever`` (the ``Encoder`` lives in
rageval.embedding.base).

A team plugs its own system in by writing a class with ``index`` and ``search`` and naming it
with ``_target_`` in ``conf/backend``. Everything is batch-first: ``search`` receives every
query of the run at once and returns one :class:`RankedList` per query, in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from rageval.embedding.base import Encoder
from rageval.types import Chunk, RankedList

__all__ = ["Encoder", "Retriever"]  # Encoder re-exported: plug-ins import it from here


@runtime_checkable
class Retriever(Protocol):
    """Index a run's chunks once, then answer all of its queries in one call."""

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """Make ``chunks`` searchable. Dense retrievers embed through ``encoder``."""
        ...

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Return the top ``depth`` chunk ids with scores for each query, best first."""
        ...
