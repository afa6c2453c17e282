"""Passages: results that carry their own text, as a deployed index returns them.

A retriever built on rageval's chunks returns chunk ids. A deployed index (a team's Azure index,
a LangChain or LlamaIndex retriever, a search function of their app) returns passages of its own
chunking: an id of its own, the passage text, the document it came from. rageval scores those as
they are (docs/your-retriever.md):

- a passage's id is the one it carries (``id``, or the metadata key ``id_key`` names), else one
  derived from its document and text (``p:`` + 16 hex digits of their sha256), stable across runs
  so a baseline's rankings compare with a later run's;
- its document id is ``doc_id`` (or the metadata key ``doc_id_key`` names);
- :func:`locate` finds the passage's text in its document (exactly, else ignoring case,
  whitespace runs and typographic punctuation, as evidence quotes are found; the first occurrence
  when it occurs more than once); a passage that cannot be located has no offsets, and the
  metrics that need them say "not measured" for the queries that retrieved it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rageval.errors import ConfigError

ID_KEYS = ("id", "chunk_id", "passage_id")
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
    doc = _get(item, doc_id_key)
    if doc is None:
        doc = meta.get(doc_id_key)
    doc_id = "" if doc is None else str(doc)
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
    )


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
