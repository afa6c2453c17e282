"""``rageval import beir DIR --out OUT``: a BEIR dataset as a golden JSONL and a corpus.

Writes ``OUT/retriever.jsonl`` (one query a line, its qrels as ``relevant_docs`` with grades) and
the corpus beside it: ``OUT/corpus.jsonl`` (a copy of the BEIR file, the default) or ``OUT/corpus/``
(``--corpus-format folder``: one ``<id>.txt`` a document holding title and text). Either evaluates
exactly like ``dataset=beir``: same documents, same text embedded, same labels.
"""

from __future__ import annotations

import argparse

from rageval.inputs.beir import EXPORT_FORMATS, import_beir


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``import`` options to ``parser``."""
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)
    b = sub.add_parser("beir", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    b.add_argument("path", help="the BEIR dataset folder")
    b.add_argument("--out", required=True, help="output folder for retriever.jsonl and the corpus")
    b.add_argument("--split", default="test", help="qrels split to import (default: test)")
    b.add_argument(
        "--corpus-format",
        choices=EXPORT_FORMATS,
        default="jsonl",
        help="corpus.jsonl (default) or a corpus/ folder of .txt files",
    )
    b.add_argument("--force", action="store_true", help="overwrite files already in --out")


def handle(args: argparse.Namespace) -> int:
    """Import the dataset and print what was written and how to evaluate it."""
    golden, corpus, data = import_beir(
        args.path, args.out, split=args.split, corpus_format=args.corpus_format, force=args.force
    )
    print(
        f"wrote {len(data.golden.queries)} queries to {golden} and {len(data.docs)} documents "
        f"to {corpus}"
    )
    if data.summary():
        print(f"skipped {data.summary()}")
    print(
        "evaluate: python -m rageval dataset=custom "
        f"dataset.corpus={corpus} dataset.golden={golden}"
    )
    return 0
