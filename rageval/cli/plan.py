"""``rageval plan``: how many queries a golden set needs (rageval.gate.power_report)."""

from __future__ import annotations

import argparse

from rageval.config_schema import GateConfig


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``plan`` options to ``p``."""
    p.add_argument(
        "sources",
        nargs="+",
        metavar="RUN",
        help="a sweep folder (every pair of its jobs), two runs, or one run (a bound); a run is "
        "a run folder, report.json, baseline.json, trec_eval -q output or CSV",
    )
    p.add_argument("--metric", action="append", default=[], help="repeatable (default: gated)")
    p.add_argument(
        "--drop",
        type=float,
        default=GateConfig.tolerance,
        help="the drop to detect (%(default)s: the gate's tolerance)",
    )
    p.add_argument(
        "--alpha", type=float, default=GateConfig.alpha, help="two-sided level (%(default)s)"
    )
    p.add_argument("--power", type=float, default=0.8, help="the chance to detect it (0.8)")
    p.add_argument("--json", action="store_true", help="print the plan as JSON")
    p.add_argument(
        "--width",
        type=float,
        help="for one labels=ppi run: the human-graded queries that give 95%% intervals this "
        "wide, from the judge's agreement on its human sample (docs/judging.md)",
    )
    p.add_argument(
        "--interval",
        metavar="t|z",
        help="with --width: plan Student-t (t) or normal (z, ppi_py's) intervals (default: the "
        "run's ppi_interval)",
    )


def handle(args: argparse.Namespace) -> int:
    """Print the plan."""
    import json

    from rageval.gate.power_report import plan

    if args.width is not None:
        from rageval.errors import ConfigError
        from rageval.gate.ppi_plan import ppi_plan

        if len(args.sources) != 1:
            raise ConfigError("--width plans one labels=ppi run: name one run folder or report")
        result = ppi_plan(args.sources[0], args.metric, args.width, args.alpha, args.interval)
        print(json.dumps(result.to_dict(), indent=2) if args.json else result.text())
        return 0
    if args.interval is not None:
        from rageval.errors import ConfigError

        raise ConfigError("--interval plans a labels=ppi run's intervals; add --width")
    result = plan(args.sources, args.metric, args.drop, args.alpha, args.power)
    print(json.dumps(result.to_dict(), indent=2) if args.json else result.text())
    return 0
