"""The Qdrant backend."""
