"""One gated change, measured the one way the gate measures it: for a headline metric
(rageval.gate.compare) and for a gated slice (rageval.gate.slices) alike.

:func:`measure` pairs the baseline's and the run's per-query values (queries where either is
missing left out), runs the paired randomization test and counts wins, ties and losses;
:func:`finish` adds the interval on the change (the paired t interval, widened by a skewness
correction: rageval.scoring.power.bounds) and the drop the queries detect with 80% power;
:func:`verdict` decides from the interval and the Holm-adjusted p-value (docs/gate.md).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rageval.scoring.spec import MetricSpec
from rageval.scoring.stats import paired_randomization_test

# neither shown within tolerance nor shown beyond it: the golden set cannot tell
INCONCLUSIVE = "inconclusive"
EPS = 1e-12


@dataclass
class Change:
    """What the gate decides from, for one metric (of the whole set or one slice): the
    per-metric fields MetricRow and SliceRow share."""

    metric: str
    baseline: float
    current: float
    delta: float  # current - baseline
    tolerance: float
    p_value: float  # raw until the family's Holm adjustment replaces it
    verdict: str = "ok"  # "regressed", "improved", "ok", "inconclusive"
    wins: int = 0
    ties: int = 0
    losses: int = 0
    # the smallest change these queries detect with 80% power (two-sided paired t-test at the
    # gate's alpha), and how many queries would detect a change of the tolerance
    # (rageval.scoring.power); nan and None with fewer than 2 queries
    detects: float = float("nan")
    needed: int | None = None
    # the (1 - alpha) interval on the change (current - baseline): rageval.scoring.power.bounds
    low: float = float("nan")
    high: float = float("nan")

    def line(self) -> str:
        """``ndcg@5 -0.012 [-0.041, +0.017]; detects a drop of 0.052 with 80% power; tolerance
        0.03 (about 500 queries would decide)``."""
        from rageval.scoring.power import describe

        needed = self.needed if self.verdict == INCONCLUSIVE else None
        return describe(
            self.metric, self.delta, self.low, self.high, self.detects, 0.8, self.tolerance, needed
        )


@dataclass
class Pairs:
    """A metric's paired per-query values: ``d`` = current - baseline, ``base`` the baseline's,
    ``p`` the (unadjusted) paired randomization p-value."""

    d: np.ndarray
    base: np.ndarray
    p: float

    def counts(self) -> tuple[int, int, int]:
        """(wins, ties, losses): the queries that went up, stayed, went down."""
        d = self.d
        return int((d > EPS).sum()), int((abs(d) <= EPS).sum()), int((d < -EPS).sum())


def measure(a: np.ndarray, b: np.ndarray, resamples: int) -> Pairs:
    """Pair baseline values ``a`` with current ``b`` (nan = not measured: left out) and test."""
    ok = ~(np.isnan(a) | np.isnan(b))
    p = paired_randomization_test(a[ok], b[ok], n_resamples=resamples, seed=0) if ok.any() else 1.0
    return Pairs(b[ok] - a[ok], a[ok], float(p))


def finish(c: Change, pairs: Pairs, alpha: float) -> None:
    """Fill ``c``'s interval (centred on its ``delta``, the means over every query) and its
    detectable drop from the paired differences."""
    from rageval.scoring.power import interval, mde, one_run_sd, queries_needed

    c.wins, c.ties, c.losses = pairs.counts()
    below, above = interval(pairs.d, alpha)
    c.low, c.high = c.delta + below, c.delta + above
    d = pairs.d
    if d.size < 2:
        c.detects, c.needed = float("nan"), None
        return
    sd = float(d.std(ddof=1))
    if sd == 0:  # no query changed (a re-run of the baseline's config): the one-run bound
        sd = one_run_sd(pairs.base)
    c.needed = queries_needed(sd, c.tolerance, alpha) if c.tolerance > 0 else None
    c.detects = mde(sd, int(d.size), alpha)


def verdict(c: Change, p_adj: float, alpha: float) -> str:
    """A gated change's verdict from its interval and its Holm-adjusted paired randomization
    test (docs/gate.md): ``ok`` when the interval's worse end is within tolerance
    (non-inferiority shown; ``improved`` when the gain beyond tolerance is also significant),
    ``regressed`` when the change is worse than the tolerance and established (the test rejects
    no change, or the whole interval lies beyond the tolerance), ``inconclusive`` otherwise. A
    cost (tokens@k, lower is better) is read in its better direction; a change not measured
    (nan) is ``ok``: there is nothing to decide."""
    better = MetricSpec.parse(c.metric).higher_is_better
    gain = c.delta if better else -c.delta
    if math.isnan(gain):
        return "ok"
    worst = c.low if better else -c.high  # the interval's worse end, as a gain
    best = c.high if better else -c.low  # and its better end
    if not math.isfinite(worst):  # one query: no interval, the tolerance alone
        worst = best = gain
    beyond = -c.tolerance - EPS
    if gain < beyond and (p_adj < alpha or best < beyond):
        return "regressed"
    if worst > beyond:
        return "improved" if gain > c.tolerance + EPS and p_adj < alpha else "ok"
    return INCONCLUSIVE


def human_values(rows: list, metric: str) -> np.ndarray:
    """The people's per-query values of ``metric`` in a ``labels=ppi`` report's rows (nan where
    a query is not in the human sample; rageval.report.ppi_report)."""
    key = f"human:{metric}"
    return np.array([np.nan if r.get(key) is None else float(r[key]) for r in rows])


def finish_ppi(
    c: Change, pairs: Pairs, human_d: np.ndarray, alpha: float, interval: str | None = None
) -> None:
    """``labels=ppi``: the change estimated like the metrics (rageval.scoring.ppi): the PPI++
    estimate of the mean paired difference from the LLM-label differences of every query
    (``pairs.d``) and the human-label ones of the sampled queries (``human_d``, nan elsewhere),
    its ``1 - alpha`` interval (``interval``: ``t``, Student-t with Welch-Satterthwaite df, or
    ``z``, ppi_py's normal one; None: the default), the matching test's p-value (the same
    distribution and df, so it is below ``alpha`` exactly when the interval leaves out 0) and
    the drop it detects with 80% power (``(q(1 - alpha/2) + q(0.8)) * se``, that distribution's
    quantiles)."""
    from rageval.errors import InputError
    from rageval.scoring.ppi import DEFAULT_INTERVAL, ppi_mean, quantile, tail

    interval = interval or DEFAULT_INTERVAL
    sampled = ~np.isnan(human_d)
    if sampled.sum() < 2 or sampled.all():
        raise InputError(
            f"{c.metric}: {int(sampled.sum())} of the {human_d.size} compared queries are "
            "human-graded in both the baseline and this run; labels=ppi needs at least 2, and "
            "queries outside the sample"
        )
    est = ppi_mean(
        human_d[sampled], pairs.d[sampled], pairs.d[~sampled], alpha=alpha, interval=interval
    )
    c.wins, c.ties, c.losses = pairs.counts()
    c.delta = est.ppi.estimate
    c.low, c.high = est.ppi.low, est.ppi.high
    se, df = est.ppi.se, est.ppi.df
    c.p_value = float(2 * tail(abs(c.delta) / se, df)) if se > 0 else float(c.delta == 0)
    c.detects = float((quantile(1 - alpha / 2, df) + quantile(0.8, df)) * se)
    c.needed = None
