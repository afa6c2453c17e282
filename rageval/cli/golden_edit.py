"""``rageval golden add`` and ``rageval golden migrate``: options and output (see golden_edit)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval.errors import InputError


def add_add_arguments(p: argparse.ArgumentParser) -> None:
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
        help="dotted key of the question in the log line (default: query, question, user_query, input or prompt)",
    )
    p.add_argument("--evidence", nargs=2, action="append", required=True, metavar=("DOC", "QUOTE"),
                   help="a document id and a verbatim quote that answers the question (repeatable)")  # fmt: skip
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


def add_migrate_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path", nargs="?", help="golden JSONL with chunk labels (default: golden/retriever.jsonl)"
    )
    p.add_argument(
        "--corpus", help="corpus folder or JSONL (default: corpus/ beside the golden set)"
    )
    p.add_argument(
        "--chunk",
        type=int,
        default=256,
        help="the chunk size the labels were written against (default 256)",
    )
    p.add_argument(
        "--overlap",
        type=int,
        default=0,
        help="the chunk overlap they were written against (default 0)",
    )
    p.add_argument(
        "--tokenizer",
        default="all-MiniLM-L6-v2",
        help="embedding model whose tokenizer counted the chunks",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "-o", "--out", help="where to write the migrated set (default: <name>.migrated.jsonl)"
    )
    out.add_argument("--in-place", action="store_true", help="replace the golden set (atomically)")
    p.add_argument("--keep-unresolved", action="store_true",
                   help="write even if some labels do not resolve, keeping those as chunk labels")  # fmt: skip


def _corpus(args, golden_path: Path):
    from rageval.cli.golden import _paths
    from rageval.inputs.corpus import load_corpus

    _, corpus_path = _paths(args)
    if corpus_path is None:
        raise InputError(f"no corpus beside {golden_path}: pass --corpus")
    return load_corpus(corpus_path)


def run_add(args) -> int:
    from rageval.authoring.edit import add_query, query_from_log
    from rageval.cli.golden import _paths

    golden_path, _ = _paths(args)
    query = args.query if args.query is not None else query_from_log(args.from_log, args.log_field)
    docs = {d.id: d for d in _corpus(args, golden_path)}
    entry = add_query(golden_path, docs, query, [tuple(e) for e in args.evidence], args.grade,
                      args.id, args.id_prefix, args.source, args.tag)  # fmt: skip
    print(
        f"added {entry['id']}: {entry['query']!r} ({len(entry['evidence'])} evidence) -> {golden_path}"
    )
    return 0


def run_migrate(args) -> int:
    from rageval.cli.golden import _paths
    from rageval.formats.atomic import locked

    with locked(_paths(args)[0]):  # --in-place rewrites the golden set: no add in between
        return _run_migrate(args)


def _run_migrate(args) -> int:
    from rageval.authoring.edit import migrate, read_golden
    from rageval.chunking import ChunkingSpec, chunk_documents, load_tokenizer
    from rageval.cli.golden import _paths
    from rageval.embedding import resolve_model_path
    from rageval.formats.atomic import atomic_write_text
    from rageval.inputs.golden import parse_line
    from rageval.relevance import resolve
    from rageval.types import GoldenSet

    golden_path, _ = _paths(args)
    text, golden = read_golden(golden_path)
    if golden is None:
        raise InputError("golden set not found or empty", path=str(golden_path))
    out = (
        golden_path
        if args.in_place
        else Path(args.out or golden_path.with_suffix(".migrated.jsonl"))
    )
    if not any(q.relevant for q in golden.queries):
        print(f"nothing to migrate: no entry of {golden_path} has chunk labels (relevant)")
        return 0
    docs = _corpus(args, golden_path)
    spec = ChunkingSpec(args.chunk, args.overlap)
    chunks = chunk_documents(docs, spec, load_tokenizer(str(resolve_model_path(args.tokenizer))))
    by_id = {d.id: d for d in docs}
    result = migrate(golden, text, by_id, chunks)
    for problem in result.problems:
        print(problem, file=sys.stderr)
    if result.problems and not args.keep_unresolved:
        raise InputError(
            f"{len(result.problems)} chunk labels do not resolve under chunking {spec.key}; nothing "
            "written. Pass the chunking they were written against (--chunk, --overlap), or "
            "--keep-unresolved to keep them as chunk labels", path=str(golden_path))  # fmt: skip
    if not result.problems:  # the promise: same judgements under the original chunking
        lines = enumerate(result.text.splitlines(), 1)
        queries = tuple(parse_line(raw, path=str(out), lineno=i) for i, raw in lines if raw.strip())
        new = resolve(GoldenSet(str(out), queries, ""), by_id, chunks, level="chunk").qrels
        if new != resolve(golden, by_id, chunks, level="chunk").qrels:
            raise InputError("the migrated set would judge chunks differently; nothing written "
                             "(please report this as a bug)", path=str(golden_path))  # fmt: skip
    atomic_write_text(out, result.text)
    print(
        f"migrated {result.converted} chunk labels in {result.queries} queries to evidence quotes "
        f"(chunking {spec.key}) -> {out}; {len(result.problems)} left as chunk labels"
    )
    return 0
