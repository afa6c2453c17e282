"""The launching process's memory, stage by stage, in a whole run (and two checkouts side by side).

Each run is ``python -m rageval OVERRIDES`` in a fresh process of its own, with an empty cache
folder, inside a loopback-only network namespace (``unshare --net --map-root-user``, ``lo`` up:
a local Ray cluster then binds 127.0.0.1 only). In that process each lap of the run's clock
(load, chunk, resolve, index, search, score) reads the kernel's high-water mark of the process's
resident set (``VmHWM``) and starts a new one (``/proc/self/clear_refs``), so every stage gets its
own peak without sampling; what comes before the first stage (imports, the config) and after the
last (the report's files) are stages too, and a cluster's fill of the embedding cache (``fill``,
the encoder's ``prefill``) is told apart from the rest of the index stage (``index``: the
index's build). "Run peak" is the largest of them: the launching
process's peak over the whole run (the Ray workers and the raylet are processes of their own, not
counted). The run's outputs are compared across runs: the metrics, ``run.trec`` and
``chunks.jsonl`` (digests) must be equal.

    .venv/bin/python scripts/bench_run_memory.py /tmp/sc1m --base /tmp/base-checkout --pairs 2 \
        -- chunk=64 embedding=static embedding.executor=ray embedding.ray_workers=2

``DIR`` holds ``corpus.jsonl`` and ``golden.jsonl`` (scripts/scale_corpus.py). ``--base`` is a
checkout of another revision (``git archive REV | tar -x -C DIR``): its runs import rageval from
there (``PYTHONPATH``) with this interpreter, alternating with this checkout's (base first).
"""

from __future__ import annotations

import argparse
import atexit
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

STATUS_FIELDS = ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem")


def status() -> dict[str, int]:
    """The process's memory figures from /proc/self/status, in bytes."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            name, _, rest = line.partition(":")
            if name in STATUS_FIELDS:
                out[name] = int(rest.split()[0]) * 1024
    return out


def reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def child(out_path: str, overrides: list[str]) -> None:
    """Run rageval in this process, recording each stage's peak into ``out_path`` (JSON)."""
    stages: list[dict] = []
    started = last = time.perf_counter()

    def record(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        s = status()
        stages.append({"stage": name, "seconds": now - last, "peak": s["VmHWM"], **s})
        last = now
        reset_peak()

    reset_peak()
    try:  # the run's clock: rageval.run.measure, or rageval.pipeline in older revisions
        from rageval.run import measure as clock_module

        clock_class = clock_module.Clock
    except ImportError:
        import rageval.pipeline as clock_module

        clock_class = clock_module._Clock
    lap = clock_class.lap

    def lap_and_record(self, name: str) -> None:
        lap(self, name)
        record(name.removesuffix("_s"))

    def dump() -> None:
        record("after")
        Path(out_path).write_text(
            json.dumps(
                {
                    "stages": stages,
                    "wall": time.perf_counter() - started,
                    "rageval": clock_module.__file__,
                }
            )
        )

    clock_class.lap = lap_and_record
    try:  # the index stage in two: the cache's fill (a cluster's), then the index's build
        from rageval.run.embed import TimedEncoder

        prefill = TimedEncoder.prefill

        def prefill_and_record(self, *args, **kwargs):
            try:
                return prefill(self, *args, **kwargs)
            finally:
                record("fill")

        TimedEncoder.prefill = prefill_and_record
    except ImportError:
        pass
    atexit.register(dump)
    from rageval.cli.main import main

    sys.argv = ["rageval", *overrides]
    code = main()
    sys.exit(code)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else "-"


def run_once(
    corpus_dir: Path, pythonpath: str | None, overrides: list[str], work: Path, seed: Path | None
) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    cache, run_dir, out = work / "cache", work / "run", work / "stages.json"
    if seed is not None:  # e.g. a built model export: the embeddings stay empty
        shutil.copytree(seed, cache)
    argv = [
        "dataset=custom",
        f"dataset.corpus={corpus_dir / 'corpus.jsonl'}",
        f"dataset.golden={corpus_dir / 'golden.jsonl'}",
        f"cache_dir={cache}",
        "mlflow.enabled=false",
        f"hydra.run.dir={run_dir}",
        *overrides,
    ]
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    env.pop("PYTHONPATH", None)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    inner = [sys.executable, str(Path(__file__).resolve()), "--child", str(out), "--", *argv]
    cmd = [
        "unshare",
        "--net",
        "--map-root-user",
        "--",
        "sh",
        "-c",
        'ip link set lo up && exec "$@"',
        "sh",
        *inner,
    ]
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=work)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"run failed ({proc.returncode}): {' '.join(inner)}")
    stages = json.loads(out.read_text())
    report = json.loads((run_dir / "report.json").read_text())
    metrics = report.get("metrics", {})
    return {
        "wall": wall,
        "load": [load_before, os.getloadavg()],
        "stages": stages["stages"],
        "rageval": stages["rageval"],
        "peak": max(s["peak"] for s in stages["stages"]),
        "metrics": metrics,
        "counts": report.get("counts"),
        "run.trec": digest(run_dir / "run.trec"),
        "chunks.jsonl": digest(run_dir / "chunks.jsonl"),
        "metrics_digest": hashlib.sha256(json.dumps(metrics, sort_keys=True).encode()).hexdigest()[
            :16
        ],
    }


def mib(b: int) -> str:
    return f"{b / 2**20:,.0f}"


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        rest = sys.argv[3:]
        child(sys.argv[2], rest[1:] if rest[:1] == ["--"] else rest)
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus_dir", type=Path)
    ap.add_argument("--base", help="a checkout of the revision to compare against")
    ap.add_argument("--pairs", type=int, default=1)
    ap.add_argument("--new", help="the checkout of 'this' side (default: this script's)")
    ap.add_argument("--only", choices=("base", "this"), help="run one side only")
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument(
        "--seed-cache",
        type=Path,
        default=None,
        help="a cache folder copied into each run's empty one first (a model export built once)",
    )
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    a = ap.parse_args(argv[:cut])
    a.overrides = argv[cut + 1 :]
    work = a.work or Path(tempfile.mkdtemp(prefix="run-memory-"))
    here = a.new or str(Path(__file__).resolve().parents[1])
    sides = [("base", a.base), ("this", here)] if a.base else [("this", here)]
    if a.only:
        sides = [s for s in sides if s[0] == a.only]
    results = []
    for pair in range(a.pairs):
        order = sides if pair % 2 == 0 else sides[::-1]
        for name, path in order:
            r = run_once(
                a.corpus_dir.resolve(), path, a.overrides, work / f"{pair}-{name}", a.seed_cache
            )
            r.update(side=name, pair=pair)
            results.append(r)
            print(json.dumps(r), flush=True)
            subprocess.run(["rm", "-rf", str(work / f"{pair}-{name}" / "cache")], check=False)
    names = list(dict.fromkeys(s["stage"] for r in results for s in r["stages"]))
    print("\n| run | " + " | ".join(names) + " | run peak MiB | wall s | load |")
    print("|---|" + "---:|" * (len(names) + 3))
    for r in results:
        got = {s["stage"]: s for s in r["stages"]}
        cells = [
            f"{mib(got[n]['peak'])} ({got[n]['seconds']:.1f} s)" if n in got else "-" for n in names
        ]
        load = f"{r['load'][0][0]:.1f}-{r['load'][1][0]:.1f}"
        label = f"{r['pair'] + 1} {r['side']}"
        print(
            f"| {label} | "
            + " | ".join(cells)
            + f" | {mib(r['peak'])} | {r['wall']:.1f} | {load} |"
        )
    same = {(r["run.trec"], r["chunks.jsonl"], r["metrics_digest"]) for r in results}
    print(f"\noutputs equal across runs: {len(same) == 1} {sorted(same)}")


if __name__ == "__main__":
    main()
