"""Benchmark: ``rageval score`` on big synthetic TREC files, time and peak memory, the streaming
path against the whole-file array path it replaced.

Synthetic data (numpy, no Python object per line, written in blocks): N queries x 100 results.
Each query has 200 candidate documents; its run lists 100 of them with descending scores (what a
retriever writes: each query's lines together, best first), and its qrels judge 8 candidates (5
relevant with grades 1-3, 3 judged non-relevant), so about half the judged documents are in the
run. Variants of the same run: ``dup`` repeats a document within 1% of the rankings (rank 3's
docid again at rank 9, what the object path used to be needed for), ``ungrouped`` shuffles the
lines within every 1,000 queries (queries no longer grouped).

Each measured process runs under ``/usr/bin/time -v`` (wall seconds, CPU seconds, peak RSS):

- ``new``: ``python -m rageval score QRELS RUN --k 5,10 --json``;
- ``old``: the whole-file array path (``rageval.scoring.trec_arrays.score_arrays``), or the
  object path where it hands over (repeated docids): what ``rageval score`` ran before.

The old and new processes alternate on the same files, and the script fails unless their means
are equal to the last digit (compared as JSON floats).

    .venv/bin/python scripts/bench_score_stream.py --queries 10000,100000 [--old] \
        [--variants clean,dup,ungrouped] [--work /tmp/rageval-score-bench] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

DEPTH, POOL, JUDGED, RELEVANT = 100, 200, 8, 5
QUERIES_PER_BLOCK = 10_000
OLD = """
import json, sys
from rageval.scoring.trec_arrays import score_arrays
from rageval.scoring.trec_files import score_objects
q, r = sys.argv[1:3]
out = score_arrays(q, r, (5, 10)) or score_objects(q, r, (5, 10))
print(json.dumps({"queries": len(out.query_ids), "metrics": out.means()}))
"""


def digits(x: np.ndarray, width: int) -> np.ndarray:
    """Zero-padded decimal digits of each value as ASCII bytes, one row per value."""
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)
    return ((x[:, None] // powers) % 10 + 48).astype(np.uint8)


def text_rows(*parts) -> np.ndarray:
    """Rows of bytes joined column-wise: each part a constant bytes or a (rows x w) array."""
    n = next(len(p) for p in parts if isinstance(p, np.ndarray))
    cols = [
        p if isinstance(p, np.ndarray) else np.tile(np.frombuffer(p, np.uint8), (n, 1))
        for p in parts
    ]
    return np.ascontiguousarray(np.hstack(cols))


def doc_ids(query: np.ndarray, candidate: np.ndarray) -> np.ndarray:
    return digits(query * POOL + candidate, 10)


def generate(n: int, work: Path, variants: list[str]) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    qrels = work / f"qrels-{n}.txt"
    runs = {v: work / f"run-{n}-{v}.txt" for v in variants}
    files = {v: open(p, "wb") for v, p in runs.items()}  # noqa: SIM115
    with open(qrels, "wb") as qf:
        for lo in range(0, n, QUERIES_PER_BLOCK):
            q = np.arange(lo, min(n, lo + QUERIES_PER_BLOCK), dtype=np.int64)
            # qrels: 8 distinct candidates per query, the first 5 relevant
            start = rng.integers(0, POOL, len(q))
            cand = (start[:, None] + 23 * np.arange(JUDGED)) % POOL
            grade = np.zeros((len(q), JUDGED), np.int64)
            grade[:, :RELEVANT] = rng.integers(1, 4, (len(q), RELEVANT))
            qq = np.repeat(q, JUDGED)
            qf.write(
                text_rows(
                    b"q",
                    digits(qq, 7),
                    b" 0 d",
                    doc_ids(qq, cand.ravel()),
                    b" ",
                    digits(grade.ravel(), 1),
                    b"\n",
                ).tobytes()
            )
            # run: 100 of the 200 candidates, scores descending
            offset = rng.integers(0, POOL, len(q))
            rank = np.arange(DEPTH)
            cand = (offset[:, None] + 37 * rank) % POOL
            score = 999_999 - rank * 9_000 - rng.integers(0, 9_000, (len(q), DEPTH))
            qq = np.repeat(q, DEPTH)
            for variant, f in files.items():
                c = cand.copy()
                if variant == "dup":
                    c[q % 100 == 7, 8] = c[q % 100 == 7, 2]
                rows = text_rows(
                    b"q",
                    digits(qq, 7),
                    b" Q0 d",
                    doc_ids(qq, c.ravel()),
                    b" ",
                    digits(np.tile(rank + 1, len(q)), 3),
                    b" 0.",
                    digits(score.ravel(), 6),
                    b" tag\n",
                )
                if variant == "ungrouped":
                    for a in range(0, len(rows), 1000 * DEPTH):
                        rows[a : a + 1000 * DEPTH] = rng.permutation(rows[a : a + 1000 * DEPTH])
                f.write(rows.tobytes())
    for f in files.values():
        f.close()
    return {"qrels": qrels, **runs}


def timed(cmd: list[str]) -> tuple[dict, float, float, float]:
    """The JSON the command prints, its wall and CPU seconds and peak RSS in MiB."""
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], capture_output=True, text=True)
    if proc.returncode:
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    err = proc.stderr

    def field(name: str) -> str:
        return re.search(rf"{re.escape(name)}: (.+)", err).group(1).strip()

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)").split(":")
    seconds = sum(float(x) * 60**i for i, x in enumerate(reversed(wall)))
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    rss = int(field("Maximum resident set size (kbytes)")) / 1024
    out = json.loads(proc.stdout[proc.stdout.index("{") :])
    notes = [line for line in err.splitlines() if line.startswith("rageval:")]
    out["notes"] = notes
    return out, seconds, cpu, rss


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--queries", default="10000,100000")
    ap.add_argument("--variants", default="clean,dup,ungrouped")
    ap.add_argument("--old", action="store_true", help="also run the whole-file array path")
    ap.add_argument("--work", default="/tmp/rageval-score-bench")
    ap.add_argument("--keep", action="store_true", help="keep the generated files")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    print(
        f"{'queries':>8} {'variant':>9} {'MB':>6} {'path':>4} {'wall s':>7} {'cpu s':>7} "
        f"{'peak MiB':>9}"
    )
    try:
        for n in map(int, args.queries.split(",")):
            t0 = time.perf_counter()
            paths = generate(n, work, args.variants.split(","))
            print(f"# generated {n} queries in {time.perf_counter() - t0:.1f} s", flush=True)
            for variant in args.variants.split(","):
                run = paths[variant]
                size = run.stat().st_size / 1e6
                cmds = {
                    "new": [
                        py,
                        "-m",
                        "rageval",
                        "score",
                        str(paths["qrels"]),
                        str(run),
                        "--k",
                        "5,10",
                        "--json",
                    ]
                }
                if args.old:
                    cmds["old"] = [py, "-c", OLD, str(paths["qrels"]), str(run)]
                means = {}
                for name, cmd in cmds.items():
                    out, wall, cpu, rss = timed(cmd)
                    means[name] = out["metrics"]
                    print(
                        f"{n:>8} {variant:>9} {size:>6.0f} {name:>4} {wall:>7.2f} {cpu:>7.2f} "
                        f"{rss:>9.0f}",
                        flush=True,
                    )
                    for note in out["notes"]:
                        print(f"#   {note[:150]}")
                if "old" in means and means["old"] != means["new"]:
                    sys.exit(f"means differ: {means}")
                run.unlink() if not args.keep else None
            paths["qrels"].unlink() if not args.keep else None
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    main()
