"""Cold and warm rageval runs against the minimal pipeline, side by side on this machine.

Each repetition runs, as separate processes and in this order: a cold rageval run (empty
cache_dir), the minimal pipeline (scripts/minimal_pipeline.py) right after it, and a warm rageval
rerun on the now-filled cache. Wall times include interpreter start-up and imports.

    python scripts/bench.py [--repeats 3] [--chunk 256]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def timed(cmd: list[str], cwd: Path) -> tuple[float, str]:
    t = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}
    )
    if proc.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-3000:]}")
    return time.perf_counter() - t, proc.stdout


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--chunk", type=int, default=256)
    p.add_argument(
        "--mlflow", action="store_true", help="keep MLflow logging on in the rageval runs"
    )
    a = p.parse_args()
    rows = []
    for i in range(a.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            run = [
                PY,
                "-m",
                "rageval",
                f"chunk={a.chunk}",
                f"cache_dir={tmp / 'cache'}",
                "latency_sample=0",
                f"mlflow.enabled={str(a.mlflow).lower()}",
                f"mlflow.tracking_uri=sqlite:///{tmp / 'm.db'}",
            ]
            cold, _ = timed([*run, f"hydra.run.dir={tmp / 'cold'}"], tmp)
            minimal, out = timed(
                [PY, str(ROOT / "scripts" / "minimal_pipeline.py"), "--chunk", str(a.chunk)], tmp
            )
            warm, _ = timed([*run, f"hydra.run.dir={tmp / 'warm'}"], tmp)
            rep = json.loads((tmp / "cold" / "report.json").read_text())
            ref = json.loads(out)["metrics"]
            same = all(abs(rep["metrics"][m] - ref[m]) < 1e-9 for m in ref)
            rows.append(
                {
                    "cold": cold,
                    "minimal": minimal,
                    "warm": warm,
                    "same_metrics": same,
                    "texts_embedded": rep["counts"]["texts_embedded"],
                }
            )
            print(
                f"repeat {i + 1}: cold {cold:.1f}s, minimal {minimal:.1f}s, warm {warm:.1f}s, "
                f"metrics equal: {same}",
                file=sys.stderr,
            )
    med = {k: statistics.median(r[k] for r in rows) for k in ("cold", "minimal", "warm")}
    ratios = [r["cold"] / r["minimal"] for r in rows]
    warm_share = [r["warm"] / r["cold"] for r in rows]
    print("| run | median wall time (s) |\n|---|---|")
    for k in ("cold", "minimal", "warm"):
        print(f"| {k} | {med[k]:.2f} |")
    print(
        f"\ncold / minimal: median {statistics.median(ratios):.3f} "
        f"(each repeat: {', '.join(f'{x:.3f}' for x in ratios)})"
    )
    print(
        f"warm / cold: median {statistics.median(warm_share):.3f} "
        f"(each repeat: {', '.join(f'{x:.3f}' for x in warm_share)})"
    )
    print(
        f"texts embedded by the cold run: {rows[0]['texts_embedded']}; "
        "metrics equal to the minimal pipeline: "
        f"{all(r['same_metrics'] for r in rows)}"
    )


if __name__ == "__main__":
    main()
