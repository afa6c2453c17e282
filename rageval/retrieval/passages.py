"""Passages: results that carry their own text, as a deployed index returns them.

A retriever built on rageval's chunks returns chunk ids. A deployed index (a team's Azure index,
a LangChain or LlamaIndex retriever, a search function of their app) returns passages of its own
chunking: an id of its own, the passage text, the document it came from. rageval scores those as
they are (docs/your-retriever.md):

- a passage's id is the one it carries (``id``, or the metadata key ``id_key`` names), else one
  derived from its document and text (``p:`` + 16 hex digits of their sha256), stable across runs
  so a baseline's rankings compare with a later run's;
- its document id is the first of ``doc_id_key`` (default ``doc_id``) and the keys LangChain,
  LlamaIndex and Haystack use for a source (``source``, ``file_path``, ``file_name``,
  ``document_id``) that names a document of the corpus, on the passage or in its metadata; a
  file path (LangChain's ``metadata={"source": path}``) names the document whose id (its path
  in the corpus folder, without extension) ends it;
- :func:`locate` finds the passage's text in its document (exactly, else ignoring case,
  whitespace runs and typographic punctuation, as evidence quotes are found; the first occurrence
  when it occurs more than once); a passage that cannot be located has no offsets, and the
  metrics that need them say "not measured" for the queries that retrieved it.
"""

from __future__ import annotations

import hashlib
import logging
from collections import Counter
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from rageval.errors import ConfigError

log = logging.getLogger(__name__)

ID_KEYS = ("id", "chunk_id", "passage_id")
# where LangChain (source), LlamaIndex (file_path, file_name, doc_id) and Haystack (file_path,
# document_id) keep a passage's source; tried after backend.doc_id_key
DOC_KEYS = ("doc_id", "source", "file_path", "file_name", "document_id")
TEXT_KEYS = ("text", "page_content", "content")
PASSAGE = (
    "passages: dicts or objects with a text (text, page_content or content), an id (optional) "
    "and a document id (doc_id, or a metadata key backend.doc_id_key names)"
)


@dataclass(frozen=True)
class Passage:
    """One returned passage: its id, document id (may be empty: unknown), text and score."""

    id: str
    doc_id: str
    text: str
    score: float | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # the key the document id was read from ("" when none named a document)
    doc_key: str = field(default="", compare=False, hash=False)


def content_id(doc_id: str, text: str) -> str:
    """A passage id derived from its document and text: the same passage gets the same id in
    every run (``p:`` + 16 hex digits)."""
    digest = hashlib.sha256(f"{doc_id}\0{text}".encode()).hexdigest()
    return f"p:{digest[:16]}"


def _get(item: Any, key: str) -> Any:
    if isinstance(item, Mapping):
        return item.get(key)
    return getattr(item, key, None)


def _metadata(item: Any) -> Mapping[str, Any]:
    meta = _get(item, "metadata")
    if not isinstance(meta, Mapping):
        meta = _get(item, "meta")  # Haystack's Document
    return meta if isinstance(meta, Mapping) else {}


def has_text(item: Any) -> bool:
    """Whether ``item`` is a passage: a mapping or object with a string text."""
    if isinstance(item, str | bytes | tuple | list) or item is None:
        return False
    return any(isinstance(_get(item, k), str) for k in TEXT_KEYS)


def read_passage(
    item: Any,
    *,
    doc_id_key: str = "doc_id",
    id_key: str | None = None,
    score: float | None = None,
    doc_ids: Collection[str] | None = None,
) -> Passage:
    """``item`` (a dict, a LangChain ``Document``, a LlamaIndex node, any object with a text) as
    a :class:`Passage`; ConfigError naming what is missing."""
    text = next((v for k in TEXT_KEYS if isinstance(v := _get(item, k), str)), None)
    if text is None:
        raise ConfigError(
            f"a {type(item).__name__} came back without a text; return {PASSAGE}, ids or "
            "(id, score) pairs"
        )
    meta = _metadata(item)
    doc_id, doc_key = find_document(item, meta, doc_id_key, doc_ids)
    pid = None
    if id_key:
        pid = meta.get(id_key, _get(item, id_key))
        if pid is None:
            raise ConfigError(
                f"backend.id_key={id_key!r}: a returned passage has no {id_key!r} (its metadata "
                f"keys: {', '.join(sorted(map(str, meta))) or 'none'}); name a key every passage "
                "has, or set backend.id_key=null for ids derived from the text"
            )
    else:
        pid = next((v for k in ID_KEYS if isinstance(v := _get(item, k), str | int) and v), None)
    if score is None:
        s = _get(item, "score")
        score = float(s) if isinstance(s, int | float) and not isinstance(s, bool) else None
    return Passage(
        str(pid) if pid not in (None, "") else content_id(doc_id, text),
        doc_id,
        text,
        score,
        dict(meta),
        doc_key,
    )


def find_document(
    item: Any, meta: Mapping[str, Any], doc_id_key: str, doc_ids: Collection[str] | None
) -> tuple[str, str]:
    """(document id, the key it was read from): the first of ``doc_id_key`` and
    :data:`DOC_KEYS` whose value names a document of ``doc_ids`` (as it is, or as a file path);
    without a match the first value present, as it is (a document outside the corpus), else
    ``("", "")``. ``doc_ids`` None: the first value present."""
    first: tuple[str, str] | None = None
    for key in dict.fromkeys((doc_id_key, *DOC_KEYS)):
        value = _get(item, key)
        if value is None:
            value = meta.get(key)
        if value is None or isinstance(value, bool) or str(value) == "":
            continue
        doc = document_of(str(value), doc_ids)
        if doc is not None:
            return doc, key
        first = first or (str(value), key)
    return (first[0], "") if first else ("", "")


def document_of(value: str, doc_ids: Collection[str] | None) -> str | None:
    """The document ``value`` names: itself when it is a document id (or ``doc_ids`` is None),
    else the longest document id that ends the path ``value`` holds once its extension is
    dropped (``/repo/corpus/hr/leave.md`` -> ``hr/leave``); None when none does."""
    if doc_ids is None or value in doc_ids:
        return value
    path = PurePosixPath(value.replace("\\", "/").removeprefix("file://"))
    try:
        bare = path.with_suffix("")
    except ValueError:  # no file name ("/")
        return None
    for form in (bare, path):
        parts = [p for p in form.as_posix().split("/") if p not in ("", ".")]
        for n in range(len(parts), 0, -1):
            candidate = "/".join(parts[-n:])
            if candidate in doc_ids:
                return candidate
    # a file name alone (LlamaIndex's file_name): the one document of that name, in any folder
    named = doc_ids.by_name() if isinstance(doc_ids, DocumentIds) else {}
    return named.get(bare.name) or named.get(path.name)


class DocumentIds(frozenset):
    """A corpus's document ids, with the documents by the last part of their id (a file name
    without extension) for sources that give only a file name; names two documents share are
    left out."""

    def by_name(self) -> dict[str, str]:
        cached = self.__dict__.get("_by_name")
        if cached is None:
            counts = Counter(d.rsplit("/", 1)[-1] for d in self)
            cached = {d.rsplit("/", 1)[-1]: d for d in self if counts[d.rsplit("/", 1)[-1]] == 1}
            self.__dict__["_by_name"] = cached
        return cached


def note_documents(
    results: Sequence[Any], doc_id_key: str, doc_ids: Collection[str] | None
) -> bool:
    """Say (once a run) where the returned passages' documents were read from: an INFO line
    naming the key(s) that matched, and a WARNING naming the keys the passages carry and the
    setting to use when some name no document of the corpus. True once said (passages seen)."""
    passages = [p for r in results if isinstance(r, list | tuple) for p in r]
    passages = [p for p in passages if isinstance(p, Passage)]
    if not passages:
        return False
    counts = Counter(p.doc_key for p in passages)
    found = {k: n for k, n in counts.most_common() if k}
    if found:  # a fallback key said on the console; the configured one only in the debug log
        (log.debug if set(found) == {doc_id_key} else log.info)(
            "returned passages: document ids read from %s",
            ", ".join(f"{k!r} ({n} of {len(passages)})" for k, n in found.items()),
        )
    lost = [p for p in passages if not p.doc_key]
    if lost and doc_ids is not None:
        seen = sorted({str(k) for p in lost for k in p.metadata})
        example = next((p.doc_id for p in lost if p.doc_id), "")
        tried = ", ".join(dict.fromkeys((doc_id_key, *DOC_KEYS)))
        log.warning(
            "%d of %d returned passages name no document of the corpus under the keys %s "
            "(their metadata keys: %s%s); set backend.doc_id_key to the key that holds the "
            "document's id or file path",
            len(lost),
            len(passages),
            tried,
            ", ".join(seen) or "none",
            f"; a value: {example[:80]!r}" if example else "",
        )
    return True


class PassageStore:
    """Every passage a run's searches returned, by id. The same id with another text is refused:
    a ranking names a passage by its id, so one id must be one text."""

    def __init__(self) -> None:
        self.by_id: dict[str, Passage] = {}

    def __len__(self) -> int:
        return len(self.by_id)

    def add(self, p: Passage) -> None:
        seen = self.by_id.get(p.id)
        if seen is None:
            self.by_id[p.id] = p
        elif seen.text != p.text or (p.doc_id and seen.doc_id != p.doc_id):
            raise ConfigError(
                f"the retriever returned passage id {p.id!r} with two different texts or "
                f"documents ({seen.text[:40]!r} in {seen.doc_id!r}, {p.text[:40]!r} in "
                f"{p.doc_id!r}); ids must name one passage: set backend.id_key to a stable "
                "metadata key, or backend.id_key=null for ids derived from the text"
            )


@dataclass(frozen=True)
class Located:
    """A passage's place in its document: characters [start, end), or None when its text could
    not be found there (or its document is not in the corpus)."""

    passage: Passage
    start: int | None
    end: int | None

    @property
    def found(self) -> bool:
        return self.start is not None


def locate(passage: Passage, docs: Mapping[str, Any], cache: dict | None = None) -> Located:
    """Find ``passage``'s text in its document (see the module docstring)."""
    from rageval.scoring.relevance import quote_occurrences

    doc = docs.get(passage.doc_id)
    text = passage.text.strip()
    if doc is None or not text:
        return Located(passage, None, None)
    found = quote_occurrences(doc.text, text, cache)
    if not found:
        return Located(passage, None, None)
    start, end = found[0]
    return Located(passage, start, end)


def passage_chunks(
    store: PassageStore, docs: Mapping[str, Any], tokenizer
) -> tuple[list[Any], dict[str, tuple[str, int, int]]]:
    """The returned passages as the run's chunks (their own ids, documents and text; tokens
    counted with the embedding model's tokenizer), and the extents of those located in their
    documents (the span and budget metrics' offsets, see :func:`_with_whitespace`; unlocated
    passages have none)."""
    from rageval.types import Chunk

    passages = list(store.by_id.values())
    encodings = tokenizer.encode_batch([p.text for p in passages], add_special_tokens=False)
    chunks, extents, cache = [], {}, {}
    for i, (p, enc) in enumerate(zip(passages, encodings, strict=True)):
        where = locate(p, docs, cache)
        start = where.start if where.found else 0
        end = where.end if where.found else 0
        chunks.append(Chunk(p.id, p.doc_id, i, p.text, start, end, len(enc.ids)))  # type: ignore[arg-type]
        if where.found:
            extents[p.id] = (p.doc_id, *_with_whitespace(docs[p.doc_id].text, start, end))
    return chunks, extents  # type: ignore[return-value]


def _with_whitespace(text: str, start: int, end: int) -> tuple[int, int]:
    """A passage's span for the span metrics, as rageval's own chunks count theirs
    (rageval.scoring.spans.chunk_extents): the whitespace after it up to the next character,
    and the whitespace before it when only whitespace comes before (the first passage)."""
    while end < len(text) and text[end].isspace():
        end += 1
    if not text[:start].strip():
        start = 0
    return start, end
