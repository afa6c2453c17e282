"""Retrievers: a batch-first protocol and the built-in implementations."""

from rageval.retrieval.base import Encoder, Retriever

__all__ = ["Encoder", "Retriever"]
