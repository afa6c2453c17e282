"""``rageval golden migrate``: chunk labels become evidence quotes that hold for any chunking."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rageval.cli.paths import golden_and_corpus
from rageval.errors import InputError


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``golden migrate`` to ``p``."""
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
    p.add_argument(
        "--keep-unresolved",
        action="store_true",
        help="write even if some labels do not resolve, keeping those as chunk labels",
    )


def handle(args: argparse.Namespace) -> int:
    """Migrate, check the result judges chunks as before, write it and say what changed."""
    from rageval.formats.atomic import locked

    with locked(golden_and_corpus(args.path, args.corpus)[0]):  # no `golden add` in between
        return _migrate(args)


def _migrate(args: argparse.Namespace) -> int:
    from rageval.authoring.edit import check_migration, migrate, read_golden
    from rageval.embedding import resolve_model_path
    from rageval.formats.atomic import atomic_write_text
    from rageval.inputs.chunking import ChunkingSpec, chunk_documents, load_tokenizer
    from rageval.inputs.corpus import load_corpus

    golden_path, corpus_path = golden_and_corpus(args.path, args.corpus)
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
    if corpus_path is None:
        raise InputError(f"no corpus beside {golden_path}: pass --corpus")
    docs = load_corpus(corpus_path)
    spec = ChunkingSpec(args.chunk, args.overlap)
    chunks = chunk_documents(docs, spec, load_tokenizer(str(resolve_model_path(args.tokenizer))))
    by_id = {d.id: d for d in docs}
    result = migrate(golden, text, by_id, chunks)
    for problem in result.problems:
        print(problem, file=sys.stderr)
    if result.problems and not args.keep_unresolved:
        raise InputError(
            f"{len(result.problems)} chunk labels do not resolve under chunking {spec.key}; "
            "nothing written. Pass the chunking they were written against (--chunk, --overlap), "
            "or --keep-unresolved to keep them as chunk labels",
            path=str(golden_path),
        )
    if not result.problems:
        check_migration(golden, result, out, by_id, chunks)
    atomic_write_text(out, result.text)
    print(
        f"migrated {result.converted} chunk labels in {result.queries} queries to evidence quotes "
        f"(chunking {spec.key}) -> {out}; {len(result.problems)} left as chunk labels"
    )
    return 0
