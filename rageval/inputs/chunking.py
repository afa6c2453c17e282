"""Token-window chunking with overlap, counted with the embedding model's own tokenizer.

``tokenizer.json`` is loaded with the ``tokenizers`` library: no transformers or torch import.
Each chunk keeps its character offsets into the document, a content-derived id and its
``<doc>:<ordinal>`` label.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rageval.errors import ConfigError
from rageval.inputs.windows import token_windows
from rageval.types import Chunk, Document

log = logging.getLogger("rageval")


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
    docs: Iterable[Document],
    spec: ChunkingSpec,
    tokenizer,
    batch_size: int = 256,
    workers: int = 1,
    progress: bool = False,
) -> list[Chunk]:
    """Chunk every document; see ``iter_chunks`` (``workers`` processes, ``progress``: a bar on
    a terminal and a one-line summary in the log)."""
    return list(iter_chunks(docs, spec, tokenizer, batch_size, workers, progress))


# A chunking that took this long logs a one-line summary (shorter ones stay quiet).
SUMMARY_SECONDS = 2.0
# Below this many characters of text a corpus is chunked in this process: starting worker
# processes (about a second each) would cost more than they save.
PARALLEL_CHARS = 8_000_000


def chunk_workers(docs: Sequence[Document]) -> int:
    """How many processes to chunk ``docs`` with: this machine's usable CPUs (at most 8) for a
    corpus of :data:`PARALLEL_CHARS` characters or more, else 1."""
    total = 0
    for d in docs:
        total += len(d.text)
        if total >= PARALLEL_CHARS:
            usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
            return max(1, min(8, len(usable) if usable else os.cpu_count() or 1))
    return 1


def iter_chunks(
    docs: Iterable[Document],
    spec: ChunkingSpec,
    tokenizer,
    batch_size: int = 256,
    workers: int = 1,
    progress: bool = False,
) -> Iterator[Chunk]:
    """Yield chunks document by document, tokenising ``batch_size`` documents at a time.

    With ``workers`` > 1 the batches are tokenised and windowed in that many worker processes
    (a few batches each in flight, so memory stays bounded); the chunks come back in the
    documents' order, the same chunks (ids, offsets, order) as in one process. ``progress``
    shows a bar with the rate and time left on a terminal, and logs a one-line summary when
    chunking took :data:`SUMMARY_SECONDS` or more.
    """
    import time

    from tqdm.auto import tqdm

    total = len(docs) if isinstance(docs, Sized) else None
    started, n_docs, n_chunks = time.perf_counter(), 0, 0
    bar = tqdm(total=total, desc="chunking", unit="doc", disable=None if progress else True)
    batches = _batches(docs, batch_size)
    with bar:
        if workers > 1 and not _workers_can_start():
            log.warning(
                "chunking in this process, not %d: worker processes cannot start from a "
                "program read from standard input (save it to a file to chunk in parallel)",
                workers,
            )
            workers = 1
        if workers > 1:
            done = _in_workers(batches, spec, tokenizer, workers)
        else:
            done = ((b, _windows_of(b, spec, tokenizer)) for b in batches)
        for batch, found in done:
            for doc, windows in zip(batch, found, strict=True):
                for ordinal, (start, end, n_tokens, cid) in enumerate(windows):
                    yield Chunk.of_document(cid, doc.id, ordinal, doc.text, start, end, n_tokens)
                n_chunks += len(windows)
            n_docs += len(batch)
            bar.update(len(batch))
    seconds = time.perf_counter() - started
    if progress and seconds >= SUMMARY_SECONDS:
        log.info(
            "chunked %d documents into %d chunks in %.1f s (%.0f chunks/s, %d process%s)",
            n_docs,
            n_chunks,
            seconds,
            n_chunks / max(seconds, 1e-9),
            workers,
            "es" if workers > 1 else "",
        )


def _batches(docs: Iterable[Document], size: int) -> Iterator[list[Document]]:
    batch: list[Document] = []
    for doc in docs:
        batch.append(doc)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


# A window: (start, end, tokens, chunk id) of one chunk of a document.
Window = tuple[int, int, int, str]


def _windows_of(docs: Sequence[Document], spec: ChunkingSpec, tokenizer) -> list[list[Window]]:
    """Each document's chunks as windows (its text is ``doc.text[start:end]``): under a
    BERT-style tokenizer through :mod:`rageval.inputs.wordpiece` (the same windows, several
    times faster), otherwise (or for a document holding an added token's text) through the
    tokenizer's full encoding."""
    out: list[list[Window] | None] = [None] * len(docs)
    fast = _fast_windows(tokenizer)
    if fast is not None:
        for k, doc in enumerate(docs):
            spans = fast.windows(doc.text, spec.size, spec.overlap)
            if spans is not None:
                out[k] = [
                    (start, end, n, chunk_id(doc.id, ordinal, doc.text[start:end]))
                    for ordinal, (start, end, n) in enumerate(spans)
                ]
    rest = [k for k, found in enumerate(out) if found is None]
    if rest:
        library = _library_windows([docs[k] for k in rest], spec, tokenizer)
        for k, found in zip(rest, library, strict=True):
            out[k] = found
    return out  # type: ignore[return-value]


def _library_windows(docs: Sequence[Document], spec: ChunkingSpec, tokenizer) -> list[list[Window]]:
    """Each document's windows from the tokenizer's full encoding (any tokenizer, any text)."""
    from rageval.inputs.limits import encode_texts

    encodings = encode_texts(tokenizer, [d.text for d in docs])  # long texts in bounded pieces
    out: list[list[Window]] = []
    for doc, enc in zip(docs, encodings, strict=True):
        offsets = enc.offsets
        n = len(offsets)
        found: list[Window] = []
        out.append(found)
        if n == 0:
            continue
        if spec.size == 0:
            windows = [(0, n)]
        else:
            windows = token_windows(enc.word_ids, spec.size, spec.overlap)
        for ordinal, (i, j) in enumerate(windows):
            start, end = int(offsets[i][0]), int(offsets[j - 1][1])
            if spec.size == 0:
                start, end = 0, len(doc.text)
            found.append((start, end, j - i, chunk_id(doc.id, ordinal, doc.text[start:end])))
    return out


@lru_cache(maxsize=8)
def _fast_windows(tokenizer):
    """The :class:`~rageval.inputs.wordpiece.WordPieceWindows` of ``tokenizer`` (None when its
    shape is not BERT's), built once a tokenizer."""
    from rageval.inputs.wordpiece import WordPieceWindows

    return WordPieceWindows.of(tokenizer)


_WORKER: dict = {}


def _start_worker(tokenizer_file: str, spec: ChunkingSpec) -> None:
    # one thread a worker: the workers are the parallelism (the tokenizer's own thread pool
    # in each would put two threads a core on the machine)
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(tokenizer_file)
    tok.no_truncation()
    tok.no_padding()
    _WORKER.update(tokenizer=tok, spec=spec)


def _worker_windows(docs: list[tuple[str, str]]) -> list[list[Window]]:
    batch = [Document(id=i, text=t) for i, t in docs]
    return _windows_of(batch, _WORKER["spec"], _WORKER["tokenizer"])


def _workers_can_start() -> bool:
    """Whether worker processes can start from this program. A new (spawned) process first
    re-imports the program's main module from its file; a program read from standard input
    (``python - < script.py``) has no such file, and its workers die before they start."""
    import sys

    main = sys.modules.get("__main__")
    if getattr(getattr(main, "__spec__", None), "name", None):  # python -m ...
        return True
    path = getattr(main, "__file__", None)  # None: -c, a notebook, an interactive session
    return path is None or os.path.isfile(path)


def _in_workers(
    batches: Iterator[list[Document]], spec: ChunkingSpec, tokenizer, workers: int
) -> Iterator[tuple[list[Document], list[list[Window]]]]:
    """Each batch with its windows, computed in ``workers`` processes (started fresh: the
    tokenizer's threads do not survive a fork), at most two batches a worker in flight.

    The tokenizer reaches the workers as a file, not in their start-up message: a message
    larger than a pipe's buffer (a tokenizer is ~700 kB of JSON) blocked this process for ever
    when a worker died before reading it (Python keeps the pipe's reading end open in the
    parent while it writes). A worker that dies now ends the chunking with an error saying why
    it could not start."""
    import multiprocessing
    import tempfile
    from collections import deque
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    from rageval.errors import RagevalError

    context = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory(prefix="rageval-chunking-") as tmp:
        tokenizer_file = os.path.join(tmp, "tokenizer.json")
        tokenizer.save(tokenizer_file)
        try:
            with ProcessPoolExecutor(
                workers,
                mp_context=context,
                initializer=_start_worker,
                initargs=(tokenizer_file, spec),
            ) as pool:
                pending: deque = deque()
                for batch in batches:
                    texts = [(d.id, d.text) for d in batch]
                    pending.append((batch, pool.submit(_worker_windows, texts)))
                    if len(pending) >= 2 * workers:
                        batch, future = pending.popleft()
                        yield batch, future.result()
                while pending:
                    batch, future = pending.popleft()
                    yield batch, future.result()
        except BrokenProcessPool:
            raise RagevalError(
                f"chunking: a worker process died (chunking in {workers} processes). Each "
                "worker first re-runs your program's main module: guard a script's own code "
                'with `if __name__ == "__main__":`, or chunk in one process (workers=1); '
                "the worker's own error is printed above"
            ) from None


def chunk_rows(
    chunks: Iterable[Chunk], extents: Mapping[str, tuple[str, int, int]]
) -> list[dict[str, object]]:
    """The rows of ``chunks.jsonl``: chunk id (as in run.trec), ``doc_id``, ordinal, ``start`` and
    ``end`` (the chunk's text in the document), ``span_start``/``span_end`` (the characters span
    metrics count for it, see docs/metrics.md) and its token count. :class:`ChunkRows` makes
    them one at a time."""
    return [chunk_row(c, extents) for c in chunks]


def chunk_row(c: Chunk, extents: Mapping[str, tuple[str, int, int]]) -> dict[str, object]:
    """One row of ``chunks.jsonl`` (see :func:`chunk_rows`)."""
    at = extents.get(c.id)
    return {
        "id": c.id,
        "doc_id": c.doc_id,
        "ordinal": c.ordinal,
        "start": c.start,
        "end": c.end,
        # a returned passage that could not be located in its document has none
        "span_start": at[1] if at is not None else None,
        "span_end": at[2] if at is not None else None,
        "tokens": c.n_tokens,
    }


class ChunkRows(Sequence[dict[str, object]]):
    """The rows of ``chunks.jsonl`` (:func:`chunk_rows`) as a read-only sequence, each row made
    when it is read from the run's chunks and extents: a run of a million chunks does not hold a
    million row dicts beside its chunks. ``label`` adds each row's ``label``: ``"readable"``
    (``<doc>:<ordinal>``) or ``"id"`` (the chunk's id, for passages); ``texts`` adds ``text`` to
    the rows of those ids. Equal to a list of the same rows."""

    __slots__ = ("chunks", "extents", "label", "texts")

    def __init__(
        self,
        chunks: Sequence[Chunk],
        extents: Mapping[str, tuple[str, int, int]],
        label: str | None = None,
        texts: Mapping[str, str] | None = None,
    ) -> None:
        if label not in (None, "readable", "id"):
            raise ValueError(f"label must be None, 'readable' or 'id', got {label!r}")
        self.chunks, self.extents = chunks, extents
        self.label, self.texts = label, dict(texts or {})

    def _row(self, c: Chunk) -> dict[str, object]:
        row = chunk_row(c, self.extents)
        if self.label == "readable":
            row["label"] = f"{c.doc_id}:{c.ordinal}"
        elif self.label == "id":
            row["label"] = c.id
        text = self.texts.get(c.id)
        if text is not None:
            row["text"] = text
        return row

    def __len__(self) -> int:
        return len(self.chunks)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self._row(c) for c in self.chunks[i]]
        return self._row(self.chunks[i])

    def __iter__(self) -> Iterator[dict[str, object]]:
        return map(self._row, self.chunks)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ChunkRows | list | tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ChunkRows({len(self)} rows)"


def write_chunks_jsonl(path: str | Path, rows: Iterable[Mapping[str, object]]) -> Path:
    """Write ``chunks.jsonl`` atomically, one chunk a line."""
    from rageval.formats.atomic import atomic_open

    with atomic_open(path) as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    return Path(path)
