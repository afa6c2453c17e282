"""A deterministic retriever without a model for the run's unit tests: every chunk, ranked by the
query words it holds (ties by chunk id), zero-overlap chunks included."""

from __future__ import annotations

from rageval.types import RankedList


class WordOverlap:
    """Scores a chunk by the query words it holds: deterministic, no model."""

    def index(self, chunks, encoder):
        self.chunks = list(chunks)

    def search(self, queries, depth):
        out = []
        for q in queries:
            words = set(q.lower().split())
            pairs = [(c.id, float(len(words & set(c.text.lower().split())))) for c in self.chunks]
            pairs.sort(key=lambda p: (-p[1], p[0]))
            out.append(RankedList(*map(tuple, zip(*pairs[:depth], strict=True))))
        return out
