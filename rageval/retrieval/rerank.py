"""Reranking: a sentence-transformers CrossEncoder rescores the top candidates of any retriever.

All (query, chunk) pairs of a run go to the model in one ``predict`` call; the reranked list is
ordered by the cross-encoder score, ties by id descending.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rageval.errors import ConfigError
from rageval.retrieval.base import Encoder, Retriever
from rageval.retrieval.trace import StageTrace, Stopwatch
from rageval.scoring.ranking import ranked
from rageval.types import Chunk, RankedList


class CrossEncoderReranker:
    """Wraps ``base``: retrieves ``candidates`` per query, then reorders them with a
    CrossEncoder.

    Under a :class:`~rageval.retrieval.trace.StageTrace` it records ``rerank`` (its result) and,
    when ``base`` records no stages of its own, ``retrieval`` (the candidate lists)."""

    trace: StageTrace | None = None

    def __init__(
        self,
        base: Retriever,
        model: str,
        candidates: int = 50,
        batch_size: int = 32,
        max_length: int | None = 512,
        device: str = "cpu",
    ):
        if not model or not Path(model).expanduser().is_dir():
            raise ConfigError(
                "rerank.model must be a local CrossEncoder folder (rageval runs offline), "
                f"got {model!r}"
            )
        if candidates <= 0:
            raise ConfigError(f"rerank.candidates must be > 0, got {candidates}")
        self.base = base
        self.model_path = str(Path(model).expanduser())
        self.candidates = candidates
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self._model = None
        self._text: dict[str, str] = {}
        self.pairs_scored = 0

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """Keep the chunk texts for rescoring and index ``chunks`` in the base retriever."""
        self._text = {c.id: c.text for c in chunks}
        self.base.index(chunks, encoder)

    def _load(self):
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import CrossEncoder

            self._model = CrossEncoder(
                self.model_path, device=self.device, max_length=self.max_length
            )
        return self._model

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """``base``'s top ``candidates`` per query, reordered by CrossEncoder score."""
        trace, pool = self.trace, max(depth, self.candidates)
        before = trace.records if trace is not None else 0
        with Stopwatch() as t_first:
            first = self.base.search(queries, pool)
        with Stopwatch() as t_rerank:
            out = self._rerank(queries, first, depth)
        if trace is not None:
            if trace.records == before or trace.last is None:  # base has no stages of its own
                trace.record("retrieval", first, t_first.seconds, pool)
            trace.record(
                "rerank", out, t_rerank.seconds, depth, (str(trace.last),), reach=self.candidates
            )
        return out

    def _rerank(
        self, queries: Sequence[str], first: Sequence[RankedList], depth: int
    ) -> list[RankedList]:
        pairs, owner = [], []
        for qi, (q, rl) in enumerate(zip(queries, first, strict=True)):
            for cid in rl.ids[: self.candidates]:
                pairs.append((q, self._text[cid]))
                owner.append((qi, cid))
        scores = []
        if pairs:
            scores = self._load().predict(
                pairs, batch_size=self.batch_size, show_progress_bar=False
            )
        self.pairs_scored += len(pairs)
        per_query: list[list[tuple[str, float]]] = [[] for _ in queries]
        for (qi, cid), s in zip(owner, scores, strict=True):
            per_query[qi].append((cid, float(s)))
        return [ranked(p, depth) for p in per_query]

    def index_bytes(self) -> dict[str, int | None]:
        """The base retriever's index size (the reranker holds no index)."""
        sizes = getattr(self.base, "index_bytes", None)
        return sizes() if callable(sizes) else {}
