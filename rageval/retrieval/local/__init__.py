"""The FAISS and bm25s backend."""
