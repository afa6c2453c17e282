"""``rageval init [DIR]``: a project of your own (rageval.app.scaffold)."""

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
    p.add_argument(
        "--retriever",
        choices=("class", "function", "langchain", "llamaindex"),
        default="class",
        help="how your retriever runs (docs/your-retriever.md): a class like my_retriever.py "
        "(default), backend=function, langchain or llamaindex; fills in its dependencies in "
        "requirements-retrieval.txt, which the CI jobs install",
    )


def handle(args: argparse.Namespace) -> int:
    """Write the project and say what to run next."""
    from rageval.app.scaffold import init_project

    print(init_project(args.folder, args.retriever).summary())
    return 0
