"""BEIR datasets: ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` as a corpus and a
golden set of document-level labels (see docs/interop.md).

- corpus: ``{"_id", "title", "text"}`` a line, read by :func:`rageval.inputs.corpus.load_corpus`
  (title and text are embedded together, ``title + " " + text``, as BEIR does);
- queries: ``{"_id", "text"}`` a line; queries without judgements in the split are skipped. A
  query's ``metadata`` object becomes its ``meta``, so ``slices=[<key>]`` slices by it: the
  entries whose value is a string, number, boolean or a list of them (nested objects and nulls
  are left out: they name no slice);
- qrels: ``query-id<TAB>corpus-id<TAB>score`` with a header line; graded, 0 = judged non-relevant.
  Queries whose judgements are all 0 are skipped too (no metric is defined for them), and so are
  judgements of documents whose title and text are both empty (no retriever can return them).

Every skip is counted in one warning. A qrels line naming a query or document that does not exist
is an :class:`~rageval.errors.InputError` with its file and line.

:func:`import_beir` exports a split as a golden JSONL and a corpus (``rageval import beir``).
"""

from __future__ import annotations

import json
import os
import shutil
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rageval.errors import ConfigError, InputError
from rageval.formats.atomic import atomic_write_text
from rageval.formats.textio import jsonl_objects, lines, read_text
from rageval.formats.trec import read_qrels
from rageval.inputs.corpus import load_corpus
from rageval.inputs.golden import golden_digest
from rageval.types import Document, GoldenQuery, GoldenSet


@dataclass(frozen=True)
class BeirFiles:
    """The three files of one BEIR split."""

    root: Path
    corpus: Path
    queries: Path
    qrels: Path


@dataclass
class BeirData:
    """A loaded BEIR split: its documents, the golden set, and what was skipped."""

    files: BeirFiles
    docs: list[Document]
    golden: GoldenSet
    skipped: dict[str, int] = field(default_factory=dict)

    def summary(self) -> str:
        """What was skipped, e.g. "3 queries whose judgements are all 0"; "" when nothing was."""
        parts = [f"{n} {what}" for what, n in self.skipped.items() if n]
        return "; ".join(parts)


def beir_files(path: str | Path, split: str = "test") -> BeirFiles:
    """The files of ``split`` under ``path``; InputError naming the first one that is missing."""
    root = Path(path).expanduser()
    if not root.is_dir():
        raise InputError(
            "BEIR dataset folder not found; set dataset.path to a folder holding corpus.jsonl, "
            "queries.jsonl and qrels/",
            path=str(root),
        )
    files = BeirFiles(
        root, root / "corpus.jsonl", root / "queries.jsonl", root / "qrels" / f"{split}.tsv"
    )
    for f in (files.corpus, files.queries):
        if not f.is_file():
            raise InputError(f"missing {f.name}: not a BEIR dataset folder", path=str(f))
    if not files.qrels.is_file():
        splits = sorted(p.stem for p in (root / "qrels").glob("*.tsv"))
        have = f"splits here: {', '.join(splits)}" if splits else "no qrels/*.tsv here"
        raise InputError(
            f"no qrels for split {split!r} ({have}); set dataset.split", path=str(files.qrels)
        )
    return files


def load_beir(
    path: str | Path, split: str = "test", max_document_mb: float | None = None
) -> BeirData:
    """Read and cross-check one BEIR split; see the module docstring for what is skipped.
    A document above ``max_document_mb`` (default: the corpus loader's limit) is an error."""
    files = beir_files(path, split)
    if max_document_mb is None:
        docs = load_corpus(files.corpus)
    else:
        docs = load_corpus(files.corpus, max_document_mb)
    known = {d.id for d in docs}
    bad = next((d for d in known if not _is_token(d)), None)
    if bad is not None:
        line = next(n for n, doc_id in _jsonl_ids(files.corpus) if doc_id == bad)
        _check_token(bad, "document id", files.corpus, line)
    queries = _read_queries(files.queries)
    qrels = read_qrels(files.qrels)
    where = _qrels_lines(files.qrels)
    empty_docs = _ids_of_empty(files.corpus, known, qrels)
    skipped = {"queries without judgements": sum(q not in qrels for q in queries)}
    dropped = no_relevant = 0
    entries = []
    for qid, judged in qrels.items():
        line = where.get((qid, next(iter(judged))))
        _check_token(qid, "query id", files.qrels, line)
        if qid not in queries:
            raise _qrels_error(files, line, f"query {qid!r} is not in queries.jsonl")
        labels = {}
        for doc_id, grade in judged.items():
            if grade < 0:
                msg = f"negative score {grade} for query {qid!r}; use 0 for non-relevant"
                raise _qrels_error(files, where.get((qid, doc_id)), msg)
            if doc_id in known:
                labels[doc_id] = grade
            elif doc_id in empty_docs:
                dropped += 1
            else:
                msg = f"query {qid!r} judges document {doc_id!r}, which is not in corpus.jsonl"
                raise _qrels_error(files, where.get((qid, doc_id)), msg)
        if not any(g >= 1 for g in labels.values()):
            no_relevant += 1
            continue
        _, text, meta = queries[qid]
        entries.append(GoldenQuery(id=qid, query=text, relevant_docs=labels, line=line, meta=meta))
    skipped["queries whose judgements are all 0"] = no_relevant
    skipped["judgements of empty documents"] = dropped
    if not entries:
        raise InputError(
            "no query has a relevant judgement (score >= 1) in this split", path=str(files.qrels)
        )
    golden = GoldenSet(path=str(files.qrels), queries=tuple(entries), digest=golden_digest(entries))
    return BeirData(files=files, docs=docs, golden=golden, skipped=skipped)


def beir_dataset(
    path: str | Path, split: str = "test", max_document_mb: float | None = None
) -> tuple[tuple[Document, ...], GoldenSet]:
    """The documents (already read, so the run does not parse corpus.jsonl again) and the golden
    set of ``split``; warns with the counts of what was skipped."""
    data = load_beir(path, split, max_document_mb)
    note = data.summary()
    if note:
        warnings.warn(f"BEIR {data.files.root.name}/{split}: skipped {note}", stacklevel=2)
    return tuple(data.docs), data.golden


def _qrels_error(files: BeirFiles, line: int | None, msg: str) -> InputError:
    return InputError(msg, path=str(files.qrels), line=line)


def _jsonl(path: Path) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; InputError on malformed lines."""
    yield from jsonl_objects(path)


def _jsonl_ids(path: Path) -> Iterator[tuple[int, str]]:
    for lineno, obj in _jsonl(path):
        yield lineno, str(obj.get("_id", obj.get("id")))


def _read_queries(path: Path) -> dict[str, tuple[int, str, dict[str, Any]]]:
    """query id -> (line, text, the sliceable entries of its ``metadata``)."""
    out: dict[str, tuple[int, str, dict[str, Any]]] = {}
    for lineno, obj in _jsonl(path):
        qid = obj.get("_id", obj.get("id"))
        if isinstance(qid, bool) or not isinstance(qid, str | int) or str(qid) == "":
            raise InputError('query has no "_id"', path=str(path), line=lineno)
        qid, text = str(qid), obj.get("text")
        if not isinstance(text, str) or not text.strip():
            raise InputError(f'query {qid!r}: missing or empty "text"', path=str(path), line=lineno)
        if qid in out:
            first = out[qid][0]
            msg = f"duplicate query id {qid!r} (first on line {first})"
            raise InputError(msg, path=str(path), line=lineno)
        out[qid] = (lineno, text, _sliceable(obj.get("metadata")))
    return out


def _sliceable(metadata: Any) -> dict[str, Any]:
    """The entries of a BEIR query's ``metadata`` a golden line's ``meta`` may hold (strings,
    numbers, booleans, lists of them); others are left out, as they name no slice."""
    if not isinstance(metadata, dict):
        return {}

    def scalar(v: Any) -> bool:
        return isinstance(v, str | int | float | bool) and v != ""

    out: dict[str, Any] = {}
    for key, v in metadata.items():
        if not str(key).strip():
            continue
        if scalar(v):
            out[str(key)] = v
        elif isinstance(v, list) and v and all(scalar(x) for x in v):
            out[str(key)] = list(v)
    return out


def _qrels_lines(path: Path) -> dict[tuple[str, str], int]:
    """(query id, doc id) -> first line of that judgement (the file was validated by read_qrels)."""
    out: dict[tuple[str, str], int] = {}
    for lineno, raw in lines(read_text(path)):
        fields = [f.strip() for f in raw.split("\t")] if "\t" in raw else raw.split()
        if len(fields) == 3:
            out.setdefault((fields[0], fields[1]), lineno)
        elif len(fields) == 4:
            out.setdefault((fields[0], fields[2]), lineno)
    return out


def _ids_of_empty(corpus: Path, known: set[str], qrels: dict) -> set[str]:
    """Judged ids missing from the loaded corpus that are in the file (blank title and text)."""
    judged = {d for j in qrels.values() for d in j} - known
    if not judged:
        return set()
    return {doc_id for _, doc_id in _jsonl_ids(corpus) if doc_id in judged}


def _is_token(value: str) -> bool:
    return len(value.split()) == 1 and value == value.strip()


def _check_token(value: str, what: str, path: Path, line: int | None) -> None:
    if not _is_token(value):
        raise InputError(
            f"{what} {value!r} holds whitespace, which TREC run and qrels files cannot hold; "
            "rename it",
            path=str(path),
            line=line,
        )


# The exporter: `rageval import beir` writes a split as files any rageval run reads.
EXPORT_FORMATS = ("jsonl", "folder")


def import_beir(
    path: str | Path,
    out: str | Path,
    *,
    split: str = "test",
    corpus_format: str = "jsonl",
    force: bool = False,
):
    """Export a BEIR split as a golden JSONL (``retriever.jsonl``) and a corpus (``corpus.jsonl``,
    or a ``corpus/`` folder of ``<id>.txt``) in ``out``; returns (golden path, corpus path,
    data)."""
    from rageval.inputs.golden import entry_to_dict

    if corpus_format not in EXPORT_FORMATS:
        raise ConfigError(
            f"corpus format must be one of {', '.join(EXPORT_FORMATS)}, got {corpus_format!r}"
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
            f"document id {doc_id[:40]!r}... is too long for a file name; "
            "use --corpus-format jsonl",
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
