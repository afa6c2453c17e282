"""The plug points: an ``Encoder`` that turns text into vectors and a batch-first ``Retriever``.

A team plugs its own system in by writing a class with ``index`` and ``search`` and naming it
with ``_target_`` in ``conf/backend``. Everything is batch-first: ``search`` receives every
query of the run at once and returns one :class:`RankedList` per query, in the same order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from rageval.types import Chunk, RankedList


@runtime_checkable
class Encoder(Protocol):
    """Embeds texts as L2-normalised float32 rows, through the embedding cache."""

    @property
    def fingerprint(self) -> str:
        """Identifies the model by its weights and config, not just its name."""
        ...

    @property
    def dim(self) -> int: ...

    def encode_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape (len(texts), dim), float32, rows of unit length."""
        ...

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Like ``encode_documents``; a model with a query prompt applies it here."""
        ...


@runtime_checkable
class Retriever(Protocol):
    """Index a run's chunks once, then answer all of its queries in one call."""

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """Make ``chunks`` searchable. Dense retrievers embed through ``encoder``."""
        ...

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Return the top ``depth`` chunk ids with scores for each query, best first."""
        ...
