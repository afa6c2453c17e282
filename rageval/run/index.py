"""The index stage: the retriever indexes the units through the timed encoder; its peak memory
and the backend calls up to the search are measured."""

from __future__ import annotations

from dataclasses import dataclass

from rageval.retrieval.base import Encoder, Retriever
from rageval.retrieval.trace import parts
from rageval.run.embed import TimedEncoder, embeds, texts_encoded
from rageval.run.memory import StagePeak
from rageval.types import Chunk, ChunkTexts, GoldenSet


@dataclass(frozen=True)
class Indexed:
    """What the index phase measured: the timed encoder (None without one), the texts the
    encoder had embedded before the run, its seconds while indexing, the peak resident memory
    while indexing, and the backend calls counted up to the search."""

    timed: TimedEncoder | None
    texts_before: int
    embed_seconds: float
    peak_rss: int | None
    requests: dict[str, int] | None


def index(
    retriever: Retriever, encoder: Encoder | None, chunks: list[Chunk], golden: GoldenSet
) -> Indexed:
    """The index phase: the retriever indexes the chunks through the timed encoder (whose
    cache a cluster fills first, in one pass, when the encoder runs elsewhere)."""
    timed = TimedEncoder(encoder) if encoder is not None else None
    embedded_before = texts_encoded(encoder)  # an encoder reused across runs keeps counting
    with StagePeak() as index_peak:
        ahead = getattr(encoder, "executor", "local") != "local"  # a cluster fills the cache
        if timed is not None and ahead and embeds(retriever):  # in one pass, before the index
            timed.prefill(ChunkTexts(chunks), [q.query for q in golden.queries])
        retriever.index(chunks, timed)
    embed_docs = timed.seconds if timed else 0.0
    return Indexed(timed, embedded_before, embed_docs, index_peak.bytes, request_counts(retriever))


def request_counts(retriever: Retriever) -> dict[str, int] | None:
    """Backend calls so far (``index``, ``search``) summed over the parts that count them (Azure,
    Qdrant); None when no part does."""
    found = [p.requests for p in parts(retriever) if isinstance(p.__dict__.get("requests"), dict)]
    if not found:
        return None
    return {k: sum(int(r.get(k, 0)) for r in found) for k in ("index", "search")}
