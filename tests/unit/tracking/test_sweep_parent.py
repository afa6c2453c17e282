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
