"""Embedding backends side by side on the demo: throughput, cosine to torch, demo metrics.

    python scripts/bench_embedding.py
        [--variants torch,onnx,onnx-int8,openvino,openvino-int8,static]
        [--cache-dir DIR] [--rounds 2] [--cold]

Every variant runs in this one process, on the same demo chunks (chunk=256) and queries:

1. export (once, into ``--cache-dir``/models; timed only when it happens) and load each model;
2. encode the chunks in ``--rounds`` interleaved slices (torch, onnx, ..., then the next slice),
   so a change in the machine's load hits every variant alike; CPU time (``process_time``, all
   threads of this process) and wall time are summed per variant;
3. the cosine of every chunk vector to torch's;
4. the demo run per variant (FAISS, vector search, k=5), its chunk vectors taken from step 2.

``--cold`` then times, one after the other, a cold ``python -m rageval`` (empty vector cache, the
exports in place) with the fastest variant whose demo metrics are within 0.01 of torch's, and
``scripts/minimal_pipeline.py`` (plain sentence-transformers + FAISS).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
HEADLINE = ("ndcg@5", "recall@5", "evidence_recall@5", "mrr@5")


def variant(name: str) -> tuple[str, str]:
    backend, _, quant = name.partition("-")
    return backend, quant or "none"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--variants", default="torch,onnx,onnx-int8,openvino,openvino-int8,static")
    p.add_argument("--cache-dir", default=os.environ.get("RAGEVAL_CACHE_DIR") or ".cache/rageval")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--cold", action="store_true")
    p.add_argument("--json", help="also write the results here")
    a = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    from rageval.app.build import build
    from rageval.app.config import compose
    from rageval.chunking import chunk_documents, load_tokenizer
    from rageval.embedding.cache import EmbeddingCache, text_key
    from rageval.inputs.corpus import load_corpus
    from rageval.pipeline import evaluate

    names = a.variants.split(",")
    if names[0] != "torch":
        names = ["torch", *[n for n in names if n != "torch"]]
    work = Path(tempfile.mkdtemp(prefix="bench-embedding-"))
    built = {}
    for name in names:
        backend, quant = variant(name)
        cfg = compose(
            [
                f"cache_dir={a.cache_dir}",
                "mlflow.enabled=false",
                f"embedding.backend={backend}",
                f"embedding.quantize={quant}",
            ]
        )
        parts = build(cfg)
        spec, enc, retriever = parts.spec, parts.encoder, parts.retriever
        enc.progress = False
        t = time.perf_counter()
        if backend != "torch":
            fresh = not backends_export_exists(enc)
            enc._prepare()
            export_s = time.perf_counter() - t if fresh else None
        else:
            export_s = None
        t = time.perf_counter()
        model = enc._load()
        built[name] = {
            "enc": enc,
            "spec": spec,
            "retriever": retriever,
            "model": model,
            "export_s": export_s,
            "load_s": time.perf_counter() - t,
        }
        exported = f"exported in {export_s:.0f} s, " if export_s else ""
        print(f"{name}: ready ({exported}loaded in {built[name]['load_s']:.1f} s)", flush=True)

    spec = built["torch"]["spec"]
    docs = load_corpus(spec.corpus)
    texts = [
        c.text for c in chunk_documents(docs, spec.chunking, load_tokenizer(spec.tokenizer_dir))
    ]
    slices = np.array_split(np.arange(len(texts)), a.rounds)
    vecs = {n: [] for n in names}
    cpu = dict.fromkeys(names, 0.0)
    wall = dict.fromkeys(names, 0.0)
    for r, idx in enumerate(slices):
        part = [texts[i] for i in idx]
        for name in names:
            b = built[name]
            c, w = time.process_time(), time.perf_counter()
            vecs[name].append(b["enc"]._vectors(b["model"], part))
            cpu[name] += time.process_time() - c
            wall[name] += time.perf_counter() - w
        print(f"round {r + 1}/{a.rounds}: {len(part)} chunks through every variant", flush=True)

    ref = np.vstack(vecs["torch"])
    rows = []
    for name in names:
        b = built[name]
        v = np.vstack(vecs[name])
        cos = np.einsum("ij,ij->i", ref, v) if v.shape == ref.shape else None
        enc = b["enc"]
        enc.cache = EmbeddingCache(work / name, enc.fingerprint)
        enc.cache.put([text_key(t, enc.document_prompt) for t in texts], v)
        report = evaluate(b["spec"], b["retriever"], enc)
        rows.append(
            {
                "variant": name,
                "texts_per_cpu_s": len(texts) / cpu[name],
                "texts_per_wall_s": len(texts) / wall[name],
                "cpu_ratio": cpu["torch"] / cpu[name],
                "wall_ratio": wall["torch"] / wall[name],
                "cos_min": None if cos is None else float(cos.min()),
                "cos_mean": None if cos is None else float(cos.mean()),
                "probe_max_cosine_distance": enc.max_cosine_distance,
                "export_s": b["export_s"],
                "metrics": {m: report.metrics.get(m) for m in HEADLINE},
            }
        )
    torch_m = rows[0]["metrics"]
    for row in rows:
        row["max_metric_delta"] = max(abs(row["metrics"][m] - torch_m[m]) for m in HEADLINE)
    print(
        f"\n{len(texts)} demo chunks (chunk=256), {a.rounds} interleaved rounds, one process, "
        f"{os.cpu_count()} cores (shared: other processes compete for them)\n"
    )
    head = ["variant", "CPU ratio", "wall ratio", "chunks/CPU s", "min cos", "probe dist"]
    head += [*HEADLINE, "max |Δ|"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        cells = [
            row["variant"],
            f"{row['cpu_ratio']:.2f}x",
            f"{row['wall_ratio']:.2f}x",
            f"{row['texts_per_cpu_s']:.0f}",
            "n/a" if row["cos_min"] is None else f"{row['cos_min']:.6f}",
            "n/a"
            if row["probe_max_cosine_distance"] is None
            else f"{row['probe_max_cosine_distance']:.1e}",
        ]
        cells += [f"{row['metrics'][m]:.4f}" for m in HEADLINE] + [f"{row['max_metric_delta']:.4f}"]
        print("| " + " | ".join(cells) + " |")
    result = {"chunks": len(texts), "rounds": a.rounds, "rows": rows}
    for b in built.values():
        b["enc"].close()
    if a.cold:
        result["cold"] = cold_runs(rows, a.cache_dir)
    shutil.rmtree(work, ignore_errors=True)
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=2))


def backends_export_exists(enc) -> bool:
    from rageval.embedding import backends

    d = backends.export_dir(enc.cache_dir, enc.source_fingerprint, enc.backend, enc.quantize)
    return (d / "export.json").is_file()


def cold_runs(rows: list[dict], cache_dir: str) -> dict:
    """A cold demo run with the fastest variant within 0.01 of torch, then the minimal pipeline."""
    ok = [r for r in rows if r["max_metric_delta"] <= 0.01]
    best = max(ok, key=lambda r: r["wall_ratio"])
    backend, quant = variant(best["variant"])
    with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
        cold_cache = Path(tmp) / "cache"
        cold_cache.mkdir()
        (cold_cache / "models").symlink_to(Path(cache_dir).resolve() / "models")
        env = {**os.environ, "RAGEVAL_CACHE_DIR": str(cold_cache), "PYTHONPATH": str(ROOT)}
        t = time.perf_counter()
        subprocess.run(
            [
                PY,
                "-m",
                "rageval",
                f"embedding.backend={backend}",
                f"embedding.quantize={quant}",
                "mlflow.enabled=false",
            ],
            cwd=tmp,
            env=env,
            check=True,
            capture_output=True,
        )
        cold = time.perf_counter() - t
        t = time.perf_counter()
        subprocess.run(
            [PY, str(ROOT / "scripts" / "minimal_pipeline.py")],
            cwd=tmp,
            env=env,
            check=True,
            capture_output=True,
        )
        minimal = time.perf_counter() - t
    print(
        f"\ncold demo run with {best['variant']}: {cold:.1f} s; minimal sentence-transformers "
        f"pipeline right after: {minimal:.1f} s; ratio {cold / minimal:.2f}"
    )
    return {"variant": best["variant"], "cold_s": cold, "minimal_s": minimal}


if __name__ == "__main__":
    main()
