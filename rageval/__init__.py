"""rageval: a declarative benchmark suite for the retriever of RAG pipelines."""

__version__ = "0.1.0"
