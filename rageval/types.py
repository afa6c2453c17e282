"""Plain, frozen data that flows between the stages. No Hydra, no MLflow here."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Document:
    """One source document. ``id`` is stable (relative path without extension, or the JSONL id)."""

    id: str
    text: str
    title: str = ""


@dataclass(frozen=True, slots=True)
class Chunk:
    """A window of a document's text.

    ``start``/``end`` are character offsets into ``Document.text``; ``id`` is derived from the
    content, so re-chunking unchanged text keeps ids; ``label`` is the ``<doc>:<ordinal>`` form.
    """

    id: str
    doc_id: str
    ordinal: int
    text: str
    start: int
    end: int
    n_tokens: int

    @property
    def label(self) -> str:
        """The ``<doc>:<ordinal>`` form, e.g. ``manual:3``."""
        return f"{self.doc_id}:{self.ordinal}"


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
