"""What the per-segment checksum costs a warm run, checksum verification on and off, alternating,
each in its own process:

- default: a cache of N vectors (segments of 2048 rows, as the encoder writes them) read back in
  full by a fresh process (the lookup alone);
- ``--demo``: the whole warm demo run (``python -m rageval``, MLflow off), after one cold run has
  filled a fresh cache.

    python scripts/bench_cache_verify.py [--rows 100000] [--dim 384] [--repeats 3]
    python scripts/bench_cache_verify.py --demo [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from rageval.embedding.cache import EmbeddingCache, text_key

READ = """
import sys, time
import rageval.embedding.cache as c
c.VERIFY = sys.argv[2] == "on"
keys = [c.text_key(str(i)) for i in range(int(sys.argv[3]))]
t = time.perf_counter()
out, missing = c.EmbeddingCache(sys.argv[1], "bench").lookup(keys)
assert not missing
print(time.perf_counter() - t)
"""


DEMO = """
import sys
import rageval.embedding.cache as c
c.VERIFY = sys.argv[1] == "on"
from rageval.cli.main import main
sys.exit(main(sys.argv[2:]))
"""


def demo(repeats: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        args = [f"cache_dir={tmp}/cache", "mlflow.enabled=false", "latency_sample=0"]
        subprocess.run(
            [sys.executable, "-m", "rageval", *args, f"hydra.run.dir={tmp}/cold"],
            check=True,
            capture_output=True,
        )
        times: dict[str, list[float]] = {"on": [], "off": []}
        for i in range(repeats):
            for mode in ("off", "on"):
                t = time.perf_counter()
                subprocess.run(
                    [sys.executable, "-c", DEMO, mode, *args, f"hydra.run.dir={tmp}/{mode}{i}"],
                    check=True,
                    capture_output=True,
                )
                times[mode].append(time.perf_counter() - t)
                print(f"warm demo run, verify {mode}: {times[mode][-1]:.2f} s")
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(f"warm demo run: {off:.2f} s without checks, {on:.2f} s with (x{on / off:.3f})")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--dim", type=int, default=384)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--demo", action="store_true", help="time whole warm demo runs instead")
    a = p.parse_args()
    if a.demo:
        demo(a.repeats)
        return
    with tempfile.TemporaryDirectory() as root:
        cache = EmbeddingCache(root, "bench")
        rng = np.random.default_rng(0)
        for lo in range(0, a.rows, 2048):
            n = min(2048, a.rows - lo)
            vecs = rng.standard_normal((n, a.dim)).astype(np.float32)
            cache.put([text_key(str(i)) for i in range(lo, lo + n)], vecs)
        times: dict[str, list[float]] = {"on": [], "off": []}
        for _ in range(a.repeats):
            for mode in ("off", "on"):
                t = time.perf_counter()
                out = subprocess.run(
                    [sys.executable, "-c", READ, root, mode, str(a.rows)],
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout
                times[mode].append(float(out))
                print(
                    f"verify {mode}: lookup {float(out):.3f} s, "
                    f"process {time.perf_counter() - t:.2f} s"
                )
        on, off = statistics.median(times["on"]), statistics.median(times["off"])
        print(
            f"{a.rows} x {a.dim} vectors: lookup {off:.3f} s without checks, {on:.3f} s with "
            f"(x{on / off:.2f}, +{on - off:.3f} s)"
        )


if __name__ == "__main__":
    main()
