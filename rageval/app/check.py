"""``rageval check``'s work: re-run the baseline's configuration and gate on the comparison.

:func:`run_check` reads the baseline (rageval.gate.baseline.read_baseline), enters the project it
belongs to, rebuilds the run's config from it with the command line's overrides on top
(rageval.app.replay), refuses what the gate would refuse before any work (a mistyped
``gate.slices`` against the baseline's rows, another label set: rageval.gate.slices,
rageval.gate.labels), re-runs it (rageval.app.main.run_job) and compares
(rageval.gate.compare.compare); gate.json, gate.md and gate.html land beside the re-run's report.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from rageval.app.replay import compose_from_baseline, effective_choices
from rageval.config_schema import measures, override_key
from rageval.errors import ConfigError
from rageval.gate.baseline import Baseline


def refuse_other_labels(baseline: Baseline, labels: str) -> None:
    """InputError (exit 2) before any work when the check would measure with another label set
    than the baseline's: the gate never compares across label sets (rageval.gate.labels)."""
    from rageval.errors import InputError
    from rageval.gate.labels import label_set_change

    problem = label_set_change(baseline.label_set, labels, "check")
    if problem:
        raise InputError(problem, path=str(baseline.path))


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
    from rageval.gate.baseline import read_baseline
    from rageval.project import using

    baseline = read_baseline(baseline_path)
    with using(baseline_project(baseline)):
        return _run_check(baseline, list(overrides or []), out, mlflow, quiet)


def baseline_project(baseline: Baseline):
    """The project a baseline belongs to, wherever the check runs from: the one it recorded
    (its root, relative to the baseline file), else the first folder from the baseline's own
    upwards that holds rageval.yaml; None for a baseline outside any project (the demo's)."""
    from rageval.project import MARKER, find_project, load_project

    root = baseline.project_root
    here = Path(baseline.path or ".").resolve()
    # the recorded project holds the baseline: a baseline never points the check at another
    # project's config (and the code that config names)
    if root and (Path(root) / MARKER).is_file() and here.is_relative_to(Path(root).resolve()):
        return load_project(root)
    return find_project(start=here.parent)


def _refuse_before_running(cfg, baseline: Baseline) -> None:
    """What the gate would refuse after the re-run, refused before it: a mistyped slice or metric
    of ``gate.slices`` (checked against the baseline's rows, once: the re-run does not check them
    again) and another label set."""
    from rageval.gate.slices import check_spec

    check_spec(
        _plain(cfg.gate.get("slices")),
        [str(m) for m in cfg.gate.metrics],
        baseline.per_query,
        int(cfg.min_slice_size),
    )
    refuse_other_labels(baseline, str(cfg.get("labels", "gold")))


def _run_check(baseline: Baseline, overrides, out, mlflow, quiet):
    from rageval.app.main import run_job
    from rageval.formats.atomic import atomic_write_text
    from rageval.gate.baseline import config_summary
    from rageval.gate.compare import compare, interpolated_keys
    from rageval.report.html import write_diff_page

    cfg = compose_from_baseline(baseline, overrides, mlflow)
    _refuse_before_running(cfg, baseline)
    out_dir = Path(out) if out else check_dir()
    choices = effective_choices(baseline, overrides)
    report = run_job(
        cfg, out_dir, overrides=overrides, choices=choices, quiet=quiet, slices_checked=True
    )
    gate = cfg.gate
    current = report.to_dict()
    cmp = compare(
        baseline.report,
        current,
        metrics=gated_metrics(baseline.report, current, [str(m) for m in gate.metrics], gate),
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
    replayed = {**current, "overrides": _over(baseline.overrides, overrides)}
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
        baseline.report,
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
