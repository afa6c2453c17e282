"""The guard against the classic silent regression: queries embedded by another model than the index."""

from __future__ import annotations

import warnings

from rageval.embedding.base import Encoder
from rageval.errors import IndexMismatchError


class PairedEncoder:
    """Documents through one model, queries through another (only when explicitly allowed)."""

    def __init__(self, documents: Encoder, queries: Encoder):
        self.documents, self.queries = documents, queries

    @property
    def fingerprint(self) -> str:
        return self.documents.fingerprint

    @property
    def dim(self) -> int:
        return self.documents.dim

    def encode_documents(self, texts):
        return self.documents.encode_documents(texts)

    def encode_queries(self, texts):
        return self.queries.encode_queries(texts)


def check_query_model(index_encoder: Encoder, query_encoder: Encoder, allow: bool) -> Encoder:
    """Refuse queries embedded by another model than the index, the classic silent regression."""
    if query_encoder is index_encoder or query_encoder.fingerprint == index_encoder.fingerprint:
        return index_encoder
    if not allow:
        raise IndexMismatchError(
            "queries would be embedded with a different model than the index "
            f"(index {index_encoder.fingerprint[:12]}, queries {query_encoder.fingerprint[:12]}); "
            "their vectors are not comparable and every metric would collapse. Use one model "
            "(drop embedding.query_model) or set allow_model_mismatch=true to measure it anyway"
        )
    warnings.warn("queries and index use different embedding models", stacklevel=2)
    return PairedEncoder(index_encoder, query_encoder)
