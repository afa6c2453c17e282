"""``rageval embed``: fill the embedding cache before a run or a sweep (rageval.app.embed)."""

from __future__ import annotations

import argparse


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Add the ``embed`` arguments to ``p``."""
    p.add_argument(
        "-m",
        "--multirun",
        action="store_true",
        help="accepted as in a sweep's command line: every combination is filled either way",
    )
    p.add_argument(
        "overrides",
        nargs=argparse.REMAINDER,
        metavar="KEY=VALUE",
        help="a run's or a sweep's overrides (chunk=256,512 embedding.executor=ray ...)",
    )


def handle(args: argparse.Namespace) -> int:
    """Embed what the cache lacks for every run the overrides describe."""
    from rageval.app.config import register_resolvers
    from rageval.app.embed import embed

    register_resolvers()
    embed(args.overrides)
    return 0
