"""The Azure AI Search backend.

``rageval.retrieval.azure.AzureSearchRetriever`` (the ``_target_`` before the re-layout) still
resolves, to ``rageval.retrieval.azure.retriever.AzureSearchRetriever``; the module is imported only
when asked for.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "AzureSearchRetriever":
        from rageval.retrieval.azure.retriever import AzureSearchRetriever

        return AzureSearchRetriever
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
