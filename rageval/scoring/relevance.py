"""Turn golden labels into graded qrels for the chunking at hand.

- chunk labels (``<doc>:<ordinal>`` or a chunk id) map to that chunk;
- document labels map to every chunk of the document (chunk level) or to the document (doc level);
- evidence quotes are located in the document text (exactly, else ignoring case, runs of
  whitespace, markdown ``*``/`` ` `` markers and typographic punctuation: curly quotes, dashes,
  ellipsis, non-breaking spaces), the first match unless the item names an ``occurrence`` or a
  ``start`` offset, and map to every chunk that holds most of the
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

from rageval.errors import ConfigError, InputError, did_you_mean
from rageval.types import Chunk, Document, Evidence, GoldenSet

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


# Typographic characters a user cannot easily type, folded to what they would type instead.
FOLD: dict[str, str] = {
    **dict.fromkeys("\u2018\u2019\u201a\u201b\u2032\u00b4", "'"),
    **dict.fromkeys("\u201c\u201d\u201e\u201f\u2033\u00ab\u00bb", '"'),
    **dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2015\u2212", "-"),
    "\u2026": "...",
    "\u00ad": "",  # soft hyphen
    "\u200b": "",  # zero-width space
}


class _Normalised:
    """Lower-cased text with typographic punctuation folded (curly quotes, dashes, ellipsis,
    non-breaking and other spaces), whitespace runs folded and markdown markers dropped, plus a
    map from each normalised character back to its offset in the raw text."""

    __slots__ = ("text", "index")

    def __init__(self, raw: str):
        out: list[str] = []
        index: list[int] = []
        prev_space = True
        for i, ch in enumerate(raw):
            if ch in "*`":
                continue
            for c in FOLD.get(ch, ch):
                if c.isspace():
                    if prev_space:
                        continue
                    out.append(" ")
                    prev_space = True
                else:
                    out.append(c.lower())
                    prev_space = False
                index.append(i)
        self.text = "".join(out)
        self.index = index


def _normalised(text: str, cache: dict | None) -> _Normalised:
    norm = cache.get(id(text)) if cache is not None else None
    if norm is None:
        norm = _Normalised(text)
        if cache is not None:
            cache[id(text)] = norm
    return norm


def quote_occurrences(text: str, quote: str, _cache: dict | None = None) -> list[tuple[int, int]]:
    """Every character span of ``quote`` in ``text``: exact matches, else matches ignoring case,
    whitespace runs, markdown markers and typographic punctuation (offsets into ``text``)."""
    out, i = [], text.find(quote)
    while i >= 0 and quote:
        out.append((i, i + len(quote)))
        i = text.find(quote, i + 1)
    if out:
        return out
    norm = _normalised(text, _cache)
    q = _Normalised(quote).text.strip()
    j = norm.text.find(q) if q else -1
    while j >= 0:
        out.append((norm.index[j], norm.index[j + len(q) - 1] + 1))
        j = norm.text.find(q, j + 1)
    return out


def locate_quote(text: str, quote: str, _cache: dict | None = None) -> tuple[int, int] | None:
    """Character span of the first match of ``quote`` in ``text`` (see ``quote_occurrences``)."""
    found = quote_occurrences(text, quote, _cache)
    return found[0] if found else None


def nearest_passage(
    text: str, quote: str, _cache: dict | None = None
) -> tuple[int, str, float] | None:
    """The passage of ``text`` most like ``quote`` (difflib ratio on the normalised forms): its
    1-based line, the passage, and the similarity in [0, 1]. None for an empty text."""
    norm, q = _normalised(text, _cache), _Normalised(quote).text.strip()
    if not norm.text or not q:
        return None
    n = len(q)
    step = max(1, n // 4)
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(q)
    scored = []
    for lo in range(0, max(1, len(norm.text) - n + step), step):
        matcher.set_seq1(norm.text[lo : lo + n])
        scored.append((matcher.quick_ratio(), lo))
    best, best_lo = -1.0, 0
    for _, lo in sorted(scored, reverse=True)[:20]:
        matcher.set_seq1(norm.text[lo : lo + n])
        r = matcher.ratio()
        if r > best:
            best, best_lo = r, lo
    # align the quote inside a wider region around the best window: the passage runs from the
    # first to the last matching block, widened to whole words
    lo = max(0, best_lo - n // 2)
    region = norm.text[lo : best_lo + n + n // 2]
    blocks = [
        b
        for b in difflib.SequenceMatcher(None, region, q, autojunk=False).get_matching_blocks()
        if b.size >= 3
    ]
    a, b = (
        (blocks[0].a, blocks[-1].a + blocks[-1].size)
        if blocks
        else (best_lo - lo, best_lo - lo + n)
    )
    while a > 0 and region[a - 1] != " ":
        a -= 1
    while b < len(region) and region[b] != " ":
        b += 1
    s, e = norm.index[lo + a], norm.index[lo + b - 1] + 1
    matcher.set_seq1(norm.text[lo + a : lo + b])
    return text.count("\n", 0, s) + 1, text[s:e], matcher.ratio()


def pick_occurrence(
    matches: list[tuple[int, int]], ev: Evidence, where: str
) -> tuple[tuple[int, int] | None, str | None]:
    """The match an evidence item names (``start`` offset, ``occurrence`` number, else the
    first), or None and what is wrong."""
    starts = ", ".join(str(s) for s, _ in matches[:10]) + (", ..." if len(matches) > 10 else "")
    if ev.start is not None:
        hit = next((m for m in matches if m[0] == ev.start), None)
        if hit is None:
            return (
                None,
                f"{where}: no match of the quote starts at {ev.start}; matches start at {starts}",
            )
        return hit, None
    if ev.occurrence is not None:
        if ev.occurrence > len(matches):
            return None, (
                f"{where}: occurrence {ev.occurrence} asked, but the quote occurs "
                f"{len(matches)} time(s) (at characters {starts})"
            )
        return matches[ev.occurrence - 1], None
    return matches[0], None


def duplicate_quotes(golden: GoldenSet, docs: Mapping[str, Document]) -> list[str]:
    """Warnings for quotes that occur more than once in their document and name no occurrence:
    ``file:line: ...`` with where they occur and how to pick one."""
    out, cache = [], {}
    for q in golden.queries:
        for i, ev in enumerate(q.evidence):
            doc = docs.get(ev.doc)
            if doc is None or ev.occurrence is not None or ev.start is not None:
                continue
            matches = quote_occurrences(doc.text, ev.quote, cache)
            if len(matches) > 1:
                lines = [doc.text.count("\n", 0, s) + 1 for s, _ in matches[:5]]
                out.append(
                    f"{golden.path}:{q.line}: query {q.id!r}, evidence[{i}]: the quote occurs "
                    f"{len(matches)} times in {ev.doc!r} (lines {', '.join(map(str, lines))}"
                    f"{', ...' if len(matches) > 5 else ''}); the first is used: add "
                    f'"occurrence": N or "start": {matches[1][0]} to pick another'
                )
    return out


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
                hint = did_you_mean(doc_id, docs, quoted=True)
                raise fail(f"relevant_docs names unknown document {doc_id!r}{hint}")
            if level == "doc":
                add(doc_id, grade)
            else:
                for c in by_doc.get(doc_id, ()):
                    add(c.id, grade)
        q_spans: list[Span] = []
        for i, ev in enumerate(q.evidence):
            doc = docs.get(ev.doc)
            if doc is None:
                hint = did_you_mean(ev.doc, docs, quoted=True)
                raise fail(f"evidence[{i}] names unknown document {ev.doc!r}{hint}")
            matches = quote_occurrences(doc.text, ev.quote, norm_cache)
            if not matches:
                raise fail(_not_found(i, ev, doc, norm_cache))
            found, problem = pick_occurrence(matches, ev, f"evidence[{i}]")
            if found is None:
                raise fail(problem or "")
            span = Span(ev.doc, found[0], found[1], ev.grade)
            q_spans.append(span)
            if level == "doc":
                add(ev.doc, ev.grade)
            else:
                for chunk_id in chunks_for_span(span, by_doc.get(ev.doc, ())):
                    add(chunk_id, ev.grade)
        qrels[q.id] = rel
        spans[q.id] = q_spans
    return Resolution(qrels=qrels, spans=spans, level=level)


def chunks_for_span(span: Span, doc_chunks: Sequence[Chunk], fallback: bool = True) -> list[str]:
    """Ids of the chunks of ``span``'s document that a located passage labels: those holding most
    of it or mostly made of it, else (``fallback``) the one with the largest overlap (a passage
    always lands on a chunking that tiles its document)."""
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
    if not hits and best is not None and fallback:
        hits.append(best.id)
    return hits


def text_overlap(quote: str, passage: str) -> bool:
    """The majority rule on text alone, for a passage that could not be located in its
    document: compared in normalised form (case, whitespace, typographic punctuation), the
    longest stretch they share is most of the quote or most of the passage."""
    q, p = _Normalised(quote).text.strip(), _Normalised(passage).text.strip()
    if not q or not p:
        return False
    if q in p:
        shared = len(q)
    else:
        matcher = difflib.SequenceMatcher(None, p, q, autojunk=False)
        shared = matcher.find_longest_match(0, len(p), 0, len(q)).size
    return shared >= MAJORITY * len(q) or shared >= MAJORITY * len(p)


def resolve_passages(
    golden: GoldenSet,
    docs: Mapping[str, Document],
    passages: Sequence[Chunk],
    located: Mapping[str, object],
    res: Resolution,
    rankings: Mapping[str, Sequence[str]],
) -> Resolution:
    """Qrels over the passages a deployed retriever returned (rageval.retrieval.passages), by the
    rules rageval's own chunks follow: a chunk label is a returned id; ``relevant_docs`` marks
    every returned passage of the document; an evidence quote (located in ``res.spans``) marks the
    passages holding most of it or mostly made of it, on offsets for passages ``located`` in their
    document and on text (:func:`text_overlap`) for the others (one without a document id only
    for the queries that retrieved it). The relevant set of a query is every returned passage,
    of any query, that passes (the pool of a TREC track); no largest-overlap fallback, since the
    passages need not tile their documents."""
    level = res.level
    by_id = {c.id: c for c in passages}
    on_offsets: dict[str, list[Chunk]] = defaultdict(list)
    on_text: dict[str, list[Chunk]] = defaultdict(list)
    for c in passages:
        (on_offsets if c.id in located else on_text)[c.doc_id].append(c)
    qrels: dict[str, dict[str, int]] = {}
    for q in golden.queries:
        rel: dict[str, int] = {}

        def add(unit: str, grade: int, rel=rel) -> None:
            rel[unit] = max(grade, rel.get(unit, 0))

        for label, grade in q.relevant.items():
            if label in by_id:
                add(by_id[label].doc_id if level == "doc" else label, grade)
        for doc_id, grade in q.relevant_docs.items():
            if level == "doc":
                add(doc_id, grade)
            else:
                for c in (*on_offsets.get(doc_id, ()), *on_text.get(doc_id, ())):
                    add(c.id, grade)
        mine = [by_id[u] for u in rankings.get(q.id, ()) if u in by_id and not by_id[u].doc_id]
        for span in res.spans.get(q.id, ()):
            if level == "doc":
                add(span.doc, span.grade)
                continue
            for cid in chunks_for_span(span, on_offsets.get(span.doc, ()), fallback=False):
                add(cid, span.grade)
            quote = docs[span.doc].text[span.start : span.end]
            for c in (*on_text.get(span.doc, ()), *mine):
                if text_overlap(quote, c.text):
                    add(c.id, span.grade)
        qrels[q.id] = rel
    return Resolution(qrels=qrels, spans=res.spans, level=level)


def _not_found(i: int, ev: Evidence, doc: Document, cache: dict) -> str:
    return f"evidence[{i}] " + quote_not_found(ev.doc, ev.quote, doc.text, cache)


def quote_not_found(doc_id: str, quote: str, text: str, cache: dict | None = None) -> str:
    """``quote not found in document 'd': '...'; nearest passage (line N, 80% alike): '...';
    copy the quote verbatim from the document`` (the hint only when a passage is alike)."""
    msg = f"quote not found in document {doc_id!r}: {_short(quote)!r}"
    near = nearest_passage(text, quote, cache)
    if near is not None and near[2] >= 0.5:
        line, passage, ratio = near
        msg += f"; nearest passage (line {line}, {ratio:.0%} alike): {_short(passage, 120)!r}"
    return msg + "; copy the quote verbatim from the document"


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[: n - 3] + "..."
