"""Token-window chunking with overlap, counted with the embedding model's own tokenizer.

``tokenizer.json`` is loaded with the ``tokenizers`` library: no transformers or torch import.
Each chunk keeps its character offsets into the document, a content-derived id and its
``<doc>:<ordinal>`` label.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rageval.errors import ConfigError
from rageval.types import Chunk, Document


@dataclass(frozen=True, slots=True)
class ChunkingSpec:
    """``size`` tokens a window (0: one chunk per document), ``overlap`` tokens shared by
    neighbours."""

    size: int = 256
    overlap: int = 0

    def __post_init__(self) -> None:
        if self.size < 0:
            raise ConfigError(f"chunk must be >= 0 (0 = one chunk per document), got {self.size}")
        if self.overlap < 0:
            raise ConfigError(f"chunk_overlap must be >= 0, got {self.overlap}")
        if self.size and self.overlap >= self.size:
            raise ConfigError(
                f"chunk_overlap ({self.overlap}) must be smaller than chunk ({self.size})"
            )

    @property
    def key(self) -> str:
        """The spec as a cache-key fragment, e.g. ``tok256o0``."""
        return f"tok{self.size}o{self.overlap}"


@lru_cache(maxsize=8)
def load_tokenizer(model_dir: str):
    """The model's fast tokenizer from ``<model_dir>/tokenizer.json``, without truncation."""
    from tokenizers import Tokenizer

    path = Path(model_dir) / "tokenizer.json"
    if not path.is_file():
        raise ConfigError(
            f"no tokenizer.json in {model_dir}; chunking counts tokens with the embedding model's "
            "tokenizer, so embedding.model must be a local sentence-transformers folder"
        )
    tok = Tokenizer.from_file(str(path))
    tok.no_truncation()
    tok.no_padding()
    return tok


def chunk_id(doc_id: str, ordinal: int, text: str) -> str:
    """A content-derived id: unchanged content keeps its id across re-indexing."""
    return hashlib.sha256(f"{doc_id}\0{ordinal}\0{text}".encode()).hexdigest()[:16]


def chunk_documents(
    docs: Iterable[Document], spec: ChunkingSpec, tokenizer, batch_size: int = 256
) -> list[Chunk]:
    """Chunk every document; see ``iter_chunks``."""
    return list(iter_chunks(docs, spec, tokenizer, batch_size))


def iter_chunks(
    docs: Iterable[Document], spec: ChunkingSpec, tokenizer, batch_size: int = 256
) -> Iterator[Chunk]:
    """Yield chunks document by document, tokenising ``batch_size`` documents at a time."""
    batch: list[Document] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) >= batch_size:
            yield from _chunk_batch(batch, spec, tokenizer)
            batch = []
    if batch:
        yield from _chunk_batch(batch, spec, tokenizer)


def _chunk_batch(docs: Sequence[Document], spec: ChunkingSpec, tokenizer) -> Iterator[Chunk]:
    from rageval.limits import encode_texts

    encodings = encode_texts(tokenizer, [d.text for d in docs])  # long texts in bounded pieces
    for doc, enc in zip(docs, encodings, strict=True):
        offsets = enc.offsets
        n = len(offsets)
        if n == 0:
            continue
        windows = [(0, n)] if spec.size == 0 else _windows(enc.word_ids, spec.size, spec.overlap)
        for ordinal, (i, j) in enumerate(windows):
            start, end = int(offsets[i][0]), int(offsets[j - 1][1])
            if spec.size == 0:
                start, end = 0, len(doc.text)
            text = doc.text[start:end]
            yield Chunk(
                id=chunk_id(doc.id, ordinal, text),
                doc_id=doc.id,
                ordinal=ordinal,
                text=text,
                start=start,
                end=end,
                n_tokens=j - i,
            )


def _windows(word_ids: Sequence[int | None], size: int, overlap: int) -> list[tuple[int, int]]:
    """Token windows [i, j) of at most ``size`` tokens that do not cut words: a window ends before
    the word it would split (unless that word alone is longer than a window), and the next one
    starts ``overlap`` tokens earlier, moved back to the start of its word."""
    n = len(word_ids)

    def word_start(t: int, floor: int) -> int:
        while t > floor and word_ids[t] is not None and word_ids[t] == word_ids[t - 1]:
            t -= 1
        return t

    windows, i = [], 0
    while i < n:
        j = min(i + size, n)
        if j < n:
            cut = word_start(j, i)
            j = cut if cut > i else j
        windows.append((i, j))
        if j >= n:
            break
        nxt = word_start(j - overlap, i) if overlap else j
        i = nxt if nxt > i else j
    return windows


def chunk_rows(
    chunks: Iterable[Chunk], extents: Mapping[str, tuple[str, int, int]]
) -> list[dict[str, object]]:
    """The rows of ``chunks.jsonl``: chunk id (as in run.trec), ``doc_id``, ordinal, ``start`` and
    ``end`` (the chunk's text in the document), ``span_start``/``span_end`` (the characters span
    metrics count for it, see docs/metrics.md) and its token count."""
    return [
        {
            "id": c.id,
            "doc_id": c.doc_id,
            "ordinal": c.ordinal,
            "start": c.start,
            "end": c.end,
            # a returned passage that could not be located in its document has none
            "span_start": extents[c.id][1] if c.id in extents else None,
            "span_end": extents[c.id][2] if c.id in extents else None,
            "tokens": c.n_tokens,
        }
        for c in chunks
    ]


def write_chunks_jsonl(path: str | Path, rows: Iterable[Mapping[str, object]]) -> Path:
    """Write ``chunks.jsonl`` atomically, one chunk a line."""
    from rageval.formats.atomic import atomic_open

    with atomic_open(path) as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return Path(path)
