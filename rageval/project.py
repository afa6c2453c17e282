"""A team's project: the repository rageval runs in when it is installed as a dependency.

A project is the first folder holding ``rageval.yaml``, walking up from the working directory,
the way pytest finds its rootdir (``$RAGEVAL_PROJECT`` names one explicitly; set to an empty
string it means "no project"). ``rageval init`` writes one. Inside a project every entry point
(``python -m rageval``, the ``rageval`` script, sweeps, ``promote``, ``check``, studies, the
pytest helper):

- composes the project's config folder over rageval's packaged configs (its ``config.yaml``, when
  it has one, starts from ``rageval``: the packaged defaults; its groups add options beside the
  packaged ones);
- resolves relative paths of the config (corpus, golden set, judgements) against the project root;
- can import the project's own modules (the folders of ``python_path``), also in sweep workers.

``rageval.yaml`` holds (every key optional)::

    config_dir: conf                  # the project's Hydra config folder (named: it must exist;
                                      # left out: conf/ when there is one)
    python_path: [.]                  # folders the project's modules import from
    baseline: golden/baseline.json    # what check, promote and the pytest helper use by default
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rageval.errors import InputError, yaml_error, yaml_key_line

MARKER = "rageval.yaml"
ENV = "RAGEVAL_PROJECT"
KEYS = {"config_dir": "conf", "python_path": ["."], "baseline": "golden/baseline.json"}


@dataclass(frozen=True)
class Project:
    """A project's root and what its ``rageval.yaml`` says (paths absolute)."""

    root: Path
    config_dir: Path | None  # None when the folder it names does not exist
    python_path: tuple[Path, ...]
    baseline: Path

    def path(self, value: str | Path) -> Path:
        """``value`` with ``~`` expanded, relative paths taken from the project root."""
        p = Path(value).expanduser()
        return p if p.is_absolute() else self.root / p


def load_project(root: str | Path) -> Project:
    """The project whose marker file lies in ``root``; InputError naming the file and key on a
    bad marker."""
    import yaml

    root = Path(root).resolve()
    marker = root / MARKER
    try:
        data = yaml.safe_load(marker.read_text(encoding="utf-8")) or {}
    except OSError as err:
        raise InputError(
            f"cannot read the project file ({err.strerror})", path=str(marker)
        ) from None
    except yaml.YAMLError as err:
        raise yaml_error(err, InputError, str(marker)) from None
    if not isinstance(data, dict):
        raise InputError(
            "expected a mapping of settings (config_dir, python_path, baseline)", path=str(marker)
        )
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise InputError(
            f"unknown key {unknown[0]!r}; the keys are {', '.join(KEYS)}", path=str(marker)
        )
    settings = {**KEYS, **{k: v for k, v in data.items() if v is not None}}
    for key in ("config_dir", "baseline"):
        if not isinstance(settings[key], str) or not settings[key]:
            raise InputError(
                f"{key} must be a path (text), got {settings[key]!r}", path=str(marker)
            )
    paths = settings["python_path"]
    if isinstance(paths, str):
        paths = [paths]
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise InputError(
            f"python_path must be a list of folders, got {settings['python_path']!r}",
            path=str(marker),
        )
    project = Project(root, None, (), root)
    conf = project.path(settings["config_dir"])
    if data.get("config_dir") is not None and not conf.is_dir():
        # named, but not there: composing without it would run rageval's packaged configs (the
        # demo's dataset) in the team's project, as if nothing were wrong
        raise InputError(
            f"config_dir: {settings['config_dir']!r} is not a folder ({conf}); fix the path, "
            "or remove the key if the project has no configs of its own",
            path=str(marker),
            line=yaml_key_line(marker.read_text(encoding="utf-8"), "config_dir"),
        )
    return Project(
        root=root,
        config_dir=conf if conf.is_dir() else None,
        python_path=tuple(project.path(p).resolve() for p in paths),
        baseline=project.path(settings["baseline"]),
    )


def find_project(start: str | Path | None = None) -> Project | None:
    """The project ``$RAGEVAL_PROJECT`` names, else the first folder from ``start`` (default: the
    working directory) upwards that holds ``rageval.yaml``; None outside any project."""
    named = os.environ.get(ENV)
    if named is not None and start is None:
        if not named:
            return None
        if not (Path(named) / MARKER).is_file():
            raise InputError(
                f"${ENV} names {named}, which holds no {MARKER}; unset it or run `rageval init`",
                path=named,
            )
        return load_project(named)
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / MARKER).is_file():
            return load_project(folder)
    return None


def activate(project: Project | None) -> None:
    """Make ``project`` the one every later step of this process (and its workers) uses: its root
    in ``$RAGEVAL_PROJECT``, its module folders on ``sys.path`` and ``$PYTHONPATH``."""
    if project is None:
        return
    os.environ[ENV] = str(project.root)
    paths = [str(p) for p in project.python_path]
    for p in reversed(paths):
        if p not in sys.path:
            sys.path.insert(0, p)
    old = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join([*paths, *(p for p in old if p not in paths)])


def working_directory_importable() -> None:
    """The working directory's modules importable, as ``python -m`` makes them (its ``''`` entry
    names the same folder), also in worker processes."""
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)
    old = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if cwd not in old:
        os.environ["PYTHONPATH"] = os.pathsep.join([*old, cwd])


@contextmanager
def kept_environment() -> Iterator[None]:
    """What :func:`activate` changes (``$RAGEVAL_PROJECT``, ``$PYTHONPATH``, ``sys.path``) as it
    was before the block, afterwards."""
    saved_env = {k: os.environ.get(k) for k in (ENV, "PYTHONPATH")}
    saved_path = list(sys.path)
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def using(project: Project | None) -> Iterator[Project | None]:
    """``project`` active for the block (``None``: no project), as it was afterwards."""
    with kept_environment():
        if project is None:
            os.environ[ENV] = ""
        else:
            activate(project)
        yield project


def project_root() -> Path:
    """The active project's root, else the working directory: where relative paths resolve."""
    project = find_project()
    return project.root if project else Path.cwd()


def output_root() -> Path:
    """Where every command writes (``outputs/``, ``multirun/``, ``mlflow.db``): the active
    project's root, whatever the working directory, so a command run from a subfolder (the
    corpus) never writes inside its inputs; the working directory outside a project."""
    return project_root()


def resolve_path(value: str) -> str:
    """A config path: absolute as given; relative ones from the project root (the working
    directory outside a project); ``~`` expanded."""
    p = Path(value).expanduser()
    if p.is_absolute():
        return str(p)
    project = find_project()
    return str(project.root / p) if project else str(p)
