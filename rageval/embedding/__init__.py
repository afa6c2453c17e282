"""Embeddings: a sentence-transformers encoder behind an on-disk, multi-process-safe cache."""

from rageval.embedding.cache import EmbeddingCache
from rageval.embedding.encoder import SentenceTransformerEncoder, resolve_model_path

__all__ = ["EmbeddingCache", "SentenceTransformerEncoder", "resolve_model_path"]
