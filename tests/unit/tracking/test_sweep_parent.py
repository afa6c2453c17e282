"""rageval.tracking.sweep and a study's outcome on the sweep's parent run: a resumed study logs
on the same parent, whose params MLflow will not change."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rageval.report.study import Score, StudySummary
from rageval.tracking.study import TAG_BEST_CONFIG, log_outcome
from rageval.tracking.sweep import summarise_sweep


class ParamsOnceClient:
    """Records what a run gets; like MLflow, refuses to change a logged param's value."""

    def __init__(self):
        self.params: dict[str, dict[str, str]] = {}
        self.tags: dict[str, dict[str, str]] = {}
        self.metrics: dict[str, dict[str, float]] = {}

    def log_batch(self, run_id, metrics=(), params=(), tags=()):
        logged = self.params.setdefault(run_id, {})
        for p in params:
            if logged.get(p.key, p.value) != p.value:
                raise ValueError(f"Changing param values is not allowed ({p.key})")
            logged[p.key] = p.value
        self.tags.setdefault(run_id, {}).update({t.key: t.value for t in tags})
        self.metrics.setdefault(run_id, {}).update({m.key: m.value for m in metrics})

    def set_tag(self, run_id, key, value):
        self.tags.setdefault(run_id, {})[key] = value

    def log_artifact(self, run_id, path):
        pass

    def get_run(self, run_id):
        return SimpleNamespace(
            info=SimpleNamespace(experiment_id="1"),
            data=SimpleNamespace(
                metrics={"ndcg_at_5": 0.5},
                params=self.params.get(run_id, {}),
                tags=self.tags.get(run_id, {}),
            ),
        )


def rows(k1: str, run: str):
    return [
        {
            "job": 0,
            "status": "ok",
            "overrides": ["search=bm25", f"search.bm25.k1={k1}", "split=tune"],
            "metrics": {"ndcg@5": 0.5},
            "run_id": run,
        },
        {
            "job": 1,
            "status": "ok",
            "overrides": ["search=bm25", "search.bm25.k1=0.9", "split=tune"],
            "metrics": {"ndcg@5": 0.1},
            "run_id": f"{run}-other",
        },
    ]


def outcome(k1: str, trial_run: str) -> dict:
    score = Score(0.5, 0.4, 0.6, 10)
    summary = StudySummary(
        metric="ndcg@5",
        best_trial=3,
        best_overrides=["search=bm25", f"search.bm25.k1={k1}"],
        best_tune=score,
        best_holdout=score,
        baseline_tune=score,
        baseline_holdout=score,
        optimism=0.0,
        optimism_low=-0.1,
        optimism_high=0.1,
        delta=0.0,
        p_value=0.5,
        alpha=0.05,
        wins=1,
        ties=8,
        losses=1,
        split={"holdout_fraction": 0.3, "seed": 0, "tune": 10, "holdout": 10, "of": 20},
    )
    return {
        "study": "s",
        "storage": "sqlite:///optuna.db",
        "objective": "ndcg@5",
        "best_trial": 3,
        "best_trial_run_id": trial_run,
        "trial_run_names": {trial_run: f"trial 3: search.bm25.k1={k1}"},
        "summary": summary.to_dict(),
    }


def test_a_resumed_studys_parent_takes_its_new_best_without_changing_a_param(tmp_path):
    client = ParamsOnceClient()
    for k1, run in (("1.2", "a"), ("1.8", "b")):  # the first part, then the resumed one
        summarise_sweep(
            client,
            "parent",
            rows(k1, run),
            compare_metric="ndcg@5",
            sweep_dir=tmp_path,
            uri="sqlite:///mlflow.db",
            swept_params=False,
        )
        (tmp_path / "study.json").write_text("{}")
        study_file = tmp_path / "study.json"
        log_outcome(client, "parent", study_file, outcome(k1, run), uri="sqlite:///mlflow.db")
    tags = client.tags["parent"]
    assert tags[TAG_BEST_CONFIG] == "search=bm25 search.bm25.k1=1.8"
    assert tags["rageval.best_run_id"] == "b" and tags["rageval.best_run_url"].endswith("/runs/b")
    assert client.params.get("parent", {}) == {}
    # the runs table names the study and each trial by its number (the sweep named them by job)
    assert tags["mlflow.runName"] == "study s"
    assert client.tags["b"]["mlflow.runName"] == "trial 3: search.bm25.k1=1.8"
    # a plain sweep's parent still gets the best job's swept values as params (one command)
    summarise_sweep(
        client, "sweep", rows("1.2", "c"), compare_metric="ndcg@5", sweep_dir=tmp_path, uri=""
    )
    assert client.params["sweep"] == {"search.bm25.k1": "1.2"}
    with pytest.raises(ValueError, match="Changing param values"):  # what a study would hit
        summarise_sweep(
            client, "sweep", rows("1.8", "d"), compare_metric="ndcg@5", sweep_dir=tmp_path, uri=""
        )


def test_the_sweeps_view_lists_its_jobs_only_best_first_with_its_columns_in_order():
    from rageval.tracking.sweep import RUN_NAME_COLUMN, sweep_view_state

    job = SimpleNamespace(
        metrics={
            "span/evidence_precision_at_5": 0.1,
            "headline/ndcg_at_5": 0.9,
            "headline/recall_at_5": 0.8,
            "costs/tokens_at_5": 130.0,
            "costs/tokens_at_5_ci_low": 120.0,
            "costs/latency_p95_ms": 0.2,
        },
        params={"chunk": "32", "search.bm25.b": "0.75"},
    )
    names = ["chunk=32 search.bm25.b=0.75 #0", "chunk=64 search.bm25.b=0.2 #3"]
    state = sweep_view_state(
        "abc123",
        "evidence_precision@5",
        job,
        ["chunk", "search.bm25.b", "hydra.launcher"],  # a key no job logged as a param: no column
        ["ndcg@5", "recall@5", "mrr@5"],  # mrr@5 not logged: no column
        names,
    )
    assert state["searchFilter"] == "tags.`mlflow.parentRunId` = 'abc123'"
    decided = "metrics.`span/evidence_precision_at_5`"
    assert state["orderByKey"] == decided and state["orderByAsc"] is False
    assert state["selectedColumns"] == [
        "tags.`rageval.verdict`",
        "params.`chunk`",
        "params.`search.bm25.b`",
        decided,
        "metrics.`headline/ndcg_at_5`",
        "metrics.`headline/recall_at_5`",
        "metrics.`costs/tokens_at_5`",
        "metrics.`costs/latency_p95_ms`",
    ]
    assert state["columnOrder"] == [RUN_NAME_COLUMN, *state["selectedColumns"]]
    widths = state["columnWidths"]
    assert widths[decided] >= 7 * len("span/evidence_precision_at_5")  # the header reads whole
    assert widths[RUN_NAME_COLUMN] >= 7 * len(names[0])
    # the chart view opens on the deciding metric, its section kept first
    charts = state["compareRunCharts"]
    assert charts[0]["type"] == "BAR" and charts[0]["metricKey"] == decided[9:-1]
    assert charts[1]["type"] == "PARALLEL" and charts[1]["selectedParams"] == [
        "chunk",
        "search.bm25.b",
    ]
    assert state["isAccordionReordered"] is True
    assert {c["metricSectionId"] for c in charts} == {
        s["uuid"] for s in state["compareRunSections"]
    }
