"""``rageval pool RUN_DIR... | SWEEP_DIR --depth 10 --out pool.jsonl``: the passages several runs
put in their top ``depth`` that no gold label and no judgement covers, one query a line, for
``rageval judge`` (a review page for people, or a calibrated LLM)."""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the options of ``pool`` to ``p``."""
    p.add_argument(
        "runs",
        nargs="+",
        metavar="RUN_DIR",
        help="run folders (each holds report.json, run.trec, chunks.jsonl) or a sweep folder "
        "(multirun/<date>/<time>: its finished jobs)",
    )
    p.add_argument(
        "--depth", type=int, default=10, help="pool each run's top DEPTH results (default 10)"
    )
    p.add_argument("-o", "--out", default="pool.jsonl", help="the pool file (default pool.jsonl)")
    p.add_argument(
        "--queries",
        default="all",
        help="pool only these queries: all (default), tag:NAME, source:NAME or ids,...",
    )
    p.add_argument(
        "--corpus", help="the runs' corpus, when it moved since they ran (default: their config's)"
    )
    p.add_argument("--golden", help="the runs' golden set, when it moved (default: their config's)")
    p.add_argument(
        "--judgements",
        help="existing judgements, whose passages are left out (default: the runs' `judgements` "
        "setting, else judgements.jsonl beside the golden set)",
    )


def judgements_path(run, golden_path: str | None, given: str | None) -> Path | None:
    """The judgements file the pool leaves out: ``given``, else the run's ``judgements``
    setting, else judgements.jsonl beside the golden set (None when there is no golden file)."""
    from rageval.inputs.judgements import default_path

    if given:
        return Path(given)
    configured = (run.report.get("config") or {}).get("judgements")
    if isinstance(configured, str) and configured:
        return Path(configured)
    return default_path(golden_path) if golden_path else None


def covered_units(runs, docs, judgements: Path | None, golden) -> dict:
    """Run folder -> query id -> the units any existing judgement (a person's or an LLM's)
    labels in that run's chunking."""
    if judgements is None or not judgements.is_file():
        return {}
    from rageval.inputs.judgements import judgement_qrels, load_judgements

    records = load_judgements(judgements, docs, golden)
    return {r.path: judgement_qrels(records, r.as_chunks(docs), r.level) for r in runs}


def handle(args: argparse.Namespace) -> int:
    """Pool the runs, write the pool file and say how many passages each query got."""
    from rageval.authoring.pool import (
        dataset_paths,
        load_docs,
        load_golden_set,
        pool,
        read_runs,
        write_pool,
    )
    from rageval.errors import ConfigError

    if args.depth < 1:
        raise ConfigError(f"--depth must be >= 1 (results per run and query), got {args.depth}")
    runs = read_runs(args.runs)
    docs = load_docs(runs[0], args.corpus)
    golden_set = load_golden_set(runs[0], args.golden)
    corpus, golden = dataset_paths(runs[0])
    corpus, golden = args.corpus or corpus, args.golden or golden
    # the golden set's own file (a BEIR dataset: its qrels), where runs look for judgements
    judged = judgements_path(runs[0], golden_set.path, args.judgements)
    covered = covered_units(runs, docs, judged, golden_set)
    result = pool(runs, docs, args.depth, covered, args.queries)
    for name, n in result.short_runs:
        warnings.warn(
            f"run {name!r} holds at most {n} results per query, fewer than --depth "
            f"{args.depth}: pooled what it has (raise its `depth` to search deeper)",
            stacklevel=1,
        )
    source = {  # absolute, so `rageval judge` finds them from any folder
        "golden": _absolute(golden or (corpus if _is_beir(runs[0]) else None)),
        "split": (runs[0].dataset().get("split") or "test") if _is_beir(runs[0]) else None,
        "corpus": _absolute(corpus),
        "judgements": _absolute(judged),
        "golden_digest": runs[0].digests.get("golden"),
        "corpus_digest": runs[0].digests.get("corpus"),
        "depth": args.depth,
        "runs": [_absolute(r.path) for r in runs],
    }
    if not result.queries:
        print(result.summary())
        print("nothing to judge: every top result is labelled or judged; no pool written")
        return 0
    out = write_pool(result, args.out, source)
    print(result.summary())
    if len(result.queries) <= 30:
        print("  " + ", ".join(f"{q['query_id']} {len(q['passages'])}" for q in result.queries))
    print(f"pool: {out}  (next: rageval judge {out} --review review.html)", file=sys.stdout)
    return 0


def _is_beir(run) -> bool:
    return bool(run.dataset().get("path"))


def _absolute(path: str | Path | None) -> str | None:
    return str(Path(path).absolute()) if path else None
