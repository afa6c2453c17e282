"""An on-disk embedding cache keyed by model fingerprint and text hash.

Layout: ``<root>/embeddings/<fingerprint>/seg-*.npy`` with a ``seg-*.keys`` file beside each
(16-byte text digests, one per row, then a trailer: the CRC-32 of keys and vectors and the magic
``RGVCRC32``). Every write adds a new segment, written atomically (the ``.npy`` first, then its
``.keys``, which marks the segment complete), so several processes can fill the same cache at
once without locks, a killed process leaves at most a stray temp file, and nothing is ever
unpickled (``np.load(allow_pickle=False)``). Segments are memory-mapped.

A segment is named by the digest of its keys, in order: the same texts embedded in the same
groups give the same files whichever process (or Ray worker, rageval.embedding.distributed) wrote
them, and a group written before is not written again (a retried worker, two jobs of a sweep).

A segment's checksum is verified the first time a process reads rows from it. A segment that
fails (a flipped bit, vectors overwritten, a truncated file) is deleted with a warning and its
texts count as missing, so they are embedded again. Segments written before checksums existed
(no trailer) are checked for what a checksum cannot vouch for anyway: finite, non-zero rows.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import mmap
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rageval.errors import RagevalError
from rageval.formats.atomic import atomic_write_bytes

KEY_BYTES = 16
# CRC-32 finds the corruption a disk or a broken writer causes at ~3x the speed of sha256; a
# cryptographic hash would add nothing: whoever can write the cache can rewrite its checksum too.
MAGIC = b"RGVCRC32"
TRAILER = 4 + len(MAGIC)
VERIFY = True  # off only to measure what verification costs (scripts/bench_cache_verify.py)


def text_key(text: str, prompt: str = "") -> bytes:
    """The cache key of one text (and the prompt it is embedded with)."""
    return hashlib.sha256(f"{prompt}\0{text}".encode()).digest()[:KEY_BYTES]


class EmbeddingCache:
    """Vectors for one model fingerprint; ``get`` what is there, ``put`` what was computed."""

    def __init__(self, root: str | Path, fingerprint: str):
        self.dir = Path(root) / "embeddings" / fingerprint[:32]
        self._index = KeyIndex()  # key -> segment << 32 | row
        self._segments: list[np.ndarray | None] = []  # None: dropped as corrupt
        self._checks: list[tuple[str, bytes, bytes | None]] = []  # name, keys, expected digest
        self._verified: set[int] = set()
        self._seen: set[str] = set()

    def refresh(self) -> None:
        """Pick up segments written since the last look, by this or any other process."""
        if not self.dir.is_dir():
            return
        for keys_path in sorted(self.dir.glob("seg-*.keys")):
            name = keys_path.stem
            if name in self._seen:
                continue
            self._seen.add(name)
            try:
                keys, digest = split_trailer(keys_path.read_bytes())
                arr = np.load(self.dir / f"{name}.npy", mmap_mode="r", allow_pickle=False)
                n = len(keys) // KEY_BYTES
                if len(keys) % KEY_BYTES or arr.ndim != 2 or arr.shape[0] != n:
                    raise ValueError(f"{n} keys for an array of shape {arr.shape}")
            except OSError as err:  # perhaps passing (too many open files): skip, keep the files
                self._seen.discard(name)
                warnings.warn(
                    f"embedding cache: cannot read segment {name} now: {err}", stacklevel=2
                )
                continue
            except ValueError as err:  # not an array, or keys and rows disagree: never usable
                self._drop_files(name, f"unreadable ({err})")
                continue
            seg = len(self._segments)
            self._segments.append(arr)
            self._checks.append((name, keys, digest))
            self._index.add(keys, seg)

    def __len__(self) -> int:
        return len(self._index)

    def lookup(self, keys: Sequence[bytes]) -> tuple[np.ndarray, list[int]]:
        """Vectors for the cached keys (rows in key order, zeros elsewhere) and the missing
        positions."""
        self.refresh()
        hits = self._index.find(keys)
        if VERIFY and self._verify(set((hits[hits >= 0] >> 32).tolist())):
            hits = self._index.find(keys)  # a segment was dropped: its keys are found elsewhere
        missing = np.flatnonzero(hits < 0).tolist()
        live = [a for a in self._segments if a is not None]
        dim = live[0].shape[1] if live else 0
        out = np.zeros((len(keys), dim), dtype=np.float32)
        found = np.flatnonzero(hits >= 0)
        if dim and len(found):
            segs = hits[found] >> 32
            order = np.argsort(segs, kind="stable")  # each segment's rows in key order
            found, segs = found[order], segs[order]
            rows = hits[found] & 0xFFFFFFFF
            bounds = np.flatnonzero(np.diff(segs)) + 1
            for dst, src, seg in zip(
                np.split(found, bounds),
                np.split(rows, bounds),
                segs[np.r_[0, bounds]].tolist(),
                strict=True,
            ):
                arr = self._segments[seg]  # never None: dropped segments are out of the index
                _copy_rows(out, dst, arr, src)
                release_pages(arr)
        return out, missing

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store ``vectors`` (rows aligned with ``keys``) as one new segment."""
        if len(keys) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(keys):
            raise ValueError("one vector per key")
        name = segment_name(keys)
        if (self.dir / f"{name}.keys").is_file():
            return  # this group is stored already, by this or another process
        self.dir.mkdir(parents=True, exist_ok=True)
        buf = io.BytesIO()
        np.save(buf, vectors, allow_pickle=False)
        atomic_write_bytes(self.dir / f"{name}.npy", buf.getvalue())
        joined = b"".join(keys)
        atomic_write_bytes(self.dir / f"{name}.keys", joined + _digest(joined, vectors) + MAGIC)

    def missing(self, keys: Sequence[bytes]) -> list[int]:
        """Positions of ``keys`` not in the cache (no vectors read; a corrupt segment is found
        when its rows are read)."""
        self.refresh()
        return np.flatnonzero(self._index.find(keys) < 0).tolist()

    def holds_segment(self, keys: Sequence[bytes]) -> bool:
        """Whether the segment ``put(keys, ...)`` would write is complete on disk."""
        return (self.dir / f"{segment_name(keys)}.keys").is_file()

    def _verify(self, segs: set[int]) -> bool:
        """Check each segment in ``segs`` once; drop those that fail and forget their keys.
        Whether any was dropped."""
        bad = []
        for seg in sorted(segs - self._verified):
            self._verified.add(seg)
            name, keys, digest = self._checks[seg]
            arr = self._segments[seg]
            try:
                problem = _segment_problem(arr, keys, digest)
            except (OSError, ValueError) as err:  # a memory map that cannot be read
                problem = f"unreadable ({err})"
            finally:
                release_pages(arr)
            if problem:
                bad.append(seg)
                self._segments[seg] = None
                self._drop_files(name, problem)
        if bad:  # other segments may hold the same texts: index them again without the bad ones
            self._index = KeyIndex()
            for seg, (_, keys, _) in enumerate(self._checks):
                if self._segments[seg] is not None:
                    self._index.add(keys, seg)
        return bool(bad)

    def _drop_files(self, name: str, problem: str) -> None:
        self._seen.discard(name)  # a group written again under its name is read again
        warnings.warn(
            f"embedding cache: segment {self.dir / name} is {problem}; deleted it, and its texts "
            "will be embedded again",
            stacklevel=3,
        )
        for suffix in (".keys", ".npy"):  # keys first: without them the segment does not count
            with contextlib.suppress(OSError):
                (self.dir / f"{name}{suffix}").unlink()


class KeyIndex:
    """Where each cached key is: ``segment << 32 | row``, for the first segment added that holds
    it. Held as two sorted arrays (16 bytes of key and 8 of place a text, against ~130 bytes in a
    dict of bytes to int): a million keys take 23 MiB. Segments are added as their joined keys;
    they are merged in when the index is next read, all at once."""

    def __init__(self) -> None:
        self._keys = np.empty(0, dtype=f"S{KEY_BYTES}")
        self._places = np.empty(0, dtype=np.int64)
        self._pending: list[tuple[np.ndarray, np.ndarray]] = []

    def add(self, joined: bytes, seg: int) -> None:
        """The keys of segment ``seg`` (joined, row by row); a key already indexed keeps its
        place."""
        keys = np.frombuffer(joined, dtype=f"S{KEY_BYTES}")
        self._pending.append((keys, (seg << 32) | np.arange(len(keys), dtype=np.int64)))

    def _merge(self) -> None:
        if not self._pending:
            return
        keys = np.concatenate([self._keys, *(k for k, _ in self._pending)])
        places = np.concatenate([self._places, *(p for _, p in self._pending)])
        self._pending = []
        # the first occurrence of each key wins: the earlier segment, as it was added
        self._keys, first = np.unique(keys, return_index=True)
        self._places = places[first]

    def __len__(self) -> int:
        self._merge()
        return len(self._keys)

    def find(self, keys: Sequence[bytes]) -> np.ndarray:
        """The place of each of ``keys`` (-1 where it is not cached)."""
        self._merge()
        out = np.full(len(keys), -1, dtype=np.int64)
        if not len(keys) or not len(self._keys):
            return out
        wanted = np.frombuffer(b"".join(keys), dtype=f"S{KEY_BYTES}")
        at = np.minimum(np.searchsorted(self._keys, wanted), len(self._keys) - 1)
        hit = self._keys[at] == wanted
        out[hit] = self._places[at[hit]]
        return out


class EmbeddingError(RagevalError):
    """An embedding model (or plug-in encoder) returned vectors no search can use."""


def check_vectors(vectors: np.ndarray, texts: Sequence[str], what: str = "texts") -> np.ndarray:
    """Refuse NaN, infinite or all-zero vectors where they enter (from a model, before they are
    cached or indexed): they would score every document the same, and every metric would be a
    silent 0. The error names the first texts affected."""
    vectors = np.asarray(vectors)
    if vectors.ndim != 2 or len(vectors) != len(texts):
        raise EmbeddingError(
            f"the encoder returned an array of shape {vectors.shape} for {len(texts)} {what}; "
            "it must return one vector (row) per text"
        )
    finite = np.isfinite(vectors).all(axis=1)
    bad = np.flatnonzero(
        ~finite | ~(np.abs(np.where(finite[:, None], vectors, 0)).max(axis=1) > 0)
        if vectors.shape[1]
        else np.ones(len(vectors), bool)
    )
    if len(bad):
        kind = "non-finite (NaN or infinite)" if not finite.all() else "all-zero"
        shown = ", ".join(repr(_short(texts[i])) for i in bad[:3])
        raise EmbeddingError(
            f"the embedding model returned {kind} vectors for {len(bad)} of {len(vectors)} "
            f"{what}, e.g. {shown}; nothing was cached. Check the model files and its device "
            "(a broken download or a GPU fault gives such vectors), then run again"
        )
    return vectors


def segment_name(keys: Sequence[bytes]) -> str:
    """``seg-`` and 32 hex digits of sha256 over the keys in order."""
    return "seg-" + hashlib.sha256(b"".join(keys)).hexdigest()[:32]


def _short(text: str, n: int = 50) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _digest(keys: bytes, vectors: np.ndarray) -> bytes:
    crc = zlib.crc32(memoryview(np.ascontiguousarray(vectors)).cast("B"), zlib.crc32(keys))
    return crc.to_bytes(4, "big")


def split_trailer(raw: bytes) -> tuple[bytes, bytes | None]:
    """(keys, digest) of a ``.keys`` file; digest None for a segment written without one."""
    if raw.endswith(MAGIC) and len(raw) % KEY_BYTES == TRAILER % KEY_BYTES:
        return raw[:-TRAILER], raw[-TRAILER : -len(MAGIC)]
    return raw, None


def _segment_problem(arr: np.ndarray, keys: bytes, digest: bytes | None) -> str:
    """Why a segment cannot be trusted, or "" when it can."""
    if digest is not None:
        return "" if _digest(keys, arr) == digest else "corrupt (its checksum does not match)"
    for lo in range(0, len(arr), 65536):  # no checksum: at least no NaN or all-zero row
        block = np.asarray(arr[lo : lo + 65536])
        if not np.isfinite(block).all() or not np.abs(block).max(axis=1).all():
            return "corrupt (it holds non-finite or all-zero vectors)"
    return ""


def _copy_rows(out: np.ndarray, dst: np.ndarray, seg: np.ndarray, src: np.ndarray) -> None:
    """out[dst] = seg[src] without a temporary of the whole gather: runs of consecutive rows (the
    usual case: texts are stored in the order they are asked for) copy as slices, scattered rows
    in blocks of 8192."""
    breaks = np.flatnonzero((np.diff(dst) != 1) | (np.diff(src) != 1)) + 1
    if len(breaks) < len(dst) // 64:
        for a, b in zip([0, *breaks.tolist()], [*breaks.tolist(), len(dst)], strict=True):
            out[dst[a] : dst[a] + b - a] = seg[src[a] : src[a] + b - a]
    else:
        for lo in range(0, len(dst), 8192):
            out[dst[lo : lo + 8192]] = seg[src[lo : lo + 8192]]


def release_pages(arr: np.ndarray) -> None:
    """Drop a memory-mapped array's pages from this process (they stay in the page cache, and are
    read back on the next access): after a million-row gather the process holds the copy it asked
    for, not the whole store as well. A no-op for an array in memory."""
    m = getattr(arr, "_mmap", None)
    if m is not None and hasattr(mmap, "MADV_DONTNEED"):
        with contextlib.suppress(OSError, ValueError):
            m.madvise(mmap.MADV_DONTNEED)
