"""Inspecting a golden set: the problems of its labels against a corpus, and its statistics."""

from __future__ import annotations

import statistics
from collections import Counter
from pathlib import Path

from rageval.errors import InputError, RagevalError
from rageval.types import GoldenQuery, GoldenSet

# Above this share of synthetic queries, a golden set flatters lexical search.
SYNTHETIC_LIMIT = 0.40


def label_problems(
    golden_path: Path, corpus_path: Path | None, chunk: int = 256
) -> tuple[GoldenSet, int, list[str], list[str]]:
    """(the golden set's good lines, documents in the corpus, one ``file:line: message`` per line
    that does not parse and per query whose labels do not resolve under chunking ``chunk``, in
    file order, warnings: quotes that occur more than once)."""
    from rageval.embedding import resolve_model_path
    from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden
    from rageval.scoring.relevance import duplicate_quotes, resolve

    errors: list[RagevalError] = []  # a bad line hides neither the other lines nor any quote
    golden = load_golden(golden_path, problems=errors)
    if corpus_path is None:
        raise InputError(
            "no corpus to check the quotes against: pass --corpus "
            f"(looked for {golden_path.parent / 'corpus'})"
        )
    docs = load_corpus(corpus_path)
    chunks = chunk_documents(
        docs, ChunkingSpec(chunk), load_tokenizer(str(resolve_model_path("all-MiniLM-L6-v2")))
    )
    by_id = {d.id: d for d in docs}
    for q in golden.queries:
        try:
            resolve(GoldenSet(golden.path, (q,), golden.digest), by_id, chunks, level="chunk")
        except RagevalError as err:
            errors.append(err)
    errors.sort(key=lambda e: getattr(e, "line", None) or 0)  # in file order
    return golden, len(docs), [str(e) for e in errors], duplicate_quotes(golden, by_id)


def describe(golden: GoldenSet, n_corpus_docs: int | None = None) -> dict:
    """The statistics ``golden stats`` prints: sources, labels per query, coverage, evidence."""
    n = len(golden.queries)
    sources = Counter(q.source or "unspecified" for q in golden.queries)
    labels = [len(q.relevant) + len(q.relevant_docs) + len(q.evidence) for q in golden.queries]
    docs: set[str] = set()
    multi = []
    words = []
    for q in golden.queries:
        q_docs = (
            {lbl.rsplit(":", 1)[0] for lbl in q.relevant}
            | set(q.relevant_docs)
            | {e.doc for e in q.evidence}
        )
        docs |= q_docs
        if len(q_docs) > 1:
            multi.append(q.id)
        words += [len(e.quote.split()) for e in q.evidence]
    out = {
        "queries": n,
        "sources": {s: {"count": c, "share": round(c / n, 4)} for s, c in sources.most_common()},
        "labels_per_query": {
            "mean": round(statistics.mean(labels), 2),
            "min": min(labels),
            "max": max(labels),
        },
        "graded_queries": sum(1 for q in golden.queries if _graded(q)),
        "documents_covered": len(docs),
        "evidence_words": (
            {
                "min": min(words),
                "median": statistics.median(words),
                "max": max(words),
                "quotes": len(words),
            }
            if words
            else {}
        ),
        "multi_document_queries": {"count": len(multi), "ids": multi},
        "tags": dict(Counter(t for q in golden.queries for t in q.tags).most_common()),
        "warnings": [],
    }
    if n_corpus_docs:
        out["corpus_documents"] = n_corpus_docs
    warning = synthetic_line(golden.queries)[1]
    if warning:
        out["warnings"].append(warning)
    return out


def _graded(q: GoldenQuery) -> bool:
    grades = (
        {e.grade for e in q.evidence} | set(q.relevant.values()) | set(q.relevant_docs.values())
    )
    return len(grades) > 1


def describe_files(
    golden_path: Path, corpus_path: Path | None, with_paths=()
) -> tuple[dict, list[GoldenSet]]:
    """``describe`` of a golden set together with more files (``with_paths``), warning about ids
    used in more than one; returns the statistics and the sets read."""
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden
    from rageval.scoring.relevance import duplicate_quotes

    golden = load_golden(golden_path)
    sets = [golden, *(load_golden(p) for p in with_paths)]
    queries = tuple(q for g in sets for q in g.queries)
    docs = {d.id: d for d in load_corpus(corpus_path)} if corpus_path else {}
    s = describe(GoldenSet(golden.path, queries, golden.digest), len(docs) if corpus_path else None)
    for g in sets:  # a quote that occurs twice silently takes the first match: say so
        s["warnings"] += duplicate_quotes(g, docs)
    seen: dict[str, str] = {}
    for g in sets:
        clash = [q.id for q in g.queries if seen.setdefault(q.id, g.path) != g.path]
        if clash:
            s["warnings"].append(
                f"{len(clash)} ids of {g.path} are also used earlier, e.g. {clash[0]!r}"
            )
    return s, sets


def synthetic_line(queries, what: str = "") -> tuple[str, str | None]:
    """A line giving the synthetic share of ``queries``, and the warning when it is above the
    limit."""
    n = len(queries)
    share = sum(q.source == "synthetic" for q in queries) / n if n else 0.0
    line = (
        f"{what + ': ' if what else ''}{n} queries, {share:.0%} synthetic "
        f"(limit {SYNTHETIC_LIMIT:.0%})"
    )
    if share <= SYNTHETIC_LIMIT:
        return line, None
    return line, (
        f"{share:.0%} of the queries are synthetic (above {SYNTHETIC_LIMIT:.0%}): "
        "generated questions follow the text's wording and flatter lexical search; "
        "add real ticket questions"
    )
