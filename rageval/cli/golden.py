"""``rageval golden validate|stats|generate|add|migrate``: check a golden set against its corpus,
describe it, grow it (synthetic questions for review, or one real query at a time) and make its
chunk labels chunk-independent. The last three live in generate_cli and golden_edit."""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path

from rageval.errors import InputError, RagevalError

DEMO = Path(__file__).resolve().parents[2] / "golden"
SYNTHETIC_LIMIT = 0.40


def _default_golden() -> Path:
    local = Path("golden/retriever.jsonl")
    return local if local.is_file() else DEMO / "retriever.jsonl"


def add_arguments(p: argparse.ArgumentParser) -> None:
    sub = p.add_subparsers(dest="golden_command", metavar="ACTION", required=True)
    v = sub.add_parser(
        "validate", help="every quote found in its document, ids unique, labels non-empty"
    )
    v.add_argument("path", nargs="?", help="golden JSONL (default: golden/retriever.jsonl)")
    v.add_argument(
        "--corpus", help="corpus folder or JSONL (default: golden/corpus beside the golden set)"
    )
    v.add_argument(
        "--chunk",
        type=int,
        default=256,
        help="chunking to check chunk labels against (default 256)",
    )
    s = sub.add_parser(
        "stats", help="queries per source, labels per query, documents covered, evidence lengths"
    )
    s.add_argument("path", nargs="?", help="golden JSONL (default: golden/retriever.jsonl)")
    s.add_argument("--corpus", help="corpus, to report how many documents the labels cover")
    s.add_argument("--json", action="store_true", help="print the statistics as JSON")
    s.add_argument(
        "--with",
        dest="with_paths",
        action="append",
        default=[],
        metavar="JSONL",
        help="also count these entries, e.g. golden/generated.jsonl (repeatable)",
    )
    from rageval.cli import golden_edit, golden_generate

    golden_generate.add_arguments(
        sub.add_parser("generate", help="synthetic questions from an LLM endpoint, for review")
    )
    golden_edit.add_add_arguments(
        sub.add_parser(
            "add", help="append a query (typed or from a log line) with checked evidence"
        )
    )
    golden_edit.add_migrate_arguments(
        sub.add_parser("migrate", help="turn chunk labels into chunk-independent evidence quotes")
    )


def _paths(args) -> tuple[Path, Path | None]:
    golden = Path(args.path) if args.path else _default_golden()
    corpus = Path(args.corpus) if args.corpus else golden.parent / "corpus"
    return golden, (corpus if corpus.exists() else None)


def run(args) -> int:
    from rageval.cli import golden_edit, golden_generate

    actions = {
        "validate": lambda: validate(*_paths(args), chunk=args.chunk),
        "stats": lambda: stats(*_paths(args), as_json=args.json, with_paths=args.with_paths),
        "generate": lambda: golden_generate.run(args),
        "add": lambda: golden_edit.run_add(args),
        "migrate": lambda: golden_edit.run_migrate(args),
    }
    return actions[args.golden_command]()


def validate(golden_path: Path, corpus_path: Path | None, chunk: int = 256) -> int:
    """Print every problem as ``file:line: message``; exit 2 if there is any, else 0."""
    from rageval.chunking import ChunkingSpec, chunk_documents, load_tokenizer
    from rageval.embedding import resolve_model_path
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden
    from rageval.relevance import resolve
    from rageval.types import GoldenSet

    golden = load_golden(golden_path)
    if corpus_path is None:
        raise InputError(
            f"no corpus to check the quotes against: pass --corpus (looked for {golden_path.parent / 'corpus'})"
        )
    docs = load_corpus(corpus_path)
    chunks = chunk_documents(
        docs, ChunkingSpec(chunk), load_tokenizer(str(resolve_model_path("all-MiniLM-L6-v2")))
    )
    by_id = {d.id: d for d in docs}
    problems = []
    for q in golden.queries:
        try:
            resolve(GoldenSet(golden.path, (q,), golden.digest), by_id, chunks, level="chunk")
        except RagevalError as err:
            problems.append(str(err))
    for warning in short_quote_warnings(golden):
        print(warning, file=sys.stderr)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(
            f"rageval: {len(problems)} of {len(golden.queries)} queries have problems",
            file=sys.stderr,
        )
        return 2
    print(
        f"ok: {len(golden.queries)} queries, every label resolves against {len(docs)} documents ({golden_path})"
    )
    return 0


MIN_QUOTE_WORDS = 3


def short_quote_warnings(golden) -> list[str]:
    """A quote of one or two words ("a", "refund") is found in many chunks by chance: it makes
    almost any chunk that holds it relevant. Listed as warnings, not errors."""
    out = []
    for q in golden.queries:
        for i, e in enumerate(q.evidence):
            n = len(e.quote.split())
            if n < MIN_QUOTE_WORDS:
                out.append(
                    f"{golden.path}:{q.line}: warning: query {q.id!r}, evidence[{i}]: the quote "
                    f"{e.quote!r} is {n} word{'s' * (n != 1)}; a quote this short matches by chance. "
                    f"Quote at least {MIN_QUOTE_WORDS} words of the passage that answers the query"
                )
    return out


def describe(golden, n_corpus_docs: int | None = None) -> dict:
    """The statistics ``golden stats`` prints."""
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
        "graded_queries": sum(
            1
            for q in golden.queries
            if len(
                {e.grade for e in q.evidence}
                | set(q.relevant.values())
                | set(q.relevant_docs.values())
            )
            > 1
        ),
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


def synthetic_line(queries, what: str = "") -> tuple[str, str | None]:
    """A line giving the synthetic share of ``queries``, and the warning when it is above the limit."""
    n = len(queries)
    share = sum(q.source == "synthetic" for q in queries) / n if n else 0.0
    line = f"{what + ': ' if what else ''}{n} queries, {share:.0%} synthetic (limit {SYNTHETIC_LIMIT:.0%})"
    if share <= SYNTHETIC_LIMIT:
        return line, None
    return line, (
        f"{share:.0%} of the queries are synthetic (above {SYNTHETIC_LIMIT:.0%}): generated questions "
        "follow the text's wording and flatter lexical search; add real ticket questions"
    )


def stats(golden_path: Path, corpus_path: Path | None, as_json: bool = False, with_paths=()) -> int:
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden
    from rageval.types import GoldenSet

    golden = load_golden(golden_path)
    sets = [golden, *(load_golden(p) for p in with_paths)]
    queries = tuple(q for g in sets for q in g.queries)
    n_docs = len(load_corpus(corpus_path)) if corpus_path else None
    s = describe(GoldenSet(golden.path, queries, golden.digest), n_docs)
    seen: dict[str, str] = {}
    for g in sets:
        clash = [q.id for q in g.queries if seen.setdefault(q.id, g.path) != g.path]
        if clash:
            s["warnings"].append(
                f"{len(clash)} ids of {g.path} are also used earlier, e.g. {clash[0]!r}"
            )
    title = " + ".join(g.path for g in sets)
    if as_json:
        print(json.dumps(s, indent=2))
    else:
        print(f"{title}: {s['queries']} queries")
        for src, v in s["sources"].items():
            print(f"  source {src:<12} {v['count']:>5}  {v['share']:.0%}")
        lp = s["labels_per_query"]
        print(f"  labels per query    mean {lp['mean']}, min {lp['min']}, max {lp['max']}")
        print(f"  graded queries      {s['graded_queries']}")
        cov = f" of {n_docs}" if n_docs else ""
        print(f"  documents covered   {s['documents_covered']}{cov}")
        if s["evidence_words"]:
            ew = s["evidence_words"]
            print(
                f"  evidence words      min {ew['min']}, median {ew['median']}, max {ew['max']} ({ew['quotes']} quotes)"
            )
        print(f"  multi-document      {s['multi_document_queries']['count']} queries")
    for w in s["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    return 0
