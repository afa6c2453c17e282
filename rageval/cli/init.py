"""``rageval init [DIR]``: a project of your own (rageval.scaffold)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``init`` options to ``p``."""
    p.add_argument(
        "folder",
        nargs="?",
        default=".",
        help="the project folder, created when missing (default: the working directory); "
        "files that exist are kept",
    )


def handle(args: argparse.Namespace) -> int:
    """Write the project and say what to run next."""
    from rageval.scaffold import init_project

    print(init_project(args.folder).summary())
    return 0
