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
BEIR; --format forces one.

--llm-qrels FILE: QRELS holds human grades for a random sample of the queries, FILE an LLM
judge's grades for all of them; each metric is the prediction-powered (PPI++) estimate of its
human-label mean with a 95% interval, beside the human-only interval and the LLM-only mean
(docs/judging.md). The intervals are Student-t (Welch-Satterthwaite degrees of freedom; the
human-only one n - 1); --interval z gives the normal ones of ppi_py."""


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
    parser.add_argument(
        "--llm-qrels",
        metavar="FILE",
        help="an LLM judge's qrels for every query (QRELS: human grades for a random sample): "
        "prediction-powered estimates with 95%% intervals",
    )
    parser.add_argument(
        "--interval",
        metavar="t|z",
        help="with --llm-qrels: t (default), Student-t intervals with Welch-Satterthwaite "
        "degrees of freedom; z, the normal (CLT) intervals of ppi_py",
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

    from rageval.scoring.trec_files import score_trec_files

    ks = parse_ks(args.k)
    complete = bool(getattr(args, "complete", False))
    fmt = getattr(args, "format", "auto")
    if getattr(args, "llm_qrels", None):
        return handle_ppi(args, ks, complete, fmt)
    if getattr(args, "interval", None) is not None:
        from rageval.errors import ConfigError

        raise ConfigError("--interval sets the intervals of --llm-qrels estimates; add --llm-qrels")
    result = score_trec_files(args.qrels, args.run, ks, complete=complete, fmt=fmt, note=_note)
    _notes(result, "", complete)
    means = result.means()
    n_queries = len(result.query_ids)
    if args.json:
        averaging = "complete" if complete else "trec_eval"
        out = {"queries": n_queries, "averaging": averaging, "metrics": means}
        print(json.dumps(out, indent=2))
    else:
        print(format_table(means, ks, n_queries))
    return 0


def _notes(result, label: str, complete: bool, run_only: bool = True) -> None:
    """Print the scorer's warnings and the queries left out, on stderr (``label``: which qrels;
    ``run_only``: whether run queries without judgements are worth a note)."""
    import sys

    label = f"{label}: " if label else ""
    for warning in result.warnings:
        print(f"rageval: warning: {label}{warning}", file=sys.stderr)
    extra = result.run_only if run_only else 0
    if result.missing or extra:
        fate = "scored 0 (-c)" if complete else "not averaged; pass -c to score them 0"
        tail = f"; {extra} run-only queries ignored" if run_only else ""
        print(
            f"rageval: note: {label}{result.missing} judged queries have no results in the run "
            f"({fate}){tail}",
            file=sys.stderr,
        )


def handle_ppi(args: argparse.Namespace, ks: tuple[int, ...], complete: bool, fmt: str) -> int:
    """``--llm-qrels``: each metric's prediction-powered estimate (rageval.scoring.ppi_files)."""
    import json
    import sys

    from rageval.scoring.ppi import DEFAULT_INTERVAL, check_interval, few_graded_warning, method
    from rageval.scoring.ppi_files import score_ppi_files

    interval = check_interval(getattr(args, "interval", None) or DEFAULT_INTERVAL)
    result = score_ppi_files(
        args.qrels, args.llm_qrels, args.run, ks, complete=complete, fmt=fmt, interval=interval
    )
    _notes(result.human, "human qrels", complete, run_only=False)
    _notes(result.llm, "LLM qrels", complete)
    estimates = result.estimates
    first = next(iter(estimates.values()))
    few = few_graded_warning(first.n_human)
    if few:
        print(f"rageval: warning: {few}", file=sys.stderr)
    if args.json:
        out = {
            "queries": first.n_llm,
            "n_human": first.n_human,
            "n_llm": first.n_llm,
            "averaging": "complete" if complete else "trec_eval",
            "method": method(interval),
            "metrics": {key: est.to_dict() for key, est in estimates.items()},
        }
        print(json.dumps(out, indent=2))
    else:
        print(format_ppi_table(estimates))
    return 0


def format_ppi_table(estimates: dict) -> str:
    """One row per metric: the PPI estimate and interval, the human-only ones, the LLM-only mean
    and its bias measured on the sample."""
    from rageval.report.table import Column, Table

    first = next(iter(estimates.values()))
    table = Table(
        [
            Column("metric"),
            Column("estimate", "right"),
            Column("95% interval", "right"),
            Column("human only", "right"),
            Column("95% interval", "right"),
            Column("LLM only", "right"),
            Column("LLM bias", "right"),
        ],
        caption=f"queries: {first.n_llm} LLM-judged, {first.n_human} of them human-graded; "
        f"estimate: prediction-powered (PPI++); {INTERVAL_CAPTION[first.interval]}",
    )
    for key, est in estimates.items():
        table.add_row(
            key,
            f"{est.ppi.estimate:.4f}",
            f"[{est.ppi.low:.4f}, {est.ppi.high:.4f}]",
            f"{est.human_only.estimate:.4f}",
            f"[{est.human_only.low:.4f}, {est.human_only.high:.4f}]",
            f"{est.llm_only.estimate:.4f}",
            f"{est.bias:+.4f}",
        )
    return table.console()


INTERVAL_CAPTION = {
    "t": "Student-t intervals",
    "z": "normal (z) intervals, as ppi_py",
}


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
