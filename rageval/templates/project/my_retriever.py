"""An example retriever to replace with your own.

rageval calls ``index(chunks, encoder)`` once with the run's chunks and ``search(queries, depth)``
once with every query, and expects one ``RankedList`` (chunk ids and scores, best first) per
query. This one ranks chunks by TF-IDF cosine similarity of their words, in plain Python.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from rageval.types import Chunk, RankedList

WORD = re.compile(r"\w+")


class KeywordRetriever:
    embeds = False  # it never calls the embedding model

    def __init__(self, min_token_length: int = 2):
        self.min_token_length = min_token_length

    def _words(self, text: str) -> Counter[str]:
        words = WORD.findall(text.lower())
        return Counter(w for w in words if len(w) >= self.min_token_length)

    def index(self, chunks: Sequence[Chunk], encoder=None) -> None:
        self.ids = [c.id for c in chunks]
        self.vectors = [self._words(c.text) for c in chunks]
        n = len(chunks)
        df = Counter(w for v in self.vectors for w in v)
        self.idf = {w: math.log((1 + n) / (1 + f)) + 1 for w, f in df.items()}
        self.norms = [
            math.sqrt(sum((tf * self.idf[w]) ** 2 for w, tf in v.items())) or 1.0
            for v in self.vectors
        ]

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        results = []
        for query in queries:
            words = self._words(query)
            scored = []
            for i, vector in enumerate(self.vectors):
                dot = sum(q * vector[w] * self.idf[w] ** 2 for w, q in words.items() if w in vector)
                if dot > 0:
                    scored.append((dot / self.norms[i], self.ids[i]))
            scored.sort(key=lambda s: (-s[0], s[1]))
            top = scored[:depth]
            results.append(RankedList(tuple(i for _, i in top), tuple(s for s, _ in top)))
        return results
