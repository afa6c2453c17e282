"""A run's config rebuilt from a baseline: what ``rageval check`` re-runs, and what ``rageval
promote`` reads the project's dataset from.

A baseline holds the resolved config of the run it came from and its group choices. The check
composes conf/ with those choices (the user's group overrides replacing them), lays the
baseline's resolved values over it, then applies the user's other overrides. So the re-run is
the baseline's configuration whatever produced the report (a sweep job, a ``rageval check``
run), and a change on the command line is the only difference. A baseline is data: only keys
the configs define are replayed, never a key that names code (``_target_``, ``factory``,
``function``, ``kwargs``), an interpolation or a path outside the project (:func:`replay_values`);
the baseline was read and validated by rageval.gate.baseline.read_baseline before.

Values that say where a run happened, not what it measured, come from this machine instead:
``cache_dir``, ``mlflow``, ``hydra``, the gate's own settings, and every value conf/ writes as
an interpolation (``${rageval_root:}/golden/...``, ``${cache_dir}``, ``${search.mode}``), so a
baseline promoted on a laptop re-runs in CI. Masked secrets (``***``) are never replayed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.config_schema import CODE_KEYS, measures
from rageval.errors import ConfigError
from rageval.gate.baseline import Baseline


def _groups() -> tuple[str, ...]:
    from rageval.app.config import GROUPS

    return tuple(GROUPS)


def effective_choices(baseline: Baseline | None, overrides: Sequence[str]) -> dict[str, str]:
    """The baseline's group choices with the user's group overrides on top."""
    from rageval.app.override import parse_all
    from rageval.app.preflight import normalize_tolerances

    stored = baseline.choices if baseline is not None else {}
    choices = {str(g): str(c) for g, c in stored.items()}
    for o in parse_all(normalize_tolerances(overrides)):
        if o.key in _groups():
            choices[o.key] = o.hydra.get_value_element_as_str()
    return choices


def refuse_unknown_options(choices: Mapping[str, str]) -> None:
    """InputError (exit 2) for a group choice that is no option of the project's config folder
    or the packaged one: a baseline names an option, never a file (``../../golden/evil``)."""
    from rageval.app.config import config_dirs
    from rageval.errors import InputError
    from rageval.gate.baseline import OPTION

    for group, option in choices.items():
        if option in (None, "null", "none") and group == "rerank":
            continue
        if group not in _groups():
            raise InputError(f"choices.{group}: not a config group ({', '.join(_groups())})")
        found = {p.stem for d in config_dirs() for p in (Path(d) / group).glob("*.yaml")}
        if not OPTION.match(str(option)) or ".." in str(option) or option not in found:
            raise InputError(
                f"choices.{group}: {str(option)[:80]!r} is not an option of the project's "
                f"conf/{group}/ or rageval's ({', '.join(sorted(found))}); re-promote the "
                "baseline, or add the option to conf/"
            )


def compose_from_baseline(
    baseline: Baseline | None, overrides: Sequence[str] = (), mlflow: bool = False
):
    """The composed config (a DictConfig) that re-runs ``baseline`` with ``overrides`` on top
    (None: conf/ alone, as the app would run it); the baseline's folder is inside the data paths
    it may name. MLflow logging is off unless ``mlflow`` or an override turns it on."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import OmegaConfBaseException
    from yaml import YAMLError

    from rageval.app.config import CONF_DIR, register_resolvers
    from rageval.app.override import apply_to_config, parse_all
    from rageval.app.preflight import config_keys, explain, preflight
    from rageval.app.removed_keys import refuse_removed_keys

    refuse_removed_keys(overrides)  # one line naming the key to write instead
    groups = _groups()
    overrides = preflight(list(overrides), CONF_DIR, groups, one_config=True)
    parsed = parse_all(overrides)
    stored = baseline.choices if baseline is not None else {}
    choices = effective_choices(baseline, overrides)
    refuse_unknown_options(stored)
    changed = {g for g, c in choices.items() if stored.get(g) != c}
    rest = [o for o in parsed if o.key not in groups]
    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[f"{g}={c}" for g, c in choices.items()])
    except (HydraException, OmegaConfBaseException, YAMLError) as err:
        from rageval.app.config import config_file_error

        raise config_file_error(err) or ConfigError(
            "the baseline's group choices "
            f"({', '.join(f'{g}={c}' for g, c in choices.items())}) do "
            f"not compose with conf/: {str(err).splitlines()[0]}; re-promote a baseline"
        ) from None
    where = baseline.path if baseline is not None else None
    roots = [Path(where).resolve().parent] if where else []
    values = baseline.config if baseline is not None else {}
    with open_dict(cfg):
        given = {o.key for o in rest}  # set on the command line: the user's, not the baseline's
        replay_values(cfg, values, skip=changed, roots=roots, given=given)
        try:
            apply_to_config(rest, cfg)
        except (HydraException, OmegaConfBaseException) as err:
            raise explain(err, [o.line for o in rest], config_keys(cfg), groups) from None
    _code_named(cfg, choices)
    from rageval.app.config import absolute_paths

    absolute_paths(cfg)  # a project's relative paths are the project root's
    OmegaConf.set_struct(cfg, True)
    if not mlflow and not any(o.key == "mlflow.enabled" for o in rest):
        cfg.mlflow.enabled = False
    return cfg


def _code_named(cfg, choices: Mapping[str, str]) -> None:
    """ConfigError when the backend's code (``function``, ``factory``) is named by neither the
    project's config nor the command line: a baseline never names it."""
    from omegaconf import DictConfig, OmegaConf

    backend = cfg.get("backend")
    if not isinstance(backend, DictConfig):
        return
    for key in ("function", "factory"):
        if key in list(backend.keys()) and OmegaConf.is_missing(backend, key):
            option = choices.get("backend", "function")
            raise ConfigError(
                f"backend.{key} is code, which a baseline never names: name it in the project's "
                f"conf/backend/ (an option with `defaults: [{option}]` and `{key}: ...`), or "
                f"pass it to the check (rageval check backend={option} "
                f"backend.{key}=myapp.module:name)"
            )


# kept under its old name: every key that names code
INSTANTIATION_KEYS = CODE_KEYS


def data_only(value: Any) -> Any:
    """``value`` without any key that names code (rageval.config_schema.CODE_KEYS: Hydra's
    instantiation keys, the adapters' factory, function and kwargs), at any depth."""
    from rageval.gate.baseline import drop_keys

    return drop_keys(value, CODE_KEYS)


# the config's data paths (rageval.app.config.PATH_KEYS): a replayed one stays inside the project
_PATHS = ("dataset.corpus", "dataset.golden", "dataset.path", "judgements")


def _refuse_outside(path: str, value: Any, roots: Sequence[Path]) -> None:
    """InputError when the replayed data path ``value`` resolves outside the project root (and
    the baseline's folder): a baseline never makes a run read files elsewhere."""
    from rageval.errors import InputError
    from rageval.project import project_root, resolve_path

    if not isinstance(value, str) or not value or "://" in value:
        return
    from rageval.project import find_project

    p = Path(resolve_path(value)).resolve()
    allowed = [project_root().resolve(), *(Path(r).resolve() for r in roots)]
    if not any(p.is_relative_to(r) for r in allowed):
        where = "the project" if find_project() else "the working directory (no rageval.yaml)"
        raise InputError(
            f"config.{path}: {value[:80]!r} is outside {where} ({allowed[0]}); a baseline's "
            "paths stay inside the project: set the path in the project's conf/ or on the "
            f"command line ({path}=...), or re-promote"
        )


def _refuse_code_or_interpolation(path: str, value: Any) -> None:
    from rageval.errors import InputError
    from rageval.gate.baseline import Refused, plain_data

    try:
        plain_data(value, code_ok=CODE_KEYS)  # code keys are dropped (data_only), never replayed
    except Refused as err:
        raise InputError(f"config.{path}: {err}; a baseline holds data only") from None


def replay_values(
    cfg,
    values: Mapping[str, Any],
    skip: set[str] = frozenset(),
    prefix: str = "",
    roots: Sequence[Path] = (),
    given: set[str] = frozenset(),
) -> list[str]:
    """Lay the baseline's resolved ``values`` over ``cfg`` (see the module docstring); returns
    the dotted keys left out because no config defines them.

    A baseline is data, never code: only keys the packaged and project configs define are
    replayed (new keys only inside a mapping the configs leave open, such as a tolerance table),
    and no key naming code (CODE_KEYS) is taken at any depth, so a baseline arriving in
    a pull request cannot name a function for Hydra to call. Keys that do not change what is
    measured (rageval.config_schema.measures: the cache, MLflow, where the embedding runs...)
    keep this machine's values, and so do the top-level keys in ``skip``. An interpolation is
    refused (never resolved) and a data path outside the project (or ``roots``) is refused."""
    from omegaconf import DictConfig

    from rageval.gate.baseline import holds_mask

    left: list[str] = []
    open_mapping = isinstance(cfg, DictConfig) and len(cfg) == 0 and bool(prefix)
    for key, value in values.items():
        path = f"{prefix}{key}"
        if key in CODE_KEYS or (not prefix and key in skip) or not measures(path):
            continue
        _refuse_code_or_interpolation(path, value)
        # `key in cfg` is False for a mandatory value (???) not yet set: ask the keys
        defined = key in list(cfg.keys())
        if not defined and not open_mapping:
            left.append(str(key))
            continue
        node = cfg._get_node(key) if defined else None
        if node is not None and node._is_interpolation():
            continue  # machine-local or derived: resolved here, not replayed
        if isinstance(value, Mapping) and isinstance(node, DictConfig):
            inner = replay_values(node, value, prefix=f"{path}.", roots=roots, given=given)
            left += [f"{key}.{k}" for k in inner]
        elif isinstance(value, Mapping) and not open_mapping:
            left.append(str(key))  # a mapping where the configs hold a plain value
        elif holds_mask(value):  # a masked secret (at any depth) is never replayed
            continue
        else:
            here = None if node is None else node._value()
            if path in _PATHS and path not in given and value != here:
                _refuse_outside(path, value, roots)
            cfg[key] = data_only(value)
    return left


def compose_for_run(overrides: Sequence[str]):
    """conf/ composed with ``overrides`` (no baseline), as the app would run it, MLflow on."""
    return compose_from_baseline(None, overrides, mlflow=True)
