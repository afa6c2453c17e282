"""Plain, frozen data that flows between the stages. No Hydra, no MLflow here."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from typing import overload


@dataclass(frozen=True, slots=True)
class Document:
    """One source document. ``id`` is stable (relative path without extension, or the JSONL id)."""

    id: str
    text: str
    title: str = ""


class Chunk:
    """A window of a document's text.

    ``start``/``end`` are character offsets into ``Document.text``; ``id`` is derived from the
    content, so re-chunking unchanged text keeps ids; ``label`` is the ``<doc>:<ordinal>`` form.

    ``Chunk(id, doc_id, ordinal, text, start, end, n_tokens)`` holds ``text`` as given; a chunk
    made by :meth:`of_document` holds its document's text (one string, shared by all the
    document's chunks) and ``text`` is the slice ``[start:end]`` of it, made when it is read: a
    corpus's text is then in memory once, however many chunks are cut from it. Both kinds are
    equal when their fields are. Frozen, like the other types here.
    """

    __slots__ = ("id", "doc_id", "ordinal", "start", "end", "n_tokens", "_source", "_sliced")

    id: str
    doc_id: str
    ordinal: int
    start: int
    end: int
    n_tokens: int

    def __init__(
        self, id: str, doc_id: str, ordinal: int, text: str, start: int, end: int, n_tokens: int
    ) -> None:
        _set = object.__setattr__
        _set(self, "id", id)
        _set(self, "doc_id", doc_id)
        _set(self, "ordinal", ordinal)
        _set(self, "start", start)
        _set(self, "end", end)
        _set(self, "n_tokens", n_tokens)
        _set(self, "_source", text)
        _set(self, "_sliced", False)

    @classmethod
    def of_document(
        cls,
        id: str,
        doc_id: str,
        ordinal: int,
        document_text: str,
        start: int,
        end: int,
        n_tokens: int,
    ) -> Chunk:
        """The chunk ``document_text[start:end]``, held as the document's text and the offsets
        (no copy of the slice)."""
        c = cls(id, doc_id, ordinal, document_text, start, end, n_tokens)
        object.__setattr__(c, "_sliced", True)
        return c

    @property
    def text(self) -> str:
        """The chunk's text."""
        return self._source[self.start : self.end] if self._sliced else self._source

    @property
    def label(self) -> str:
        """The ``<doc>:<ordinal>`` form, e.g. ``manual:3``."""
        return f"{self.doc_id}:{self.ordinal}"

    def _fields(self) -> tuple:
        return (self.id, self.doc_id, self.ordinal, self.text, self.start, self.end, self.n_tokens)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"Chunk(id={self.id!r}, doc_id={self.doc_id!r}, ordinal={self.ordinal!r}, "
            f"text={self.text!r}, start={self.start!r}, end={self.end!r}, "
            f"n_tokens={self.n_tokens!r})"
        )

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self):
        # pickled with its own text: a chunk sent alone does not carry its whole document
        return (Chunk, self._fields())


class ChunkTexts(Sequence[str]):
    """The texts of ``chunks`` as a read-only sequence, each made when it is read: what a text
    consumer (an encoder's cache fill) takes without a list of every chunk's text beside the
    chunks."""

    __slots__ = ("chunks",)

    def __init__(self, chunks: Sequence[Chunk]) -> None:
        self.chunks = chunks

    def __len__(self) -> int:
        return len(self.chunks)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [c.text for c in self.chunks[i]]
        return self.chunks[i].text


@dataclass(frozen=True, slots=True)
class Evidence:
    """A verbatim quote from a document that answers the query, with its relevance grade."""

    doc: str
    quote: str
    grade: int = 1
    # which match of a quote that occurs more than once: the n-th (1-based), or the one that
    # starts at this character offset; neither: the first
    occurrence: int | None = None
    start: int | None = None


@dataclass(frozen=True, slots=True)
class GoldenQuery:
    """One golden-set entry. ``line`` is its 1-based line in the golden file (for messages)."""

    id: str
    query: str
    relevant: Mapping[str, int] = field(default_factory=dict)
    relevant_docs: Mapping[str, int] = field(default_factory=dict)
    evidence: tuple[Evidence, ...] = ()
    source: str | None = None
    tags: tuple[str, ...] = ()
    line: int = 0
    # free-form fields a team slices by (``"meta": {"difficulty": "hard", "lang": "de"}``):
    # strings, numbers, booleans or lists of them
    meta: Mapping[str, object] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class GoldenSet:
    """A loaded, validated golden set and the sha256 digest of its content."""

    path: str
    queries: tuple[GoldenQuery, ...]
    digest: str


@dataclass(frozen=True, slots=True)
class RankedList:
    """One query's results, best first: unit ids (chunk or document ids) and their scores."""

    ids: tuple[str, ...]
    scores: tuple[float, ...]


# Relevance judgements: query id -> {unit id: grade}. Grade >= 1 is relevant, 0 judged non-relevant.
Qrels = Mapping[str, Mapping[str, int]]
