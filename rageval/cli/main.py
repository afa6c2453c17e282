"""Command-line entry points.

``rageval run [overrides]`` (and ``python -m rageval [overrides]``) is the Hydra app. The other
subcommands are plain argparse commands; each lives in its own module exposing
``add_arguments(parser)`` and ``handle(args) -> int`` (the exit code) and is imported only when it
is used. A handler parses and calls: the work is done in the core (inputs/, authoring/, gate/...).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from rageval.errors import RagevalError
from rageval.formats.redact import command_line_secrets, scrub, secret_values

# subcommand -> (module, one-line help). Modules are imported lazily: `rageval score` must not pay
# for torch or MLflow.
COMMANDS: dict[str, tuple[str, str]] = {
    "init": (
        "rageval.cli.init",
        "write a project of your own: config, example data and retriever, test, CI jobs",
    ),
    "score": ("rageval.cli.score", "score a TREC run file against qrels, like trec_eval"),
    "promote": (
        "rageval.cli.promote",
        "make a run (MLflow run id or report.json) the committed baseline",
    ),
    "check": (
        "rageval.cli.check",
        "re-run the baseline's config and fail (exit 1) if retrieval got worse",
    ),
    "comment": (
        "rageval.cli.comment",
        "post gate.md on the pull request (GitHub) or merge request (GitLab), updated in place",
    ),
    "compare": (
        "rageval.cli.compare",
        "compare two runs (folders, reports, trec_eval -q or CSV files): interval, p, verdict",
    ),
    "plan": (
        "rageval.cli.plan",
        "how many queries a golden set needs to detect a drop, from a sweep or runs",
    ),
    "embed": (
        "rageval.cli.embed",
        "fill the embedding cache for a run or sweep (on a Ray cluster: embedding.executor=ray)",
    ),
    "golden": ("rageval.cli.golden", "golden-set tools: validate, stats, generate, add, migrate"),
    "import": ("rageval.cli.import_beir", "turn a BEIR dataset into a golden JSONL and a corpus"),
    "log": ("rageval.cli.log", "log a finished run folder to MLflow (when the server was down)"),
    "report": (
        "rageval.cli.report",
        "write the per-query HTML page of a run, or of two runs' difference",
    ),
    "pool": (
        "rageval.cli.pool",
        "collect the top results of runs that no label or judgement covers, for judging",
    ),
    "judge": (
        "rageval.cli.judge",
        "judge a pool: a review page for people, an import of their grades, or a calibrated LLM",
    ),
}


def _run_hydra(argv: Sequence[str]) -> int:
    from rageval.app.main import run_app

    return run_app(list(argv))


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch ``rageval <command>``; anything that is not a known command goes to the Hydra
    app."""
    from rageval.project import kept_environment

    argv = list(sys.argv[1:] if argv is None else argv)
    secrets = command_line_secrets(argv)
    with kept_environment():  # a caller's process (a test) gets its sys.path and env back
        code = _exit(_enter_project, secrets)  # a bad rageval.yaml: one line, exit 2
        return code or _dispatch(argv, secrets)


def _dispatch(argv: list[str], secrets: set[str]) -> int:
    if argv[:1] in (["--version"], ["-V"]):
        import rageval

        print(f"rageval {rageval.__version__}")
        return 0
    if argv and argv[0] == "run":
        return _exit(lambda: _run_hydra(argv[1:]), secrets)
    if not argv or argv[0] not in COMMANDS and argv[0] not in ("-h", "--help"):
        return _exit(lambda: _run_hydra(argv), secrets)
    parser = argparse.ArgumentParser(
        prog="rageval",
        description="rageval: measure, compare and gate the retriever of a RAG pipeline. "
        "`rageval [run] KEY=VALUE ...` evaluates (the Hydra app; `rageval run --help` lists its "
        "config); the commands below do the rest.",
    )
    parser.add_argument("-V", "--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.add_parser("run", help="run the Hydra app (the default): rageval run chunk=512 search=bm25")
    for name, (module, help_text) in COMMANDS.items():
        if argv and argv[0] == name:
            mod = importlib.import_module(module)
            p = sub.add_parser(name, help=help_text, description=help_text)
            mod.add_arguments(p)
        else:
            sub.add_parser(name, help=help_text)
    args = parser.parse_args(argv)
    mod = importlib.import_module(COMMANDS[args.command][0])
    return _exit(lambda: mod.handle(args), secrets)


def _enter_project() -> int:
    """Inside a project (rageval.project), its modules import from every command and worker;
    outside one, the working directory's do, under the ``rageval`` script as under ``python -m``."""
    from rageval.project import activate, find_project, working_directory_importable

    project = find_project()
    if project is None:
        working_directory_importable()
    activate(project)
    return 0


def _exit(fn, secrets: set[str]) -> int:
    from rageval.run.folder import os_errors

    try:
        with os_errors():  # a full disk or read-only folder: one line, not a traceback
            return int(fn() or 0)
    except RagevalError as err:
        msg = scrub(str(err), secrets | secret_values())  # a key from argv or the environment
        print(f"rageval: error: {msg}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        print("rageval: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
