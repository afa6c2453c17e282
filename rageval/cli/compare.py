"""``rageval compare A B``: the gate's engine on any two runs (rageval.gate.power_report)."""

from __future__ import annotations

import argparse

from rageval.config_schema import GateConfig


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``compare`` options to ``p``."""
    p.add_argument(
        "a",
        help="the baseline: a run folder, report.json, baseline.json, trec_eval -q output or CSV",
    )
    p.add_argument("b", help="the run compared against it, in any of the same forms")
    p.add_argument(
        "--metric",
        action="append",
        default=[],
        help="a metric both files hold (repeatable; default: the gate's metrics at the cutoff "
        "both have, e.g. ndcg@5, else every shared one; trec_eval names such as ndcg_cut_5 too)",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=GateConfig.tolerance,
        help="the drop allowed (%(default)s)",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=GateConfig.alpha,
        help="1 - the interval's level (%(default)s)",
    )
    p.add_argument("--power", type=float, default=0.8, help="for the detectable drop (0.8)")
    p.add_argument(
        "--resamples",
        type=int,
        default=GateConfig.resamples,
        help="randomization test (%(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def handle(args: argparse.Namespace) -> int:
    """Compare and print; exit 1 when a metric fails (a drop beyond tolerance, established)."""
    import json

    from rageval.gate.power_report import compare_files

    result = compare_files(
        args.a, args.b, args.metric, args.tolerance, args.alpha, args.power, args.resamples
    )
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.text())
    return result.exit_code
