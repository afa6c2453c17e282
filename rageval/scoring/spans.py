"""Span and quote metrics for evidence labels: how much of the quoted evidence a context holds.

Character-level, on the offsets of rageval's own chunker, so every backend is measured the same
way (the definitions of Chroma's chunking evaluation; docs/metrics.md has the formulas):

- ``evidence_recall``: evidence characters covered by the retrieved chunks / evidence characters.
- ``evidence_precision``: covered / retrieved characters, every retrieved character counted,
  duplicates from overlapping chunks included (redundancy costs).
- ``evidence_iou``: covered / (evidence + retrieved - covered), retrieved counted as above.
- ``evidence_precision_max``: the precision of retrieving every chunk that touches the evidence,
  the best any search can do with this chunking.
- ``quote_recall`` / ``quote_ndcg``: quotes found, where a quote is found once the retrieved
  chunks together cover all of it; overlap does not multiply the relevant set.

Chunk extents: a chunk's span runs from its start to the start of the next chunk of its document
(the whitespace the tokenizer skipped between them belongs to the chunk before it), the first from
0 and the last to the end of the document. The chunks of a document then tile its text, so
retrieving every chunk that touches the evidence scores exactly 1.0 recall. Evidence characters
that no chunk holds (a document without tokens) are not counted. Queries without evidence labels
get NaN and are left out of these means. Evidence with grade 0 is not evidence.
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rageval.scoring.relevance import Span
from rageval.types import Chunk

Interval = tuple[int, int]
# chunk id -> (document id, start, end): the characters the chunk stands for in span metrics
Extents = Mapping[str, tuple[str, int, int]]


def chunk_extents(
    chunks: Iterable[Chunk], doc_lengths: Mapping[str, int] | None = None
) -> dict[str, tuple[str, int, int]]:
    """Each chunk's span for span metrics: from its start (0 for a document's first chunk) to the
    next chunk's start when that lies past its end, the last chunk to the document's end."""
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    out: dict[str, tuple[str, int, int]] = {}
    for doc, cs in by_doc.items():
        cs.sort(key=lambda c: c.ordinal)
        for i, c in enumerate(cs):
            nxt = cs[i + 1] if i + 1 < len(cs) else None
            out[c.id] = (doc, *_extent(c, i == 0, nxt, doc_lengths))
    return out


def _extent(
    c: Chunk, first: bool, nxt: Chunk | None, doc_lengths: Mapping[str, int] | None
) -> tuple[int, int]:
    """The span of ``c``, whose document's next chunk is ``nxt`` (None: ``c`` is the last)."""
    start = 0 if first else c.start
    if nxt is not None:
        return start, max(c.end, nxt.start)
    return start, max(c.end, (doc_lengths or {}).get(c.doc_id, c.end))


def _in_document_order(chunks: Sequence[Chunk]) -> bool:
    """Whether each document's chunks are together and in ordinal order (chunk_extents' order)."""
    seen: set[str] = set()
    prev = None
    for c in chunks:
        if prev is not None and c.doc_id == prev.doc_id:
            if c.ordinal <= prev.ordinal:
                return False
        elif c.doc_id in seen:
            return False
        else:
            seen.add(c.doc_id)
        prev = c
    return True


class ChunkExtents(Mapping[str, tuple[str, int, int]]):
    """:func:`chunk_extents` as columns: each chunk's span start and end in two integer arrays
    beside the chunks, and the chunk's id to its position; an extent ``(doc, start, end)`` is made
    when it is read. A million chunks' extents take ~70 MiB instead of ~220 MiB as a dict of
    tuples. Equal, key for key and in the same order, to the dict :func:`chunk_extents` gives
    (which it is, held as such, when the chunks are not in document and ordinal order or repeat
    an id)."""

    def __init__(self, chunks: Sequence[Chunk], doc_lengths: Mapping[str, int] | None = None):
        from array import array

        self._chunks = chunks
        self._dict: dict[str, tuple[str, int, int]] | None = None
        self._at = {c.id: i for i, c in enumerate(chunks)}
        n = len(chunks)
        if len(self._at) != n or not _in_document_order(chunks):
            self._at = {}
            self._dict = chunk_extents(chunks, doc_lengths)
            return
        starts, ends = array("q", bytes(8 * n)), array("q", bytes(8 * n))
        for i, c in enumerate(chunks):
            first = i == 0 or chunks[i - 1].doc_id != c.doc_id
            nxt = chunks[i + 1] if i + 1 < n and chunks[i + 1].doc_id == c.doc_id else None
            starts[i], ends[i] = _extent(c, first, nxt, doc_lengths)
        self._starts, self._ends = starts, ends

    def __getitem__(self, cid: str) -> tuple[str, int, int]:
        if self._dict is not None:
            return self._dict[cid]
        i = self._at[cid]
        return (self._chunks[i].doc_id, self._starts[i], self._ends[i])

    def __contains__(self, cid: object) -> bool:
        return cid in (self._dict if self._dict is not None else self._at)

    def __iter__(self):
        return iter(self._dict if self._dict is not None else self._at)

    def __len__(self) -> int:
        return len(self._dict if self._dict is not None else self._at)

    def values(self):  # type: ignore[override]
        """The extents in the keys' order, each made as it is reached."""
        if self._dict is not None:
            return self._dict.values()
        return _ExtentValues(self)


class _ExtentValues:
    """:meth:`ChunkExtents.values`: iterable (again and again) without a list of them all."""

    def __init__(self, extents: ChunkExtents):
        self._e = extents

    def __len__(self) -> int:
        return len(self._e)

    def __iter__(self):
        e = self._e
        return map(lambda c, s, t: (c.doc_id, s, t), e._chunks, e._starts, e._ends)


def merge(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint intervals covering the same characters (touching ones joined)."""
    out: list[Interval] = []
    for s, e in sorted(intervals):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def length(intervals: Iterable[Interval]) -> int:
    """Characters covered by ``intervals``, counted once per interval (merge them first)."""
    return sum(e - s for s, e in intervals)


def intersect(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """The intersection of two merged interval lists, merged."""
    i = j = 0
    out: list[Interval] = []
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if hi > lo:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def covers(merged: Sequence[Interval], span: Interval) -> bool:
    """True when the merged intervals hold every character of ``span``."""
    i = bisect_right(merged, (span[0], math.inf)) - 1
    return i >= 0 and merged[i][0] <= span[0] and merged[i][1] >= span[1]


@dataclass(frozen=True)
class Evidence:
    """One query's evidence under one chunking: merged spans per document and distinct quotes."""

    spans: dict[str, list[Interval]]  # doc -> merged evidence intervals (clipped to the chunks)
    quotes: tuple[tuple[str, Interval, int], ...]  # (doc, span, grade), distinct spans
    size: int  # evidence characters

    @classmethod
    def of(cls, spans: Sequence[Span], doc_cover: Mapping[str, list[Interval]]) -> Evidence | None:
        """None when the query has no evidence (with grade >= 1) that any chunk holds."""
        by_doc: dict[str, list[Interval]] = defaultdict(list)
        grades: dict[tuple[str, Interval], int] = {}
        for s in spans:
            if s.grade < 1:
                continue
            clipped = intersect([(s.start, s.end)], doc_cover.get(s.doc, []))
            if not clipped:
                continue
            span = (clipped[0][0], clipped[-1][1])
            by_doc[s.doc].extend(clipped)
            grades[(s.doc, span)] = max(s.grade, grades.get((s.doc, span), 0))
        merged = {d: merge(v) for d, v in by_doc.items()}
        size = sum(length(v) for v in merged.values())
        if not size:
            return None
        quotes = tuple((d, span, g) for (d, span), g in sorted(grades.items()))
        return cls(merged, quotes, size)


@dataclass(frozen=True)
class Overlap:
    """What a context (a list of retrieved character ranges) holds of one query's evidence."""

    covered: int
    retrieved: int
    evidence: int
    found: int  # quotes wholly inside the context

    @property
    def recall(self) -> float:
        """Share of the evidence characters the context covers; 0.0 without evidence."""
        return self.covered / self.evidence if self.evidence else 0.0

    @property
    def precision(self) -> float:
        """Share of the retrieved characters that are evidence; 0.0 when nothing was retrieved."""
        return self.covered / self.retrieved if self.retrieved else 0.0

    @property
    def iou(self) -> float:
        """Covered characters over the union of evidence and retrieved; 0.0 when both are empty."""
        union = self.evidence + self.retrieved - self.covered
        return self.covered / union if union else 0.0


def overlap(ev: Evidence, context: Sequence[tuple[str, int, int]]) -> Overlap:
    """Evidence covered by ``context`` ((doc, start, end) ranges, duplicates counted as
    retrieved)."""
    got: dict[str, list[Interval]] = defaultdict(list)
    for doc, s, e in context:
        got[doc].append((s, e))
    merged = {d: merge(v) for d, v in got.items()}
    covered = sum(length(intersect(ev.spans[d], merged[d])) for d in ev.spans if d in merged)
    found = sum(1 for d, span, _ in ev.quotes if covers(merged.get(d, []), span))
    retrieved = sum(e - s for _, s, e in context)
    return Overlap(covered, retrieved, ev.size, found)


def doc_cover(extents: Extents) -> dict[str, list[Interval]]:
    """Per document, the characters some chunk stands for."""
    by_doc: dict[str, list[Interval]] = defaultdict(list)
    for doc, s, e in extents.values():
        by_doc[doc].append((s, e))
    return {d: merge(v) for d, v in by_doc.items()}


def evidence_by_query(
    query_ids: Sequence[str],
    spans: Mapping[str, list[Span]],
    extents: Extents,
    cover: Mapping[str, list[Interval]] | None = None,
) -> list[Evidence | None]:
    """Each query's :class:`Evidence` under these chunk extents; None where it has none.
    ``cover``: the characters evidence may lie in, per document (default: what the chunks stand
    for, the whole document for a chunking that tiles it; returned passages, which cover only
    what came back, pass their documents whole so evidence no passage holds counts as missed)."""
    cover = doc_cover(extents) if cover is None else cover
    return [Evidence.of(spans.get(q) or [], cover) for q in query_ids]


def span_metrics(
    query_ids: Sequence[str],
    rankings: Sequence[Sequence[str]],
    spans: Mapping[str, list[Span]],
    extents: Extents,
    ks: Sequence[int],
    cover: Mapping[str, list[Interval]] | None = None,
) -> dict[str, np.ndarray]:
    """Per query, for every k: ``evidence_recall@k``, ``evidence_precision@k``,
    ``evidence_iou@k``, ``quote_recall@k``, ``quote_ndcg@k``; and ``evidence_precision_max``.
    NaN where a query has no evidence, and where a result within k has no place in ``extents``
    (not measured)."""
    names = ("evidence_recall", "evidence_precision", "evidence_iou", "quote_recall", "quote_ndcg")
    out = {f"{m}@{k}": np.full(len(query_ids), np.nan) for k in ks for m in names}
    out["evidence_precision_max"] = np.full(len(query_ids), np.nan)
    touching = _touching_index(extents)
    for qi, (ev, ranking) in enumerate(
        zip(evidence_by_query(query_ids, spans, extents, cover), rankings, strict=True)
    ):
        if ev is None:
            continue
        top = ranking[: max(ks)]
        # a result without a known place in its document (a document id, a passage that was
        # not located) makes every cutoff that holds it unmeasurable: NaN, never a miss
        first_unknown = next((i for i, c in enumerate(top) if c not in extents), len(top))
        context = [extents[c] for c in top[:first_unknown]]
        measured = [k for k in ks if first_unknown == len(top) or k <= first_unknown]
        if not measured:  # not even the first result has a place: the ceiling says nothing
            continue
        for k in measured:
            o = overlap(ev, context[:k])
            out[f"evidence_recall@{k}"][qi] = o.recall
            out[f"evidence_precision@{k}"][qi] = o.precision
            out[f"evidence_iou@{k}"][qi] = o.iou
        found_at = _found_ranks(ev, context)
        for k in measured:
            out[f"quote_recall@{k}"][qi] = sum(1 for r in found_at if r <= k) / len(ev.quotes)
            out[f"quote_ndcg@{k}"][qi] = _quote_ndcg(ev, found_at, k)
        best = [x for d in ev.spans for x in touching(d, ev.spans[d])]
        out["evidence_precision_max"][qi] = overlap(ev, best).precision
    return out


def _found_ranks(ev: Evidence, context: Sequence[tuple[str, int, int]]) -> list[float]:
    """Per quote (in ``ev.quotes`` order), the rank at which the context first covers all of it
    (inf when it never does)."""
    ranks = [math.inf] * len(ev.quotes)
    got: dict[str, list[Interval]] = defaultdict(list)
    for r, (doc, s, e) in enumerate(context, start=1):
        got[doc] = merge([*got[doc], (s, e)])
        for i, (d, span, _) in enumerate(ev.quotes):
            if ranks[i] == math.inf and d == doc and covers(got[doc], span):
                ranks[i] = r
    return ranks


def _quote_ndcg(ev: Evidence, found_at: Sequence[float], k: int) -> float:
    """DCG of the quotes found by rank k (gain = grade at the rank that completes the quote,
    discount log2(rank + 1)) over the ideal: every quote found, best grades first, cut at k."""
    dcg = sum(
        g / math.log2(r + 1) for (_, _, g), r in zip(ev.quotes, found_at, strict=True) if r <= k
    )
    ideal = sorted((g for _, _, g in ev.quotes), reverse=True)[:k]
    idcg = sum(g / math.log2(r + 2) for r, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def _touching_index(extents: Extents):
    """A function (doc, merged evidence) -> extents of every chunk that overlaps that evidence."""
    by_doc: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for doc, s, e in extents.values():
        by_doc[doc].append((s, e))
    for v in by_doc.values():
        v.sort()

    def touching(doc: str, evidence: Sequence[Interval]) -> list[tuple[str, int, int]]:
        return [
            (doc, s, e)
            for s, e in by_doc.get(doc, ())
            if any(min(e, b) > max(s, a) for a, b in evidence)
        ]

    return touching
