"""Benchmark: index build, search and scoring at 10k, 100k and 1M chunks, with peak memory.

Embeddings are generated, not encoded: clustered unit vectors (float32, made in place, no float64
intermediate) written into rageval's on-disk embedding cache under the packaged model's
fingerprint, keyed by synthetic chunk texts. The measured path is then the product's own: a
``SentenceTransformerEncoder`` that finds every text in the memory-mapped cache (the model is never
loaded), ``FaissRetriever.index`` streaming batches into FAISS, ``search`` over the queries in
batches of ``query_batch``, and ``score_rankings`` against qrels (each query's relevant chunk is
the corpus row it was made from, so recall@10 shows what an approximate index loses).

Each (size, index type) runs in its own process. Its peak RSS is the kernel's high-water mark
(``VmHWM``; ``os.wait4``'s ``ru_maxrss`` is printed beside it and also counts what the process had
when it forked), and a sampling thread records the baseline before the index is built. HNSW is
skipped above ``--hnsw-max`` chunks: on 2 cores its build alone would take most of an hour at 1M.

    .venv/bin/python scripts/bench_scale.py [--sizes 10000,100000,1000000] [--queries 10000]
        [--kinds flat,hnsw,ivf] [--dim 384] [--work /tmp/rageval-bench]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

CENTERS, NOISE, QUERY_NOISE, SEG_ROWS, DEPTH = 1024, 0.05, 0.01, 65_536, 10


def chunk_text(i: int) -> str:
    return f"synthetic chunk {i}"


def query_text(j: int) -> str:
    return f"synthetic query {j}"


def unit_rows(rng, out: np.ndarray, base: np.ndarray, noise: float) -> None:
    """out = normalise(base + noise * N(0, 1)), in float32 and in place."""
    rng.standard_normal(out=out, dtype=np.float32)
    out *= np.float32(noise)
    out += base
    out /= np.linalg.norm(out, axis=1, keepdims=True)


def generate(n: int, n_queries: int, dim: int, work: Path) -> None:
    """Fill the cache with n chunk vectors and n_queries query vectors (a query = a noisy chunk)."""
    from rageval.embedding import SentenceTransformerEncoder
    from rageval.embedding.cache import text_key

    cache = SentenceTransformerEncoder(cache_dir=str(work), progress=False).cache
    rng = np.random.default_rng(0)
    centers = np.empty((CENTERS, dim), np.float32)
    unit_rows(rng, centers, np.float32(0), 1.0)
    block = np.empty((SEG_ROWS, dim), np.float32)
    for lo in range(0, n, SEG_ROWS):
        b = block[: min(SEG_ROWS, n - lo)]
        unit_rows(rng, b, centers[rng.integers(0, CENTERS, len(b))], NOISE)
        cache.put([text_key(chunk_text(i)) for i in range(lo, lo + len(b))], b)
    src = rng.integers(0, n, n_queries)
    cache.refresh()
    corpus, _ = cache.lookup([text_key(chunk_text(i)) for i in src.tolist()])
    queries = np.empty_like(corpus)
    unit_rows(rng, queries, corpus, QUERY_NOISE)
    cache.put([text_key(query_text(j)) for j in range(n_queries)], queries)
    np.save(work / "sources.npy", src)


class Peak(threading.Thread):
    """Samples this process's RSS every few milliseconds; ``mark`` ends a phase."""

    def __init__(self):
        super().__init__(daemon=True)
        self.page = os.sysconf("SC_PAGE_SIZE")
        self.peak = self.rss()
        self.stop = False

    def rss(self) -> int:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * self.page

    def run(self) -> None:
        while not self.stop:
            self.peak = max(self.peak, self.rss())
            time.sleep(0.002)

    def mark(self) -> int:
        peak, self.peak = max(self.peak, self.rss()), self.rss()
        return peak


def measure(n: int, n_queries: int, kind: str, work: Path, query_batch: int) -> dict:
    from rageval.embedding import SentenceTransformerEncoder
    from rageval.retrieval.local.dense import FaissRetriever
    from rageval.scoring.metrics import score_rankings
    from rageval.types import Chunk

    meter = Peak()
    meter.start()
    encoder = SentenceTransformerEncoder(cache_dir=str(work), progress=False)
    chunks = [Chunk(f"c{i}", "doc", i, chunk_text(i), 0, 0, 3) for i in range(n)]
    src = np.load(work / "sources.npy").tolist()
    qids = [f"q{j}" for j in range(n_queries)]
    qrels = {q: {f"c{s}": 1} for q, s in zip(qids, src, strict=True)}
    queries = [query_text(j) for j in range(n_queries)]
    out = {"baseline_rss": meter.mark()}
    retriever = FaissRetriever(index_type=kind, progress=False, cache_dir=None)

    t = time.perf_counter()
    retriever.index(chunks, encoder)
    out.update(build_s=time.perf_counter() - t, build_rss=meter.mark())
    t = time.perf_counter()
    results = []
    for lo in range(0, n_queries, query_batch):
        results += retriever.search(queries[lo : lo + query_batch], DEPTH)
    out.update(search_s=time.perf_counter() - t, search_rss=meter.mark())
    t = time.perf_counter()
    scores = score_rankings(qids, results, qrels, (1, 10))
    out.update(score_s=time.perf_counter() - t, score_rss=meter.mark())
    out["recall@10"] = float(scores.values["recall@10"].mean())
    out["texts_encoded"] = encoder.texts_encoded
    meter.stop = True
    with open("/proc/self/status") as fh:  # the kernel's peak RSS of this process
        out["hwm"] = int(fh.read().split("VmHWM:")[1].split()[0]) * 1024
    return out


def run_child(args: list[str]) -> tuple[dict, int]:
    """Run this script as a child; its JSON result and its own peak RSS in bytes."""
    proc = subprocess.Popen([sys.executable, __file__, *args], stdout=subprocess.PIPE, text=True)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"child {args} failed with exit code {proc.returncode}")
    return (json.loads(out.strip().splitlines()[-1]) if out.strip() else {}), usage.ru_maxrss * 1024


def mib(b: float) -> str:
    return f"{b / 2**20:,.0f}"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="10000,100000,1000000")
    p.add_argument("--queries", type=int, default=10_000)
    p.add_argument("--kinds", default="flat,hnsw,ivf")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--query-batch", type=int, default=10_000)
    p.add_argument("--hnsw-max", type=int, default=100_000)
    p.add_argument("--work", default="/tmp/rageval-bench")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = p.parse_args()
    work = Path(a.work)
    if a.child:
        step, n = a.child[0], int(a.child[1])
        if step == "generate":
            generate(n, a.queries, a.dim, work)
            print("{}")
        else:
            print(json.dumps(measure(n, a.queries, step, work, a.query_batch)))
        return
    import faiss

    print(
        f"python {platform.python_version()}, numpy {np.__version__}, faiss {faiss.__version__}, "
        f"{os.cpu_count()} cores, {platform.machine()}; {a.queries:,} queries, dim {a.dim}\n"
    )
    print(
        "| chunks | index | build s | search s | score s | recall@10 | peak RSS MiB "
        "| ru_maxrss MiB | raw MiB | peak / raw | (peak - base) / raw |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in (int(s) for s in a.sizes.split(",")):
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        run_child(
            [
                "--child",
                "generate",
                str(n),
                "--queries",
                str(a.queries),
                "--dim",
                str(a.dim),
                "--work",
                str(work),
            ]
        )
        raw = n * a.dim * 4
        for kind in a.kinds.split(","):
            if kind == "hnsw" and n > a.hnsw_max:
                continue
            r, maxrss = run_child(
                [
                    "--child",
                    kind,
                    str(n),
                    "--queries",
                    str(a.queries),
                    "--work",
                    str(work),
                    "--query-batch",
                    str(a.query_batch),
                ]
            )
            assert r["texts_encoded"] == 0, "the model ran: the cache missed"
            peak = r["hwm"]
            print(
                f"| {n:,} | {kind} | {r['build_s']:.2f} | {r['search_s']:.2f} | "
                f"{r['score_s']:.2f} | {r['recall@10']:.3f} | {mib(peak)} | {mib(maxrss)} | "
                f"{mib(raw)} | "
                f"{peak / raw:.2f} | {(peak - r['baseline_rss']) / raw:.2f} |",
                flush=True,
            )
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
