"""What a tuning study found, and whether the holdout confirms it.

A study tunes on the tune side of the golden-set split (rageval.inputs.split) and then scores its
best configuration and the baseline's on every query. From those two runs' per-query values:

- best and baseline on tune and on holdout (means with 95% bootstrap CIs);
- the optimism: the best configuration's tune score minus its holdout score (how much of the
  tuned score came from choosing among many configurations on the very same queries), with a 95%
  bootstrap CI over the two independent query sets;
- the paired randomization test of best vs baseline on the holdout queries, one-sided ("the best
  is no better than the baseline"), with win/tie/loss counts: the holdout confirms the gain when
  it rejects at the gate's alpha.

For a metric where lower is better (``tokens@k``) "better" and the optimism are read downwards.
:func:`summarise_study` returns a :class:`StudySummary`; ``console()``, ``markdown()``,
``to_dict()`` and ``mlflow_metrics()`` are views of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from rageval.config_schema import GateConfig
from rageval.errors import InputError
from rageval.inputs.split import HOLDOUT, TUNE, side_of
from rageval.report.table import Column, Table
from rageval.scoring.spec import MetricSpec
from rageval.scoring.stats import bootstrap_ci, difference_ci, paired_randomization_test


@dataclass
class Score:
    """A mean over one side of the split, with its 95% bootstrap CI and query count."""

    mean: float
    low: float
    high: float
    n: int

    def __str__(self) -> str:
        from rageval.report.table import mean_ci

        return mean_ci(self.mean, self.low, self.high, 4, 4)


@dataclass
class StudySummary:
    """The study's verdict (see the module docstring)."""

    metric: str
    best_trial: int
    best_overrides: list[str]
    best_tune: Score
    best_holdout: Score
    baseline_tune: Score
    baseline_holdout: Score
    optimism: float
    optimism_low: float
    optimism_high: float
    delta: float  # best - baseline on holdout (in the metric's own direction: + is better)
    p_value: float  # one-sided paired randomization test on holdout
    alpha: float
    wins: int
    ties: int
    losses: int
    baseline_source: str = ""
    trials: dict[str, int] = field(default_factory=dict)
    split: dict[str, Any] = field(default_factory=dict)

    @property
    def confirmed(self) -> bool:
        """True when the holdout confirms the gain: the one-sided test rejects at ``alpha``."""
        return self.delta > 0 and self.p_value < self.alpha

    def verdict(self) -> str:
        """One sentence: does the holdout confirm the best configuration's gain?"""
        test = (
            f"{self.metric} on {self.best_holdout.n} holdout queries: best - baseline = "
            f"{self.delta:+.4f}, p = {self.p_value:.3g} (one-sided paired randomization test, "
            f"win/tie/loss {self.wins}/{self.ties}/{self.losses})"
        )
        if self.confirmed:
            return f"the holdout confirms the gain at alpha {self.alpha}: {test}"
        return f"the holdout does not confirm a gain at alpha {self.alpha}: {test}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready data (study.json, the parent run's artifact)."""
        return {**asdict(self), "confirmed": self.confirmed}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StudySummary:
        """The summary ``to_dict`` wrote."""
        d = {k: v for k, v in data.items() if k != "confirmed"}
        for key in ("best_tune", "best_holdout", "baseline_tune", "baseline_holdout"):
            d[key] = Score(**d[key])
        return cls(**d)

    def rows(self) -> list[tuple[str, str, str]]:
        """(configuration, tune, holdout) for the console and markdown tables."""
        return [
            (f"best (trial {self.best_trial})", str(self.best_tune), str(self.best_holdout)),
            ("baseline", str(self.baseline_tune), str(self.baseline_holdout)),
        ]

    @property
    def split_gap(self) -> float:
        """The baseline's own tune - holdout difference: what the two query sets differ by
        without any tuning (in the metric's direction)."""
        sign = 1.0 if MetricSpec.parse(self.metric).higher_is_better else -1.0
        return sign * (self.baseline_tune.mean - self.baseline_holdout.mean)

    def optimism_line(self) -> str:
        """The optimism with its CI, and the baseline's own gap beside it, in words."""
        return (
            f"optimism of the best (tune - holdout): {self.optimism:+.4f} "
            f"[{self.optimism_low:+.4f}, {self.optimism_high:+.4f}] (95% bootstrap CI); "
            f"the baseline's own tune - holdout: {self.split_gap:+.4f}"
        )

    def trials_line(self) -> str:
        """How many trials finished and failed (and were interrupted, then run again)."""
        t = self.trials
        line = f"{t.get('complete', 0)} trials finished, {t.get('failed', 0)} failed"
        if t.get("interrupted"):
            line += f" ({t['interrupted']} interrupted and run again)"
        if t.get("repeated"):
            line += (
                f"; {t['repeated']} drew the configuration of an earlier trial and took its "
                "value without running"
            )
        return line

    def split_line(self) -> str:
        """The split the study tuned on, in words."""
        s = self.split
        return (
            f"the tune split ({s.get(TUNE)} of {s.get('of')} queries; holdout {s.get(HOLDOUT)}, "
            f"holdout_fraction {s.get('holdout_fraction')}, split_seed {s.get('seed')})"
        )

    def console(self) -> str:
        """The study's block for the console, after the leaderboard of its trials."""
        lines = [
            f"Study decided by {self.metric} on {self.split_line()}; {self.trials_line()}",
            f"best: trial {self.best_trial} ({' '.join(self.best_overrides) or 'no overrides'})",
            f"baseline: {self.baseline_source}",
            "",
        ]
        table = Table([Column(""), Column("tune"), Column("holdout")])
        for row in self.rows():
            table.add_row(*row)
        lines += [table.console(indent=2)]
        lines += ["", self.optimism_line(), self.verdict()]
        return "\n".join(lines)

    def markdown(self) -> str:
        """The same as Markdown, the verdict first (study.md, the parent run's description)."""
        s = self.split
        outcome = "confirms the gain" if self.confirmed else "does not confirm a gain"
        lines = [
            f"## Tuning study: the holdout {outcome}",
            "",
            f"Decided by `{self.metric}` on {self.split_line()}; {self.trials_line()}.",
            "",
            f"- **Best**: trial {self.best_trial} (`{' '.join(self.best_overrides)}`)",
            f"- **Baseline**: {self.baseline_source}",
            "",
        ]
        table = Table(
            [
                Column("configuration"),
                Column(f"tune ({s.get(TUNE)} queries)", "right"),
                Column(f"holdout ({s.get(HOLDOUT)} queries)", "right"),
            ]
        )
        for row in self.rows():
            table.add_row(*row)
        lines += [table.markdown().rstrip("\n")]
        lines += [
            "",
            f"Means of `{self.metric}` over every query of each side, with 95% bootstrap CIs. The "
            "best configuration and the baseline's were each scored on every golden query after "
            "the search; the holdout queries took no part in choosing the best.",
            "",
            f"- **Optimism** {self.optimism_line().removeprefix('optimism ')}. The best's tune "
            "score overstates what it "
            "does on new queries by this much; the baseline's own gap is what the two query "
            "sets differ by without any tuning.",
            f"- **Holdout test**: {self.verdict()}.",
        ]
        return "\n".join(lines)

    def mlflow_metrics(self) -> dict[str, float]:
        """The figures as MLflow metrics, in a ``study/`` section."""
        out = {
            "study/best_tune": self.best_tune.mean,
            "study/best_holdout": self.best_holdout.mean,
            "study/best_holdout_ci_low": self.best_holdout.low,
            "study/best_holdout_ci_high": self.best_holdout.high,
            "study/baseline_tune": self.baseline_tune.mean,
            "study/baseline_holdout": self.baseline_holdout.mean,
            "study/optimism": self.optimism,
            "study/optimism_ci_low": self.optimism_low,
            "study/optimism_ci_high": self.optimism_high,
            "study/baseline_gap": self.split_gap,
            "study/holdout_delta": self.delta,
            "study/holdout_p_value": self.p_value,
            "study/holdout_confirmed": float(self.confirmed),
        }
        return {k: float(v) for k, v in out.items()}


def per_query(report: Mapping[str, Any], metric: str) -> dict[str, float]:
    """Query id -> value of ``metric`` in a report.json (queries where it is undefined left out)."""
    return {
        r["id"]: float(r[metric]) for r in report.get("per_query", []) if r.get(metric) is not None
    }


def _score(values: Sequence[float], resamples: int) -> Score:
    v = np.asarray(values, dtype=float)
    lo, hi = bootstrap_ci(v, n_resamples=resamples)
    return Score(float(v.mean()), lo, hi, int(v.size))


def summarise_study(
    metric: str,
    best: Mapping[str, Any],
    baseline: Mapping[str, Any],
    *,
    holdout_fraction: float,
    seed: int,
    alpha: float,
    best_trial: int,
    best_overrides: Sequence[str] = (),
    resamples: int = GateConfig.resamples,
    baseline_source: str = "",
    trials: Mapping[str, int] | None = None,
) -> StudySummary:
    """The verdict from ``best`` and ``baseline``: two report.json dicts that scored every golden
    query (split=all); each query's side comes from ``holdout_fraction`` and ``seed``."""
    spec = MetricSpec.parse(metric)
    name = str(spec)
    sign = 1.0 if spec.higher_is_better else -1.0
    a, b = per_query(best, name), per_query(baseline, name)
    if not a or not b:
        have = sorted(best.get("metrics", {}))
        raise InputError(
            f"the study's final runs do not report {name} per query (they report: "
            f"{', '.join(have[:12])}...); decide the study by one of those"
        )
    side = {q: side_of(q, holdout_fraction, seed) for q in set(a) | set(b)}
    tune = [q for q in sorted(a) if side[q] == TUNE]
    hold = [q for q in sorted(set(a) & set(b)) if side[q] == HOLDOUT]
    tune_b = [q for q in sorted(b) if side[q] == TUNE]
    if not tune or not hold or not tune_b:
        raise InputError(
            f"the split (holdout_fraction={holdout_fraction}, split_seed={seed}) leaves "
            f"{len(tune)} tune and {len(hold)} holdout queries with {name}: a study needs both"
        )
    x = np.array([a[q] for q in hold])
    y = np.array([b[q] for q in hold])
    d = sign * (x - y)
    tune_a = np.array([a[q] for q in tune])
    lo, hi = difference_ci(sign * tune_a, sign * x, n_resamples=min(resamples, 4000))
    return StudySummary(
        metric=name,
        best_trial=int(best_trial),
        best_overrides=list(best_overrides),
        best_tune=_score(tune_a, 2000),
        best_holdout=_score(x, 2000),
        baseline_tune=_score([b[q] for q in tune_b], 2000),
        baseline_holdout=_score(y, 2000),
        optimism=float(sign * (tune_a.mean() - x.mean())),
        optimism_low=lo,
        optimism_high=hi,
        delta=float(d.mean()),
        p_value=paired_randomization_test(
            sign * x, sign * y, n_resamples=resamples, alternative="greater"
        ),
        alpha=float(alpha),
        wins=int((d > 0).sum()),
        ties=int((d == 0).sum()),
        losses=int((d < 0).sum()),
        baseline_source=baseline_source,
        trials=dict(trials or {}),
        split={
            "holdout_fraction": holdout_fraction,
            "seed": seed,
            TUNE: len(tune),
            HOLDOUT: len(hold),
            "of": len(side),
        },
    )
