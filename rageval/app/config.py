"""Where the Hydra config lives, its resolvers and schema, and composing it from overrides.

``compose(overrides)`` builds the config a run would get, without running Hydra's launcher;
``check_overrides(argv)`` checks every value of a sweep, so a bad one (a wrong type, an unknown
option) is one line and exit 2 before any job runs.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rageval.config_schema import override_key
from rageval.errors import ConfigError
from rageval.project import find_project, project_root

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def packaged(name: str, source: str) -> Path:
    """A folder of the package's own data: ``rageval/<name>`` in an installed wheel (the build
    copies the repository's ``<source>/`` there: scripts/build_package_data.py); in an editable
    install of a checkout, whose package is its source tree, the repository's ``<source>/``."""
    inside = PACKAGE_DIR / name
    return inside if inside.is_dir() else PACKAGE_DIR.parent / source


# The package's own data: its configs (the repository's conf/) and the bundled demo (golden/: the
# golden set, its corpus, judgements and baseline)
CONF_DIR = packaged("conf", "conf")
DEMO_DIR = packaged("demo", "golden")
# The config groups, in the order the defaults list composes them.
GROUPS = ("dataset", "embedding", "backend", "search", "rerank")


def default_cache_dir() -> str:
    """$RAGEVAL_CACHE_DIR, else ~/.cache/rageval: embeddings and indexes shared by every run."""
    return os.environ.get("RAGEVAL_CACHE_DIR") or str(Path.home() / ".cache" / "rageval")


def config_dirs(argv: Sequence[str] = ()) -> list[Path]:
    """The config folders a composition searches, in Hydra's order: the active project's, the
    packaged one, then those the command line adds (``--config-dir``, ``hydra.searchpath``)."""
    extra = search_path_dirs(argv) or ([], [])
    first = project_config_dir()
    return [*([first] if first else []), CONF_DIR, *(p.resolve() for p in extra[0])]


def project_config_dir() -> Path | None:
    """The active project's config folder, searched before the packaged one; None outside a
    project, when the folder is missing, or when it is the packaged one (rageval's own
    repository, a project whose conf/ is the packaged configs' source)."""
    project = find_project()
    if project is None or project.config_dir is None or project.config_dir == CONF_DIR.resolve():
        return None
    return project.config_dir


def search_path_dirs(argv: Sequence[str]) -> tuple[list[Path], list[str]] | None:
    """The config folders a command line adds (``hydra.searchpath=[file://...]``, ``--config-dir``)
    and the overrides that add them; None when one of them cannot be read here (``pkg://``)."""
    dirs, lines = [], []
    for i, arg in enumerate(argv):
        if arg in ("--config-dir", "-cd") and i + 1 < len(argv):
            dirs.append(Path(argv[i + 1]))
        elif arg.startswith("--config-dir="):
            dirs.append(Path(arg.split("=", 1)[1]))
        elif "=" in arg and override_key(arg) == "hydra.searchpath":
            lines.append(arg)
            for entry in arg.split("=", 1)[1].strip("[]").split(","):
                entry = entry.strip().strip("'\"")
                if not entry.startswith("file://"):
                    return None
                dirs.append(Path(entry[len("file://") :]))
    return dirs, lines


def register_resolvers() -> None:
    """Register rageval's OmegaConf resolvers and its config schema (idempotent; Ray and joblib
    workers call it too)."""
    from omegaconf import OmegaConf

    from rageval.app.schema import register_schema

    OmegaConf.register_new_resolver("rageval_demo", lambda: str(DEMO_DIR), replace=True)
    # cached like Hydra's ${now:}: a sweep's config carries the launcher's value to every job, so
    # a job on a Ray cluster (another working directory) writes into the launcher's sweep folder
    OmegaConf.register_new_resolver(
        "project_root", lambda: str(project_root()), replace=True, use_cache=True
    )
    OmegaConf.register_new_resolver("rageval_cache_dir", default_cache_dir, replace=True)
    register_schema()


def compose(overrides: Sequence[str], return_hydra_config: bool = False):
    """The app's config with ``overrides`` (no sweep syntax); ConfigError on a bad override.
    ``return_hydra_config``: with Hydra's own node (``runtime.choices``: each group's option)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            return hydra_compose(
                "config", overrides=list(overrides), return_hydra_config=return_hydra_config
            )
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(f"bad override ({' '.join(overrides)}): {describe_error(err)}") from None


def describe_error(err: BaseException) -> str:
    """Hydra's message and its cause's (the type a value failed), on one line."""
    parts = [str(err)]
    cause = err.__cause__ or err.__context__
    if cause is not None and str(cause) not in parts[0]:
        parts.append(str(cause))
    kept = []
    for part in parts:
        part = part.split("Config search path")[0]  # Hydra's search path: noise here
        lines = [ln.strip() for ln in part.splitlines() if ln.strip()]
        lines = [f"(key {ln[9:].strip()})" if ln.startswith("full_key:") else ln for ln in lines]
        kept.append(" ".join(ln for ln in lines if not ln.startswith("object_type=")))
    return "; ".join(p for p in kept if p)


def config_file_error(err: BaseException) -> ConfigError | None:
    """One line for a composition that fails in a config file itself, not on the command line:
    a YAML syntax error (which Hydra lets through) at the parser's line, or the file Hydra names
    (``In 'dataset/docs'``) among :func:`config_dirs`, at the line of the key it names. None when
    the error names no config file."""
    import re

    import yaml

    from rageval.errors import yaml_error, yaml_key_line

    if isinstance(err, yaml.YAMLError):
        return yaml_error(err, ConfigError)
    name = re.search(r"In '([^']+)'", str(err))
    if name is None:
        return None
    files = (d / f"{name.group(1)}.yaml" for d in config_dirs())
    found = next((f for f in files if f.is_file()), None)
    key = re.search(r"full_key: (\S+)", f"{err} {err.__cause__ or err.__context__ or ''}")
    line = yaml_key_line(found.read_text(encoding="utf-8"), key.group(1)) if found and key else None
    return ConfigError(
        f"the config does not compose: {describe_error(err)}; fix that file",
        path=str(found) if found else None,
        line=line,
    )


# The config's paths to data: relative ones are taken from the project root (rageval.project)
PATH_KEYS = ("dataset.corpus", "dataset.golden", "dataset.path", "judgements")


def absolute_paths(cfg) -> None:
    """Turn the relative data paths of ``cfg`` (PATH_KEYS) into absolute ones, from the active
    project's root (the working directory outside a project), in place."""
    from omegaconf import OmegaConf, open_dict

    from rageval.project import resolve_path

    for key in PATH_KEYS:
        value = OmegaConf.select(cfg, key, default=None, throw_on_missing=False)
        if isinstance(value, str) and value and "://" not in value and value != "???":
            resolved = resolve_path(value)
            if resolved != value:
                with open_dict(cfg):
                    OmegaConf.update(cfg, key, resolved, merge=False)


def project_dataset() -> tuple[Path, Path | None] | None:
    """The golden set and corpus the active project's config names (paths from its root); None
    outside a project or when its dataset is not a pair of files (BEIR)."""
    from rageval.project import find_project

    if find_project() is None:
        return None
    from omegaconf import OmegaConf

    cfg = compose([])
    absolute_paths(cfg)
    golden = OmegaConf.select(cfg, "dataset.golden", default=None)
    corpus = OmegaConf.select(cfg, "dataset.corpus", default=None)
    if not isinstance(golden, str):
        return None
    return Path(golden), Path(corpus) if isinstance(corpus, str) else None
