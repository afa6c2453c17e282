"""Embedding backends side by side on the demo: throughput, cosine to torch, demo metrics.

    python scripts/bench_embedding.py
        [--variants torch,onnx,onnx-int8,openvino,openvino-int8,static]
        [--cache-dir DIR] [--sample 128] [--repeats 5] [--cold] [--cold-repeats 3] [--json F]

How it measures, so that a ratio means the backend and not the bench:

1. **One worker process per variant**, each with its own runtime and thread pools (torch's
   OpenMP, ONNX Runtime's, OpenVINO's TBB never share a process), all started once, every model
   loaded (and exported, once, into ``--cache-dir``/models) before any timing. Every runtime uses
   its default thread count (the machine's cores).
2. **Interleaved ABAB**: only one worker computes at a time; each repeat sends the same chunks
   (``--sample`` demo chunks of chunk=256, evenly spaced over the corpus so their lengths are the
   corpus's) to every variant in turn, the order rotated from one repeat to the next. A warm-up
   pass (first-call allocations, OpenVINO's shape compilation) is not counted.
3. **What is timed** is what a cold run pays per text: tokenizing, bucketed padding, the model,
   pooling and normalising (``SentenceTransformerEncoder._vectors``), no cache. CPU time is the
   worker's own (``process_time``: all its threads); wall time is ``perf_counter``.
4. **Ratios are paired per repeat** (torch's time over the variant's in the same repeat), and the
   table gives their median and range over the repeats, with the machine's load average (it is
   shared) at the start and end of the run.
5. Quality: each worker embeds all demo chunks and queries through the product's encoder, then
   this process scores the demo run (FAISS, vector, k=5) on those vectors, and compares every chunk
   vector with torch's.

A variant is ``backend[-quantize[-precision]]`` (``openvino-int8-bf16``: int8 with bf16 float
parts). ``ONEDNN_MAX_CPU_ISA`` (AVX2, AVX512_CORE, AVX512_CORE_VNNI) caps the CPU class OpenVINO's
kernels run in, in the workers and the cold runs alike; each variant's numerics() is printed.

``--cold`` then alternates, ``--cold-repeats`` times, a cold ``python -m rageval`` (empty vector
cache, exports in place, MLflow off) with the fastest variant whose demo metrics are within 0.01 of
torch's, and ``scripts/minimal_pipeline.py`` (plain sentence-transformers + FAISS), and reports
the median ratio and the cold run's own stage timings (report.json).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
HEADLINE = ("ndcg@5", "recall@5", "evidence_recall@5", "mrr@5")


def variant(name: str) -> tuple[str, str, str]:
    """``openvino-int8-bf16`` -> (backend, quantize, precision); the last two may be left out."""
    backend, quant, precision = ([*name.split("-"), "", ""])[:3]
    return backend, quant or "none", precision or "f32"


def load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


# --- the worker: one variant, commands on stdin, answers on stdout ---------------------------


def worker(name: str, cache_dir: str, texts_file: str, vec_dir: str) -> None:
    global _PROTOCOL
    # answers go to the parent on the original stdout; anything a library prints (NNCF's export
    # tables, say) goes to stderr instead of into the protocol
    _PROTOCOL = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    from rageval.embedding import SentenceTransformerEncoder
    from rageval.embedding.cache import EmbeddingCache

    backend, quant, precision = variant(name)
    enc = SentenceTransformerEncoder(
        cache_dir=cache_dir, backend=backend, quantize=quant, precision=precision, progress=False
    )
    data = json.loads(Path(texts_file).read_text())
    chunks, queries = data["chunks"], data["queries"]
    t = time.perf_counter()
    model = enc._load()  # exports first if this cache has no export yet
    reply({"ready": True, "load_s": time.perf_counter() - t})
    for line in sys.stdin:
        cmd = json.loads(line)
        if cmd["op"] == "time":
            part = [chunks[i] for i in cmd["idx"]]
            c, w = time.process_time(), time.perf_counter()
            enc._vectors(model, part)
            reply({"cpu": time.process_time() - c, "wall": time.perf_counter() - w})
        elif cmd["op"] == "full":  # the product's path, into a cache of this bench's own
            enc.cache = EmbeddingCache(Path(vec_dir), enc.fingerprint)
            c, w = time.process_time(), time.perf_counter()
            enc.encode_documents(chunks)
            enc.encode_queries(queries)
            reply({"cpu": time.process_time() - c, "wall": time.perf_counter() - w})
        elif cmd["op"] == "gemm":  # the CPU's fp32 matrix-product rate, through torch's MKL
            import torch

            n, reps = cmd["n"], cmd["reps"]
            a, b = torch.randn(n, n), torch.randn(n, n)
            torch.mm(a, b)  # warm-up
            c, w = time.process_time(), time.perf_counter()
            for _ in range(reps):
                torch.mm(a, b)
            cpu = time.process_time() - c
            reply({"cpu": cpu, "wall": time.perf_counter() - w, "flop": 2.0 * n**3 * reps})
        elif cmd["op"] == "profile":  # where ONNX Runtime's time goes, by its own profiler
            reply(onnx_profile(enc, [chunks[i] for i in cmd["idx"]]))
        elif cmd["op"] == "stop":
            return


PRODUCT_OPS = ("MatMul", "FusedMatMul", "Gemm", "MatMulIntegerToFloat")


def onnx_profile(enc, texts: list[str]) -> dict:
    """One pass over ``texts`` through a profiling copy of the encoder's ONNX Runtime session
    (after one unprofiled pass): kernel time per operator type, and the floating-point operations
    of its plain matrix products (``MatMul`` nodes: 2 x output elements x inner dimension, from
    the shapes the profiler records), so the products' own rate inside the model is known."""
    import onnxruntime

    from rageval.embedding import runner

    export = enc._export
    opts = onnxruntime.SessionOptions()
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    opts.enable_profiling = True
    folder = Path(tempfile.mkdtemp(prefix="ort-profile-"))
    opts.profile_file_prefix = str(folder / "ort")
    model = runner.DirectEncoderModel(export.path, export.file_name, "onnx", opts)
    session = model._run.session
    enc._vectors(model, texts)  # warm-up: its events are dropped below
    enc._vectors(model, texts)
    events = json.loads(Path(session.end_profiling()).read_text())
    shutil.rmtree(folder, ignore_errors=True)
    runs = sorted(e["ts"] + e["dur"] for e in events if e.get("name") == "model_run")
    warm_end = runs[len(runs) // 2 - 1]  # the first half of the runs is the warm-up pass
    by_op: dict[str, float] = {}
    matmul_flop = 0.0
    for e in events:
        if e.get("cat") != "Node" or not e["name"].endswith("_kernel_time") or e["ts"] < warm_end:
            continue
        op = e["args"]["op_name"]
        by_op[op] = by_op.get(op, 0.0) + e["dur"] / 1e6
        if op == "MatMul":
            (x,) = e["args"]["input_type_shape"][0].values()
            (y,) = e["args"]["output_type_shape"][0].values()
            matmul_flop += 2.0 * float(np.prod(y)) * x[-1]
    return {"by_op_s": by_op, "matmul_flop": matmul_flop}


_PROTOCOL = sys.stdout


def reply(obj: dict) -> None:
    _PROTOCOL.write(json.dumps(obj) + "\n")
    _PROTOCOL.flush()


class Worker:
    def __init__(self, name: str, cache_dir: str, texts_file: Path, vec_dir: Path):
        self.name = name
        self.proc = subprocess.Popen(
            [PY, __file__, "--worker", name, "--cache-dir", cache_dir]
            + ["--texts", str(texts_file), "--vectors", str(vec_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"},
        )

    def ask(self, cmd: dict | None = None) -> dict:
        if cmd is not None:
            self.proc.stdin.write(json.dumps(cmd) + "\n")
            self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"worker {self.name} died (exit {self.proc.wait()})")
        return json.loads(line)

    def stop(self) -> None:
        try:
            self.proc.stdin.write(json.dumps({"op": "stop"}) + "\n")
            self.proc.stdin.close()
        except OSError:
            pass
        self.proc.wait(timeout=60)


# --- the parent --------------------------------------------------------------------------------


def model_flop(texts: list[str], model_dir: Path, tokenizer) -> float:
    """Floating-point operations a BERT-type encoder spends on ``texts`` padded as rageval pads
    them (each to its own length rounded up to BUCKET): per layer and padded token, the Q, K, V
    and output projections (4 h^2 multiply-adds) and the feed-forward pair (2 h f), plus the two
    attention products over the padded width w (2 w h); a multiply-add counts as two."""
    from rageval.embedding.batching import BUCKET

    cfg = json.loads((model_dir / "config.json").read_text())
    h, f, layers = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"]
    cap = json.loads((model_dir / "sentence_bert_config.json").read_text())["max_seq_length"]
    total = 0.0
    for text in texts:
        n = min(len(tokenizer.encode(text).ids), cap)
        w = min(-(-n // BUCKET) * BUCKET, cap)
        total += layers * 2.0 * w * (4 * h * h + 2 * h * f + 2 * w * h)
    return total


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", default="torch,onnx,onnx-int8,openvino,openvino-int8,static")
    p.add_argument("--cache-dir", default=os.environ.get("RAGEVAL_CACHE_DIR") or ".cache/rageval")
    p.add_argument("--sample", type=int, default=128, help="demo chunks per timed repeat")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--cold", action="store_true")
    p.add_argument("--cold-repeats", type=int, default=3)
    p.add_argument(
        "--cold-variant",
        help="the variant of the cold runs (default: the fastest "
        "whose demo metrics are within 0.01 of torch's)",
    )
    p.add_argument("--json", help="also write the results here")
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--texts", help=argparse.SUPPRESS)
    p.add_argument("--vectors", help=argparse.SUPPRESS)
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if a.worker:
        worker(a.worker, a.cache_dir, a.texts, a.vectors)
        return

    from rageval.app.build import build
    from rageval.app.config import compose
    from rageval.embedding.cache import EmbeddingCache
    from rageval.inputs.chunking import chunk_documents, load_tokenizer
    from rageval.inputs.corpus import load_corpus
    from rageval.inputs.golden import load_golden
    from rageval.run.evaluation import evaluate

    names = a.variants.split(",")
    names = ["torch", *[n for n in names if n != "torch"]]
    load_start = load()
    work = Path(tempfile.mkdtemp(prefix="bench-embedding-"))
    parts = {}
    for name in names:
        backend, quant, precision = variant(name)
        cfg = compose(
            [
                f"cache_dir={a.cache_dir}",
                "mlflow.enabled=false",
                f"embedding.backend={backend}",
                f"embedding.quantize={quant}",
                f"embedding.precision={precision}",
            ]
        )
        parts[name] = build(cfg)
    spec = parts["torch"].spec
    docs = load_corpus(spec.corpus)
    tokenizer = load_tokenizer(spec.tokenizer_dir)
    chunks = [c.text for c in chunk_documents(docs, spec.chunking, tokenizer)]
    queries = [q.query for q in load_golden(spec.golden).queries]
    texts_file = work / "texts.json"
    texts_file.write_text(json.dumps({"chunks": chunks, "queries": queries}))
    sample = np.linspace(0, len(chunks) - 1, min(a.sample, len(chunks))).round().astype(int)
    sample = sorted(set(sample.tolist()))

    workers = {}
    try:
        for name in names:  # one at a time: exports and model loads do not overlap
            w = Worker(name, a.cache_dir, texts_file, work / name)
            ready = w.ask()
            workers[name] = w
            print(f"{name}: ready (loaded in {ready['load_s']:.1f} s)", flush=True)
        for name in names:  # warm-up, not counted
            workers[name].ask({"op": "time", "idx": sample})
        cpu = {n: [] for n in names}
        wall = {n: [] for n in names}
        loads = []
        for r in range(a.repeats):
            loads.append(os.getloadavg()[0])
            order = names[r % len(names) :] + names[: r % len(names)]
            for name in order:
                got = workers[name].ask({"op": "time", "idx": sample})
                cpu[name].append(got["cpu"])
                wall[name].append(got["wall"])
            print(f"repeat {r + 1}/{a.repeats} ({' '.join(order)}), load {load()}", flush=True)
        full = {n: workers[n].ask({"op": "full"}) for n in names}
        gemm = [workers["torch"].ask({"op": "gemm", "n": 2048, "reps": 10}) for _ in range(3)]
        profile = workers["onnx"].ask({"op": "profile", "idx": sample}) if "onnx" in names else None
    finally:
        for w in workers.values():
            w.stop()
    load_end = load()

    vecs, rows = {}, []
    for name in names:
        b = parts[name]
        enc = b.encoder
        enc.cache = EmbeddingCache(work / name, enc.fingerprint)
        vecs[name] = enc.encode_documents(chunks)  # from the worker's cache: no model here
        report = evaluate(b.spec, b.retriever, enc)
        assert not enc.model_loaded
        ref = vecs["torch"]
        v = vecs[name]
        cos = np.einsum("ij,ij->i", ref, v) if v.shape == ref.shape else None
        cpu_r = [t / s for t, s in zip(cpu["torch"], cpu[name], strict=True)]
        wall_r = [t / s for t, s in zip(wall["torch"], wall[name], strict=True)]
        rows.append(
            {
                "variant": name,
                "cpu_ratio": statistics.median(cpu_r),
                "cpu_ratio_range": [min(cpu_r), max(cpu_r)],
                "wall_ratio": statistics.median(wall_r),
                "wall_ratio_range": [min(wall_r), max(wall_r)],
                "chunks_per_cpu_s": len(sample) / statistics.median(cpu[name]),
                "cpu_s": cpu[name],
                "wall_s": wall[name],
                "full_pass": full[name],
                "cos_min": None if cos is None else float(cos.min()),
                "cos_mean": None if cos is None else float(cos.mean()),
                "probe_max_cosine_distance": enc.max_cosine_distance,
                "numerics": enc.numerics(),
                "metrics": {m: report.metrics.get(m) for m in HEADLINE},
            }
        )
    # the fp32 ceiling: no fp32 backend runs the model's products faster than the CPU runs one
    # large matrix product, so (GEMM rate) / (torch's rate on the model) bounds its speed-up even
    # if everything but the products took no time
    flop = model_flop([chunks[i] for i in sample], Path(spec.tokenizer_dir), tokenizer)
    gemm_rate = max(g["flop"] / g["cpu"] for g in gemm)
    torch_rate = flop / statistics.median(cpu["torch"])
    fp32_ceiling = {
        "model_gflop": flop / 1e9,
        "torch_gflop_per_cpu_s": torch_rate / 1e9,
        "gemm_gflop_per_cpu_s": gemm_rate / 1e9,
        "ceiling": gemm_rate / torch_rate,
    }
    onnx_bound = None
    if profile is not None and profile["by_op_s"].get("MatMul"):
        # ONNX Runtime's fp32 bound: the model's products (all of them: Q, K, V, attention, output
        # and feed-forward) at the rate its own MatMul kernels reached on this model's shapes,
        # as a share of its kernel time; the products cannot get cheaper than that without
        # faster kernels, so even if every other operator took no time onnx's ratio to torch
        # would grow by 1 / share at most
        kernel_s = sum(profile["by_op_s"].values())
        rate = profile["matmul_flop"] / profile["by_op_s"]["MatMul"]
        share = flop / rate / kernel_s
        onnx_row = next(r for r in rows if r["variant"] == "onnx")
        onnx_bound = {
            "kernel_s": kernel_s,
            "op_share": {k: v / kernel_s for k, v in sorted(profile["by_op_s"].items())},
            "matmul_gflop_per_s": rate / 1e9,
            "products_share": share,
            "bound": onnx_row["cpu_ratio"] / share,
        }
    torch_m = rows[0]["metrics"]
    for row in rows:
        row["max_metric_delta"] = max(abs(row["metrics"][m] - torch_m[m]) for m in HEADLINE)
    print(
        f"\n{len(sample)} of {len(chunks)} demo chunks (chunk=256) per repeat, {a.repeats} "
        f"interleaved repeats, one worker process per variant, {os.cpu_count()} cores; load "
        f"average (1/5/15 min) {load_start} at the start, {load_end} at the end (the machine is "
        "shared: other processes compete for the cores)\n"
    )
    for row in rows:
        print(f"{row['variant']}: {row['numerics']}")
    head = ["variant", "CPU ratio (range)", "wall ratio (range)", "chunks/CPU s", "min cos"]
    head += ["probe dist", *HEADLINE, "max |Δ|"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        lo, hi = row["cpu_ratio_range"]
        wlo, whi = row["wall_ratio_range"]
        d = row["probe_max_cosine_distance"]
        cells = [
            row["variant"],
            f"{row['cpu_ratio']:.2f}x ({lo:.2f}-{hi:.2f})",
            f"{row['wall_ratio']:.2f}x ({wlo:.2f}-{whi:.2f})",
            f"{row['chunks_per_cpu_s']:.1f}",
            "n/a" if row["cos_min"] is None else f"{row['cos_min']:.6f}",
            "n/a" if d is None else f"{d:.1e}",
        ]
        cells += [f"{row['metrics'][m]:.4f}" for m in HEADLINE] + [f"{row['max_metric_delta']:.4f}"]
        print("| " + " | ".join(cells) + " |")
    print(
        f"\nfp32 ceiling: the sample is {fp32_ceiling['model_gflop']:.0f} GFLOP of model "
        f"arithmetic; torch ran it at {fp32_ceiling['torch_gflop_per_cpu_s']:.0f} GFLOP per CPU "
        f"second, a 2048x2048 fp32 matrix product runs at "
        f"{fp32_ceiling['gemm_gflop_per_cpu_s']:.0f} (best of 3 x 10 products): no fp32 "
        f"backend can be more than {fp32_ceiling['ceiling']:.2f}x torch on these chunks"
    )
    if onnx_bound is not None:
        shares = sorted(onnx_bound["op_share"].items(), key=lambda kv: -kv[1])
        print(
            "onnx fp32, by ONNX Runtime's profiler (one pass over the sample): "
            + ", ".join(f"{k} {v:.0%}" for k, v in shares if v >= 0.005)
            + f" of its kernel time; its MatMul kernels ran at "
            f"{onnx_bound['matmul_gflop_per_s']:.0f} GFLOP per second, at which the model's "
            f"products alone (attention's included) fill {onnx_bound['products_share']:.0%} of "
            f"that time: even with every other operator free, onnx fp32 would be at most "
            f"{onnx_bound['bound']:.2f}x torch"
        )
    result = {
        "fp32_ceiling": fp32_ceiling,
        "onnx_bound": onnx_bound,
        "chunks": len(chunks),
        "sample": len(sample),
        "repeats": a.repeats,
        "load_start": load_start,
        "load_end": load_end,
        "load_1min_per_repeat": loads,
        "rows": rows,
    }
    if a.cold:
        result["cold"] = cold_runs(rows, a.cache_dir, a.cold_repeats, a.cold_variant)
    shutil.rmtree(work, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))


def cold_runs(rows: list[dict], cache_dir: str, repeats: int, name: str | None = None) -> dict:
    """Cold demo runs with ``name`` (default: the fastest variant within 0.01 of torch),
    alternating with the minimal pipeline; the median ratio, its range, and the cold run's
    stage timings."""
    ok = [r for r in rows if r["max_metric_delta"] <= 0.01 or r["variant"] == name]
    best = next((r for r in ok if r["variant"] == name), None) or max(
        ok, key=lambda r: r["cpu_ratio"]
    )
    backend, quant, precision = variant(best["variant"])
    cold, minimal, stages, loads = [], [], [], []
    for r in range(repeats):
        loads.append(load())
        with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
            cold_cache = Path(tmp) / "cache"
            cold_cache.mkdir()
            (cold_cache / "models").symlink_to(Path(cache_dir).resolve() / "models")
            env = {**os.environ, "RAGEVAL_CACHE_DIR": str(cold_cache), "PYTHONPATH": str(ROOT)}
            run = [
                PY,
                "-m",
                "rageval",
                f"embedding.backend={backend}",
                f"embedding.quantize={quant}",
                f"embedding.precision={precision}",
                "mlflow.enabled=false",
            ]
            steps = [("minimal", [PY, str(ROOT / "scripts" / "minimal_pipeline.py")])]
            steps.insert(r % 2, ("cold", run))  # ABAB, then BABA: neither always goes first
            for kind, cmd in steps:
                t = time.perf_counter()
                subprocess.run(cmd, cwd=tmp, env=env, check=True, capture_output=True)
                (cold if kind == "cold" else minimal).append(time.perf_counter() - t)
            report = json.loads(next(Path(tmp).glob("outputs/*/*/report.json")).read_text())
            stages.append(report["timings"])
            metrics = {m: report["metrics"].get(m) for m in HEADLINE}
        print(
            f"cold pair {r + 1}/{repeats}: rageval {best['variant']} {cold[-1]:.1f} s, minimal "
            f"{minimal[-1]:.1f} s, load {loads[-1]}",
            flush=True,
        )
    ratios = [c / m for c, m in zip(cold, minimal, strict=True)]
    print(
        f"\ncold demo run with {best['variant']} / minimal sentence-transformers pipeline: median "
        f"{statistics.median(ratios):.2f} (range {min(ratios):.2f}-{max(ratios):.2f}); cold "
        f"{statistics.median(cold):.1f} s, minimal {statistics.median(minimal):.1f} s (medians)"
    )
    mid = stages[ratios.index(sorted(ratios)[len(ratios) // 2])]
    print("stages of the median cold run: " + ", ".join(f"{k} {v:.2f}" for k, v in mid.items()))
    print("the cold run's metrics: " + ", ".join(f"{k} {v:.4f}" for k, v in metrics.items()))
    return {
        "variant": best["variant"],
        "metrics": metrics,
        "cold_s": cold,
        "minimal_s": minimal,
        "ratios": ratios,
        "stages": stages,
        "loads": loads,
    }


if __name__ == "__main__":
    main()
