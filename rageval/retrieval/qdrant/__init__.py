"""retrieval/qdrant"""
