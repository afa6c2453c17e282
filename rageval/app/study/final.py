"""After the trials: the best trial's configuration and the baseline's scored on every golden
query (two more nested runs, split=all, reused when a resumed study's best did not change), and
the study's record (:class:`rageval.report.study.StudySummary`: tune and holdout scores, the
optimism with its CI, the paired test of best vs baseline on the holdout) written to study.json
and study.md beside the leaderboard."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rageval.app.study.settings import FINAL_DIRS, SPLIT_KEYS, STUDY_FILE, StudySettings
from rageval.app.study.storage import storage_of
from rageval.app.study.trials import masked
from rageval.config_schema import override_key


def finish_study(
    sweeper, study, s: StudySettings, space, fixed, metric: str | None, names=None
) -> None:
    """Score the best trial's configuration and the baseline's on every golden query (reused
    when a resumed study scored them already) and write the study's record (study.json, study.md);
    with no finished trial, the record says so."""
    from rageval.report.study import summarise_study

    config = sweeper.config
    sweep_dir = Path(str(config.hydra.sweep.dir))
    counts = _trial_counts(study)
    record: dict[str, Any] = {
        "study": study.study_name,
        "storage": storage_of(config, s),
        "objective": metric,
        "trials": counts,
        "trial_run_names": dict(names or {}),
    }
    if not counts["complete"]:
        record["error"] = (
            f"no trial of study {study.study_name!r} finished ({counts['failed']} failed: see "
            "their error.json); nothing to evaluate on the holdout"
        )
        write_outcome(sweep_dir, record, None)
        return
    best = study.best_trial
    best_overrides = list(best.user_attrs.get("overrides") or [])
    last = study.user_attrs.get("final") or {}
    best_lines = [*fixed, *best_overrides]
    reused = _reuse(last, "best", best_lines)
    best_report, best_run = reused or _final_run(
        sweeper, best_lines, "best", f"study best (trial {best.number})"
    )
    base_lines, replay, source = _baseline_config(s, fixed, best_report)
    base_key = [*base_lines, json.dumps(replay, sort_keys=True, default=str)]
    reused = _reuse(last, "baseline", base_key)
    base_report, base_run = reused or _final_run(
        sweeper, base_lines, "baseline", "study baseline", replay=replay
    )
    sweep_dir_now = Path(str(config.hydra.sweep.dir))
    study.set_user_attr(
        "final",
        {
            "best": _final_record(best_lines, sweep_dir_now, "best", best_run, last),
            "baseline": _final_record(base_key, sweep_dir_now, "baseline", base_run, last),
        },
    )
    gate_alpha = float(config.gate.alpha)
    summary = summarise_study(
        metric,
        best_report,
        base_report,
        holdout_fraction=float(config.holdout_fraction),
        seed=int(config.split_seed),
        alpha=gate_alpha,
        best_trial=best.number,
        best_overrides=[o for o in best_overrides if o != "split=tune"],
        resamples=int(config.gate.resamples),
        baseline_source=source,
        trials=counts,
    )
    record.update(
        best_trial=best.number,
        best_trial_value=best.value,
        best_trial_run_id=best.user_attrs.get("mlflow_run_id"),
        best_run_id=best_run,
        baseline_run_id=base_run,
        summary=summary.to_dict(),
    )
    write_outcome(sweep_dir, record, summary)


def _trial_counts(study) -> dict[str, int]:
    """The study's trials by how they ended: complete, failed, interrupted, repeated."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    interrupted = sum(bool(t.user_attrs.get("interrupted")) for t in trials)
    counts = {
        "complete": sum(t.state == TrialState.COMPLETE for t in trials),
        "failed": sum(t.state == TrialState.FAIL for t in trials) - interrupted,
    }
    if interrupted:  # stopped mid-trial and run again: not a failure of the configuration
        counts["interrupted"] = interrupted
    repeated = sum("same_as" in t.user_attrs for t in trials)
    if repeated:  # drew an earlier trial's configuration: told its value, not run again
        counts["repeated"] = repeated
    return counts


def _reuse(last: Mapping[str, Any], role: str, key: Sequence[str]):
    """The (report, run id) of an earlier part of the study that scored the same configuration
    on every query (a resumed study whose best did not change), or None."""
    rec = last.get(role) or {}
    report_file = Path(str(rec.get("dir", ""))) / "report.json"
    if rec.get("key") != masked(key) or not rec.get("dir") or not report_file.is_file():
        return None
    print(f"the {role} configuration was scored on every query already: {report_file}")
    return json.loads(report_file.read_text()), rec.get("run_id")


def _final_record(key, sweep_dir: Path, role: str, run_id, last: Mapping[str, Any]) -> dict:
    key = masked(key)  # the study's storage holds no secret (compared masked on resume)
    rec = last.get(role) or {}
    if rec.get("key") == list(key) and rec.get("run_id") == run_id and rec.get("dir"):
        return dict(rec)  # reused: it stays where it was written
    return {"key": list(key), "dir": str(sweep_dir / FINAL_DIRS[role]), "run_id": run_id}


def _final_run(
    sweeper, overrides: list[str], role: str, name: str, replay: Mapping[str, Any] | None = None
):
    """Score ``overrides`` (with a baseline's resolved values laid over them, as ``rageval
    check`` does, when ``replay``) on every golden query (split=all) in this process, nested
    under the sweep's parent run; returns (report.json as a dict, MLflow run id)."""
    from omegaconf import OmegaConf, open_dict

    from rageval.app.config import GROUPS
    from rageval.app.main import run_job
    from rageval.app.replay import replay_values

    lines = [o for o in overrides if override_key(o) not in ("split",)]
    lines.append("split=all")
    loader = sweeper.hydra_context.config_loader
    cfg = loader.load_sweep_config(sweeper.config, lines)
    choices = {g: str(cfg.hydra.runtime.choices.get(g) or "none") for g in GROUPS}
    sweep_dir = str(sweeper.config.hydra.sweep.dir)
    with open_dict(cfg):
        del cfg["hydra"]
        if replay:
            replay_values(cfg, replay, skip=set(SPLIT_KEYS))
        cfg.mlflow.run_name = name
    out = Path(sweep_dir) / FINAL_DIRS[role]
    print(f"scoring the {name} configuration on every golden query: {out}", file=sys.stderr)
    OmegaConf.set_readonly(cfg, False)
    with _job_log_level():
        report = run_job(
            cfg, out, lines, choices, sweep_dir, quiet=True, tags={"rageval.study_role": role}
        )
    data = json.loads((out / "report.json").read_text())
    return data, report.mlflow_run_id


@contextlib.contextmanager
def _job_log_level():
    """The final runs run in the launching process, whose root logger Hydra set to INFO: hold it
    at WARNING as conf/config.yaml's job_logging does for every trial, so libraries' INFO lines
    (faiss's "Loading faiss with AVX512 support") stay out of the console."""
    import logging

    root = logging.getLogger()
    saved = root.level
    root.setLevel(max(saved, logging.WARNING))
    try:
        yield
    finally:
        root.setLevel(saved)


def _baseline_config(
    s: StudySettings, fixed: Sequence[str], best_report: Mapping[str, Any]
) -> tuple[list[str], dict[str, Any] | None, str]:
    """What rebuilds the baseline's configuration: overrides, the resolved values to lay over
    them, and where it came from. ``hydra.sweeper.baseline`` when that file was measured on the
    study's golden set (its group choices and values, as ``rageval check`` re-runs it), else the
    study's starting point (conf/ with the fixed overrides)."""
    from rageval.config_schema import measures
    from rageval.gate.baseline import config_summary, load_report

    path = Path(str(s.baseline)) if s.baseline else None
    why = "no baseline file configured (hydra.sweeper.baseline)"
    if path is not None and path.is_file():
        baseline = load_report(path)
        digest = (baseline.get("digests") or {}).get("golden")
        if digest and digest == (best_report.get("digests") or {}).get("golden"):
            lines = [f"{g}={c}" for g, c in (baseline.get("choices") or {}).items() if c]
            lines = [ln for ln in lines if not ln.endswith("=none")]  # rerank: null
            # where the run happens (cache, MLflow) stays this study's
            keep = [o for o in fixed if not measures(o)]
            source = f"{path} ({config_summary(baseline)})"
            return [*lines, *keep], dict(baseline.get("config") or {}), source
        why = f"{path} was measured on another golden set"
    elif path is not None:
        why = f"{path} does not exist"
    shown = " ".join(masked(fixed)) or "no overrides"  # study.md, study.json, MLflow
    return list(fixed), None, f"the study's starting configuration (conf/ with {shown}; {why})"


def write_outcome(sweep_dir: Path, record: dict[str, Any], summary) -> None:
    """study.json (``record``) in ``sweep_dir``, and study.md when the study has a ``summary``."""
    from rageval.formats.atomic import atomic_write_text

    if summary is not None:
        from rageval.app.sweep import parent_run_id

        parent = parent_run_id(str(sweep_dir)) or "PARENT_RUN_ID"
        where = (
            f"\n\nStudy `{record['study']}` in `{record['storage']}`: run the same command to "
            "resume it (raise `hydra.sweeper.n_trials` for more trials). `rageval promote --best "
            f"{record['objective']} --sweep {parent}` promotes the best configuration only "
            "when the holdout confirms its gain.\n"
        )
        atomic_write_text(sweep_dir / "study.md", summary.markdown() + where)
    atomic_write_text(sweep_dir / STUDY_FILE, json.dumps(record, indent=2, default=str))
