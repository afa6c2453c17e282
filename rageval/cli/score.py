"""``rageval score QRELS RUN``: score a TREC run file against qrels, with trec_eval's numbers.

Averaging follows trec_eval. By default the mean runs over the queries present in both files
(a judged query whose judgements are all grade 0 counts, scoring 0; queries only in the run, or
only in the qrels, are left out). ``-c/--complete`` is ``trec_eval -c``: every query of the qrels
counts, one missing from the run scoring 0. Heavy imports (numpy, the scorer) happen only once a
file is read, so ``--help`` and small files start fast.
"""

from __future__ import annotations

import argparse

DEFAULT_KS = "1,5,10"
EPILOG = """averaging (as trec_eval):
  default      mean over the queries in both QRELS and RUN; a judged query whose judgements
               are all grade 0 counts and scores 0; run-only and qrels-only queries are skipped
  -c           mean over every query in QRELS (trec_eval -c); one missing from RUN scores 0

files: '#' comment lines and blank lines are skipped; run fields after the tag are ignored.
qrels format: 4 fields (qid 0 docid grade) is TREC, a BEIR header or 3 tab-separated fields is
BEIR; --format forces one."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``score`` options to ``parser``."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = EPILOG
    parser.add_argument("qrels", help="judgements: TREC 'qid 0 docid grade' or a BEIR qrels tsv")
    parser.add_argument("run", help="results: TREC 'qid Q0 docid rank score tag'")
    parser.add_argument(
        "--k",
        default=DEFAULT_KS,
        metavar="K[,K...]",
        help=f"comma-separated cutoffs (default {DEFAULT_KS})",
    )
    parser.add_argument(
        "-c",
        "--complete",
        action="store_true",
        help="average over every query of QRELS, missing ones scored 0 (trec_eval -c)",
    )
    parser.add_argument(
        "--format",
        choices=("auto", "trec", "beir"),
        default="auto",
        help="qrels format (default auto: decided by the first line's fields and header)",
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"queries": N, "metrics": {...}} as JSON'
    )


def parse_ks(text: str) -> tuple[int, ...]:
    """Parse ``"1,5,10"`` into cutoffs; anything else is a :class:`ConfigError`."""
    from rageval.errors import ConfigError
    from rageval.scoring.metrics import check_ks

    parts = [p.strip() for p in text.split(",")]
    if not all(p.lstrip("-").isdecimal() for p in parts):
        raise ConfigError(f"--k takes comma-separated positive integers like 1,5,10, not {text!r}")
    return check_ks(int(p) for p in parts)


def evaluated_queries(
    qrels: dict[str, dict[str, int]], run_ids, complete: bool = False
) -> list[str]:
    """The queries trec_eval averages over: in both files, or every qrels query with ``-c``."""
    return list(qrels) if complete else [q for q in qrels if q in run_ids]


def handle(args: argparse.Namespace) -> int:
    """Score ``args.run`` against ``args.qrels`` and print the means; returns the exit code."""
    import json
    import sys
    import warnings

    from rageval.errors import InputError
    from rageval.formats.trec import read_qrels, read_run
    from rageval.scoring.metrics import score_rankings
    from rageval.types import RankedList

    ks = parse_ks(args.k)
    qrels = read_qrels(args.qrels, fmt=getattr(args, "format", "auto"))
    results = read_run(args.run)
    if not any(g >= 1 for judged in qrels.values() for g in judged.values()):
        raise InputError(
            "no query has a relevant judgement (grade >= 1); nothing to score", path=args.qrels
        )
    complete = bool(getattr(args, "complete", False))
    query_ids = evaluated_queries(qrels, results, complete)
    if not query_ids:
        raise InputError(
            f"no query of the run is judged in {args.qrels} (run ids like {next(iter(results))!r}, "
            f"qrels ids like {next(iter(qrels))!r}); check that the files belong together, or "
            "pass -c to score every judged query"
        )
    empty = RankedList((), ())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = score_rankings(query_ids, [results.get(q, empty) for q in query_ids], qrels, ks)
    for warning in caught:
        print(f"rageval: warning: {warning.message}", file=sys.stderr)
    missing = sum(q not in results for q in qrels)
    run_only = sum(q not in qrels for q in results)
    if missing or run_only:
        fate = "scored 0 (-c)" if complete else "not averaged; pass -c to score them 0"
        print(
            f"rageval: note: {missing} judged queries have no results in the run ({fate}); "
            f"{run_only} run-only queries ignored",
            file=sys.stderr,
        )
    means = scores.mean()
    if args.json:
        averaging = "complete" if complete else "trec_eval"
        out = {"queries": len(query_ids), "averaging": averaging, "metrics": means}
        print(json.dumps(out, indent=2))
    else:
        print(format_table(means, ks, len(query_ids)))
    return 0


def format_table(means: dict[str, float], ks: tuple[int, ...], n_queries: int) -> str:
    """A small aligned table: one row per metric, one column per k, then the query count."""
    from rageval.scoring.metrics import METRICS

    width = max(len(m) for m in METRICS)
    header = "metric".ljust(width) + "".join(f"{'@' + str(k):>9}" for k in ks)
    lines = [header]
    for metric in METRICS:
        cells = "".join(f"{means[f'{metric}@{k}']:>9.4f}" for k in ks)
        lines.append(metric.ljust(width) + cells)
    lines.append(f"queries: {n_queries}")
    return "\n".join(lines)
