"""``rageval check``: re-run the baseline's configuration and gate on the comparison.

The re-run is rebuilt from the baseline itself (its resolved config and group choices, see
:mod:`rageval.app.replay`), with the command line's overrides on top. Writes gate.md (for a
pull-request comment) and gate.json beside the re-run's report. Exit 0 when nothing regressed
beyond tolerance, 1 when something did (or the embedding canary moved, with
``gate.on_embedding_drift=fail``), 2 on bad input (including a golden set that changed
since the baseline: re-promote after reviewing it).
"""

from __future__ import annotations

import argparse

DEFAULT_BASELINE = "golden/baseline.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``check`` options to ``p``."""
    p.add_argument(
        "overrides",
        nargs="*",
        help="Hydra overrides on top of the baseline's config, e.g. chunk=512 or "
        "gate.tolerances.recall@5=0.05",
    )
    p.add_argument(
        "--baseline",
        help="baseline file (default: the project's, set in rageval.yaml, else "
        f"{DEFAULT_BASELINE} in the working directory, else the demo's)",
    )
    p.add_argument(
        "--out",
        help="folder for the re-run and the comparison (default outputs/check/<time> under the "
        "project root)",
    )
    p.add_argument("--mlflow", action="store_true", help="also log the re-run to MLflow")
    p.add_argument(
        "--format",
        choices=("text", "github"),
        default="text",
        help="github: also print the verdict as GitHub Actions annotations (the job summary "
        "gets gate.md whenever $GITHUB_STEP_SUMMARY is set)",
    )


def handle(args: argparse.Namespace) -> int:
    """Run the check and print the comparison; returns the gate's exit code."""
    from rageval.app.check import run_check
    from rageval.cli.paths import default_baseline

    baseline = args.baseline or str(default_baseline())
    cmp, out_dir = run_check(baseline, args.overrides, args.out, args.mlflow)
    print()
    print(cmp.console())
    print(
        f"gate: {out_dir / 'gate.md'} (markdown for a pull-request comment), "
        f"{out_dir / 'gate.json'}"
    )
    print(f"per-query diff of baseline and this run: {out_dir / 'gate.html'}")
    from rageval.gate.ci import append_step_summary, github_annotations

    summary = append_step_summary(cmp)
    if summary is not None:
        print(f"gate.md appended to the job summary ({summary})")
    if args.format == "github":
        print("\n".join(github_annotations(cmp, baseline)))
    return cmp.exit_code
