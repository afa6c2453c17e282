"""BM25 as sparse vectors, for a vector store that scores by dot product (Qdrant).

BM25 needs no model: each chunk's sparse vector holds, per token id, the saturated term frequency
tf*(k1+1)/(tf + k1*(1-b+b*len/avgdl)); the collection's IDF modifier multiplies the query's term
counts by ln(1 + (N-df+0.5)/(df+0.5)) at search time. The dot product is Lucene BM25 (bm25s
``method="lucene"``) times (k1+1), a constant factor that leaves the ranking unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from rageval.errors import ConfigError
from rageval.retrieval.tokenize import BM25Tokenizer

SparseRow = tuple[list[int], list[float]]  # (token ids, weights)


class BM25Vectors:
    """Tokenises with :class:`BM25Tokenizer` and builds BM25 sparse vectors."""

    def __init__(self, k1: float, b: float, stemmer: str | None, stopwords: Any) -> None:
        self.k1, self.b, self.vocab = k1, b, {}
        try:
            self._tokenize = BM25Tokenizer(stopwords, stemmer)
            self._tokenize([""])  # unknown stopword language: fail now, not at index()
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"qdrant backend: bad BM25 stemmer or stopwords: {exc}") from exc

    def tokens(self, texts: Sequence[str]) -> list[list[str]]:
        """The lower-cased, stopword-free, stemmed tokens of each text."""
        return self._tokenize(texts, return_ids=False)

    def fit_documents(self, texts: Sequence[str]) -> list[SparseRow]:
        """Set the vocabulary (sorted tokens -> ids) and return each text's (ids, weights)."""
        docs = self.tokens(list(texts))
        self.vocab = {tok: i for i, tok in enumerate(sorted({t for d in docs for t in d}))}
        avgdl = (sum(map(len, docs)) / len(docs)) or 1.0
        rows = []
        for doc in docs:
            norm = self.k1 * (1.0 - self.b + self.b * len(doc) / avgdl)
            tf = sorted((self.vocab[t], n) for t, n in Counter(doc).items())
            rows.append(([i for i, _ in tf], [n * (self.k1 + 1.0) / (n + norm) for _, n in tf]))
        return rows

    def queries(self, texts: Sequence[str]) -> list[SparseRow]:
        """Each query's known token ids with their counts (unknown tokens cannot match)."""
        rows = []
        for toks in self.tokens(list(texts)):
            tf = sorted(Counter(self.vocab[t] for t in toks if t in self.vocab).items())
            rows.append(([i for i, _ in tf], [float(n) for _, n in tf]))
        return rows
