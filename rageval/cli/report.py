"""``rageval report RUN_DIR [OTHER_RUN_DIR] --out FILE``: the per-query page of a run, or the
difference between two runs of the same golden set (e.g. the baseline's run and a candidate).

A run folder holds report.json and chunks.jsonl (the chunk texts the page shows). With two
folders the first is A (the baseline) and the second B (the candidate): queries sort by the
change of the deciding metric, worst first, and each shows how B's top-k moved against A's.
The page is one self-contained HTML file: open it in a browser, attach it to a ticket.
"""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add RUN_DIR, an optional OTHER_RUN_DIR and ``--out`` to the subcommand's parser."""
    p.add_argument("run_dir", metavar="RUN_DIR", help="a run's output folder (holds report.json)")
    p.add_argument(
        "other",
        metavar="OTHER_RUN_DIR",
        nargs="?",
        help="a second run folder: the page shows OTHER against RUN_DIR",
    )
    p.add_argument(
        "--out",
        metavar="FILE",
        help="HTML file to write (default RUN_DIR/report.html, or RUN_DIR/diff.html with two runs)",
    )


def handle(args: argparse.Namespace) -> int:
    """Write the page and print its path."""
    from rageval.gate.baseline import validate_report
    from rageval.report.run_files import load, write_report

    for run in (args.run_dir, args.other):  # typed first: a hand-edited report names its key
        if run is not None:
            validate_report(load(run), run)
    path = write_report(args.run_dir, args.other, args.out)
    print(f"per-query page: {path}")
    return 0
