"""Benchmark: rageval.scoring.metrics.score_rankings against pytrec_eval on the same inputs.

Synthetic data: 100,000 queries x 100 results. Each query has a pool of 200 candidates, 8 of them
judged (5 relevant with grades 1-3, 3 judged non-relevant); every candidate gets a random score,
relevant ones plus ``boost``, and the top 100 form the ranking. Two data sets: boost 0 puts
relevant results at random ranks (the worst case for rageval, which scans each ranking down to its
first relevant result), boost 0.15 looks like a decent retriever (MRR about 0.6). pytrec_eval gets
``{qid: {docid: score}}`` (scores distinct by rank); rageval gets the same rankings as lists, best
first (what a retriever returns), and, in the "score dicts" columns, those dicts, ordered with
``order_like_trec_eval``. Both share the qrels dict. Each timing is the median of ``--repeat``
runs, after a GC collection; the script fails if any mean differs from pytrec_eval's by 1e-9.

    .venv/bin/python scripts/bench_metrics.py [--queries 100000] [--depth 100] [--repeat 3]

``--files`` times whole processes instead, file reading and start-up included: the same data
written as TREC qrels and run files, then ``python -m rageval score QRELS RUN --k 5,10 --json``
against a Python process that reads the files with pytrec_eval's own ``parse_qrel`` /
``parse_run``, evaluates and averages (trec_eval's default averaging, which is what both do). The
trec_eval C binary is not installed where rageval is developed, so pytrec_eval (the same C code,
behind Python) stands in for it. A third process runs rageval's object path (files read into
dicts, then ``score_rankings``: what ``rageval score`` did before its array path) on the same
files. The processes alternate within each repeat, so a change in the machine's load hits all
alike. CPU seconds are each child's user + sys time (``os.wait4``).

    .venv/bin/python scripts/bench_metrics.py --files --queries 10000 --depth 100 --repeat 3
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import time
from importlib.metadata import version

import numpy as np

from rageval.scoring.metrics import score_rankings
from rageval.scoring.ranking import order_like_trec_eval

PYTREC_MEASURES = {
    "P_5",
    "P_10",
    "recall_5",
    "recall_10",
    "ndcg_cut_5",
    "ndcg_cut_10",
    "map_cut_5",
    "map_cut_10",
    "recip_rank",
}
# pytrec_eval measure -> rageval key
SAME = {
    "P_5": "precision@5",
    "P_10": "precision@10",
    "recall_5": "recall@5",
    "recall_10": "recall@10",
    "ndcg_cut_5": "ndcg@5",
    "ndcg_cut_10": "ndcg@10",
    "map_cut_5": "map@5",
    "map_cut_10": "map@10",
}


def make_data(n: int, depth: int, boost: float, seed: int = 0):
    """qrels {qid: {docid: grade}}, run {qid: {docid: score}}, query ids, rankings (lists)."""
    rng = np.random.default_rng(seed)
    pool = 2 * depth
    judged = rng.permuted(np.tile(np.arange(pool), (n, 1)), axis=1)[:, :8]
    grades = np.concatenate([rng.integers(1, 4, size=(n, 5)), np.zeros((n, 3), int)], axis=1)
    scores = rng.random((n, pool))
    scores[np.arange(n)[:, None], judged[:, :5]] += boost
    ranked = np.argsort(-scores, axis=1)[:, :depth]
    # Run scores: distinct integers by rank, so trec_eval's single-precision scores hold no ties.
    top_scores = [float(depth - r) for r in range(depth)]
    qrels, run, query_ids, rankings = {}, {}, [], []
    for i in range(n):
        qid = f"q{i}"
        ids = [f"d{i}-{j}" for j in ranked[i].tolist()]
        query_ids.append(qid)
        rankings.append(ids)
        run[qid] = dict(zip(ids, top_scores, strict=True))
        qrels[qid] = {
            f"d{i}-{j}": g for j, g in zip(judged[i].tolist(), grades[i].tolist(), strict=True)
        }
    return qrels, run, query_ids, rankings


def timed(fn, repeat: int):
    """Median wall-clock and CPU seconds of ``repeat`` calls, and the last result."""
    wall, cpu, out = [], [], None
    for _ in range(repeat):
        out = None
        gc.collect()
        start, start_cpu = time.perf_counter(), time.process_time()
        out = fn()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return statistics.median(wall), statistics.median(cpu), out


def bench(pytrec_eval, n: int, depth: int, boost: float, repeat: int) -> str:
    """Time both on one data set, check the means agree, return a markdown table row."""
    qrels, run, query_ids, rankings = make_data(n, depth, boost)

    def pytrec():
        return pytrec_eval.RelevanceEvaluator(qrels, PYTREC_MEASURES).evaluate(run)

    def ours():
        return score_rankings(query_ids, rankings, qrels, (5, 10))

    def ours_from_scores():
        ranked = [order_like_trec_eval(run[q].items()) for q in query_ids]
        return score_rankings(query_ids, ranked, qrels, (5, 10))

    w_ref, c_ref, ref = timed(pytrec, repeat)
    w_ours, c_ours, scores = timed(ours, repeat)
    w_dicts, c_dicts, _ = timed(ours_from_scores, repeat)

    mean = scores.mean()
    first = scores.first_relevant_rank
    mean["recip_rank"] = float(np.divide(1.0, first, out=np.zeros(n), where=first > 0).mean())
    worst = max(
        abs(statistics.fmean(r[m] for r in ref.values()) - mean[SAME.get(m, m)])
        for m in PYTREC_MEASURES
    )
    assert worst < 1e-9, f"means differ from pytrec_eval by {worst}"
    cells = [
        f"boost {boost} (MRR {mean['recip_rank']:.2f})",
        f"{c_ref:.2f} / {w_ref:.2f}",
        f"{c_ours:.2f} / {w_ours:.2f}",
        f"**{c_ref / c_ours:.1f}x** / {w_ref / w_ours:.1f}x",
        f"{c_dicts:.2f} / {w_dicts:.2f}",
        f"{c_ref / c_dicts:.1f}x / {w_ref / w_dicts:.1f}x",
        f"{worst:.0e}",
    ]
    return "| " + " | ".join(cells) + " |"


PYTREC_PROCESS = """
import json, sys, statistics, pytrec_eval
with open(sys.argv[1]) as f:
    qrels = pytrec_eval.parse_qrel(f)
with open(sys.argv[2]) as f:
    run = pytrec_eval.parse_run(f)
measures = {"P_5", "P_10", "recall_5", "recall_10", "ndcg_cut_5", "ndcg_cut_10", "map_cut_5",
            "map_cut_10"}
per_query = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
print(json.dumps({m: statistics.fmean(r[m] for r in per_query.values()) for m in measures}))
"""

OBJECT_PATH_PROCESS = """
import json, sys
from rageval.scoring.trec_files import score_objects
print(json.dumps({"metrics": score_objects(sys.argv[1], sys.argv[2], (5, 10)).means()}))
"""


def write_files(folder, n: int, depth: int, boost: float) -> tuple[str, str]:
    """The data set of :func:`make_data` as TREC qrels and run files in ``folder``."""
    qrels, run, _, _ = make_data(n, depth, boost)
    qrels_path, run_path = os.path.join(folder, "qrels.txt"), os.path.join(folder, "run.txt")
    with open(qrels_path, "w") as f:
        f.writelines(f"{q} 0 {d} {g}\n" for q, judged in qrels.items() for d, g in judged.items())
    with open(run_path, "w") as f:
        for q, scores in run.items():
            f.writelines(
                f"{q} Q0 {d} {r} {s} bench\n" for r, (d, s) in enumerate(scores.items(), 1)
            )
    return qrels_path, run_path


def process(argv: list[str]) -> tuple[float, float, str]:
    """Wall-clock and CPU (user + sys) seconds and stdout of one child."""
    import subprocess
    import tempfile

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err)
        out = child.stdout.read().decode()
        child.stdout.close()
        _, status, usage = os.wait4(child.pid, 0)  # this child's own resource usage
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        if child.returncode:
            err.seek(0)
            raise RuntimeError(f"{argv[:4]} failed: {err.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, out


def bench_files(n: int, depth: int, repeat: int) -> None:
    """Whole-process comparison (see the module docstring); prints a markdown table."""
    import json
    import sys
    import tempfile

    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = write_files(tmp, n, depth, 0.15)
        with open(run) as f:
            lines = sum(1 for _ in f)
        small_q, small_r = os.path.join(tmp, "q-small.txt"), os.path.join(tmp, "r-small.txt")
        with open(small_q, "w") as f:
            f.write("q1 0 d1 1\nq1 0 d2 0\n")
        with open(small_r, "w") as f:
            f.write("q1 Q0 d1 1 2.0 t\nq1 Q0 d3 2 1.0 t\n")
        commands = {
            "pytrec_eval: parse_qrel + parse_run + evaluate + mean": [
                py, "-c", PYTREC_PROCESS, qrels, run,
            ],
            "`rageval score --json`": [
                py, "-m", "rageval", "score", qrels, run, "--k", "5,10", "--json",
            ],
            "rageval's object path (dicts + `score_rankings`, as before)": [
                py, "-c", OBJECT_PATH_PROCESS, qrels, run,
            ],
            "`rageval score`, a 2-line file": [py, "-m", "rageval", "score", small_q, small_r],
            "`rageval score --help`": [py, "-m", "rageval", "score", "--help"],
            "`python -c pass` (interpreter start)": [py, "-c", "pass"],
        }  # fmt: skip
        runs: dict[str, list] = {name: [] for name in commands}
        for _ in range(repeat):  # alternating: the machine's load hits every process alike
            for name, argv in commands.items():
                runs[name].append(process(argv))
    names = list(commands)
    want = json.loads(runs[names[0]][-1][2])
    worst = 0.0
    for name in names[1:3]:
        got = json.loads(runs[name][-1][2])["metrics"]
        worst = max(worst, *(abs(want[m] - got[SAME[m]]) for m in want))
    assert worst < 1e-9, f"means differ from pytrec_eval by {worst}"
    print(
        f"{n:,} queries x {depth} results ({lines:,} run lines), median of {repeat}; "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| process | CPU s | wall s |\n|---|---:|---:|")
    for name in names:
        wall, cpu = (statistics.median(r[i] for r in runs[name]) for i in range(2))
        print(f"| {name} | {cpu:.2f} | {wall:.2f} |")
    ref, ours = (statistics.median(r[1] for r in runs[name]) for name in names[:2])
    print(f"\npytrec_eval / rageval score (CPU): {ref / ours:.2f}x; max diff of means {worst:.0e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--depth", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--files", action="store_true", help="whole processes on TREC files (file reading included)"
    )
    args = parser.parse_args()
    if args.files:
        bench_files(args.queries, args.depth, args.repeat)
        return
    import pytrec_eval

    rows = [bench(pytrec_eval, args.queries, args.depth, b, args.repeat) for b in (0.0, 0.15)]
    print(
        f"{args.queries:,} queries x {args.depth} results, median of {args.repeat} runs; "
        f"{os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}, "
        f"pytrec_eval-terrier {version('pytrec-eval-terrier')}\n"
    )
    print("Seconds as CPU / wall-clock (CPU time is the steadier figure on a shared machine).\n")
    print(
        "| data | pytrec_eval s | rageval s, ranked lists | speed-up "
        "| rageval s, score dicts | speed-up | max diff of means |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
