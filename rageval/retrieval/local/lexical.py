"""Lexical retrieval with bm25s. Tokenisation (stopwords, stemmer, token pattern) and the BM25
variant and parameters come from config; the built index is cached on disk by content, sealed with
a sha256 of its files and read only when they match (a damaged one is rebuilt, with a warning)."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rageval.embedding.base import Encoder
from rageval.errors import ConfigError
from rageval.retrieval.tokenize import BM25Tokenizer, quiet_bm25s
from rageval.scoring.ranking import break_ties
from rageval.types import Chunk, RankedList

# BM25's parameters: k1 (term-frequency saturation) from 0 up, b (length normalisation) in [0, 1]
BM25_BOUNDS = {"k1": (0.0, None), "b": (0.0, 1.0)}


def check_bm25_param(name: str, value) -> None:
    """ConfigError unless ``value`` is a number BM25's ``name`` (k1 or b) can take."""
    low, high = BM25_BOUNDS[name]
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or value < low or (high is not None and value > high):
        span = f"between {low:g} and {high:g}" if high is not None else f"{low:g} or more"
        raise ConfigError(
            f"search.bm25.{name} must be a number {span}, got {value!r} (k1: term-frequency "
            "saturation, 1.2-2.0 usual; b: document-length normalisation, 0.75 usual)"
        )


class BM25Retriever:
    """BM25 over chunk texts. Chunks that share no term with the query (score 0) are not
    returned."""

    embeds = False  # nothing goes through the embedding model (no max_seq_length warning)

    def __init__(
        self,
        k1: float = 1.5,
        b: float = 0.75,
        method: str = "lucene",
        stopwords: str | None = "en",
        stemmer: str | None = "english",
        lower: bool = True,
        cache_dir: str | None = None,
    ):
        check_bm25_param("k1", k1)
        check_bm25_param("b", b)
        self.params = {
            "k1": k1,
            "b": b,
            "method": method,
            "stopwords": stopwords,
            "stemmer": stemmer,
            "lower": lower,
        }
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.ids: list[str] = []
        self._bm25 = None
        self._tokenizer: BM25Tokenizer | None = None  # built at first use
        self.build_seconds = 0.0

    def _tokenize(self, texts: Sequence[str]):
        if self._tokenizer is None:
            p = self.params
            self._tokenizer = BM25Tokenizer(p["stopwords"], p["stemmer"], p["lower"])
        return self._tokenizer(texts)

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None = None) -> None:
        """Build the BM25 index over the chunk texts, or load it from ``cache_dir`` when cached."""
        import bm25s

        quiet_bm25s()

        start = time.perf_counter()
        self.ids = [c.id for c in chunks]
        path = self._cache_path()
        self._bm25 = None if path is None else self._load(path)
        if self._bm25 is None:
            p = self.params
            self._bm25 = bm25s.BM25(k1=p["k1"], b=p["b"], method=p["method"])
            self._bm25.index(self._tokenize([c.text for c in chunks]), show_progress=False)
            if path is not None:
                self._save(path)
        self.build_seconds = time.perf_counter() - start

    def _load(self, path: Path):
        """The cached index when its files match their digest and bm25s reads it; else None,
        after a warning naming it and its removal (the caller rebuilds it)."""
        import bm25s

        from rageval.formats import sealed

        if not path.exists():
            return None
        reason = sealed.fault(path)
        if reason is None:
            try:
                return bm25s.BM25.load(str(path), show_progress=False)
            except Exception as err:  # any read failure means: rebuild it
                reason = f"bm25s cannot read it: {type(err).__name__}: {str(err)[-200:]}"
        sealed.discard(path, "BM25 index", reason)
        return None

    def _save(self, path: Path) -> None:
        from rageval.formats import sealed

        tmp = sealed.temporary(path)
        try:
            self._bm25.save(str(tmp), show_progress=False)
            sealed.publish(tmp, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def index_bytes(self) -> dict[str, int | None]:
        """Bytes of the BM25 score matrix and vocabulary in memory, and of the saved index in
        ``cache_dir`` (None without a cache: nothing is stored)."""
        if self._bm25 is None:
            return {"disk": 0, "memory": 0}
        import sys

        arrays = [v for v in self._bm25.scores.values() if isinstance(v, np.ndarray)]
        vocab = getattr(self._bm25, "vocab_dict", None) or {}
        memory = sum(a.nbytes for a in arrays) + sys.getsizeof(vocab)
        memory += sum(sys.getsizeof(k) for k in vocab)
        path = self._cache_path()
        disk = None
        if path is not None and path.is_dir():
            disk = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        return {"disk": disk, "memory": int(memory)}

    def _cache_path(self) -> Path | None:
        if self.cache_dir is None:
            return None
        h = hashlib.sha256("\n".join(self.ids).encode())
        h.update(json.dumps(self.params, sort_keys=True).encode())
        return self.cache_dir / "indexes" / f"bm25-{h.hexdigest()[:24]}"

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Top ``depth`` chunks per query by BM25 score, score 0 left out; needs ``index()``."""
        if self._bm25 is None:
            raise RuntimeError("index() must run before search()")
        k = min(depth, len(self.ids))
        if k <= 0 or not queries:
            return [RankedList((), ()) for _ in queries]
        docs, scores = self._bm25.retrieve(self._tokenize(queries), k=k, show_progress=False)
        out = []
        for row_i, row_s in zip(np.asarray(docs), np.asarray(scores), strict=True):
            keep = row_s > 0
            out.append(
                break_ties(
                    RankedList(
                        ids=tuple(self.ids[i] for i in row_i[keep]),
                        scores=tuple(float(s) for s in row_s[keep]),
                    )
                )
            )
        return out
