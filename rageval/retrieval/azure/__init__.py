"""retrieval/azure"""
