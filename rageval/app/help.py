"""``rageval run --help``: the groups, their options and the top-level keys, not a config dump."""

from __future__ import annotations

from collections.abc import Sequence

HELP_FLAGS = ("--help", "-h")


def wants_help(argv: Sequence[str]) -> bool:
    """True for a command line asking for the app's help (Hydra's --hydra-help is Hydra's)."""
    return any(a in HELP_FLAGS for a in argv)


def run_help() -> str:
    """The app's help text, from the config folders a run would compose (the project's too)."""
    from omegaconf import DictConfig, ListConfig

    from rageval.app.config import GROUPS, compose, config_dirs
    from rageval.app.preflight import group_options
    from rageval.project import find_project

    cfg = compose([], return_hydra_config=True)
    choices = cfg.hydra.runtime.choices
    dirs = config_dirs()
    width = max(len(g) for g in GROUPS)
    lines = [
        "usage: rageval [run] [KEY=VALUE ...]      one run (python -m rageval works the same)",
        "       rageval -m KEY=A,B [KEY=C,D ...]    a sweep: one job per combination",
        "       rageval COMMAND ...                 check, promote, init, golden, ... "
        "(rageval --help)",
        "",
        "config groups (GROUP=OPTION, the default in brackets; a project adds options of its own",
        "in conf/GROUP/NAME.yaml):",
    ]
    for group in GROUPS:
        default = str(choices.get(group) or "none")
        shown = ", ".join(f"[{o}]" if o == default else o for o in group_options(dirs, group))
        lines.append(f"  {group:<{width}}  {shown}")
    lines += ["", "keys (KEY=VALUE, the default shown; NODE.KEY=VALUE inside a node):"]
    row = "  "
    for key in cfg:
        if key in (*GROUPS, "hydra"):
            continue
        node = cfg._get_node(key)
        if isinstance(node, DictConfig):
            row = _add(lines, row, f"{key}.*")
        elif isinstance(node, ListConfig):
            row = _add(lines, row, f"{key}=[{', '.join(str(v) for v in node)}]")
        else:
            value = node._value()
            row = _add(lines, row, f"{key}={'null' if value is None else value}")
    lines.append(row.rstrip())
    project = find_project()
    where = (
        f"project: {project.root} (config folder {project.config_dir})"
        if project
        else "project: none (rageval init makes one)"
    )
    lines += [
        "",
        where,
        "the whole composed config: rageval --cfg job; the docs: docs/configuration.md",
    ]
    return "\n".join(lines)


def _add(lines: list[str], row: str, item: str) -> str:
    if len(row) + len(item) + 2 > 98:
        lines.append(row.rstrip())
        row = "  "
    return f"{row}{item}  "
