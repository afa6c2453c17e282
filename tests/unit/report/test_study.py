"""rageval.report.study: the study's verdict from the final runs' per-query values."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.errors import InputError
from rageval.inputs.split import side_of
from rageval.report.study import StudySummary, summarise_study

IDS = [f"q{i:03d}" for i in range(300)]


def report(values: dict[str, float], metric: str = "ndcg@5") -> dict:
    return {
        "metrics": {metric: float(np.mean(list(values.values())))},
        "per_query": [{"id": q, metric: v} for q, v in values.items()],
    }


def summary(best, base, metric="ndcg@5", **kw):
    return summarise_study(
        metric,
        report(best, metric),
        report(base, metric),
        holdout_fraction=0.3,
        seed=0,
        alpha=0.05,
        best_trial=4,
        best_overrides=["chunk=128"],
        resamples=2000,
        **kw,
    )


def test_optimism_is_the_best_configurations_tune_mean_minus_its_holdout_mean():
    rng = np.random.default_rng(0)
    side = {q: side_of(q, 0.3) for q in IDS}
    # the best looks better on the queries it was tuned on than on the held-out ones
    best = {
        q: float(np.clip(rng.normal(0.7 if side[q] == "tune" else 0.6, 0.1), 0, 1)) for q in IDS
    }
    base = {q: float(np.clip(rng.normal(0.6, 0.1), 0, 1)) for q in IDS}
    s = summary(best, base)
    tune = [best[q] for q in IDS if side[q] == "tune"]
    hold = [best[q] for q in IDS if side[q] == "holdout"]
    assert s.optimism == pytest.approx(np.mean(tune) - np.mean(hold), abs=1e-12)
    assert s.optimism_low < s.optimism < s.optimism_high and s.optimism_low > 0
    assert s.best_tune.n == len(tune) and s.best_holdout.n == len(hold)
    assert s.best_holdout.mean == pytest.approx(np.mean(hold), abs=1e-12)
    assert s.delta == pytest.approx(
        np.mean(hold) - np.mean([base[q] for q in IDS if side[q] == "holdout"])
    )
    assert not s.confirmed  # the gain on tune does not carry over to the holdout
    gap = np.mean([base[q] for q in IDS if side[q] == "tune"]) - s.baseline_holdout.mean
    assert s.split_gap == pytest.approx(gap, abs=1e-12)
    assert f"the baseline's own tune - holdout: {gap:+.4f}" in s.optimism_line()
    assert "does not confirm" in s.verdict()


def test_a_real_gain_is_confirmed_and_a_loss_never_is():
    rng = np.random.default_rng(1)
    base = {q: float(rng.uniform(0.3, 0.7)) for q in IDS}
    better = {q: v + 0.1 for q, v in base.items()}
    s = summary(better, base)
    assert s.confirmed and s.p_value < 0.001 and s.wins == s.best_holdout.n and s.losses == 0
    assert "confirms the gain" in s.verdict()
    worse = {q: v - 0.1 for q, v in base.items()}
    assert not summary(worse, base).confirmed
    # round trip through study.json
    again = StudySummary.from_dict(s.to_dict())
    assert again == s and again.to_dict()["confirmed"] is True


def test_for_a_lower_is_better_metric_fewer_is_the_gain():
    base = {q: 1000.0 + i for i, q in enumerate(IDS)}
    fewer = {q: v - 100 for q, v in base.items()}
    s = summary(fewer, base, metric="tokens@5")
    assert s.delta == pytest.approx(100.0) and s.confirmed


def test_the_console_block_and_the_mlflow_metrics_carry_the_figures():
    rng = np.random.default_rng(2)
    base = {q: float(rng.uniform(0.3, 0.7)) for q in IDS}
    s = summary(
        {q: v + 0.05 for q, v in base.items()}, base, baseline_source="golden/baseline.json"
    )
    text = s.console()
    assert "best (trial 4)" in text and "baseline" in text and "chunk=128" in text
    assert f"optimism of the best (tune - holdout): {s.optimism:+.4f}" in text
    assert f"p = {s.p_value:.3g}" in text
    m = s.mlflow_metrics()
    assert m["study/optimism"] == s.optimism and m["study/holdout_confirmed"] == 1.0
    assert "| best (trial 4) |" in s.markdown()


def test_final_runs_without_the_metric_are_an_input_error():
    with pytest.raises(InputError, match="do not report ndcg@5 per query"):
        summarise_study(
            "ndcg@5",
            {"metrics": {"recall@5": 1.0}, "per_query": [{"id": "a", "recall@5": 1.0}]},
            {"metrics": {}, "per_query": []},
            holdout_fraction=0.3,
            seed=0,
            alpha=0.05,
            best_trial=0,
        )


def test_study_md_opens_with_the_verdict_and_counts_interrupted_trials_apart():
    rng = np.random.default_rng(3)
    base = {q: float(rng.uniform(0.3, 0.7)) for q in IDS}
    s = summary({q: v - 0.05 for q, v in base.items()}, base)
    s.trials = {"complete": 9, "failed": 1, "interrupted": 2}
    md = s.markdown().splitlines()
    assert md[0] == "## Tuning study: the holdout does not confirm a gain"
    assert "9 trials finished, 1 failed (2 interrupted and run again)" in md[2]
    header = next(line for line in md if line.startswith("| configuration"))
    assert f"holdout ({s.best_holdout.n} queries)" in header
    assert "9 trials finished, 1 failed (2 interrupted" in s.console().splitlines()[0]
    s.trials = {"complete": 3, "failed": 0}
    assert "interrupted" not in s.console()
