"""``rageval import beir DIR --out OUT``: a BEIR dataset as a golden JSONL and a corpus.

Writes ``OUT/retriever.jsonl`` (one query a line, its qrels as ``relevant_docs`` with grades) and
the corpus beside it: ``OUT/corpus.jsonl`` (a copy of the BEIR file, the default) or ``OUT/corpus/``
(``--corpus-format folder``: one ``<id>.txt`` a document holding title and text). Either evaluates
exactly like ``dataset=beir``: same documents, same text embedded, same labels.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
from pathlib import Path

from rageval.errors import ConfigError, InputError
from rageval.formats.atomic import atomic_write_text

FORMATS = ("jsonl", "folder")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``import`` options to ``parser``."""
    sub = parser.add_subparsers(dest="source", metavar="SOURCE", required=True)
    b = sub.add_parser("beir", help="a BEIR folder: corpus.jsonl, queries.jsonl, qrels/<split>.tsv")
    b.add_argument("path", help="the BEIR dataset folder")
    b.add_argument("--out", required=True, help="output folder for retriever.jsonl and the corpus")
    b.add_argument("--split", default="test", help="qrels split to import (default: test)")
    b.add_argument(
        "--corpus-format",
        choices=FORMATS,
        default="jsonl",
        help="corpus.jsonl (default) or a corpus/ folder of .txt files",
    )
    b.add_argument("--force", action="store_true", help="overwrite files already in --out")


def run(args: argparse.Namespace) -> int:
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
        f"evaluate: python -m rageval dataset=custom dataset.corpus={corpus} dataset.golden={golden}"
    )
    return 0


def import_beir(
    path: str | Path,
    out: str | Path,
    *,
    split: str = "test",
    corpus_format: str = "jsonl",
    force: bool = False,
):
    """Write the golden JSONL and corpus of a BEIR split; returns (golden path, corpus path, data)."""
    from rageval.inputs.beir import load_beir
    from rageval.inputs.golden import entry_to_dict

    if corpus_format not in FORMATS:
        raise ConfigError(
            f"corpus format must be one of {', '.join(FORMATS)}, got {corpus_format!r}"
        )
    data = load_beir(path, split)
    out = Path(out).expanduser()
    golden = out / "retriever.jsonl"
    corpus = out / ("corpus.jsonl" if corpus_format == "jsonl" else "corpus")
    for target in (golden, corpus):
        if target.exists() and not force:
            raise InputError("already exists; pass --force to overwrite it", path=str(target))
    if corpus_format == "folder":
        paths = {d.id: _doc_path(d.id, data.files.corpus) for d in data.docs}
    out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(entry_to_dict(q), ensure_ascii=False) + "\n" for q in data.golden.queries]
    # the corpus first, swapped in whole; then the golden set that points into it
    if corpus_format == "jsonl":
        tmp = corpus.with_name(corpus.name + ".tmp")
        shutil.copyfile(data.files.corpus, tmp)
        tmp.replace(corpus)
    else:
        _write_folder(corpus, data.docs, paths)
    atomic_write_text(golden, "".join(lines))
    return golden, corpus, data


def _doc_path(doc_id: str, source: Path) -> str:
    """``<id>.txt``, relative; the folder loader reads the id back as the path without ``.txt``."""
    parts = doc_id.split("/")
    if "\\" in doc_id or any(p in ("", ".", "..") for p in parts) or "\0" in doc_id:
        raise InputError(
            f"document id {doc_id!r} cannot be a file name; import with --corpus-format jsonl",
            path=str(source),
        )
    if any(len(p.encode()) > 250 for p in parts):
        raise InputError(
            f"document id {doc_id[:40]!r}... is too long for a file name; use --corpus-format jsonl",
            path=str(source),
        )
    return doc_id + ".txt"


def _write_folder(corpus: Path, docs, paths: dict[str, str]) -> None:
    from tqdm.auto import tqdm

    tmp = corpus.with_name(corpus.name + ".tmp")
    if tmp.exists():
        shutil.rmtree(tmp)
    try:
        for d in tqdm(docs, desc="writing documents", unit="doc", disable=len(docs) < 10_000):
            f = tmp / paths[d.id]
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_bytes(d.text.encode("utf-8"))
    except BaseException:  # a full disk or Ctrl-C: the old corpus stays as it was
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # --force: the old folder leaves only once the new one is complete (two renames, no copy)
    old = corpus.with_name(f"{corpus.name}.old-{os.getpid()}")
    if corpus.exists():
        corpus.replace(old)
    tmp.replace(corpus)
    shutil.rmtree(old, ignore_errors=True)
