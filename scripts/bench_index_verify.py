"""What verifying a cached index against its sha256 costs a warm run: loading a cached FAISS index
(and a BM25 index) with and without the digest check, alternating, side by side in one process
(files in the page cache, as on a warm run).

- an HNSW index at the demo's size (``--demo-rows``, 384 dimensions);
- an IVF index over ``--rows`` vectors (100,000 x 384: the size of a flat index of 100k chunks,
  about 155 MB on disk).

    python scripts/bench_index_verify.py [--rows 100000] [--demo-rows 400] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np


def _vectors(n: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(0).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _cached_faiss(kind: str, n: int, dim: int, cache: Path, **params) -> Path:
    from rageval.retrieval.local.dense import FaissRetriever

    r = FaissRetriever(index_type=kind, cache_dir=str(cache), progress=False, **params)
    r.add_vectors([f"d{i}" for i in range(n)], _vectors(n, dim), fingerprint="bench")
    return r.index_path.parent


def _time_load(folder: Path, verify: bool) -> float:
    import faiss

    from rageval.formats import sealed

    start = time.perf_counter()
    if verify:
        assert sealed.fault(folder) is None
    faiss.read_index(str(folder / "index.faiss"))
    return time.perf_counter() - start


def _report(name: str, folder: Path, repeats: int) -> None:
    size = sum(f.stat().st_size for f in folder.iterdir())
    off, on = [], []
    _time_load(folder, True)  # warm the page cache
    for _ in range(repeats):
        off.append(_time_load(folder, False))
        on.append(_time_load(folder, True))
    a, b = statistics.median(off), statistics.median(on)
    print(
        f"{name}: {size / 1e6:.1f} MB; load {a * 1000:.1f} ms without the check, "
        f"{b * 1000:.1f} ms with (x{b / a:.2f}, +{(b - a) * 1000:.1f} ms), median of {repeats}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--demo-rows", type=int, default=400)
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        demo = _cached_faiss("hnsw", args.demo_rows, args.dim, Path(tmp) / "a")
        _report(f"HNSW, {args.demo_rows:,} x {args.dim}", demo, args.repeats)
        big = _cached_faiss(
            "ivf", args.rows, args.dim, Path(tmp) / "b", ivf_nlist=256, ivf_train_size=20_000
        )
        _report(f"IVF-flat, {args.rows:,} x {args.dim}", big, args.repeats)


if __name__ == "__main__":
    main()
