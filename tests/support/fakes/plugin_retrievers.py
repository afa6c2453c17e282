"""A plug-in backend as a team would write it, named by Hydra ``_target_`` in the tests
(``backend._target_=fakes.plugin_retrievers.FlakyRetriever``): test modules are imported by path,
so a target must live here (or beside it, like fakes/leaky.py), not in a test module."""

from __future__ import annotations

from rageval.scoring.ranking import ranked


class FlakyRetriever:
    """A team's own backend: ranks chunks by shared words; fails as the test tells it to."""

    transient = 0  # the next calls that raise ConnectionError
    fail_on = ""  # queries holding this word raise TimeoutError, every time
    nan_on = ""  # queries holding this word get a NaN score
    calls: list[int] = []

    def __init__(self, **_):
        self.chunks: list = []

    def index(self, chunks, encoder):
        self.chunks = [(c.id, set(c.text.lower().split())) for c in chunks]

    def search(self, queries, depth):
        type(self).calls.append(len(queries))
        if type(self).transient:
            type(self).transient -= 1
            raise ConnectionError("connection reset by peer")
        if self.fail_on and any(self.fail_on in q for q in queries):
            raise TimeoutError("read timed out after 30 s")
        out = []
        for q in queries:
            words = set(q.lower().split())
            pairs = [
                (cid, float("nan") if self.nan_on and self.nan_on in q else float(len(words & w)))
                for cid, w in self.chunks
            ]
            out.append(ranked(pairs, depth))
        return out


class WordOverlap:
    """A retriever of a team's own: chunks ranked by the words they share with the query;
    ``shape`` says how ``search`` hands a query's results back (a RankedList, a list of ids,
    (id, score) pairs, or a dict, which is not allowed) and ``prefix`` renames the ids (an index
    with ids of its own)."""

    embeds = False

    def __init__(self, shape: str = "ranked", prefix: str = ""):
        self.shape, self.prefix = shape, prefix

    def index(self, chunks, encoder=None):
        self.chunks = [(c.id, set(c.text.lower().split())) for c in chunks]

    def search(self, queries, depth):
        from rageval.types import RankedList

        out = []
        for q in queries:
            words = set(q.lower().split())
            ranked_ = sorted(
                ((len(words & w), cid) for cid, w in self.chunks if words & w),
                key=lambda s: (-s[0], s[1]),
            )[:depth]
            ids = [self.prefix + c for _, c in ranked_]
            scores = [float(s) for s, _ in ranked_]
            if self.shape == "ids":
                out.append(ids)
            elif self.shape == "pairs":
                out.append(list(zip(ids, scores, strict=True)))
            elif self.shape == "dict":
                out.append({"ids": ids})
            else:
                out.append(RankedList(tuple(ids), tuple(scores)))
        return out


def search_passages(query: str, k: int) -> list[dict]:
    """A team's search function (``backend.function=fakes.plugin_retrievers:search_passages``):
    paragraphs of the fixture corpus, its own chunking, ranked by the words they share with the
    query, returned as passages with text and a document id."""
    import os
    from pathlib import Path

    from rageval.inputs.corpus import load_corpus

    root = Path(os.environ.get("RAGEVAL_TEST_CORPUS") or Path(__file__).parents[1] / "data/mini")
    docs = load_corpus(str(root / "corpus") if (root / "corpus").is_dir() else str(root))
    words = set(query.lower().split())
    paragraphs = [(d.id, p) for d in docs for p in d.text.split("\n\n") if p.strip()]
    paragraphs.sort(key=lambda dp: (-len(words & set(dp[1].lower().split())), dp[0], dp[1]))
    return [{"text": p, "doc_id": d, "score": float(-i)} for i, (d, p) in enumerate(paragraphs[:k])]


def search_documents(query: str, k: int) -> list[tuple[str, float]]:
    """Document ids with scores (an index of whole documents)."""
    by_doc: dict[str, float] = {}
    for p in search_passages(query, 10 * k):
        by_doc.setdefault(p["doc_id"], p["score"])
    return sorted(by_doc.items(), key=lambda kv: -kv[1])[:k]


def search_own_ids(query: str, k: int) -> list[str]:
    """An index's own passage ids, no text: nothing rageval can score."""
    return [f"kb-{i:04d}" for i in range(k)]
