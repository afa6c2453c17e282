"""The config ``rageval check`` re-runs: the baseline's own, rebuilt from what the baseline stores.

A baseline holds the resolved config of the run it came from and its group choices. The check
composes conf/ with those choices (the user's group overrides replacing them), lays the
baseline's resolved values over it, then applies the user's other overrides. So the re-run is
the baseline's configuration whatever produced the report (a sweep job, a ``rageval check``
run), and a change on the command line is the only difference. A baseline is data: only keys
the configs define are replayed, never a key that names code (``_target_``, ``factory``,
``function``, ``kwargs``), an interpolation or a path outside the project (:func:`replay_values`);
the baseline was read by rageval.gate.baseline_schema before.

Values that say where a run happened, not what it measured, come from this machine instead:
``cache_dir``, ``mlflow``, ``hydra``, the gate's own settings, and every value conf/ writes as
an interpolation (``${rageval_root:}/golden/...``, ``${cache_dir}``, ``${search.mode}``), so a
baseline promoted on a laptop re-runs in CI. Masked secrets (``***``) are never replayed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rageval.config_schema import CODE_KEYS, measures, override_key
from rageval.errors import ConfigError

# top-level keys that are not replayed from the baseline


def _groups() -> tuple[str, ...]:
    from rageval.app.config import GROUPS

    return tuple(GROUPS)


def effective_choices(baseline: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, str]:
    """The baseline's group choices with the user's group overrides on top."""
    from rageval.app.override import parse_all
    from rageval.app.preflight import normalize_tolerances

    choices = {str(g): str(c) for g, c in (baseline.get("choices") or {}).items()}
    for o in parse_all(normalize_tolerances(overrides)):
        if o.key in _groups():
            choices[o.key] = o.hydra.get_value_element_as_str()
    return choices


def refuse_unknown_options(choices: Mapping[str, str]) -> None:
    """InputError (exit 2) for a group choice that is no option of the project's config folder
    or the packaged one: a baseline names an option, never a file (``../../golden/evil``)."""
    from rageval.app.config import config_dirs
    from rageval.errors import InputError
    from rageval.gate.baseline_schema import OPTION

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
    baseline: Mapping[str, Any],
    overrides: Sequence[str] = (),
    mlflow: bool = False,
    where: str | Path | None = None,
):
    """The composed config (a DictConfig) that re-runs ``baseline`` with ``overrides`` on top;
    ``where``: the baseline file (its folder is inside the data paths it may name)."""
    from hydra import compose, initialize_config_dir
    from hydra.errors import HydraException
    from omegaconf import OmegaConf, open_dict
    from omegaconf.errors import OmegaConfBaseException

    from rageval.app.config import CONF_DIR, register_resolvers
    from rageval.app.override import apply_to_config, parse_all
    from rageval.app.preflight import config_keys, explain, preflight
    from rageval.app.removed_keys import refuse_removed_keys

    refuse_removed_keys(overrides)  # one line naming the key to write instead
    groups = _groups()
    overrides = preflight(list(overrides), CONF_DIR, groups, one_config=True)
    parsed = parse_all(overrides)
    choices = effective_choices(baseline, overrides)
    refuse_unknown_options(baseline.get("choices") or {})
    changed = {g for g, c in choices.items() if (baseline.get("choices") or {}).get(g) != c}
    rest = [o for o in parsed if o.key not in groups]
    register_resolvers()
    try:
        with initialize_config_dir(config_dir=str(CONF_DIR), version_base="1.3"):
            cfg = compose("config", overrides=[f"{g}={c}" for g, c in choices.items()])
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError(
            "the baseline's group choices "
            f"({', '.join(f'{g}={c}' for g, c in choices.items())}) do "
            f"not compose with conf/: {str(err).splitlines()[0]}; re-promote a baseline"
        ) from None
    roots = [Path(where).resolve().parent] if where else []
    with open_dict(cfg):
        given = {o.key for o in rest}  # set on the command line: the user's, not the baseline's
        replay_values(cfg, baseline.get("config") or {}, skip=changed, roots=roots, given=given)
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
    """``value`` without any key that names code (baseline_schema.CODE_KEYS: Hydra's
    instantiation keys, the adapters' factory, function and kwargs), at any depth."""
    from rageval.gate.baseline_schema import drop_keys

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
    from rageval.gate.baseline_schema import Refused, plain_data

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


def refuse_other_labels(baseline: Mapping[str, Any], labels: str, where: str | Path) -> None:
    """InputError (exit 2) before any work when the check would measure with another label set
    than the baseline's: the gate never compares across label sets."""
    from rageval.errors import InputError
    from rageval.gate.compare import label_info

    then = label_info(baseline)["label_set"]
    if labels != then:
        raise InputError(
            f"the baseline was measured with labels={then}, this check would measure with "
            f"labels={labels}; the gate never compares across label sets: drop the labels "
            f"override (or pass labels={then}), or promote a run measured with labels={labels} "
            "as the baseline (rageval promote RUN --force)",
            path=str(where),
        )


def run_check(
    baseline_path: str | Path,
    overrides: Sequence[str] | None = None,
    out: str | Path | None = None,
    mlflow: bool = False,
    quiet: bool = False,
):
    """Re-run ``baseline_path``'s config with ``overrides`` and compare; returns the
    :class:`~rageval.gate.compare.Comparison` and the folder holding the re-run's report,
    gate.md (for a pull-request comment) and gate.json."""
    from rageval.gate.baseline import load_baseline
    from rageval.project import using

    baseline = load_baseline(baseline_path)
    with using(baseline_project(baseline, baseline_path)):
        return _run_check(baseline, baseline_path, list(overrides or []), out, mlflow, quiet)


def baseline_project(baseline: Mapping[str, Any], path: str | Path):
    """The project a baseline belongs to, wherever the check runs from: the one it recorded
    (its root, relative to the baseline file), else the first folder from the baseline's own
    upwards that holds rageval.yaml; None for a baseline outside any project (the demo's)."""
    from rageval.project import MARKER, find_project, load_project

    root = (baseline.get("project") or {}).get("root")
    here = Path(path).resolve()
    # the recorded project holds the baseline: a baseline never points the check at another
    # project's config (and the code that config names)
    if root and (Path(root) / MARKER).is_file() and here.is_relative_to(Path(root).resolve()):
        return load_project(root)
    return find_project(start=Path(path).resolve().parent)


def _run_check(baseline, baseline_path, overrides, out, mlflow, quiet):
    from rageval.app.main import run_job
    from rageval.formats.atomic import atomic_write_text
    from rageval.gate.compare import compare, interpolated_keys
    from rageval.gate.slices import check_spec
    from rageval.report.html import write_diff_page

    cfg = compose_from_baseline(baseline, overrides, mlflow, where=baseline_path)
    # a mistyped slice or metric fails now, not after the re-run
    check_spec(
        _plain(cfg.gate.get("slices")),
        [str(m) for m in cfg.gate.metrics],
        baseline["per_query"],
        int(cfg.min_slice_size),
    )
    from rageval.gate.baseline import config_summary

    refuse_other_labels(baseline, str(cfg.get("labels", "gold")), baseline_path)
    out_dir = Path(out) if out else check_dir()
    choices = effective_choices(baseline, overrides)
    report = run_job(cfg, out_dir, overrides=overrides, choices=choices, quiet=quiet)
    gate = cfg.gate
    current = report.to_dict()
    cmp = compare(
        baseline,
        current,
        metrics=gated_metrics(baseline, current, [str(m) for m in gate.metrics], gate),
        tolerance=float(gate.tolerance),
        tolerances={str(k): float(v) for k, v in gate.tolerances.items()},
        alpha=float(gate.alpha),
        resamples=int(gate.resamples),
        slices=_plain(gate.get("slices")),  # checked above
        min_slice_size=int(cfg.min_slice_size),
        mirrors=interpolated_keys(cfg),
        on_inconclusive=str(gate.on_inconclusive),
        on_embedding_drift=str(gate.on_embedding_drift),
    )
    # the re-run is the baseline's config with the user's overrides on top: its summary names the
    # baseline's tuned keys too (search.fusion=weighted), not only what was typed
    replayed = {**current, "overrides": _over(baseline.get("overrides") or [], overrides)}
    cmp.current_info["config"] = config_summary(replayed)
    if report.mlflow_run_id:  # check --mlflow: the verdict on the re-run's MLflow run
        from rageval.tracking.client import tracking_uri
        from rageval.tracking.log import log_gate

        log_gate(tracking_uri(cfg.mlflow.tracking_uri), report.mlflow_run_id, cmp)
    atomic_write_text(out_dir / "gate.json", json.dumps(cmp.to_dict(), indent=2))
    atomic_write_text(out_dir / "gate.md", cmp.markdown())
    # the per-query page of the baseline against the re-run: rank moves, chunks gained and lost
    write_diff_page(
        out_dir / "gate.html",
        baseline,
        out_dir,
        slice_rows=[asdict(r) for r in cmp.slices],
        verdict=[f"{r.line()}: {r.verdict}" for r in cmp.rows]
        + [*cmp.beneath_lines(), cmp.console().splitlines()[-1]],
    )
    return cmp, out_dir


def check_dir() -> Path:
    """``outputs/check/<time>`` under the project's root (never under the working directory: a
    check run from the corpus folder must not write into the corpus)."""
    from rageval.project import output_root

    return output_root() / "outputs" / "check" / time.strftime("%Y-%m-%d_%H-%M-%S")


def gated_metrics(
    baseline: Mapping[str, Any], current: Mapping[str, Any], metrics: list[str], gate
) -> list[str]:
    """``gate.metrics``, and the metric the baseline was promoted by (``promote --best M``) when
    both reports measured it, unless ``gate.promoted_metric`` is false: a run chosen for its
    evidence_recall@1024t is gated on it."""
    from rageval.scoring.spec import MetricSpec

    promoted = (baseline.get("promoted_from") or {}).get("metric")
    if not promoted or not gate.promoted_metric:
        return metrics
    shown = {str(MetricSpec.parse(m)) for m in metrics}
    name = str(MetricSpec.parse(promoted))
    measured = name in (baseline.get("metrics") or {}) and name in (current.get("metrics") or {})
    return [*metrics, name] if name not in shown and measured else metrics


def _over(base: Sequence[str], top: Sequence[str]) -> list[str]:
    """Override lines ``top`` laid over ``base``: one line per key, the later one winning; the
    baseline's lines of keys a check does not replay (slices, min_slice_size, ...) are left out:
    the re-run used this machine's values, not those."""
    lines: dict[str, str] = {}
    kept = [o for o in base if measures(o)]
    for o in [*kept, *top]:
        key = override_key(o)
        lines.pop(key, None)
        lines[key] = o
    return list(lines.values())


def _plain(node) -> dict[str, Any]:
    """``gate.slices`` as plain data (an OmegaConf node, a mapping, or None)."""
    from omegaconf import DictConfig, OmegaConf

    if node is None:
        return {}
    if isinstance(node, DictConfig):
        return OmegaConf.to_container(node, resolve=True)
    if not isinstance(node, Mapping):
        raise ConfigError(
            "gate.slices must map slices to tolerances, e.g. {source=adversarial: {recall@5: 0.05}}"
        )
    return dict(node)
