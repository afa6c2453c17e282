"""retrieval/local"""
