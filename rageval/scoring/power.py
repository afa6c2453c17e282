"""What a paired comparison of two runs can tell: the interval on the mean difference, the
smallest drop the golden set detects, and how many queries a set needs.

Two runs scored on the same queries give per-query differences ``d = current - baseline``. With
``n`` queries and ``s`` the standard deviation of ``d``:

- the **interval**: the paired t interval ``mean(d) +- t(1 - alpha/2, n - 1) * s / sqrt(n)``,
  widened on the side where Hall's skewness correction reaches further (:func:`bounds`);
- the **paired t-test** p-value of ``mean(d) = 0`` (two-sided), as ``scipy.stats.ttest_rel``;
- the **minimum detectable effect** (MDE) at power ``P``: the smallest true drop ``delta`` the
  two-sided paired t-test at ``alpha`` rejects with probability ``P``, from the noncentral t
  distribution with ``n - 1`` degrees of freedom and noncentrality ``delta * sqrt(n) / s``;
  for large ``n`` it is the textbook ``(z(1 - alpha/2) + z(P)) * s / sqrt(n)``;
- the **queries needed** to detect a drop ``D``: the smallest ``n`` whose MDE is at most ``D``.

This is topic-set-size design as Sakai (2016) and Webber, Moffat & Zobel (2008) describe it for
IR evaluation, with the per-query variance of differences measured on the team's own runs.

The three-way reading of the interval at a tolerance ``tol`` (a non-inferiority margin):
**pass** when the lower bound is above ``-tol`` (the drop, if any, is shown to be within
tolerance), **fail** when the mean drop is beyond ``tol`` and the interval excludes 0 (a real
drop, larger than allowed), **inconclusive** otherwise: the set cannot tell.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from rageval.config_schema import GateConfig
from rageval.errors import ConfigError, InputError

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
METHOD = (
    "paired t interval (widened by Hall's skewness correction); power of the two-sided paired "
    "t-test (noncentral t)"
)


def _check(alpha: float, power: float) -> None:
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1, got {alpha!r}")
    if not 0 < power < 1:
        raise ConfigError(f"power must be between 0 and 1, got {power!r}")


# The t and noncentral t distributions come from scipy.special, the functions scipy.stats
# evaluates them with: importing scipy.stats (and the optimize, sparse and linalg packages it
# pulls in) cost every `rageval check` 0.5 s of its ~2.3 s on a cached run.


def _t_ppf(q: float, df: int) -> float:
    """Student's t quantile (what ``scipy.stats.t.ppf`` computes)."""
    from scipy import special

    return float(special.stdtrit(df, q))


def power_of(delta: float, sd: float, n: int, alpha: float = 0.05) -> float:
    """The probability that the two-sided paired t-test at ``alpha`` rejects on ``n`` queries
    when the true mean difference is ``delta`` and the differences' sd is ``sd``."""
    from scipy import special

    if n < 2:
        return float("nan")
    if sd <= 0:
        return 1.0 if delta != 0 else alpha
    df = n - 1
    crit = _t_ppf(1 - alpha / 2, df)
    nc = abs(delta) * math.sqrt(n) / sd
    # P(T > crit) for T noncentral t(df, nc) is P(T' < -crit) for T' noncentral t(df, -nc)
    upper = float(special.nctdtr(df, -nc, -crit))  # nan far out, as scipy.stats' sf
    lower = float(special.nctdtr(df, nc, -crit))  # the wrong tail: tiny, nan far out
    if math.isfinite(upper):  # clipped to [0, 1] as scipy.stats clips it; nan stays nan
        upper = min(1.0, max(0.0, upper))
    # a nan upper tail (an effect so large the series fails) reads as certain rejection: 1.0
    return min(1.0, upper + (lower if math.isfinite(lower) else 0.0))


def mde(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    """The smallest true difference the two-sided paired t-test at ``alpha`` detects with
    probability ``power`` on ``n`` queries (nan below 2 queries; 0 when the runs never differ)."""
    _check(alpha, power)
    if n < 2 or not math.isfinite(sd):
        return float("nan")
    if sd <= 0:
        return 0.0
    hi = sd
    while power_of(hi, sd, n, alpha) < power:
        hi *= 2
    return brentq(lambda d: power_of(d, sd, n, alpha) - power, 0.0, hi, xtol=1e-9)


def brentq(f, a: float, b: float, xtol: float = 2e-12, rtol: float = 8.881784197001252e-16):
    """A root of ``f`` in [a, b] (``f(a)`` and ``f(b)`` of opposite signs) by Brent's method
    (Brent 1973, ch. 4), step for step as ``scipy.optimize.brentq`` takes it, so the same
    root to the last bit (a test compares them): importing scipy.optimize for this one function
    cost every `rageval check` 0.3 s of its ~2.2 s. At most 100 iterations."""
    xpre, xcur = float(a), float(b)
    fpre, fcur = f(xpre), f(xcur)
    if fpre == 0:
        return xpre
    if fcur == 0:
        return xcur
    if math.copysign(1, fpre) == math.copysign(1, fcur):
        raise ValueError("f(a) and f(b) must have different signs")
    xblk = fblk = spre = scur = 0.0
    for _ in range(100):
        if fpre != 0 and fcur != 0 and math.copysign(1, fpre) != math.copysign(1, fcur):
            xblk, fblk = xpre, fpre
            spre = scur = xcur - xpre
        if abs(fblk) < abs(fcur):  # xcur: the best guess so far
            xpre, xcur, xblk = xcur, xblk, xcur
            fpre, fcur, fblk = fcur, fblk, fcur
        delta = (xtol + rtol * abs(xcur)) / 2
        sbis = (xblk - xcur) / 2
        if fcur == 0 or abs(sbis) < delta:
            return xcur
        if abs(spre) > delta and abs(fcur) < abs(fpre):
            if xpre == xblk:  # interpolate
                stry = -fcur * (xcur - xpre) / (fcur - fpre)
            else:  # extrapolate (inverse quadratic)
                dpre = (fpre - fcur) / (xpre - xcur)
                dblk = (fblk - fcur) / (xblk - xcur)
                stry = -fcur * (fblk * dblk - fpre * dpre) / (dblk * dpre * (fblk - fpre))
            if 2 * abs(stry) < min(abs(spre), 3 * abs(sbis) - delta):  # good short step
                spre, scur = scur, stry
            else:  # bisect
                spre = scur = sbis
        else:  # bisect
            spre = scur = sbis
        xpre, fpre = xcur, fcur
        xcur += scur if abs(scur) > delta else (delta if sbis > 0 else -delta)
        fcur = f(xcur)
    return xcur


def queries_needed(sd: float, drop: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """The fewest queries on which the paired t-test detects a true drop of ``drop`` with
    probability ``power`` (``sd``: the per-query differences' standard deviation)."""
    _check(alpha, power)
    if not drop > 0:
        raise ConfigError(f"the drop to detect must be > 0, got {drop!r}")
    if sd <= 0:
        return 2
    from statistics import NormalDist

    z = NormalDist().inv_cdf
    n = max(2, math.ceil(((z(1 - alpha / 2) + z(power)) * sd / drop) ** 2))  # close below
    while power_of(drop, sd, n, alpha) < power:
        n += 1
    return n


@dataclass(frozen=True)
class Paired:
    """One metric of two runs on the same queries: the difference and what it can tell."""

    metric: str
    n: int
    baseline: float  # mean over the paired queries
    current: float
    diff: float  # current - baseline
    sd: float  # of the per-query differences
    low: float  # the (1 - alpha) paired t interval on the mean difference
    high: float
    p_t: float  # paired t-test, two-sided
    p_randomization: float  # paired randomization test, two-sided
    mde: float  # at power, alpha
    needed: int | None  # queries to detect a drop of the tolerance
    tolerance: float
    verdict: str
    alpha: float
    power: float

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """``ndcg@5 -0.012 [-0.041, +0.017]; detects a drop of 0.052 with 80% power;
        tolerance 0.03: INCONCLUSIVE (about 500 queries would decide)``."""
        text = describe(
            self.metric, self.diff, self.low, self.high, self.mde, self.power, self.tolerance
        )
        text += f": {self.verdict.upper()}"
        if self.verdict == INCONCLUSIVE and self.needed:
            text += f" (about {approx_count(self.needed):,} queries would decide)"
        return text


def approx_count(n: int) -> int:
    """A query count as a plan states it: two significant digits."""
    if n < 100:
        return n
    digits = 10 ** (len(str(n)) - 2)
    return int(round(n / digits) * digits)


def one_run_sd(scores: np.ndarray) -> float:
    """The sd of per-query differences bounded from one run's scores alone: sqrt(2) times their
    sd (two runs whose scores are not negatively correlated differ by no more)."""
    return float(np.asarray(scores, dtype=float).std(ddof=1)) * math.sqrt(2)


def bounds(mean, sd, skew, n: int, alpha: float = 0.05):
    """The (1 - alpha) interval on the mean from ``n`` differences with sample ``mean``, ``sd``
    (ddof 1) and ``skew`` (the moment estimate g1): the paired t interval, widened where Hall's
    (1992) skewness-corrected interval reaches further (never narrowed). Works elementwise on
    arrays (the simulation tests call it on 20,000 sets at once).

    Why: per-query differences of retrieval metrics are often skewed (many ties, a tail of large
    drops), and the t interval's bound on the long-tail side then misses more often than alpha/2:
    at n = 25 with a skewness of -1.7 its lower bound lies above the true mean 7% of the time,
    which would let a gate declare non-inferiority too readily. Hall's transformation
    ``g(x) = x + s x^2 / 3 + s^2 x^3 / 27 + s / (6 n)`` of the standardised mean removes the
    first-order skewness term; taking the union with the t interval keeps the t interval's
    coverage where the skewness estimate is noisy (discrete hit@k differences)."""
    mean, sd, skew = (np.asarray(x, dtype=float) for x in (mean, sd, skew))
    crit = _t_ppf(1 - alpha / 2, n - 1)
    half = crit * sd / math.sqrt(n)
    g = np.where(np.isfinite(skew), skew, 0.0)

    def inverse(y: float) -> np.ndarray:
        """g^-1(y) in closed form; y itself (the t bound) when g is 0, and where the cube root's
        argument is not positive: so skewed a sample (one query of 20 changed) lies outside
        what the expansion describes, and the t bound is kept."""
        arg = 1 + g * (y - g / (6 * n))
        with np.errstate(divide="ignore", invalid="ignore"):
            v = (3 / np.where(g == 0, 1, g)) * (np.cbrt(arg) - 1)
        return np.where((np.abs(g) < 1e-12) | (arg <= 0), y, v)

    low = mean - sd * inverse(crit / math.sqrt(n))
    high = mean - sd * inverse(-crit / math.sqrt(n))
    return np.minimum(mean - half, low), np.maximum(mean + half, high)


def interval(d: np.ndarray, alpha: float = 0.05) -> tuple[float, float]:
    """The (1 - alpha) interval on the mean of the differences ``d`` as offsets from their mean
    (:func:`bounds`; nan below 2 differences, (0, 0) when they never vary)."""
    d = np.asarray(d, dtype=float)
    if d.size < 2:
        return float("nan"), float("nan")
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0:
        return 0.0, 0.0
    c = d - mean
    skew = float((c**3).mean() / (c**2).mean() ** 1.5)
    low, high = bounds(mean, sd, skew, int(d.size), alpha)
    return float(low) - mean, float(high) - mean


def describe(
    metric: str,
    diff: float,
    low: float,
    high: float,
    detects: float,
    power: float,
    tolerance: float,
    needed: int | None = None,
) -> str:
    """``ndcg@5 -0.012 [-0.041, +0.017]; detects a drop of 0.052 with 80% power; tolerance 0.03``
    and, when ``needed`` is given, ``(about 500 queries would decide)``."""
    text = (
        f"{metric} {diff:+.3f} [{low:+.3f}, {high:+.3f}]; detects a drop of {detects:.3f} with "
        f"{power:.0%} power; tolerance {tolerance:g}"
    )
    return text + (f" (about {approx_count(needed):,} queries would decide)" if needed else "")


def t_test_p(mean: float, sd: float, n: int) -> float:
    """The two-sided p-value of the paired t-test of ``mean(d) = 0`` from ``n`` differences with
    sample ``mean`` and ``sd`` (ddof 1): ``scipy.stats.ttest_rel``'s, from Student's t."""
    from scipy import special

    t = mean / (sd / math.sqrt(n))
    return min(1.0, 2.0 * float(special.stdtr(n - 1, -abs(t))))


def decide(diff: float, low: float, high: float, tolerance: float) -> str:
    """pass, fail or inconclusive (see the module docstring)."""
    if low > -tolerance:
        return PASS
    if diff < -tolerance and high < 0:
        return FAIL
    return INCONCLUSIVE


def paired(
    metric: str,
    baseline: np.ndarray,
    current: np.ndarray,
    tolerance: float = GateConfig.tolerance,
    alpha: float = GateConfig.alpha,
    power: float = 0.8,
    resamples: int = GateConfig.resamples,
) -> Paired:
    """The paired comparison of ``current`` against ``baseline`` (per-query scores, in the same
    query order) for ``metric``."""
    from rageval.scoring.stats import paired_randomization_test

    _check(alpha, power)
    a = np.asarray(baseline, dtype=float)
    b = np.asarray(current, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"{metric}: the two runs must score the same queries")
    if a.size < 2:
        raise InputError(f"{metric}: {a.size} paired queries; a comparison needs at least 2")
    d = b - a
    n = int(d.size)
    mean = float(d.mean())
    sd = float(d.std(ddof=1))
    below, above = interval(d, alpha)
    low, high = mean + below, mean + above
    p_t = (1.0 if mean == 0 else 0.0) if sd == 0 else t_test_p(mean, sd, n)
    p_r = paired_randomization_test(a, b, n_resamples=resamples, seed=0)
    return Paired(
        metric=metric,
        n=n,
        baseline=float(a.mean()),
        current=float(b.mean()),
        diff=mean,
        sd=sd,
        low=low,
        high=high,
        p_t=p_t,
        p_randomization=float(p_r),
        mde=mde(sd, n, alpha, power),
        needed=queries_needed(sd, tolerance, alpha, power) if tolerance > 0 else None,
        tolerance=tolerance,
        verdict=decide(mean, low, high, tolerance),
        alpha=alpha,
        power=power,
    )
