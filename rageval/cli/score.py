"""``rageval score QRELS RUN``: score a TREC run file against qrels, with trec_eval's numbers.

The mean runs over every query with at least one relevant judgement (grade >= 1) in QRELS.
Such a query missing from RUN scores 0; queries only in RUN are ignored. (trec_eval itself
skips queries missing from the run unless given ``-c``.)
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

from rageval.errors import ConfigError, InputError
from rageval.formats.trec import read_qrels, read_run
from rageval.scoring.metrics import METRICS, check_ks, score_rankings
from rageval.types import RankedList

DEFAULT_KS = "1,5,10"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``score`` options to ``parser``."""
    parser.add_argument("qrels", help="judgements: TREC 'qid 0 docid grade' or a BEIR qrels tsv")
    parser.add_argument("run", help="results: TREC 'qid Q0 docid rank score tag'")
    parser.add_argument(
        "--k",
        default=DEFAULT_KS,
        metavar="K[,K...]",
        help=f"comma-separated cutoffs (default {DEFAULT_KS})",
    )
    parser.add_argument(
        "--json", action="store_true", help='print {"queries": N, "metrics": {...}} as JSON'
    )


def parse_ks(text: str) -> tuple[int, ...]:
    """Parse ``"1,5,10"`` into cutoffs; anything else is a :class:`ConfigError`."""
    parts = [p.strip() for p in text.split(",")]
    if not all(p.lstrip("-").isdecimal() for p in parts):
        raise ConfigError(f"--k takes comma-separated positive integers like 1,5,10, not {text!r}")
    return check_ks(int(p) for p in parts)


def run(args: argparse.Namespace) -> int:
    """Score ``args.run`` against ``args.qrels`` and print the means; returns the exit code."""
    ks = parse_ks(args.k)
    qrels = read_qrels(args.qrels)
    results = read_run(args.run)
    query_ids = [q for q, judged in qrels.items() if any(g >= 1 for g in judged.values())]
    if not query_ids:
        raise InputError(
            "no query has a relevant judgement (grade >= 1); nothing to score", path=args.qrels
        )
    missing = sum(q not in results for q in query_ids)
    ignored = len(results.keys() - set(query_ids))
    empty = RankedList((), ())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scores = score_rankings(query_ids, [results.get(q, empty) for q in query_ids], qrels, ks)
    for warning in caught:
        print(f"rageval: warning: {warning.message}", file=sys.stderr)
    if missing or ignored:
        print(
            f"rageval: note: {missing} judged queries have no results in the run (scored 0); "
            f"{ignored} run-only queries ignored",
            file=sys.stderr,
        )
    means = scores.mean()
    if args.json:
        print(json.dumps({"queries": len(query_ids), "metrics": means}, indent=2))
    else:
        print(format_table(means, ks, len(query_ids)))
    return 0


def format_table(means: dict[str, float], ks: tuple[int, ...], n_queries: int) -> str:
    """A small aligned table: one row per metric, one column per k, then the query count."""
    width = max(len(m) for m in METRICS)
    header = "metric".ljust(width) + "".join(f"{'@' + str(k):>9}" for k in ks)
    lines = [header]
    for metric in METRICS:
        cells = "".join(f"{means[f'{metric}@{k}']:>9.4f}" for k in ks)
        lines.append(metric.ljust(width) + cells)
    lines.append(f"queries: {n_queries}")
    return "\n".join(lines)
