"""``rageval golden add``: append a query with evidence quotes checked against the corpus."""

from __future__ import annotations

import argparse

from rageval.cli.paths import golden_and_corpus
from rageval.errors import InputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``golden add`` to ``p``."""
    p.add_argument(
        "path", nargs="?", help="golden JSONL to append to (default: golden/retriever.jsonl)"
    )
    p.add_argument(
        "--corpus",
        help="corpus the quotes are checked against (default: corpus/ beside the golden set)",
    )
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--query", help="the question, as a user asked it")
    src.add_argument(
        "--from-log",
        metavar="FILE:LINE",
        help="take the question from this line of a JSON-lines production log",
    )
    p.add_argument(
        "--log-field",
        help="dotted key of the question in the log line "
        "(default: query, question, user_query, input or prompt)",
    )
    p.add_argument(
        "--evidence",
        nargs=2,
        action="append",
        required=True,
        metavar=("DOC", "QUOTE"),
        help="a document id and a verbatim quote that answers the question (repeatable)",
    )
    p.add_argument(
        "--grade",
        type=int,
        action="append",
        default=[],
        help="grade of each --evidence, in order (default 1)",
    )
    p.add_argument("--id", help="the new entry's id (default: the next free q-<number>)")
    p.add_argument("--id-prefix", default="q-")
    p.add_argument("--source", default="ticket", help="ticket (default), synthetic or adversarial")
    p.add_argument("--tag", action="append", default=[], help="a slice tag (repeatable)")


def handle(args: argparse.Namespace) -> int:
    """Append the entry and print it."""
    from rageval.authoring.edit import add_query, query_from_log
    from rageval.inputs.corpus import load_corpus

    golden_path, corpus_path = golden_and_corpus(args.path, args.corpus)
    if corpus_path is None:
        raise InputError(f"no corpus beside {golden_path}: pass --corpus")
    query = args.query if args.query is not None else query_from_log(args.from_log, args.log_field)
    docs = {d.id: d for d in load_corpus(corpus_path)}
    entry = add_query(
        golden_path,
        docs,
        query,
        [tuple(e) for e in args.evidence],
        args.grade,
        args.id,
        args.id_prefix,
        args.source,
        args.tag,
    )
    print(
        f"added {entry['id']}: {entry['query']!r} ({len(entry['evidence'])} evidence) "
        f"-> {golden_path}"
    )
    return 0
