"""The FAISS and bm25s backend.

``rageval.retrieval.local.local_retriever`` (the ``_target_`` before the re-layout) still resolves,
to ``rageval.retrieval.local.factory.local_retriever``; the module is imported only when asked for.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "local_retriever":
        from rageval.retrieval.local.factory import local_retriever

        return local_retriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
