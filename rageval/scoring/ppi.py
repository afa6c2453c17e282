"""Prediction-powered estimates of a mean metric: many LLM-labelled queries, a few human-graded.

A metric (nDCG@10, recall@10, ...) is scored per query twice: with the human labels on the
``n`` queries people graded (``y``), and with the LLM's labels on every query (``yhat`` on those
same ``n``, ``yhat_unlabeled`` on the ``N`` others). The estimand is the mean of the metric under
human labels over the population the queries are drawn from, the same mean the gate's intervals
are about. Following PPI++ (Angelopoulos, Duchi & Zrnic, "PPI++: Efficient Prediction-Powered
Inference", 2024; PPI: Angelopoulos et al., Science 2023) and its reference implementation
``ppi_py.ppi_mean_ci`` with ``lam=None``:

- the **estimate** ``theta = lam * mean(yhat_unlabeled) + mean(y - lam * yhat)``: the LLM's mean
  on the unlabelled queries, corrected by the human-minus-LLM difference measured on the sample;
- the **power-tuned** ``lam = cov(y, yhat) / ((1 + n / N) * var(yhat, yhat_unlabeled))``
  (``cov`` over the ``n`` pairs with divisor ``n``; ``var`` over all ``n + N`` LLM values with
  divisor ``n + N - 1``), clipped to [0, 1]: 0 is the humans alone, 1 is plain PPI, so the
  estimate is never (asymptotically) worse than the human-only mean;
- the **interval** ``theta +- q * sqrt(s_r^2 / n + s_u^2 / N)``: ``s_r^2`` the variance of the
  rectifier ``y - lam * yhat`` over the ``n`` sampled queries, ``s_u^2`` that of
  ``lam * yhat_unlabeled`` over the ``N`` others (:func:`mean_interval`, the one function every
  interval here comes from).

Two intervals, each by its textbook definition (``interval=``, :data:`INTERVALS`):

- ``"t"``, the default: **Student-t with Welch-Satterthwaite degrees of freedom**. The sample
  and the others are disjoint random samples, so the estimate is the sum of two independent
  sample means, each variance estimated from its own sample: the studentized estimate is Welch's
  two-sample statistic (a sum instead of a difference, with the same variance), whose law
  Satterthwaite (Biometrics Bulletin 2, 1946) and Welch (Biometrika 34, 1947) approximate by
  Student's t with ``df = (s_r^2/n + s_u^2/N)^2 / ((s_r^2/n)^2/nu_r + (s_u^2/N)^2/(N - 1))``,
  the variances unbiased (divisors ``nu_r`` and ``N - 1``, where ``nu_r`` is ``n - 1``, or
  ``n - 2`` with a tuned ``lam``: below); ``q = t(1 - alpha/2; df)``. The df lies between
  ``min(nu_r, N - 1)`` and ``nu_r + N - 1``; it is ``n - 1`` when the LLM term vanishes (``lam =
  0``: the interval is then exactly the human-only Student-t interval), and it tends to ``nu_r``
  as the rectifier term dominates. The conservative alternative, ``nu_r`` whatever the LLM term,
  is a lower bound of this df when ``N >= n`` (so it would only widen the interval);
  Welch-Satterthwaite is used because the LLM term is estimated from ``N`` values, not ``n``. A
  one-sample mean (the human-only and LLM-only intervals) follows the same rule with one term:
  ``df = n - 1``, the classical Student-t interval.
- ``"z"``: the **normal (CLT) interval** of PPI++ and ``ppi_py``: ``q = z(1 - alpha/2)``, the
  variances with divisors ``n`` and ``N`` (numpy's default, as ppi_py): equal to
  ``ppi_py.ppi_mean_ci`` and ``ppi_py.classical_mean_ci``. Kept to compare with them; with a
  few dozen human-graded queries it undercovers (BENCHMARKS.md).

The tuned ``lam`` is estimated from the same sample. The z interval treats it as fixed, as
PPI++'s asymptotics and ppi_py do. The t interval accounts for it as the textbook **regression
estimator** does (Cochran, *Sampling Techniques*, 3rd ed., 1977, section 7.3; the PPI++ mean
is that estimator with the LLM values as the auxiliary variable, known on every query): the
rectifier ``y - lam * yhat`` minus its mean is the residual of a line whose slope was fitted
to the ``n`` pairs, so its variance has divisor ``n - 2`` and ``n - 2`` degrees of freedom in
the Welch-Satterthwaite sum, where a fixed ``lam`` (given by the caller, or tuned to the 0 or 1
of the clip, where it is no longer a free slope) keeps ``n - 1``. Both tend to the z interval
as ``n`` grows. A part with a single value (one query outside the sample) has no variance
estimate and counts 0, as ppi_py's divisor-N variance of one value does.

Beside it: the **human-only** interval of ``mean(y)`` and the **LLM-only** mean over all
``n + N`` queries with its naive interval (both one-sample intervals of the same kind), which
ignores the judge's bias, and that bias as the sample measures it (``mean(yhat - y)``). The
unlabelled set holds the queries people did not grade (disjoint from the sample, as in the paper
and ppi_py); the assumptions are a random human sample and a judge that does not change between
the two sets (docs/judging.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rageval.config_schema import RagevalConfig
from rageval.errors import ConfigError, InputError

# The intervals (module docstring): Student-t with Welch-Satterthwaite df, or ppi_py's normal one;
# the default is the config's (ppi_interval)
INTERVALS = ("t", "z")
DEFAULT_INTERVAL: str = RagevalConfig.ppi_interval
_NAMES = {
    "t": "Student-t interval (Welch-Satterthwaite df)",
    "z": "normal (z) CLT interval, as ppi_py",
}


@dataclass(frozen=True)
class Interval:
    """A point estimate and its two-sided interval; ``se`` the standard error it stands on and
    ``df`` the t distribution's degrees of freedom (``inf``: the normal)."""

    estimate: float
    low: float
    high: float
    se: float = math.nan
    df: float = math.inf

    def to_dict(self) -> dict[str, float]:
        """``{"estimate", "ci_low", "ci_high"}``, as ``rageval score --json`` prints it."""
        return {"estimate": self.estimate, "ci_low": self.low, "ci_high": self.high}


@dataclass(frozen=True)
class PPIEstimate:
    """A mean metric estimated from human and LLM labels (module docstring)."""

    ppi: Interval
    lam: float  # the power-tuning weight in [0, 1] the estimate used
    human_only: Interval
    llm_only: Interval
    bias: float  # mean(yhat - y) on the human sample: how far the LLM's labels move the metric
    n_human: int  # queries with both labels
    n_llm: int  # queries with LLM labels: the sample and the others
    interval: str = DEFAULT_INTERVAL  # "t" or "z" (INTERVALS)

    def to_dict(self) -> dict:
        """The JSON shape of one metric in ``rageval score --llm-qrels --json``."""
        return {
            **self.ppi.to_dict(),
            "lambda": self.lam,
            "interval": self.interval,
            "df": None if math.isinf(self.ppi.df) else self.ppi.df,
            "human_only": self.human_only.to_dict(),
            "llm_only": {**self.llm_only.to_dict(), "bias": self.bias},
            "n_human": self.n_human,
            "n_llm": self.n_llm,
        }


def method(interval: str = DEFAULT_INTERVAL, alpha: float = 0.05) -> str:
    """How the estimates were made, in one line (reports, ``rageval score --json``)."""
    return f"PPI++ mean (power-tuned lambda), {1 - alpha:.0%} {_NAMES[check_interval(interval)]}"


FEW_GRADED = 40


def few_graded_warning(n_human: int) -> str | None:
    """A warning when fewer than :data:`FEW_GRADED` queries are human-graded, else None.

    On simulated judges the Student-t interval held the human-label mean in 0.92-0.94 of the draws
    with 20 graded queries and in at least 0.93 from 40 on (BENCHMARKS.md, "Prediction-powered
    estimates"): below 40 the "95%" overstates the interval's coverage, which depends on the
    judge and the metric's distribution, so the reader is told rather than the number changed."""
    if n_human >= FEW_GRADED:
        return None
    return (
        f"only {n_human} human-graded queries: with fewer than {FEW_GRADED} the 95% interval can "
        "hold the human-label mean less often than it says (docs/judging.md, 'Enough "
        "human-graded queries'); grade more of the sample (rageval plan says how many)"
    )


def check_interval(interval: str) -> str:
    """``interval`` if it names one of :data:`INTERVALS`, else a ConfigError saying which."""
    if interval not in INTERVALS:
        raise ConfigError(
            f"the interval must be one of {', '.join(INTERVALS)} (t: Student-t, the default; "
            f"z: the normal interval of ppi_py), got {interval!r}"
        )
    return interval


def _level(alpha: float) -> None:
    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1 (exclusive), got {alpha!r}")


def quantile(p: float, df: float = math.inf) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (``inf``: the normal)."""
    from scipy.stats import norm, t

    return float(norm.ppf(p) if math.isinf(df) else t.ppf(p, df))


def tail(x: float, df: float = math.inf) -> float:
    """``P(T > x)`` for Student's t with ``df`` degrees of freedom (``inf``: the normal)."""
    from scipy.stats import norm, t

    return float(norm.sf(x) if math.isinf(df) else t.sf(x, df))


Term = tuple[float, int] | tuple[float, int, int]


def _nu(term: Term) -> int:
    """A term's degrees of freedom: its third element, or the sample size less one."""
    return term[2] if len(term) > 2 else term[1] - 1


def welch_df(terms: Sequence[Term]) -> float:
    """The Welch-Satterthwaite degrees of freedom of ``sum(v / m)``, the variance of a sum of
    independent sample means, each ``(v, m)`` a sample's variance estimate (divisor ``m - 1``)
    and size, or ``(v, m, nu)`` with the estimate's own degrees of freedom ``nu`` (``m - 2``
    for a regression residual's): ``(sum v/m)^2 / sum (v/m)^2 / nu``. One term gives its
    ``nu``. Terms with no variance drop out; with none left, the first term's ``nu``."""
    shares = [(t[0] / t[1], _nu(t)) for t in terms if t[0] > 0 and _nu(t) > 0]
    if not shares:
        return float(max(_nu(terms[0]), 1))
    total = sum(s for s, _ in shares)
    return total**2 / sum(s**2 / nu for s, nu in shares)


def half_width(
    terms: Sequence[Term], alpha: float = 0.05, interval: str = DEFAULT_INTERVAL
) -> tuple[float, float]:
    """The half-width of the ``1 - alpha`` interval of a sum of independent sample means, each
    ``(v, m)`` a sample's variance and size (module docstring), and its degrees of freedom:
    ``q * sqrt(sum v/m)`` with ``q`` from Student's t with :func:`welch_df` (``"t"``) or from the
    normal (``"z"``, df ``inf``). The one place an interval's width is computed: the estimates
    and the plan's expected widths (:func:`ppi_width`) both come here."""
    _level(alpha)
    df = welch_df(terms) if check_interval(interval) == "t" else math.inf
    var = sum(t[0] / t[1] for t in terms)
    return quantile(1 - alpha / 2, df) * math.sqrt(max(var, 0.0)), df


def mean_interval(
    parts: Sequence[np.ndarray],
    alpha: float = 0.05,
    interval: str = DEFAULT_INTERVAL,
    fitted: Sequence[int] = (),
) -> Interval:
    """The ``1 - alpha`` interval of ``sum(mean(part))`` over independent samples ``parts``
    (one part: a mean; the rectifier and the weighted unlabelled values: the PPI++ estimate).
    Variances unbiased for ``"t"``, divisor ``m`` for ``"z"`` (ppi_py); :func:`half_width`.
    ``fitted[i]``: how many slopes were fitted to part ``i``'s sample (a regression residual:
    1), each taking one more degree of freedom from its variance under ``"t"``."""
    t = check_interval(interval) == "t"
    terms: list[Term] = []
    for i, p in enumerate(parts):
        extra = fitted[i] if t and i < len(fitted) else 0
        ddof = 1 + extra if t else 0
        v = float(p.var(ddof=ddof)) if p.size > ddof and p.size > 1 else 0.0
        terms.append((v, int(p.size), int(p.size) - 1 - extra))
    estimate = float(sum(p.mean() for p in parts))
    half, df = half_width(terms, alpha, interval)
    se = math.sqrt(max(sum(v / m for v, m, _ in terms), 0.0))
    return Interval(estimate, estimate - half, estimate + half, se, df)


def _values(values: Sequence[float] | np.ndarray, what: str, least: int) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1 or arr.size < least:
        raise InputError(f"{what} must be a 1-d sequence of at least {least} per-query values")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what} holds NaN or infinite values")
    return arr


def tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_unlabeled: np.ndarray) -> float:
    """PPI++'s variance-minimising weight of the LLM labels for a mean, clipped to [0, 1]
    (module docstring). 0 when the LLM values do not vary: they carry no information."""
    n, big_n = y.size, yhat_unlabeled.size
    cov = float(((y - y.mean()) * (yhat - yhat.mean())).sum() / n)
    every = np.concatenate([yhat, yhat_unlabeled])
    if np.ptp(every) == 0:  # one value: the variance is 0 up to rounding
        return 0.0
    var = float(np.var(every, ddof=1))
    return float(np.clip(cov / ((1 + n / big_n) * var), 0.0, 1.0))


def classical_mean(
    y: Sequence[float] | np.ndarray, alpha: float = 0.05, interval: str = DEFAULT_INTERVAL
) -> Interval:
    """The interval of the mean of ``y``: Student's t with ``n - 1`` df (``"t"``) or the CLT
    interval of ``ppi_py.classical_mean_ci`` (``"z"``)."""
    return mean_interval([_values(y, "y", 1)], alpha, interval)


def ppi_mean(
    y: Sequence[float] | np.ndarray,
    yhat: Sequence[float] | np.ndarray,
    yhat_unlabeled: Sequence[float] | np.ndarray,
    alpha: float = 0.05,
    lam: float | None = None,
    interval: str = DEFAULT_INTERVAL,
) -> PPIEstimate:
    """The PPI++ estimate of the human-label mean with its ``1 - alpha`` interval, beside the
    human-only and LLM-only ones. ``y[i]`` and ``yhat[i]`` are the same query's values under
    human and LLM labels; ``yhat_unlabeled`` the LLM values of the queries nobody graded.
    ``lam=None`` tunes the weight (PPI++); 1 is plain PPI, 0 the humans alone. ``interval``:
    ``"t"`` (Student-t, Welch-Satterthwaite df) or ``"z"`` (ppi_py's; module docstring)."""
    check_interval(interval)
    y = _values(y, "the human-label values", 2)
    yhat = _values(yhat, "the LLM-label values of the human sample", 2)
    unl = _values(yhat_unlabeled, "the LLM-label values of the other queries", 1)
    if y.shape != yhat.shape:
        raise InputError(
            f"human and LLM values must cover the same sampled queries: {y.size} vs {yhat.size}"
        )
    # a slope fitted to the sample (module docstring): tuned, strictly inside the clip, and
    # leaving the residual at least two degrees of freedom
    slope = 0
    if lam is None:
        lam = tuned_lambda(y, yhat, unl)
        slope = int(0 < lam < 1 and y.size > 3)
    elif not 0 <= lam <= 1:
        raise ConfigError(f"lam must lie in [0, 1], got {lam!r}")
    n, big_n = y.size, unl.size
    # the LLM term first: the same sum, in the same order, as ppi_py
    parts = [lam * unl, y - lam * yhat]  # lam = 0: the first is 0 and drops out of the df
    return PPIEstimate(
        ppi=mean_interval(parts, alpha, interval, fitted=(0, slope)),
        lam=float(lam),
        human_only=mean_interval([y], alpha, interval),
        llm_only=mean_interval([np.concatenate([yhat, unl])], alpha, interval),
        bias=float((yhat - y).mean()),
        n_human=n,
        n_llm=n + big_n,
        interval=interval,
    )


def ppi_by_query(
    human: Mapping[str, float],
    llm: Mapping[str, float],
    alpha: float = 0.05,
    interval: str = DEFAULT_INTERVAL,
) -> PPIEstimate:
    """:func:`ppi_mean` from per-query values keyed by query id: the human sample is the
    queries ``human`` holds, every one of which ``llm`` must hold too; the others of ``llm``
    are the unlabelled set."""
    missing = [q for q in human if q not in llm]
    if missing:
        raise InputError(
            f"{len(missing)} human-graded queries have no LLM-label value (e.g. {missing[0]!r}): "
            "the LLM labels must cover every query, the human sample included"
        )
    sample = list(human)
    others = [q for q in llm if q not in human]
    if not others:
        raise InputError(
            "every LLM-labelled query is also human-graded: there is nothing for the LLM labels "
            "to add; score the human labels alone"
        )
    return ppi_mean(
        [human[q] for q in sample],
        [llm[q] for q in sample],
        [llm[q] for q in others],
        alpha,
        interval=interval,
    )


@dataclass(frozen=True)
class Moments:
    """What the PPI interval's width depends on, measured on a human sample: the variance of
    the human-label values, their covariance with the LLM-label values, and the variance of the
    LLM-label values over every query."""

    var_y: float
    cov: float
    var_yhat: float
    var_yhat_sample: float = float("nan")  # the LLM values' variance on the sample itself

    @property
    def correlation(self) -> float:
        """The human and LLM values' correlation on the sample: the judge's agreement as the
        metric sees it."""
        denom = math.sqrt(self.var_y * self.var_yhat_sample)
        return self.cov / denom if denom > 0 else float("nan")

    @classmethod
    def of(cls, y, yhat, yhat_all) -> Moments:
        """Measured on a sample (``y``, ``yhat``) and every query's LLM values ``yhat_all``."""
        y = _values(y, "y", 2)
        yhat = _values(yhat, "yhat", 2)
        every = _values(yhat_all, "yhat_all", 2)
        cov = float(((y - y.mean()) * (yhat - yhat.mean())).mean())
        return cls(float(y.var()), cov, float(every.var()), float(yhat.var()))


def ppi_width(
    moments: Moments, n: int, total: int, alpha: float = 0.05, interval: str = DEFAULT_INTERVAL
) -> float:
    """The expected width of the PPI++ interval with ``n`` human-graded of ``total`` queries
    (the tuned weight at those sizes, clipped to [0, 1]; the others ``total - n``), the
    variances taken as measured (:func:`half_width`, with its df at those sizes for ``"t"``)."""
    others = total - n
    if n < 2 or others < 1:
        return float("nan")
    m = moments
    lam = 0.0 if m.var_yhat <= 0 else min(1.0, max(0.0, m.cov / ((1 + n / others) * m.var_yhat)))
    rectifier = m.var_y - 2 * lam * m.cov + lam**2 * m.var_yhat
    slope = int(0 < lam < 1 and n > 3)  # a fitted slope, as ppi_mean counts it
    terms: list[Term] = [(rectifier, n, n - 1 - slope), (lam**2 * m.var_yhat, others)]
    return 2 * half_width(terms, alpha, interval)[0]


def human_width(
    moments: Moments, n: int, alpha: float = 0.05, interval: str = DEFAULT_INTERVAL
) -> float:
    """The width of the human-only interval on ``n`` queries."""
    return 2 * half_width([(moments.var_y, n)], alpha, interval)[0] if n >= 2 else float("nan")


def human_queries_needed(
    moments: Moments,
    width: float,
    total: int,
    alpha: float = 0.05,
    interval: str = DEFAULT_INTERVAL,
) -> tuple[int | None, int | None]:
    """The fewest human-graded queries (of ``total``) whose PPI++ interval is at most ``width``
    wide, and the fewest for the human-only interval; None where no sample below ``total``
    reaches it."""
    if not width > 0:
        raise ConfigError(f"the interval width must be positive, got {width!r}")
    check_interval(interval)

    ppi = next(
        (n for n in range(2, total) if ppi_width(moments, n, total, alpha, interval) <= width),
        None,
    )
    alone = next(
        (n for n in range(2, total) if human_width(moments, n, alpha, interval) <= width), None
    )
    return ppi, alone
