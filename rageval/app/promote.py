"""``rageval promote``: make a run the committed baseline, guarded against the wrong run.

The golden set (and corpus) a run is checked against is the one the *project* gates on, never
the run's own: ``--golden`` if given, else the dataset of the current baseline's configuration
(rebuilt on this machine, as ``rageval check`` would run it), else conf/'s default dataset. A run
measured on another golden set is refused unless ``--force``; ``--best`` only looks at runs
measured on that golden set and corpus (and label set), so a toy dataset logged in the same
experiment can never be promoted by accident. Metric names need a cutoff (``ndcg@5``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from rageval.embedding import canary
from rageval.errors import InputError, NotConfirmedError
from rageval.gate.baseline import (
    Baseline,
    config_summary,
    load_report,
    read_baseline,
    write_baseline,
)
from rageval.gate.labels import label_set, label_set_change
from rageval.report import provenance
from rageval.run.folder import check_complete
from rageval.scoring.spec import MetricSpec


@dataclass(frozen=True)
class ProjectData:
    """What the project gates on: golden-set and corpus digests, and where they came from."""

    golden: str | None
    corpus: str | None
    where: str
    # the current baseline's label set (gold, human, llm judgements, ppi), which a promoted run
    # must share; None when there is no baseline yet (the first promote sets it)
    labels: str | None = None


@dataclass(frozen=True)
class Promoted:
    """What ``promote`` wrote: baseline path, run id (None: a report file), report, metric."""

    path: Path
    run_id: str | None
    report: dict[str, Any]
    metric: str | None
    # what differs beneath from the baseline it replaced (rageval.report.provenance.diff)
    beneath: tuple[str, ...] = ()

    def summary(self) -> str:
        """What was promoted: run, config, headline metric (the --best metric first)."""
        m = self.metric or f"ndcg@{self.report.get('k', 5)}"
        value = self.report["metrics"].get(m)
        source = f"run {self.run_id}" if self.run_id else "the report file"
        shown = f"{m} = {value:.4f}" if isinstance(value, int | float) else f"{m} not recorded"
        lines = [
            f"promoted {source} to {self.path} ({self.path.stem}.per_query.csv beside it): "
            f"{config_summary(self.report)}; {len(self.report['per_query'])} queries; {shown}",
            self._canary_line(),
        ]
        if self.beneath:
            lines.append("changed beneath since the previous baseline: " + "; ".join(self.beneath))
        return "\n".join(lines)

    def _canary_line(self) -> str:
        block = self.report.get("canary")
        if block:
            return (
                f"embedding canary: {len(block.get('texts') or [])} texts' vectors in "
                f"{canary.sibling_path(self.path).name}; `rageval check` re-embeds them"
            )
        if self.report.get("provenance"):
            return "embedding canary: none (the run embeds nothing: no vector search)"
        return "embedding canary: none (the run was measured before rageval recorded one)"


def _dataset_digests(dataset: Mapping[str, Any]) -> tuple[str | None, str | None]:
    from rageval.inputs.corpus import corpus_digest, load_corpus
    from rageval.inputs.golden import load_golden

    if dataset.get("format") == "beir" or not dataset.get("golden"):
        return None, None
    golden = Path(str(dataset["golden"])).expanduser()
    corpus = Path(str(dataset.get("corpus") or "")).expanduser()
    if not golden.is_file():
        return None, None
    corpus_d = (
        corpus_digest(load_corpus(str(corpus)))
        if dataset.get("corpus") and corpus.exists()
        else None
    )
    return load_golden(str(golden)).digest, corpus_d


def _golden_digest(golden: str) -> str:
    """The digest of ``--golden``: a golden-set JSONL file, or a BEIR folder (``DIR`` for its
    test split, ``DIR:SPLIT`` for another), whose qrels are the golden set its runs score."""
    from rageval.inputs.beir import load_beir
    from rageval.inputs.golden import load_golden

    path, _, split = golden.rpartition(":") if ":" in golden else (golden, "", "")
    folder = Path(path or golden).expanduser()
    if folder.is_dir():
        return load_beir(folder, split or "test").golden.digest
    return load_golden(golden).digest


def project_data(baseline_path: str | Path, golden: str | None = None) -> ProjectData:
    """The golden set (and corpus) the project gates on; see the module docstring."""
    return _project(baseline_path, golden)[0]


def _project(baseline_path: str | Path, golden: str | None):
    """(:func:`project_data`, the config it composed to find the dataset, or None when it
    composed none): the config also says the configured MLflow experiment."""
    from omegaconf import OmegaConf

    if golden:
        previous = _previous(baseline_path)
        labels = previous.label_set if previous is not None else None
        return ProjectData(_golden_digest(golden), None, f"--golden {golden}", labels), None
    from rageval.app.replay import compose_from_baseline

    if Path(baseline_path).is_file():
        current = read_baseline(baseline_path)
        labels = current.label_set
        digests = current.digests
        if not current.config:  # a baseline that does not record its dataset: its digests
            where = f"the current baseline {baseline_path}"
            found = ProjectData(
                digests.get("golden") or None, digests.get("corpus") or None, where, labels
            )
            return found, None
        # the baseline's run rebuilt as `rageval check` would run it (MLflow settings are this
        # machine's, never replayed)
        cfg = compose_from_baseline(current, [])
        dataset = OmegaConf.to_container(cfg.dataset, resolve=True)
        g, c = _dataset_digests(dataset)
        if g:
            where = f"the current baseline's dataset ({dataset['golden']})"
            return ProjectData(g, c, where, labels), cfg
        where = f"the current baseline {baseline_path}"
        return ProjectData(digests.get("golden"), digests.get("corpus"), where, labels), cfg
    cfg = compose_from_baseline(None, [])
    dataset = OmegaConf.to_container(cfg.dataset, resolve=True)
    g, c = _dataset_digests(dataset)
    where = f"the configured dataset.golden ({dataset.get('golden')})"
    return ProjectData(g, c, where), cfg


def promote(
    run: str | None,
    baseline: str,
    *,
    best: str | None = None,
    experiment: str | None = None,
    sweep: str | None = None,
    golden: str | None = None,
    force: bool = False,
    uri: str | None = None,
) -> Promoted:
    """Write the baseline from a run id, a report.json path or the best run; returns what was
    promoted. Refuses (InputError) a run measured on another golden set unless ``force``.
    ``experiment`` (searched by ``best``): default the configured ``mlflow.experiment``."""
    spec = MetricSpec.parse(best) if best else None  # a name without @k is an error listing choices
    project, cfg = _project(baseline, golden)
    if cfg is None and (experiment is None or spec is not None):
        from rageval.app.replay import compose_from_baseline

        cfg = compose_from_baseline(None, [])  # the configured experiment and label set
    if experiment is None:  # the configured one: from the config composed above, or conf/'s
        experiment = str(cfg.mlflow.experiment)
    if spec is not None and project.labels is None:  # --best with no baseline yet: the runs
        # measured with the configured label set
        project = replace(project, labels=str(cfg.get("labels") or "gold"))
    client, run_id = None, None
    if run and Path(run).is_dir():  # a run folder: its report
        run = str(Path(run) / "report.json")
    if run and Path(run).is_file():
        check_complete(run)  # not a failed or unfinished run's leftover report.json
        report = load_report(run)
    else:
        if run and _names_a_file(run):
            check_complete(run)  # a failed run removed its report: say that it failed
            raise InputError(
                "no such report file; give the report.json of a finished run, or an MLflow run id",
                path=run,
            )
        from rageval.tracking.client import client_for, tracking_uri
        from rageval.tracking.lookups import fetch_report

        client = client_for(tracking_uri(uri), lookup=True)
        run_id = _run_to_promote(client, run, spec, project, experiment, sweep, force)
        report = fetch_report(client, run_id, load_report)
    _refuse_another_measure(report, project, force)
    source = {
        "run_id": run_id or report.get("mlflow_run_id"),
        "file": run if client is None else None,
        "promoted_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if spec is not None:  # the metric it won by: the check gates it too (gate.promoted_metric)
        source["metric"] = str(spec)
    previous = _previous(baseline)
    path = write_baseline(report, baseline, source)
    beneath = (
        tuple(provenance.diff(previous.provenance, report.get("provenance")))
        if previous is not None
        else ()
    )
    if client is not None and run_id:
        from rageval.tracking.lookups import move_baseline_tag

        move_baseline_tag(client, run_id)
    return Promoted(path, run_id, report, str(spec) if spec else None, beneath)


def _names_a_file(run: str) -> bool:
    """``run`` is written as a path (a folder in it, or a .json name), never an MLflow run id."""
    return run.endswith(".json") or "/" in run or os.sep in run


def _previous(baseline: str) -> Baseline | None:
    """The baseline a promote replaces (None: none, or one that no longer reads)."""
    try:
        return read_baseline(baseline) if Path(baseline).is_file() else None
    except InputError:
        return None


def _run_to_promote(
    client, run, spec, project: ProjectData, experiment: str, sweep, force: bool
) -> str:
    """The MLflow run id to promote: a study's confirmed best (``--best`` with a study's parent
    as ``--sweep``), the best run on the project's golden set (``--best``), or ``run``."""
    from rageval.tracking import lookups
    from rageval.tracking.study import study_parent_tags

    study = study_parent_tags(client, sweep) if spec is not None and sweep else None
    if study is not None:  # a tuning study: its best, when the holdout confirms it
        return confirm_for_promote(client, sweep, study, str(spec), force)
    if spec is not None:
        found = lookups.best_run(
            client,
            experiment,
            spec.mlflow_key,
            golden_digest=project.golden,
            corpus_digest=project.corpus,
            sweep=sweep,
            label_set=project.labels,
        )
        if found is None:
            total = lookups.count_runs(client, experiment, sweep)
            measured = lookups.measured_on(client, experiment, sweep)
            raise InputError(
                f"none of the {total} finished runs in {experiment!r}"
                f"{' sweep ' + sweep if sweep else ''} has {spec} measured on the golden set "
                f"(digest {(project.golden or '?')[:12]}) and corpus (digest "
                f"{(project.corpus or 'any')[:12]}) of {project.where}"
                f"{what_differs(measured, project)}; run the evaluation on them, or pass "
                "--golden for another golden set"
            )
        return found.info.run_id
    if run:
        return run
    raise InputError("name a run: rageval promote RUN_ID, a report.json path, or --best METRIC")


def what_differs(measured: Mapping[str, list[str]], project: ProjectData) -> str:
    """``: 4 runs were measured on that golden set but another corpus (digest 1a2b...)``: which
    digest keeps the finished runs out (``measured``: rageval.tracking.lookups.measured_on)."""
    parts = []
    for key, runs in sorted(measured.items(), key=lambda kv: -len(kv[1])):
        golden, corpus, labels = key.split(" ")
        why = []
        if project.golden and golden != project.golden:
            why.append(f"another golden set (digest {golden[:12] or 'not recorded'})")
        if project.corpus and corpus != project.corpus:
            why.append(f"another corpus (digest {corpus[:12] or 'not recorded'})")
        if project.labels and labels != project.labels:
            why.append(f"the {labels!r} label set")
        if why:
            parts.append(f"{len(runs)} on {' and '.join(why)}")
    return ": " + "; ".join(parts) if parts else ""


def _refuse_another_measure(report: Mapping[str, Any], project: ProjectData, force: bool) -> None:
    """InputError (unless ``force``) for a run measured on another golden set, on one side of a
    split only, or with another label set than the baseline."""
    then = report["digests"].get("golden", "")
    if project.golden and then != project.golden and not force:
        raise InputError(
            f"the run was measured on another golden set (digest {then[:12]}) than the project "
            f"gates on ({project.golden[:12]}, from {project.where}); re-run it on that golden "
            "set, pass --golden for another one, or --force"
        )
    split = report.get("split") or {}
    if split.get("name", "all") != "all" and not force:
        raise InputError(
            f"the run scored only the {split['name']} side of the golden-set split "
            f"({split.get('queries')} of {split.get('of')} queries); a baseline scores every "
            "golden query: promote a study with --best METRIC --sweep PARENT_RUN_ID, re-run the "
            "configuration with split=all, or pass --force"
        )
    labels = project.labels and label_set_change(project.labels, label_set(report), "promote")
    if labels and not force:
        raise InputError(labels)


def confirm_for_promote(
    client, parent: str, tags: Mapping[str, str], metric: str, force: bool
) -> str:
    """The run to promote for a study's parent run (``parent``, its ``tags``): its best
    configuration scored on every golden query, when the holdout confirms its gain over the
    baseline (one-sided paired test at the gate's alpha) or ``force``; else NotConfirmedError
    (exit 1) saying why."""
    from rageval.report.study import summarise_study
    from rageval.tracking.lookups import fetch_report
    from rageval.tracking.study import (
        TAG_ALPHA,
        TAG_BASELINE_RUN,
        TAG_BEST_RUN,
        TAG_BEST_TRIAL,
        TAG_FRACTION,
        TAG_OBJECTIVE,
        TAG_SEED,
        TAG_STUDY,
    )

    objective = tags.get(TAG_OBJECTIVE)
    if objective and objective != metric:
        raise InputError(
            f"study {tags.get(TAG_STUDY)!r} was decided by {objective}, so its best configuration "
            f"is best by that metric only: rageval promote --best {objective} --sweep "
            f"{parent}"
        )
    best_id, base_id = tags.get(TAG_BEST_RUN), tags.get(TAG_BASELINE_RUN)
    if not best_id or not base_id:
        raise InputError(
            f"study {tags.get(TAG_STUDY)!r} (parent run {parent}) has no holdout "
            "evaluation (did a trial finish, and did the study run to its end?); run the study "
            "again to resume it"
        )
    summary = summarise_study(
        metric,
        fetch_report(client, best_id, load_report),
        fetch_report(client, base_id, load_report),
        holdout_fraction=float(tags[TAG_FRACTION]),
        seed=int(tags[TAG_SEED]),
        alpha=float(tags[TAG_ALPHA]),
        best_trial=int(tags.get(TAG_BEST_TRIAL, -1)),
    )
    if summary.confirmed or force:
        return best_id
    raise NotConfirmedError(
        f"not promoted: the best configuration of study {tags.get(TAG_STUDY)!r} (trial "
        f"{summary.best_trial}) scored {summary.best_tune.mean:.4f} on the tune queries and "
        f"{summary.best_holdout.mean:.4f} on the holdout, the baseline "
        f"{summary.baseline_holdout.mean:.4f}; {summary.verdict()}; keep the baseline, grow the "
        "golden set, or pass --force"
    )
