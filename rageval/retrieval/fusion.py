"""Fusion of several rankings into one, and the hybrid retriever built on it.

- Reciprocal rank fusion: score(d) = sum over lists of 1 / (k + rank(d)), rank 1-based; lists
  where d is absent add nothing. ``k`` defaults to 60 (Cormack et al., 2009).
- Weighted score fusion: each list's scores are min-max normalised to [0, 1] (a list whose scores
  are all equal normalises to 1.0), then score(d) = sum of weight * normalised score; absent = 0.
Fused lists are ordered by score descending, ties by id descending (the trec_eval rule).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from rageval.errors import ConfigError
from rageval.retrieval.base import Encoder, Retriever
from rageval.retrieval.trace import StageTrace, Stopwatch
from rageval.scoring.ranking import ranked
from rageval.types import Chunk, RankedList

FUSION_METHODS = ("rrf", "weighted")


def rrf(lists: Sequence[RankedList], k: float = 60.0, depth: int | None = None) -> RankedList:
    """Reciprocal rank fusion of ``lists``."""
    acc: dict[str, float] = defaultdict(float)
    for rl in lists:
        for rank, doc in enumerate(rl.ids, 1):
            acc[doc] += 1.0 / (k + rank)
    return ranked(acc.items(), depth)


def weighted(
    lists: Sequence[RankedList], weights: Sequence[float], depth: int | None = None
) -> RankedList:
    """Weighted sum of min-max normalised scores."""
    if len(weights) != len(lists):
        raise ConfigError(
            f"fusion needs one weight per ranking: {len(lists)} rankings, weights {list(weights)}"
        )
    acc: dict[str, float] = defaultdict(float)
    for rl, w in zip(lists, weights, strict=True):
        if not rl.ids:
            continue
        lo, hi = min(rl.scores), max(rl.scores)
        span = hi - lo
        for doc, s in zip(rl.ids, rl.scores, strict=True):
            acc[doc] += w * ((s - lo) / span if span > 0 else 1.0)
    return ranked(acc.items(), depth)


class HybridRetriever:
    """Runs a dense and a lexical retriever to ``candidate_depth`` and fuses their rankings.

    Under a :class:`~rageval.retrieval.trace.StageTrace` it records three stages: ``dense`` and
    ``lexical`` (the candidate lists) and ``fusion`` (its result)."""

    trace: StageTrace | None = None

    def __init__(
        self,
        dense: Retriever,
        lexical: Retriever,
        method: str = "rrf",
        rrf_k: float = 60.0,
        weights: Sequence[float] = (0.5, 0.5),
        candidate_depth: int = 100,
    ):
        if method not in FUSION_METHODS:
            raise ConfigError(
                f"search.fusion must be one of {', '.join(FUSION_METHODS)}, got {method!r}"
            )
        if candidate_depth <= 0:
            raise ConfigError(f"search.candidate_depth must be > 0, got {candidate_depth}")
        self.dense, self.lexical = dense, lexical
        self.method, self.rrf_k = method, float(rrf_k)
        self.weights = [float(w) for w in weights]
        self.candidate_depth = candidate_depth

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """Index ``chunks`` in both the dense and the lexical retriever."""
        self.dense.index(chunks, encoder)
        self.lexical.index(chunks, encoder)

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Top ``depth`` per query, fused (RRF or weighted) from both retrievers."""
        cand = max(depth, self.candidate_depth)
        with Stopwatch() as t_dense:
            dense = self.dense.search(queries, cand)
        with Stopwatch() as t_lexical:
            lexical = self.lexical.search(queries, cand)
        with Stopwatch() as t_fusion:
            pairs = zip(dense, lexical, strict=True)
            if self.method == "rrf":
                fused = [rrf([a, b], self.rrf_k, depth) for a, b in pairs]
            else:
                fused = [weighted([a, b], self.weights, depth) for a, b in pairs]
        if self.trace is not None:
            self.trace.record("dense", dense, t_dense.seconds, cand)
            self.trace.record("lexical", lexical, t_lexical.seconds, cand)
            inputs = ("dense", "lexical")
            self.trace.record("fusion", fused, t_fusion.seconds, depth, inputs, reach=cand)
        return fused

    def index_bytes(self) -> dict[str, int | None]:
        """Both indexes together (a part that cannot tell its size leaves the sum unknown)."""
        parts = [getattr(r, "index_bytes", lambda: {})() for r in (self.dense, self.lexical)]
        out: dict[str, int | None] = {}
        for key in ("disk", "memory"):
            values = [p.get(key) for p in parts]
            out[key] = None if any(v is None for v in values) else sum(values)  # type: ignore[misc]
        return out
