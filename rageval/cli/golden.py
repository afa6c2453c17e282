"""``rageval golden validate|stats|generate|add|migrate``: check a golden set against its corpus,
describe it, grow it (synthetic questions for review, or one real query at a time) and make its
chunk labels chunk-independent. Each action's options and handler live in ``ACTIONS``' modules;
the work is done in rageval.authoring."""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

from rageval.authoring.inspect import describe_files, label_problems
from rageval.cli.paths import golden_and_corpus
from rageval.errors import InputError

HELP = {
    "validate": "every quote found in its document, ids unique, labels non-empty; "
    "the judgements file too",
    "stats": "queries per source, labels per query, documents covered, evidence lengths",
}
# action -> (module with add_arguments + handle, one-line help), imported when used
ACTIONS: dict[str, tuple[str, str]] = {
    "generate": (
        "rageval.cli.golden_generate",
        "synthetic questions from an LLM endpoint, for review",
    ),
    "add": (
        "rageval.cli.golden_add",
        "append a query (typed or from a log line) with checked evidence",
    ),
    "migrate": (
        "rageval.cli.golden_migrate",
        "turn chunk labels into chunk-independent evidence quotes",
    ),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the golden-set actions and their options to ``p``."""
    sub = p.add_subparsers(dest="golden_command", metavar="ACTION", required=True)
    v = sub.add_parser("validate", help=HELP["validate"])
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
    v.add_argument(
        "--judgements",
        metavar="JSONL",
        help="judgements file to check too (default: judgements.jsonl beside the golden set, "
        "when there is one)",
    )
    s = sub.add_parser("stats", help=HELP["stats"])
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
    for name, (module, help_text) in ACTIONS.items():
        importlib.import_module(module).add_arguments(sub.add_parser(name, help=help_text))


def handle(args: argparse.Namespace) -> int:
    """Run the chosen action; returns its exit code."""
    if args.golden_command == "validate":
        golden, corpus = golden_and_corpus(args.path, args.corpus)
        return validate(golden, corpus, chunk=args.chunk, judgements=args.judgements)
    if args.golden_command == "stats":
        golden, corpus = golden_and_corpus(args.path, args.corpus)
        return stats(golden, corpus, as_json=args.json, with_paths=args.with_paths)
    return importlib.import_module(ACTIONS[args.golden_command][0]).handle(args)


def validate(golden_path, corpus_path, chunk: int = 256, judgements: str | None = None) -> int:
    """Print every problem as ``file:line: message``; exit 2 if there is any, else 0. The
    judgements file (``judgements``, else judgements.jsonl beside the golden set when present)
    is checked too: its first problem is an InputError (exit 2)."""
    golden, n_docs, problems, warnings = label_problems(golden_path, corpus_path, chunk)
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    for warning in short_quote_warnings(golden):
        print(warning, file=sys.stderr)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        from rageval.formats.textio import lines, read_text

        total = sum(1 for _ in lines(read_text(Path(golden_path))))
        print(f"rageval: {len(problems)} of {total} queries have problems", file=sys.stderr)
        return 2
    print(
        f"ok: {len(golden.queries)} queries, every label resolves against {n_docs} documents "
        f"({golden_path})"
    )
    from rageval.inputs.judgements import default_path

    path = Path(judgements) if judgements else default_path(golden_path)
    if judgements and not path.is_file():
        raise InputError("judgements file not found; check the path", path=str(path))
    if path.is_file():
        from rageval.inputs.corpus import load_corpus
        from rageval.inputs.judgements import load_judgements

        js = load_judgements(path, load_corpus(str(corpus_path)), golden)
        kinds = {k: sum(j.kind == k for j in js) for k in ("human", "llm")}
        print(
            f"ok: {len(js)} judgements ({kinds['human']} human, {kinds['llm']} LLM), every "
            f"passage found in its document ({path})"
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
                    f"{e.quote!r} is {n} word{'s' * (n != 1)}; a quote this short matches by "
                    f"chance. Quote at least {MIN_QUOTE_WORDS} words of the passage that answers "
                    "the query"
                )
    return out


def stats(golden_path, corpus_path, as_json: bool = False, with_paths=()) -> int:
    """Print the statistics of a golden set (and ``with_paths``), as a table or JSON."""
    s, sets = describe_files(golden_path, corpus_path, with_paths)
    from rageval.cli.paths import default_baseline
    from rageval.gate.power_report import golden_set_power

    if not with_paths:  # the power of this set, from a baseline measured on it
        detects = golden_set_power(default_baseline(), sets[0].digest)
        if detects:
            s["detects"] = detects
    if as_json:
        print(json.dumps(s, indent=2))
    else:
        print(f"{' + '.join(g.path for g in sets)}: {s['queries']} queries")
        for src, v in s["sources"].items():
            print(f"  source {src:<12} {v['count']:>5}  {v['share']:.0%}")
        lp = s["labels_per_query"]
        print(f"  labels per query    mean {lp['mean']}, min {lp['min']}, max {lp['max']}")
        print(f"  graded queries      {s['graded_queries']}")
        cov = f" of {s['corpus_documents']}" if s.get("corpus_documents") else ""
        print(f"  documents covered   {s['documents_covered']}{cov}")
        if s["evidence_words"]:
            ew = s["evidence_words"]
            print(
                f"  evidence words      min {ew['min']}, median {ew['median']}, max {ew['max']} "
                f"({ew['quotes']} quotes)"
            )
        print(f"  multi-document      {s['multi_document_queries']['count']} queries")
        if s["tags"]:
            tags = ", ".join(f"{t} {c}" for t, c in s["tags"].items())
            print(f"  tags                {tags}")
        if s.get("detects"):
            shown = ", ".join(f"{m} {v['detects']:.3f}" for m, v in s["detects"].items())
            print(
                f"  detects (80% power) {shown}: a bound from the baseline's per-query spread; "
                "`rageval plan SWEEP_FOLDER` measures it between configurations"
            )
    for w in s["warnings"]:
        print(f"warning: {w}", file=sys.stderr)
    return 0
