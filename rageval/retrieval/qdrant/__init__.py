"""The Qdrant backend.

``rageval.retrieval.qdrant.QdrantRetriever`` (the ``_target_`` before the re-layout) still resolves,
to ``rageval.retrieval.qdrant.retriever.QdrantRetriever``; the module is imported only when asked
for.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "QdrantRetriever":
        from rageval.retrieval.qdrant.retriever import QdrantRetriever

        return QdrantRetriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
