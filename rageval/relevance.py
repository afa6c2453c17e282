"""Turn golden labels into graded qrels for the chunking at hand.

- chunk labels (``<doc>:<ordinal>`` or a chunk id) map to that chunk;
- document labels map to every chunk of the document (chunk level) or to the document (doc level);
- evidence quotes are located in the document text (exactly, else ignoring case, runs of
  whitespace and markdown ``*``/`` ` `` markers) and map to every chunk that holds most of the
  quote or is mostly quote. If no chunk passes either test (a long quote cut in unlucky places),
  the chunk with the largest overlap is relevant, so a quote always resolves.
Grades combine by maximum. Evaluation level ``auto`` is ``doc`` when no query has chunk labels or
evidence, else ``chunk``.
"""

from __future__ import annotations

import difflib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rageval.errors import ConfigError, InputError
from rageval.types import Chunk, Document, GoldenSet

LEVELS = ("auto", "chunk", "doc")
MAJORITY = 0.5


@dataclass(frozen=True, slots=True)
class Span:
    """A located evidence quote: characters [start, end) of document ``doc``."""

    doc: str
    start: int
    end: int
    grade: int


@dataclass(frozen=True)
class Resolution:
    """Qrels per query id for one chunking, the located evidence spans, and the level used."""

    qrels: dict[str, dict[str, int]]
    spans: dict[str, list[Span]]
    level: str


class _Normalised:
    """Lower-cased text with whitespace runs folded and markdown markers dropped, plus a map back."""

    __slots__ = ("text", "index")

    def __init__(self, raw: str):
        out: list[str] = []
        index: list[int] = []
        prev_space = True
        for i, ch in enumerate(raw):
            if ch in "*`":
                continue
            if ch.isspace():
                if prev_space:
                    continue
                out.append(" ")
                prev_space = True
            else:
                out.append(ch.lower())
                prev_space = False
            index.append(i)
        self.text = "".join(out)
        self.index = index


def locate_quote(text: str, quote: str, _cache: dict | None = None) -> tuple[int, int] | None:
    """Character span of ``quote`` in ``text``: exact first, then normalised; None if absent."""
    i = text.find(quote)
    if i >= 0:
        return i, i + len(quote)
    norm = _cache.get(id(text)) if _cache is not None else None
    if norm is None:
        norm = _Normalised(text)
        if _cache is not None:
            _cache[id(text)] = norm
    q = _Normalised(quote).text.strip()
    if not q:
        return None
    j = norm.text.find(q)
    if j < 0:
        return None
    return norm.index[j], norm.index[j + len(q) - 1] + 1


def resolve(
    golden: GoldenSet,
    docs: Mapping[str, Document],
    chunks: Sequence[Chunk],
    level: str = "auto",
) -> Resolution:
    """Qrels for every golden query under this chunking; InputError names file, line and query."""
    if level not in LEVELS:
        raise ConfigError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if level == "auto":
        doc_only = all(not q.relevant and not q.evidence for q in golden.queries)
        level = "doc" if doc_only else "chunk"
    by_label = {c.label: c for c in chunks}
    by_id = {c.id: c for c in chunks}
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for c in chunks:
        by_doc[c.doc_id].append(c)
    norm_cache: dict = {}
    qrels: dict[str, dict[str, int]] = {}
    spans: dict[str, list[Span]] = {}
    for q in golden.queries:

        def fail(msg: str, q=q) -> InputError:
            return InputError(f"query {q.id!r}: {msg}", path=golden.path, line=q.line or None)

        rel: dict[str, int] = {}

        def add(unit: str, grade: int, rel=rel) -> None:
            rel[unit] = max(grade, rel.get(unit, 0))

        for label, grade in q.relevant.items():
            chunk = by_label.get(label) or by_id.get(label)
            if chunk is None:
                raise fail(
                    f"chunk label {label!r} matches no chunk of this chunking; labels like "
                    "'<doc>:<ordinal>' hold only for the chunking they were written against: "
                    "use evidence quotes (rageval golden migrate) to make them chunk-independent"
                )
            add(chunk.doc_id if level == "doc" else chunk.id, grade)
        for doc_id, grade in q.relevant_docs.items():
            if doc_id not in docs:
                raise fail(f"relevant_docs names unknown document {doc_id!r}{_hint(doc_id, docs)}")
            if level == "doc":
                add(doc_id, grade)
            else:
                for c in by_doc.get(doc_id, ()):
                    add(c.id, grade)
        q_spans: list[Span] = []
        for i, ev in enumerate(q.evidence):
            doc = docs.get(ev.doc)
            if doc is None:
                raise fail(f"evidence[{i}] names unknown document {ev.doc!r}{_hint(ev.doc, docs)}")
            found = locate_quote(doc.text, ev.quote, norm_cache)
            if found is None:
                raise fail(
                    f"evidence[{i}] quote not found in document {ev.doc!r}: "
                    f"{_short(ev.quote)!r}; copy it verbatim from the document"
                )
            span = Span(ev.doc, found[0], found[1], ev.grade)
            q_spans.append(span)
            if level == "doc":
                add(ev.doc, ev.grade)
            else:
                for chunk_id in _chunks_for_span(span, by_doc.get(ev.doc, ())):
                    add(chunk_id, ev.grade)
        qrels[q.id] = rel
        spans[q.id] = q_spans
    return Resolution(qrels=qrels, spans=spans, level=level)


def _chunks_for_span(span: Span, doc_chunks: Sequence[Chunk]) -> list[str]:
    qlen = span.end - span.start
    best, best_overlap, hits = None, 0, []
    for c in doc_chunks:
        overlap = min(c.end, span.end) - max(c.start, span.start)
        if overlap <= 0:
            continue
        if overlap >= MAJORITY * qlen or overlap >= MAJORITY * max(c.end - c.start, 1):
            hits.append(c.id)
        if overlap > best_overlap:
            best, best_overlap = c, overlap
    if not hits and best is not None:
        hits.append(best.id)
    return hits


def _hint(name: str, docs: Mapping[str, Document]) -> str:
    close = difflib.get_close_matches(name, list(docs), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."
