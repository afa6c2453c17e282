"""The guard against the classic silent regression: queries embedded by another model than the
index.

Two encoders are the same model when their fingerprints match. Two runs of one source model on
different backends (torch and onnx, say) have different fingerprints but may still agree: each
export stores the largest cosine distance between its vectors and the torch model's over a fixed
probe set, measured when it was built (rageval.embedding.backends). Angles obey the triangle
inequality, so two encoders of the same source whose angles to torch add up to at most
``arccos(AGREE_COSINE)`` have vectors within that cosine of each other on the probe set; they are
let through. Anything else (another model, int8 against fp32 beyond the bound, a static model)
is refused unless allow_model_mismatch is set.
"""

from __future__ import annotations

import math
import warnings

from rageval.embedding.base import Encoder
from rageval.errors import IndexMismatchError


class PairedEncoder:
    """Documents through one model, queries through another (only when explicitly allowed)."""

    def __init__(self, documents: Encoder, queries: Encoder):
        self.documents, self.queries = documents, queries

    @property
    def fingerprint(self) -> str:
        """The document encoder's: the index's vectors are what the cache keys."""
        return self.documents.fingerprint

    @property
    def dim(self) -> int:
        """The document encoder's vector length."""
        return self.documents.dim

    @property
    def description(self) -> str:
        """Both models, e.g. ``all-MiniLM-L6-v2 (queries: all-MiniLM-L6-v2 onnx)``."""
        docs = getattr(self.documents, "description", "") or self.documents.fingerprint[:12]
        queries = getattr(self.queries, "description", "") or self.queries.fingerprint[:12]
        return f"{docs} (queries: {queries})"

    @property
    def texts_encoded(self) -> int:
        """Texts the two encoders embedded (cache misses)."""
        return sum(int(getattr(e, "texts_encoded", 0) or 0) for e in (self.documents, self.queries))

    def __getattr__(self, name: str):  # the optional members (tokenizer_dir, max_seq_length...)
        return getattr(self.__dict__["documents"], name)

    def close(self) -> None:
        """Close both encoders."""
        for e in (self.documents, self.queries):
            close = getattr(e, "close", None)
            if callable(close):
                close()

    def prefill(self, documents=(), queries=()) -> int:
        """Each encoder fills the cache with its own texts (an encoder without ``prefill``
        embeds them when asked)."""
        done = 0
        for encoder, kwargs in (
            (self.documents, {"documents": documents}),
            (self.queries, {"queries": queries}),
        ):
            fill = getattr(encoder, "prefill", None)
            if callable(fill):
                done += int(fill(**kwargs) or 0)
        return done

    def encode_documents(self, texts):
        """Vectors of ``texts`` from the document encoder."""
        return self.documents.encode_documents(texts)

    def encode_queries(self, texts):
        """Vectors of ``texts`` from the query encoder."""
        return self.queries.encode_queries(texts)


AGREE_COSINE = 0.9999


def vectors_agree(a: Encoder, b: Encoder, cosine: float = AGREE_COSINE) -> bool:
    """Whether ``a`` and ``b`` run the same source model with vectors within ``cosine`` of each
    other, by the distances to the source model measured when their exports were built."""
    src_a, src_b = getattr(a, "source_fingerprint", None), getattr(b, "source_fingerprint", None)
    if not src_a or src_a != src_b:
        return False
    da, db = getattr(a, "max_cosine_distance", None), getattr(b, "max_cosine_distance", None)
    if da is None or db is None:
        return False
    angle = math.acos(max(-1.0, 1.0 - da)) + math.acos(max(-1.0, 1.0 - db))
    return angle <= math.acos(cosine)


def check_query_model(index_encoder: Encoder, query_encoder: Encoder, allow: bool) -> Encoder:
    """Refuse queries embedded by another model than the index, the classic silent regression."""
    if query_encoder is index_encoder or query_encoder.fingerprint == index_encoder.fingerprint:
        return index_encoder
    if vectors_agree(index_encoder, query_encoder):
        return PairedEncoder(index_encoder, query_encoder)
    if not allow:
        raise IndexMismatchError(
            "queries would be embedded with a different model than the index "
            f"(index {index_encoder.fingerprint[:12]}, queries {query_encoder.fingerprint[:12]}); "
            "their vectors are not comparable and every metric would collapse. Use one model "
            "(drop embedding.query_model; another backend of the same model passes only when its "
            f"vectors agree with the index's to cosine {AGREE_COSINE}) or set "
            "allow_model_mismatch=true to measure it anyway"
        )
    warnings.warn("queries and index use different embedding models", stacklevel=2)
    return PairedEncoder(index_encoder, query_encoder)
