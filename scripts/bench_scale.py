"""Benchmark: index build, search and scoring at 10k, 100k and 1M chunks, with peak memory.

Embeddings are generated, not encoded: clustered unit vectors (float32, made in place, no float64
intermediate) written into rageval's on-disk embedding cache under the packaged model's
fingerprint, keyed by synthetic chunk texts. The measured path is then the product's own: a
``SentenceTransformerEncoder`` that finds every text in the memory-mapped cache (the model is never
loaded), ``FaissRetriever.index`` streaming batches into FAISS, ``search`` over the queries in
batches of ``query_batch``, and ``score_rankings`` against qrels (each query's relevant chunk is
the corpus row it was made from, so recall@10 shows what an approximate index loses).

Index types: flat, hnsw, ivf, ivfpq, and ``ivfpq/rF`` for IVF-PQ whose candidates (F x 10 per
query) are re-scored exactly from the memory-mapped cache (``ivfpq_refine=F``). Each row also gives
the index's own bytes (FAISS's arrays: vectors or codes, graph, lists' ids, coarse quantizer) and
bytes per vector, and the load average when the cell ended; a last table computes each type's
index and process memory at 10M chunks from those bytes per vector (computed, not measured).

Each (size, index type) runs in its own process. Its peak RSS is the kernel's high-water mark
(``VmHWM``; ``os.wait4``'s ``ru_maxrss`` is printed beside it and also counts what the process had
when it forked), and a sampling thread records the baseline before the index is built. HNSW is
skipped above ``--hnsw-max`` chunks: on 2 cores its build alone would take most of an hour at 1M.

    .venv/bin/python scripts/bench_scale.py [--sizes 10000,100000,1000000] [--queries 10000]
        [--kinds flat,hnsw,ivf,ivfpq,ivfpq/r4] [--dim 384] [--work /tmp/rageval-bench]

``--embed`` measures the other half at scale: embedding a real-text corpus (scripts/scale_corpus.py:
texts drawn from the demo's word pairs, 48 words ~ 64 word pieces each, no download) through
``embedding.executor=ray`` on a local Ray cluster of 1 and 2 workers (one CPU each), and in this
process (``0`` workers, the model's default threads) for reference. Each cell runs in a fresh
process inside ``unshare --net`` (Ray then binds loopback only) with an empty embedding folder
(the backend's export is built once, outside the timing). Per cell: texts per second across the
cluster (wall time from the first dispatch, actors' model loads included), per worker (its texts
over its busy seconds), the scaling efficiency (the cluster's rate over the workers' count times
the 1-worker rate), and the peak RSS of each worker (sampled) and of the launching process.

    .venv/bin/python scripts/bench_scale.py --embed [--sizes 100000,1000000]
        [--backends static,openvino-int8] [--workers 0,1,2] [--max openvino-int8=100000]
"""

from __future__ import annotations

import argparse
import contextlib
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
    kind, _, refine = kind.partition("/r")
    extra = {"ivfpq_refine": int(refine)} if refine else {}
    retriever = FaissRetriever(index_type=kind, progress=False, cache_dir=None, **extra)

    t = time.perf_counter()
    retriever.index(chunks, encoder)
    out.update(build_s=time.perf_counter() - t, build_rss=meter.mark())
    out["index_bytes"] = retriever.index_bytes()["memory"]
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
    out["load"] = os.getloadavg()[0]
    meter.stop = True
    with open("/proc/self/status") as fh:  # the kernel's peak RSS of this process
        out["hwm"] = int(fh.read().split("VmHWM:")[1].split()[0]) * 1024
    return out


class WorkerPeaks(threading.Thread):
    """Samples the RSS of every Ray Data embedding actor every 50 ms; the peak per process."""

    TAG = "MapWorker(MapBatches(EmbedWorker))"

    def __init__(self):
        super().__init__(daemon=True)
        self.peaks: dict[int, int] = {}
        self.stop = False

    def run(self) -> None:
        import psutil

        while not self.stop:
            for p in psutil.process_iter(["pid", "cmdline"]):
                try:
                    if self.TAG in " ".join(p.info["cmdline"] or []):
                        rss = p.memory_info().rss
                        self.peaks[p.pid] = max(self.peaks.get(p.pid, 0), rss)
                except (psutil.Error, OSError):
                    continue
            time.sleep(0.05)


def embed_cell(n: int, backend: str, workers: int, work: Path) -> dict:
    """Embed ``n`` generated texts with ``backend`` on ``workers`` Ray workers (0: this process)
    into an empty embedding folder; the figures of one cell."""
    import subprocess as sp

    sp.run(["ip", "link", "set", "lo", "up"], check=False)
    sys.path.insert(0, str(Path(__file__).parent))
    import scale_corpus

    from rageval.embedding import SentenceTransformerEncoder
    from rageval.embedding.distributed import cluster

    name, _, quant = backend.partition("-")
    texts = scale_corpus.texts(n)
    enc = SentenceTransformerEncoder(
        cache_dir=str(work),
        progress=False,
        backend=name,
        quantize=quant or "none",
        executor="ray" if workers else "local",
        ray_workers=workers or None,
        ray_cpus_per_worker=1,
    )
    enc.prepare_export()  # built by the "prepare" child already: read back here
    shutil.rmtree(enc.cache.dir, ignore_errors=True)
    meter = Peak()
    meter.start()
    peaks = WorkerPeaks()
    out: dict = {"texts": len(set(texts))}
    with cluster("local", cpus=os.cpu_count()) if workers else contextlib.nullcontext():
        peaks.start()
        t = time.perf_counter()
        embedded = enc.prefill(texts)
        out["wall_s"] = time.perf_counter() - t
        peaks.stop = True
    assert embedded == out["texts"], (embedded, out["texts"])
    out["rate"] = embedded / out["wall_s"]
    if workers:
        stats = enc.last_fill
        out["per_worker"] = {
            str(pid): {"texts": v[0], "busy_s": v[1], "rate": v[0] / v[1] if v[1] else 0.0}
            for pid, v in stats.workers.items()
        }
        out["worker_peak_rss"] = {str(p): r for p, r in peaks.peaks.items()}
    meter.stop = True
    with open("/proc/self/status") as fh:
        out["driver_hwm"] = int(fh.read().split("VmHWM:")[1].split()[0]) * 1024
    out["segments"] = len(list(enc.cache.dir.glob("seg-*.keys")))
    return out


def embed_main(a) -> None:
    """The ``--embed`` table: each (size, backend, workers) cell in its own process."""
    import psutil

    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores "
        f"({psutil.cpu_count(logical=False)} physical), {platform.machine()}; "
        "texts of 48 words (scripts/scale_corpus.py)\n"
    )
    caps = dict(kv.split("=") for kv in a.max.split(",") if kv)
    print(
        "| chunks | backend | workers | wall s | chunks/s | chunks/s per worker (busy) "
        "| efficiency | peak RSS per worker MiB | launcher peak MiB |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for backend in a.backends.split(
        ","
    ):  # exports built before any cell, in a process of their own
        subprocess.run(
            [sys.executable, __file__, "--child", "prepare", "0", backend, "0", "--work", a.work],
            check=True,
            capture_output=True,
        )
    one: dict = {}
    rates: dict = {}  # backend -> (per-worker chunks/s, efficiency, size): largest 2-worker cell
    for n in (int(x) for x in a.sizes.split(",")):
        for backend in a.backends.split(","):
            if n > int(caps.get(backend, n)):
                continue
            for w in (int(x) for x in a.workers.split(",")):
                args = ["--child", "embed", str(n), backend, str(w), "--work", a.work]
                cmd = ["unshare", "--net", "--"] if w else []
                r = json.loads(
                    subprocess.run(
                        [*cmd, sys.executable, __file__, *args],
                        check=True,
                        capture_output=True,
                        text=True,
                        env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
                    )
                    .stdout.strip()
                    .splitlines()[-1]
                )
                per = [v["rate"] for v in r.get("per_worker", {}).values()]
                if w == 1:
                    one[(n, backend)] = r["rate"]
                eff = (
                    f"{r['rate'] / (w * one[(n, backend)]):.2f}"
                    if w > 1 and (n, backend) in one
                    else ("1.00" if w == 1 else "")
                )
                if w > 1 and (n, backend) in one:
                    rates[backend] = (one[(n, backend)], r["rate"] / w, n)
                peaks = sorted(r.get("worker_peak_rss", {}).values())
                print(
                    f"| {n:,} | {backend} | {w or 'in-process'} | {r['wall_s']:.1f} | "
                    f"{r['rate']:,.0f} | {', '.join(f'{x:,.0f}' for x in per) or ''} | {eff} | "
                    f"{', '.join(mib(x) for x in peaks)} | {mib(r['driver_hwm'])} |",
                    flush=True,
                )

    extrapolate(rates)


def extrapolate(rates: dict) -> None:
    """Hours to embed 10M and 100M chunks on N workers of this machine's kind, computed: one
    worker at the 1-worker cell's rate, N workers at N times the rate each worker of the 2-worker
    cell reached (wall time, start-up included). That holds only while the launching process,
    the shared storage and the network keep up, which a cluster of N machines has to show."""
    if not rates:
        return
    print(
        "\nComputed, not measured: hours = chunks / rate; N=1 at the 1-worker rate, N > 1 at "
        "N x (the 2-worker rate / 2), from the largest cells above.\n"
    )
    print(
        "| backend (cells of) | 1 worker chunks/s | per worker of 2, chunks/s | chunks "
        "| N=1 | N=8 | N=32 | N=128 |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for backend, (one, each, size) in rates.items():
        for total in (10_000_000, 100_000_000):
            hours = [total / one / 3600] + [total / (k * each) / 3600 for k in (8, 32, 128)]
            print(
                f"| {backend} ({size:,}) | {one:,.0f} | {each:,.0f} | {total:,} | "
                + " | ".join(f"{h:,.1f} h" if h >= 1 else f"{h * 60:,.0f} min" for h in hours)
                + " |"
            )


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
    p.add_argument("--kinds", default="flat,hnsw,ivf,ivfpq,ivfpq/r4")
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--query-batch", type=int, default=10_000)
    p.add_argument("--hnsw-max", type=int, default=100_000)
    p.add_argument("--work", default="/tmp/rageval-bench")
    p.add_argument("--embed", action="store_true", help="the embedding benchmark (see above)")
    p.add_argument("--backends", default="static,openvino-int8")
    p.add_argument("--workers", default="0,1,2")
    p.add_argument("--max", default="openvino-int8=100000", help="largest size per backend")
    p.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = p.parse_args()
    work = Path(a.work)
    if a.child and a.child[0] == "prepare":  # the backend's export, built once, in its own process
        from rageval.embedding import SentenceTransformerEncoder

        name, _, quant = a.child[2].partition("-")
        SentenceTransformerEncoder(
            cache_dir=str(work), progress=False, backend=name, quantize=quant or "none"
        ).prepare_export()
        print("{}")
        return
    if a.child and a.child[0] == "embed":
        n, backend, w = int(a.child[1]), a.child[2], int(a.child[3])
        print(json.dumps(embed_cell(n, backend, w, work)))
        return
    if a.embed:
        if a.sizes == "10000,100000,1000000":
            a.sizes = "100000,1000000"
        embed_main(a)
        return
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
        "| chunks | index | build s | search s | score s | recall@10 | index MiB | bytes/vector "
        "| peak RSS MiB | ru_maxrss MiB | raw MiB | peak / raw | (peak - base) / raw | load |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    largest: dict[str, tuple[int, dict]] = {}  # kind -> (chunks, figures) of its largest cell
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
            if kind.startswith("hnsw") and n > a.hnsw_max:
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
            largest[kind] = (n, r)
            print(
                f"| {n:,} | {kind} | {r['build_s']:.2f} | {r['search_s']:.2f} | "
                f"{r['score_s']:.2f} | {r['recall@10']:.3f} | {mib(r['index_bytes'])} | "
                f"{r['index_bytes'] / n:,.1f} | {mib(peak)} | {mib(maxrss)} | "
                f"{mib(raw)} | "
                f"{peak / raw:.2f} | {(peak - r['baseline_rss']) / raw:.2f} | {r['load']:.1f} |",
                flush=True,
            )
    shutil.rmtree(work, ignore_errors=True)
    at_ten_million(largest, a.dim)


def at_ten_million(largest: dict[str, tuple[int, dict]], dim: int, total: int = 10_000_000):
    """Index and process memory at 10M chunks, computed from the largest measured cell of each
    type: the index at its bytes per vector; the process's peak scaled linearly from that cell (an
    upper bound: Python, the libraries and one batch do not grow with the corpus). HNSW, when not
    measured, from its layout: the vectors plus 2 x M links of 4 bytes on the base layer (the
    upper layers add a few percent)."""
    if not largest:
        return
    print(
        f"\nComputed, not measured: {total:,} chunks x {dim} dimensions, each type at the bytes "
        "per vector of its largest cell above; the process's peak scaled linearly from it.\n"
    )
    print("| index | from cell | index bytes/vector | index GiB at 10M | peak RSS GiB at 10M |")
    print("|---|---:|---:|---:|---:|")
    for kind, (n, r) in largest.items():
        per = r["index_bytes"] / n
        print(
            f"| {kind} | {n:,} | {per:,.1f} | {per * total / 2**30:,.1f} | "
            f"{r['hwm'] / n * total / 2**30:,.1f} |"
        )
    if "hnsw" not in largest:
        per = dim * 4 + 32 * 2 * 4
        print(f"| hnsw (M 32, from its layout) | - | {per:,} | {per * total / 2**30:,.1f} | - |")


if __name__ == "__main__":
    main()
