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
    from rageval.scoring.file_scores import plain_ks

    parts = [p.strip() for p in text.split(",")]
    if not all(p.lstrip("-").isdecimal() for p in parts):
        raise ConfigError(f"--k takes comma-separated positive integers like 1,5,10, not {text!r}")
    ks = [int(p) for p in parts]
    checked = plain_ks(ks)
    if checked is None:
        from rageval.scoring.metrics import check_ks

        return check_ks(ks)  # says what is wrong
    return checked


def handle(args: argparse.Namespace) -> int:
    """Score ``args.run`` against ``args.qrels`` and print the means; returns the exit code."""
    import json
    import sys

    from rageval.scoring.trec_files import score_trec_files

    ks = parse_ks(args.k)
    complete = bool(getattr(args, "complete", False))
    fmt = getattr(args, "format", "auto")
    result = score_trec_files(args.qrels, args.run, ks, complete=complete, fmt=fmt, note=_note)
    for warning in result.warnings:
        print(f"rageval: warning: {warning}", file=sys.stderr)
    if result.missing or result.run_only:
        fate = "scored 0 (-c)" if complete else "not averaged; pass -c to score them 0"
        print(
            f"rageval: note: {result.missing} judged queries have no results in the run "
            f"({fate}); {result.run_only} run-only queries ignored",
            file=sys.stderr,
        )
    means = result.means()
    n_queries = len(result.query_ids)
    if args.json:
        averaging = "complete" if complete else "trec_eval"
        out = {"queries": n_queries, "averaging": averaging, "metrics": means}
        print(json.dumps(out, indent=2))
    else:
        print(format_table(means, ks, n_queries))
    return 0


def _note(text: str) -> None:
    import sys

    print(f"rageval: note: {text}", file=sys.stderr, flush=True)


def format_table(means: dict[str, float], ks: tuple[int, ...], n_queries: int) -> str:
    """A small aligned table: one row per metric, one column per k, then the query count."""
    from rageval.report.table import Column, Table

    metrics = list(dict.fromkeys(key.rpartition("@")[0] for key in means))
    # a k column: two spaces and at least 7 characters, so 0.1234 right-aligned in 9
    table = Table(
        [Column("metric"), *[Column(f"@{k}", "right", min_width=7) for k in ks]],
        caption=f"queries: {n_queries}",
    )
    for metric in metrics:
        table.add_row(metric, *[f"{means[f'{metric}@{k}']:.4f}" for k in ks])
    return table.console()
