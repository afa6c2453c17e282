"""Documents from a folder of .md/.txt files, a JSONL file, or a BEIR folder."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from rageval.errors import InputError
from rageval.formats.textio import jsonl_objects, read_text
from rageval.types import Document

TEXT_SUFFIXES = (".md", ".txt", ".markdown", ".rst")


def load_corpus(path: str | Path) -> list[Document]:
    """Load documents from ``path``: a folder of text files, a ``.jsonl`` file, or a BEIR folder.

    Folder: every ``.md``/``.txt`` file below it; the id is the relative path without extension.
    JSONL: one ``{"id"|"_id", "title"?, "text"}`` object a line; a title is prepended to the text
    (``title + " " + text``, as BEIR does), so both are embedded and searched.
    A BEIR folder is one that holds ``corpus.jsonl``.
    """
    p = Path(path)
    if not p.exists():
        raise InputError(
            "corpus not found; set dataset.corpus to a folder or a .jsonl file", path=str(p)
        )
    if p.is_dir() and (p / "corpus.jsonl").is_file():
        docs = _load_jsonl(p / "corpus.jsonl")
    elif p.is_dir():
        docs = _load_folder(p)
    else:
        docs = _load_jsonl(p)
    if not docs:
        raise InputError(
            "corpus is empty: no .md/.txt files or JSONL documents with text", path=str(p)
        )
    return docs


def _load_folder(root: Path) -> list[Document]:
    docs = []
    for f in sorted(root.rglob("*")):
        if not f.is_file() or f.suffix.lower() not in TEXT_SUFFIXES:
            continue
        doc_id = f.relative_to(root).with_suffix("").as_posix()
        text = read_text(f)
        if text.strip():
            docs.append(Document(id=doc_id, text=text))
    return docs


def _load_jsonl(f: Path) -> list[Document]:
    docs: list[Document] = []
    seen: dict[str, int] = {}
    for lineno, obj in jsonl_objects(f):
        doc_id = obj.get("id", obj.get("_id"))
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or str(doc_id) == "":
            raise InputError('document has no "id" or "_id"', path=str(f), line=lineno)
        doc_id = str(doc_id)
        text = obj.get("text")
        title = obj.get("title") or ""
        if not isinstance(text, str) or not isinstance(title, str):
            raise InputError(
                f'document {doc_id!r}: "text" (and "title") must be strings',
                path=str(f),
                line=lineno,
            )
        if doc_id in seen:
            raise InputError(
                f"duplicate document id {doc_id!r} (first on line {seen[doc_id]})",
                path=str(f),
                line=lineno,
            )
        seen[doc_id] = lineno
        full = f"{title} {text}" if title else text
        if full.strip():
            docs.append(Document(id=doc_id, text=full, title=title))
    return docs


def corpus_digest(docs: Sequence[Document]) -> str:
    """sha256 over the documents' ids and texts, independent of load order."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.id):
        h.update(d.id.encode())
        h.update(b"\0")
        h.update(d.text.encode())
        h.update(b"\0")
    return h.hexdigest()
