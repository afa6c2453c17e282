"""An on-disk embedding cache keyed by model fingerprint and text hash.

Layout: ``<root>/embeddings/<fingerprint>/seg-*.npy`` with a ``seg-*.keys`` file beside each
(16-byte text digests, one per row). Every write adds a new segment, written atomically (the
``.npy`` first, then its ``.keys``, which marks the segment complete), so several processes can
fill the same cache at once without locks, a killed process leaves at most a stray temp file,
and nothing is ever unpickled (``np.load(allow_pickle=False)``). Segments are memory-mapped.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import mmap
import os
import uuid
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rageval.formats.atomic import atomic_write_bytes

KEY_BYTES = 16


def text_key(text: str, prompt: str = "") -> bytes:
    """The cache key of one text (and the prompt it is embedded with)."""
    return hashlib.sha256(f"{prompt}\0{text}".encode()).digest()[:KEY_BYTES]


class EmbeddingCache:
    """Vectors for one model fingerprint; ``get`` what is there, ``put`` what was computed."""

    def __init__(self, root: str | Path, fingerprint: str):
        self.dir = Path(root) / "embeddings" / fingerprint[:32]
        self._index: dict[bytes, int] = {}  # key -> segment << 32 | row (one int, not a tuple)
        self._segments: list[np.ndarray] = []
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
                keys = keys_path.read_bytes()
                arr = np.load(self.dir / f"{name}.npy", mmap_mode="r", allow_pickle=False)
                n = len(keys) // KEY_BYTES
                if len(keys) % KEY_BYTES or arr.ndim != 2 or arr.shape[0] != n:
                    raise ValueError(f"{n} keys for an array of shape {arr.shape}")
            except (OSError, ValueError) as err:
                warnings.warn(
                    f"embedding cache: skipping unreadable segment {name}: {err}", stacklevel=2
                )
                continue
            seg = len(self._segments)
            self._segments.append(arr)
            for row in range(n):
                self._index.setdefault(
                    keys[row * KEY_BYTES : (row + 1) * KEY_BYTES], seg << 32 | row
                )

    def __len__(self) -> int:
        return len(self._index)

    def lookup(self, keys: Sequence[bytes]) -> tuple[np.ndarray, list[int]]:
        """Vectors for the cached keys (rows in key order, zeros elsewhere) and the missing positions."""
        self.refresh()
        missing = [i for i, k in enumerate(keys) if k not in self._index]
        dim = self._segments[0].shape[1] if self._segments else 0
        out = np.zeros((len(keys), dim), dtype=np.float32)
        if dim:
            by_seg: dict[int, tuple[list[int], list[int]]] = {}
            for i, k in enumerate(keys):
                hit = self._index.get(k)
                if hit is not None:
                    rows = by_seg.setdefault(hit >> 32, ([], []))
                    rows[0].append(i)
                    rows[1].append(hit & 0xFFFFFFFF)
            for seg, (dst, src) in by_seg.items():
                _copy_rows(out, np.asarray(dst), self._segments[seg], np.asarray(src))
                release_pages(self._segments[seg])
        return out, missing

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store ``vectors`` (rows aligned with ``keys``) as one new segment."""
        if len(keys) == 0:
            return
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        if vectors.shape[0] != len(keys):
            raise ValueError("one vector per key")
        self.dir.mkdir(parents=True, exist_ok=True)
        name = f"seg-{os.getpid()}-{uuid.uuid4().hex[:12]}"
        buf = io.BytesIO()
        np.save(buf, vectors, allow_pickle=False)
        atomic_write_bytes(self.dir / f"{name}.npy", buf.getvalue())
        atomic_write_bytes(self.dir / f"{name}.keys", b"".join(keys))


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
