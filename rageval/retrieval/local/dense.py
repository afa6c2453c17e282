"""Dense retrieval with FAISS over normalised embeddings (inner product = cosine).

``index_type``: ``flat`` (exact, the default), ``hnsw``, ``ivf``, ``ivfpq``, or ``auto``: flat below
``auto_threshold`` chunks, ``auto_type`` (hnsw, ivf or ivfpq) from there on. Vectors stream into the
index ``batch_size`` rows at a time (from the encoder, or from an array that may be memory-mapped),
so the embeddings are never held in memory beside the index. IVF and IVF-PQ train on an evenly
spaced sample of ``ivf_train_size`` rows. IVF-PQ keeps ``ivfpq_m`` codes of ``ivfpq_bits`` bits
per vector instead of the vector (48 bytes for 384 dimensions, against 1,536); with
``ivfpq_refine`` F > 0 it fetches F x depth candidates per query and re-scores them exactly from
the embeddings they were built from (the embedding cache, memory-mapped), so the scores it returns
are exact inner products. Built HNSW/IVF/IVF-PQ indexes are cached on disk, keyed by the chunk ids
(content-derived, so they stand for corpus and chunking), the model fingerprint and the index
parameters; a run that finds its index there embeds no document. A cached index is read only after
its files match the sha256 written with them (a damaged one is rebuilt, with a warning naming it).
A flat index is rebuilt from the cached embeddings (verified segment by segment), which is as fast
as loading it. A flat index larger than ``flat_memory_mb`` is not held at all when its vectors are
on disk (the embedding cache, or a memory-mapped array): each search scans them ``batch_size`` rows
at a time with FAISS's own flat search and keeps the best ``depth`` per query, so a run at a million
chunks holds one batch of vectors instead of all of them (the same ranking; scores equal to float32
rounding).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from rageval.embedding.base import Encoder
from rageval.embedding.cache import check_vectors
from rageval.errors import ConfigError
from rageval.retrieval.local.faiss_build import Rows, f32, stream_build
from rageval.scoring.ranking import break_ties
from rageval.types import Chunk, ChunkTexts, RankedList

INDEX_TYPES = ("flat", "hnsw", "ivf", "ivfpq", "auto")
AUTO_TYPES = ("hnsw", "ivf", "ivfpq")
PQ_KEYS = ("ivfpq_m", "ivfpq_bits", "ivfpq_refine")  # in the cache key of IVF-PQ indexes only
MIB = 1 << 20
REFINE_FLOATS = 1 << 24  # candidate vector values gathered at once when re-scoring (64 MiB)
INDEX_FILE = "index.faiss"  # inside the cached index's folder, beside its digest


class FaissRetriever:
    """Exact or approximate inner-product search over chunk embeddings; one FAISS call per batch."""

    def __init__(
        self,
        index_type: str = "flat",
        hnsw_m: int = 32,
        hnsw_ef_construction: int = 200,
        hnsw_ef_search: int = 128,
        ivf_nlist: int | None = None,
        ivf_nprobe: int = 16,
        ivf_train_size: int | None = None,
        ivfpq_m: int | None = None,
        ivfpq_bits: int = 8,
        ivfpq_refine: int = 0,
        auto_threshold: int = 200_000,
        auto_type: str = "hnsw",
        batch_size: int = 32_768,
        flat_memory_mb: float | None = 512,
        cache_dir: str | None = None,
        progress: bool = True,
    ):
        if index_type not in INDEX_TYPES:
            raise ConfigError(
                f"backend.index_type must be one of {', '.join(INDEX_TYPES)}, got {index_type!r}"
            )
        if auto_type not in AUTO_TYPES:
            raise ConfigError(
                f"backend.faiss.auto_type must be one of {', '.join(AUTO_TYPES)}, got {auto_type!r}"
            )
        if batch_size <= 0:
            raise ConfigError(f"backend.faiss.batch_size must be > 0, got {batch_size}")
        if flat_memory_mb is not None and (
            isinstance(flat_memory_mb, bool)
            or not isinstance(flat_memory_mb, int | float)
            or not flat_memory_mb >= 0
        ):
            raise ConfigError(
                "backend.faiss.flat_memory_mb must be a number of MiB >= 0 (or null: a flat "
                f"index is always held in memory), got {flat_memory_mb!r}"
            )
        for key, value, low, high in (
            ("ivfpq_m", ivfpq_m, 1, None),
            ("ivfpq_bits", ivfpq_bits, 1, 16),
            ("ivfpq_refine", ivfpq_refine, 0, None),
        ):
            if value is None and key == "ivfpq_m":
                continue
            if not isinstance(value, int) or value < low or (high is not None and value > high):
                span = f"an integer >= {low}" + (f" and <= {high}" if high is not None else "")
                raise ConfigError(f"backend.faiss.{key} must be {span}, got {value!r}")
        self.index_type = index_type
        self.params = {
            "hnsw_m": hnsw_m,
            "hnsw_ef_construction": hnsw_ef_construction,
            "hnsw_ef_search": hnsw_ef_search,
            "ivf_nlist": ivf_nlist,
            "ivf_nprobe": ivf_nprobe,
            "ivf_train_size": ivf_train_size,
            "ivfpq_m": ivfpq_m,
            "ivfpq_bits": ivfpq_bits,
            "ivfpq_refine": ivfpq_refine,
        }
        self.auto_threshold = auto_threshold
        self.auto_type = auto_type
        self.batch_size = batch_size
        self.flat_memory_mb = flat_memory_mb
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.progress = progress
        self.encoder: Encoder | None = None
        self.ids: list[str] = []
        self._index = None
        self.built_type = ""
        self.build_seconds = 0.0
        self.loaded_from_cache = False
        self.index_path: Path | None = None
        self._rows: Rows | None = None  # the embeddings by row: exact scans, re-scoring
        self.scanned = False  # a flat index searched by scanning its vectors on disk
        self._dim = 0

    def index(self, chunks: Sequence[Chunk], encoder: Encoder | None) -> None:
        """Embed the chunks batch by batch (through the encoder's cache) into the index."""
        if encoder is None:
            raise ConfigError("vector search needs an embedding model (the embedding group)")
        self.encoder = encoder

        def rows(sel: slice | np.ndarray) -> np.ndarray:
            part = chunks[sel] if isinstance(sel, slice) else [chunks[i] for i in sel.tolist()]
            texts = [c.text for c in part]
            return check_vectors(encoder.encode_documents(texts), texts, "chunks")

        # rageval's encoder keeps every vector in its cache and fills it ahead (also behind the
        # timing and paired wrappers, which lend its members): a scanned index has it embed what
        # the cache lacks without reading anything back, and a scan never embeds a text again
        fill = None
        if getattr(encoder, "cache", None) is not None and callable(
            getattr(encoder, "prefill", None)
        ):

            def fill() -> None:
                encoder.prefill(ChunkTexts(chunks), [])

        self._build([c.id for c in chunks], rows, encoder.fingerprint, fill)

    def add_vectors(self, ids: Sequence[str], vectors: np.ndarray, fingerprint: str = "") -> None:
        """Build the index from precomputed, normalised vectors (rows aligned with ``ids``); a
        memory-mapped array is read ``batch_size`` rows at a time."""
        if len(vectors) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(vectors)} vectors")
        from rageval.embedding.cache import release_pages

        def rows(sel: slice | np.ndarray) -> np.ndarray:
            part = f32(vectors[sel])
            release_pages(vectors)
            return part

        self._build(list(ids), rows, fingerprint, lambda: None)  # nothing to embed: re-read

    mode = "vector"

    @property
    def latency_unsampled(self) -> str | None:
        """Why this index's search latency is not sampled (rageval.run.measure), or None: a
        scanned flat index reads the whole embedding cache for every search, so a single-query
        search times that read, not how a served index answers (and a hundred of them take
        minutes at a million chunks)."""
        if not self.scanned:
            return None
        return (
            "latency not sampled: the flat index is larger than backend.faiss.flat_memory_mb, so "
            "each search scans the embedding cache; set backend.faiss.flat_memory_mb=null to hold "
            "it in memory and sample its latency, or use an approximate index_type"
        )

    def approximate(self) -> bool:
        """Whether the built index is approximate (HNSW, IVF, IVF-PQ): ann_recall@k is then measured
        against a flat pass over the same vectors."""
        return (self.built_type or self.index_type) != "flat"

    def kind_for(self, n: int) -> str:
        """The index type used for ``n`` vectors."""
        if self.index_type != "auto":
            return self.index_type
        return "flat" if n < self.auto_threshold else self.auto_type

    def _build(
        self, ids: list[str], rows: Rows, fingerprint: str, fill: Callable[[], object] | None
    ) -> None:
        """The index over ``rows``. ``fill`` (None: the rows cannot be read again without
        embedding them again) makes every row readable without returning any: what a flat index
        that is scanned instead of held needs before its first search."""
        import faiss

        start = time.perf_counter()
        self.ids = ids
        n = len(ids)
        kind = self.built_type = self.kind_for(n)
        folder = self._cache_path(kind, fingerprint)
        self.index_path = None if folder is None else folder / INDEX_FILE
        index = None if folder is None else _load_index(faiss, folder, n)
        self.loaded_from_cache = index is not None
        self.scanned = False
        first = None
        if (
            index is None
            and kind == "flat"
            and fill is not None
            and self.flat_memory_mb is not None
            and n
        ):
            first = f32(rows(slice(0, min(self.batch_size, n))))  # its width: the index's bytes
            self._dim = first.shape[1]
            self.scanned = n * self._dim * 4 > self.flat_memory_mb * MIB
        if self.scanned:
            first = None  # one batch fewer in memory while the cache fills
            fill()
        elif index is None:
            index = self._stream(kind, n, rows, first)
            if folder is not None and index is not None:
                _save_index(faiss, index, folder)
        if kind == "hnsw" and index is not None:
            index.hnsw.efSearch = self.params["hnsw_ef_search"]
        elif kind in ("ivf", "ivfpq") and index is not None:
            index.nprobe = self.params["ivf_nprobe"]
        self._rows = rows if kind != "flat" or self.scanned else None
        self._index = index
        self.build_seconds = time.perf_counter() - start

    def _bar(self, n: int, desc: str):
        """A progress bar over ``n`` vectors (none when quiet or for a single batch)."""
        from tqdm.auto import tqdm

        quiet = not self.progress or n <= self.batch_size
        return tqdm(total=n, desc=desc, unit="vec", disable=quiet)

    def _stream(self, kind: str, n: int, rows: Rows, first: np.ndarray | None = None):
        with self._bar(n, f"indexing ({kind})") as bar:
            return stream_build(kind, n, rows, self.params, self.batch_size, bar, first)

    def _cache_path(self, kind: str, fingerprint: str) -> Path | None:
        if self.cache_dir is None or kind == "flat" or not fingerprint:
            return None
        h = hashlib.sha256("\n".join(self.ids).encode())
        h.update(fingerprint.encode())
        # IVF-PQ's settings are left out of other types' keys, which they were keyed without
        params = {k: v for k, v in self.params.items() if kind == "ivfpq" or k not in PQ_KEYS}
        h.update(json.dumps([kind, params], sort_keys=True).encode())
        # a folder: the index and the digest it is verified against (formats/sealed.py)
        return self.cache_dir / "indexes" / f"faiss-{kind}-{h.hexdigest()[:24]}"

    def index_bytes(self) -> dict[str, int | None]:
        """Bytes the index holds in memory (vectors, graph or lists) and needs on disk: its cached
        file (HNSW, IVF, IVF-PQ), or for a flat index the vectors it is rebuilt from (embedding
        cache)."""
        if self.scanned:  # the vectors stay on disk; a search holds one batch of them
            n, width = len(self.ids), self._dim * 4
            return {"disk": n * width, "memory": min(n, self.batch_size) * width}
        if self._index is None:
            return {"disk": 0, "memory": 0}
        memory = faiss_memory_bytes(self._index)
        path = self.index_path
        if path is not None and path.is_file():
            disk = path.stat().st_size
        else:
            disk = int(self._index.ntotal) * int(self._index.d) * 4
        return {"disk": disk, "memory": memory}

    def search(self, queries: Sequence[str], depth: int) -> list[RankedList]:
        """Top ``depth`` chunks per query by inner product; RuntimeError before ``index()``."""
        if self.encoder is None or not self.built_type:
            raise RuntimeError("index() must run before search()")
        queries = list(queries)
        return self.search_vectors(
            check_vectors(self.encoder.encode_queries(queries), queries, "queries"), depth
        )

    def search_vectors(self, query_vectors: np.ndarray, depth: int) -> list[RankedList]:
        """One FAISS call for all query vectors."""
        k = min(depth, len(self.ids))
        if k <= 0 or len(query_vectors) == 0 or (self._index is None and not self.scanned):
            return [RankedList((), ()) for _ in range(len(query_vectors))]
        query_vectors = f32(query_vectors)
        if self.scanned:
            scores, idx = self._scan(query_vectors, k, "searching (flat scan)")
        elif self._rows is None or self.built_type != "ivfpq" or not self.params["ivfpq_refine"]:
            scores, idx = self._index.search(query_vectors, k)
        else:
            wide = min(len(self.ids), k * self.params["ivfpq_refine"])
            scores, idx = self._refine(query_vectors, *self._index.search(query_vectors, wide), k)
        return self._ranked(scores, idx)

    def exact_search(self, queries: Sequence[str], depth: int) -> list[RankedList] | None:
        """The exact top ``depth`` per query for an approximate index (what ``ann_recall@k`` is
        measured against): a flat scan of the embeddings it was built from, ``batch_size`` rows at
        a time, so the corpus's vectors are never all in memory (at 10M chunks they would be
        15 GB beside a compressed index). None before ``index()`` or for a flat index."""
        if self._rows is None or self.encoder is None or not self.approximate():
            return None
        queries = list(queries)
        qv = f32(check_vectors(self.encoder.encode_queries(queries), queries, "queries"))
        k = min(depth, len(self.ids))
        if k <= 0 or len(qv) == 0:
            return [RankedList((), ()) for _ in queries]
        return self._ranked(*self._scan(qv, k, "exact reference (flat scan)"))

    def _scan(self, qv: np.ndarray, k: int, desc: str) -> tuple[np.ndarray, np.ndarray]:
        """The exact top ``k`` inner products of each query over every row, read ``batch_size``
        rows at a time (one batch in memory), each batch searched with FAISS's flat index and
        merged into one result heap: scores and row numbers (-1 past the rows there are)."""
        import faiss

        n = len(self.ids)
        heap = faiss.ResultHeap(len(qv), k, keep_max=True)
        with self._bar(n, desc) as bar:
            for lo in range(0, n, self.batch_size):
                vec = f32(self._rows(slice(lo, min(lo + self.batch_size, n))))
                flat = faiss.IndexFlatIP(vec.shape[1])
                flat.add(vec)
                scores, idx = flat.search(qv, min(k, len(vec)))
                heap.add_result(scores, np.where(idx >= 0, idx + lo, -1))
                bar.update(len(vec))
                del flat, vec
        heap.finalize()
        return heap.D, heap.I

    def _ranked(self, scores: np.ndarray, idx: np.ndarray) -> list[RankedList]:
        """One ranked list per query from FAISS's scores and row numbers (-1: no row), ties in
        score ordered by id."""
        ids = self.ids
        out = []
        for row_i, row_s in zip(idx.tolist(), scores.tolist(), strict=True):
            keep = [j for j, i in enumerate(row_i) if i >= 0]
            out.append(
                break_ties(
                    RankedList(
                        ids=tuple(ids[row_i[j]] for j in keep),
                        scores=tuple(row_s[j] for j in keep),
                    )
                )
            )
        return out

    def _refine(self, queries: np.ndarray, _approx, cand: np.ndarray, k: int):
        """The top ``k`` of each query's candidates by exact inner product with their embeddings
        (read from the rows the index was built from, a block of queries at a time)."""
        step = max(1, REFINE_FLOATS // max(1, cand.shape[1] * queries.shape[1]))
        scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
        idx = np.full((len(queries), k), -1, dtype=np.int64)
        for lo in range(0, len(queries), step):
            block = cand[lo : lo + step]
            found = block >= 0
            uniq = np.unique(block[found])
            if len(uniq) == 0:
                continue
            vectors = f32(self._rows(uniq))
            pos = np.searchsorted(uniq, np.where(found, block, uniq[0]))
            q = queries[lo : lo + len(block)]
            exact = np.einsum("qd,qcd->qc", q, vectors[pos])
            exact[~found] = -np.inf
            top = np.argsort(-exact, axis=1, kind="stable")[:, :k]
            rows = np.arange(len(block))[:, None]
            scores[lo : lo + len(block), : top.shape[1]] = exact[rows, top]
            idx[lo : lo + len(block), : top.shape[1]] = np.where(
                np.isfinite(exact[rows, top]), block[rows, top], -1
            )
        return scores, idx


def faiss_memory_bytes(index) -> int:
    """The bytes of a FAISS index's arrays: codes, plus the HNSW graph or the IVF lists' ids and
    the coarse quantizer (other index types: the size of their serialised form)."""
    import faiss

    index = faiss.downcast_index(index)
    if isinstance(index, faiss.IndexFlat):
        return int(index.codes.size())
    if isinstance(index, faiss.IndexHNSW):
        graph = index.hnsw
        links = graph.neighbors.size() * 4 + graph.levels.size() * 4 + graph.offsets.size() * 8
        return faiss_memory_bytes(index.storage) + int(links)
    if isinstance(index, faiss.IndexIVF):
        lists = index.invlists
        n = sum(lists.list_size(i) for i in range(lists.nlist))
        return int(n * (index.code_size + 8)) + faiss_memory_bytes(index.quantizer)
    return int(len(faiss.serialize_index(index)))


def _load_index(faiss, folder: Path, n: int):
    """The cached index in ``folder`` when it is whole (its digest matches, FAISS reads it, it
    holds ``n`` vectors); else None, with a warning naming it, after removing it."""
    from rageval.formats import sealed

    if not folder.exists():
        return None
    reason = sealed.fault(folder)
    if reason is None:
        try:
            index = faiss.read_index(str(folder / INDEX_FILE))
        except RuntimeError as err:  # faiss reports an unreadable file as RuntimeError
            reason = "FAISS cannot read it: " + str(err).strip().splitlines()[-1][-200:]
        else:
            if index.ntotal == n:
                return index
            reason = f"it holds {index.ntotal:,} vectors, the corpus has {n:,}"
    sealed.discard(folder, "FAISS index", reason)
    return None


def _save_index(faiss, index, folder: Path) -> None:
    """Cache a built index (sealed with its digest) for the next run; a cache that cannot be
    written (full, read-only) costs the next run a rebuild, not this run its result."""
    import shutil
    import warnings

    from rageval.formats import sealed

    tmp = None
    try:
        tmp = sealed.temporary(folder)
        faiss.write_index(index, str(tmp / INDEX_FILE))
        sealed.publish(tmp, folder)
    except (OSError, RuntimeError) as err:  # faiss reports a failed write as RuntimeError
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        # FAISS's message repeats the (long) temporary path before the cause, which comes last:
        # name the path once, in the warning, and keep the end of the message when it is long
        reason = str(err).strip().splitlines()[-1]
        if tmp is not None:
            reason = reason.replace(str(tmp / INDEX_FILE), "a temporary file")
        reason = reason if len(reason) <= 200 else "..." + reason[-200:]
        warnings.warn(
            f"could not cache the FAISS index at {folder} ({reason}); the next run builds it again",
            stacklevel=2,
        )
