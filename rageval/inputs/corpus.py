"""Documents from a folder of .md/.txt files, a JSONL file, or a BEIR folder."""

from __future__ import annotations

import hashlib
import os
import stat
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path

from rageval.errors import InputError
from rageval.formats.textio import jsonl_objects, printable, read_text
from rageval.inputs.limits import DEFAULT_MAX_DOCUMENT_MB
from rageval.types import Document

TEXT_SUFFIXES = (".md", ".txt", ".markdown", ".rst")
# What rageval itself writes, never a document: run and sweep folders, MLflow stores, caches.
# A folder of these names, or one that holds a run's files, is skipped (and named) when a folder
# corpus is read, so a command run from inside the corpus can never feed its outputs back.
OUTPUT_DIRS = frozenset({"outputs", "multirun", "mlruns", ".cache", ".rageval-cache", ".hydra"})
OUTPUT_DIRS_SHOWN = sorted(d + "/" for d in OUTPUT_DIRS)
RUN_FILES = ("report.json", "error.json", ".rageval-incomplete", "multirun.yaml", "gate.json")


def load_corpus(
    path: str | Path, max_document_mb: float = DEFAULT_MAX_DOCUMENT_MB
) -> list[Document]:
    """Load documents from ``path``: a folder of text files, a ``.jsonl`` file, or a BEIR folder.

    Folder: every ``.md``/``.txt`` file below it; the id is the relative path without extension.
    JSONL: one ``{"id"|"_id", "title"?, "text"}`` object a line; a title is prepended to the text
    (``title + " " + text``, as BEIR does), so both are embedded and searched.
    A BEIR folder is one that holds ``corpus.jsonl``. A document larger than ``max_document_mb``
    (UTF-8) is an error, and so is a path that is neither a folder nor a regular file (a FIFO
    would block forever, ``/dev/zero`` never ends). See :func:`iter_corpus` for one document at
    a time.
    """
    return list(iter_corpus(path, max_document_mb))


def iter_corpus(
    path: str | Path, max_document_mb: float = DEFAULT_MAX_DOCUMENT_MB
) -> Iterator[Document]:
    """The documents of ``path`` (as :func:`load_corpus` reads them), one at a time as they are
    read: a caller that handles each document and lets it go holds one document, not the corpus.
    The same checks, each raised when its document is reached; an empty corpus is an error once
    the end is reached."""
    p = Path(path)
    if not p.exists():
        raise InputError(
            "corpus not found; set dataset.corpus to a folder or a .jsonl file", path=str(p)
        )
    limit = int(max_document_mb * 1_000_000)
    if p.is_dir() and (p / "corpus.jsonl").is_file():
        docs = _load_jsonl(p / "corpus.jsonl", limit)
    elif p.is_dir():
        docs = _load_folder(p, limit)
    else:
        _check_regular(p)
        docs = _load_jsonl(p, limit)
    empty = True
    for doc in docs:
        empty = False
        yield doc
    if empty:
        raise InputError(
            "corpus is empty: no .md/.txt files or JSONL documents with text", path=str(p)
        )


def _check_regular(p: Path) -> os.stat_result:
    st = p.stat()
    if not stat.S_ISREG(st.st_mode):
        raise InputError(
            "not a regular file or a folder (a FIFO, socket or device cannot be a corpus); "
            "point dataset.corpus at a folder of .md/.txt files or a .jsonl file",
            path=str(p),
        )
    return st


def _too_big(size: int, limit: int, where: str) -> str:
    return (
        f"{where} is {size / 1e6:.1f} MB, above the {limit / 1e6:g} MB limit for one document; "
        "split it into several documents, or raise max_document_mb if it really is one"
    )


def _load_folder(root: Path, limit: int) -> Iterator[Document]:
    # document id -> file, case-folded: on a case-insensitive file system or in a golden set,
    # FAQ and faq would be one document
    seen: dict[str, Path] = {}
    for f in _text_files(root):
        doc_id = f.relative_to(root).with_suffix("").as_posix()
        first = seen.get(doc_id.casefold())
        if first is not None:
            raise InputError(
                f"{first.relative_to(root)} and {f.relative_to(root)} would both be document "
                f"{doc_id!r} (ids are paths without extension, compared ignoring case); rename "
                "or remove one of them",
                path=str(root),
            )
        seen[doc_id.casefold()] = f
        size = _check_regular(f).st_size
        if size > limit:
            raise InputError(_too_big(size, limit, "the document"), path=str(f))
        text = read_text(f)
        if text.strip():
            yield Document(id=doc_id, text=text)


def _text_files(root: Path) -> list[Path]:
    """The text files below ``root``, without rageval's own outputs (warned about, by name)."""
    files, skipped = [], []
    outputs: dict[Path, bool] = {}  # folder -> is it (inside) rageval's outputs

    def is_output(folder: Path) -> bool:
        if folder == root:
            return False
        if folder not in outputs:
            outputs[folder] = (
                folder.name in OUTPUT_DIRS
                or any((folder / name).is_file() for name in RUN_FILES)
                or is_output(folder.parent)
            )
        return outputs[folder]

    for f in sorted(root.rglob("*")):
        if f.suffix.lower() not in TEXT_SUFFIXES or not f.is_file():
            continue
        (skipped if is_output(f.parent) else files).append(f)
    if skipped:
        names = [f.relative_to(root).as_posix() for f in skipped]
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        warnings.warn(
            f"corpus {root}: skipped {len(names)} file(s) in rageval's own outputs, caches or "
            f"MLflow stores ({', '.join(OUTPUT_DIRS_SHOWN)}, run folders): "
            f"{', '.join(names[:5])}{more}; move real documents out of those folders",
            stacklevel=3,
        )
    return files


def _load_jsonl(f: Path, limit: int = DEFAULT_MAX_DOCUMENT_MB * 1_000_000) -> Iterator[Document]:
    seen: dict[str, int] = {}
    # a line longer than this holds a document above the limit however its JSON escapes text
    # (at most 6 characters a byte: \u0001): refused before it is parsed
    for lineno, obj in jsonl_objects(f, 6 * limit + 65_536, "document"):
        doc_id = obj.get("id", obj.get("_id"))
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or str(doc_id) == "":
            raise InputError('document has no "id" or "_id"', path=str(f), line=lineno)
        doc_id = str(doc_id)
        if printable(doc_id) != doc_id:
            raise InputError(
                f"document id {printable(doc_id)!r} holds a control character (NUL, ESC, "
                "newline...); rename it",
                path=str(f),
                line=lineno,
            )
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
        if len(full) > limit // 4 and len(full.encode("utf-8", "surrogatepass")) > limit:
            size = len(full.encode("utf-8", "surrogatepass"))
            raise InputError(
                _too_big(size, limit, f"document {doc_id!r}"), path=str(f), line=lineno
            )
        if full.strip():
            yield Document(id=doc_id, text=full, title=title)


def corpus_digest(docs: Sequence[Document]) -> str:
    """sha256 over the documents' ids and texts, independent of load order."""
    h = hashlib.sha256()
    for d in sorted(docs, key=lambda d: d.id):
        h.update(d.id.encode())
        h.update(b"\0")
        h.update(d.text.encode())
        h.update(b"\0")
    return h.hexdigest()
