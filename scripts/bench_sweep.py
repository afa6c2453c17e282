"""The 2x2 sweep `chunk=128,256 search=vector,hybrid` against the two runs of its distinct
chunkings (`chunk=128` and `chunk=256`, vector only), each on an empty cache, side by side.

Search modes share embeddings, so the sweep should embed exactly the texts of the two chunkings
(plus the queries once): the script counts the texts each job sent through the model
(report.json counts.texts_embedded) and times both.

    python scripts/bench_sweep.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PY = sys.executable


def run(args: list[str], cwd: Path) -> float:
    t = time.perf_counter()
    proc = subprocess.run(
        [PY, "-m", "rageval", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    return time.perf_counter() - t


def embedded(folder: Path) -> dict[str, int]:
    out = {}
    for rep in sorted(folder.rglob("report.json")):
        data = json.loads(rep.read_text())
        out[" ".join(o for o in data["overrides"] if o.startswith(("chunk=", "search=")))] = data[
            "counts"
        ]["texts_embedded"]
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        common = ["latency_sample=0", "mlflow.enabled=false"]
        sweep_t = run(
            [
                "-m",
                f"cache_dir={tmp / 'c1'}",
                *common,
                f"hydra.sweep.dir={tmp / 'sweep'}",
                "chunk=128,256",
                "search=vector,hybrid",
            ],
            tmp,
        )
        single_t = 0.0
        for chunk in (128, 256):
            single_t += run(
                [
                    f"cache_dir={tmp / 'c2'}",
                    *common,
                    f"hydra.run.dir={tmp / f'single{chunk}'}",
                    f"chunk={chunk}",
                ],
                tmp,
            )
        sweep = embedded(tmp / "sweep")
        singles = {**embedded(tmp / "single128"), **embedded(tmp / "single256")}
        print("| sweep job | texts embedded |\n|---|---|")
        for k, v in sweep.items():
            print(f"| {k} | {v} |")
        print(f"| **sweep total** | **{sum(sweep.values())}** |")
        print(f"| two single runs (chunk=128, chunk=256), total | {sum(singles.values())} |")
        print(
            f"\nwall time: sweep of 4 jobs {sweep_t:.1f}s, the two single runs {single_t:.1f}s, "
            f"ratio {sweep_t / single_t:.2f}"
        )


if __name__ == "__main__":
    main()
