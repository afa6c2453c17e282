"""The embed stage: the run's encoder, timed and counted, and whether a retriever embeds at all."""

from __future__ import annotations

import time
import warnings

from rageval.retrieval.base import Encoder, Retriever
from rageval.run.spec import RunSpec


def texts_encoded(encoder: Encoder | None) -> int:
    """The texts the encoder has run through its model so far (cache misses; 0 without a count)."""
    return int(getattr(encoder, "texts_encoded", 0) or 0)


class TimedEncoder:
    """The run's encoder, timing and counting the texts asked of it (documents and queries, cache
    reads included); every other member is the wrapped encoder's."""

    def __init__(self, encoder: Encoder):
        self.__dict__.update(wrapped=encoder, seconds=0.0, texts=0)

    def __getattr__(self, name: str):
        wrapped = self.__dict__.get("wrapped")
        if wrapped is None:  # not set up (a copy being built): no member to lend
            raise AttributeError(name)
        return getattr(wrapped, name)

    def _timed(self, fn, texts):
        t = time.perf_counter()
        try:
            return fn(texts)
        finally:
            self.__dict__["seconds"] += time.perf_counter() - t
            self.__dict__["texts"] += len(texts)

    def prefill(self, documents, queries):
        """The wrapped encoder's ``prefill`` (timed as embedding, no texts counted as asked)."""
        t = time.perf_counter()
        try:
            return self.wrapped.prefill(documents, queries)
        finally:
            self.__dict__["seconds"] += time.perf_counter() - t

    def encode_documents(self, texts):
        """The wrapped encoder's document vectors, timed."""
        return self._timed(self.wrapped.encode_documents, texts)

    def encode_queries(self, texts):
        """The wrapped encoder's query vectors, timed."""
        return self._timed(self.wrapped.encode_queries, texts)


def embeds(retriever: Retriever) -> bool:
    """False for a retriever that declares ``embeds = False`` (BM25), also behind wrappers (retry,
    rerank) that hold the retriever they wrap as ``inner`` or ``base``."""
    for _ in range(8):
        if getattr(type(retriever), "embeds", True) is False:
            return False
        held = getattr(retriever, "__dict__", {})
        inner = next(
            (
                v
                for v in (held.get("inner"), held.get("base"))
                if v is not None and callable(getattr(v, "search", None))
            ),
            None,
        )
        if inner is None:
            return True
        retriever = inner
    return True


def warn_if_invisible(spec: RunSpec, retriever: Retriever, encoder: Encoder | None) -> None:
    """Chunks longer than the model reads lose their tail in the vector index (BM25 reads all)."""
    max_len = getattr(encoder, "max_seq_length", None)
    if max_len and spec.chunking.size > max_len and embeds(retriever):
        warnings.warn(
            f"chunk={spec.chunking.size} exceeds the embedding model's max_seq_length={max_len}: "
            "the tail of every chunk is invisible to the vector index",
            stacklevel=3,
        )
