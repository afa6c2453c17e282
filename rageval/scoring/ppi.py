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
- the **interval** ``theta +- z(1 - alpha/2) * sqrt(sd(lam * yhat_unlabeled)^2 / N
  + sd(y - lam * yhat)^2 / n)`` (standard deviations with divisor ``N`` and ``n``: numpy's
  default, as ppi_py), a CLT interval.

Beside it: the **human-only** classical interval (``mean(y) +- z * sd(y) / sqrt(n)``, as
``ppi_py.classical_mean_ci``) and the **LLM-only** mean over all ``n + N`` queries with its
naive interval, which ignores the judge's bias, and that bias as the sample measures it
(``mean(yhat - y)``). The unlabelled set holds the queries people did not grade (disjoint from the
sample, as in the paper and ppi_py); the assumptions are a random human sample and a judge that
does not change between the two sets (docs/judging.md).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rageval.errors import ConfigError, InputError


@dataclass(frozen=True)
class Interval:
    """A point estimate and its two-sided interval."""

    estimate: float
    low: float
    high: float

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

    def to_dict(self) -> dict:
        """The JSON shape of one metric in ``rageval score --llm-qrels --json``."""
        return {
            **self.ppi.to_dict(),
            "lambda": self.lam,
            "human_only": self.human_only.to_dict(),
            "llm_only": {**self.llm_only.to_dict(), "bias": self.bias},
            "n_human": self.n_human,
            "n_llm": self.n_llm,
        }


def _z(alpha: float) -> float:
    from scipy.stats import norm

    if not 0 < alpha < 1:
        raise ConfigError(f"alpha must be between 0 and 1 (exclusive), got {alpha!r}")
    return float(norm.ppf(1 - alpha / 2))


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


def classical_mean(y: Sequence[float] | np.ndarray, alpha: float = 0.05) -> Interval:
    """The CLT interval of the mean of ``y`` (``ppi_py.classical_mean_ci``)."""
    y = _values(y, "y", 1)
    mean = float(y.mean())
    half = _z(alpha) * float(y.std()) / math.sqrt(y.size)
    return Interval(mean, mean - half, mean + half)


def ppi_mean(
    y: Sequence[float] | np.ndarray,
    yhat: Sequence[float] | np.ndarray,
    yhat_unlabeled: Sequence[float] | np.ndarray,
    alpha: float = 0.05,
    lam: float | None = None,
) -> PPIEstimate:
    """The PPI++ estimate of the human-label mean with its ``1 - alpha`` interval, beside the
    human-only and LLM-only ones. ``y[i]`` and ``yhat[i]`` are the same query's values under
    human and LLM labels; ``yhat_unlabeled`` the LLM values of the queries nobody graded.
    ``lam=None`` tunes the weight (PPI++); 1 is plain PPI, 0 the humans alone."""
    y = _values(y, "the human-label values", 2)
    yhat = _values(yhat, "the LLM-label values of the human sample", 2)
    unl = _values(yhat_unlabeled, "the LLM-label values of the other queries", 1)
    if y.shape != yhat.shape:
        raise InputError(
            f"human and LLM values must cover the same sampled queries: {y.size} vs {yhat.size}"
        )
    if lam is None:
        lam = tuned_lambda(y, yhat, unl)
    elif not 0 <= lam <= 1:
        raise ConfigError(f"lam must lie in [0, 1], got {lam!r}")
    n, big_n = y.size, unl.size
    z = _z(alpha)
    estimate = float((lam * unl).mean() + (y - lam * yhat).mean())
    half = z * math.sqrt((lam * unl).std() ** 2 / big_n + (y - lam * yhat).std() ** 2 / n)
    every = np.concatenate([yhat, unl])
    llm_half = z * float(every.std()) / math.sqrt(every.size)
    llm = float(every.mean())
    return PPIEstimate(
        ppi=Interval(estimate, estimate - half, estimate + half),
        lam=float(lam),
        human_only=classical_mean(y, alpha),
        llm_only=Interval(llm, llm - llm_half, llm + llm_half),
        bias=float((yhat - y).mean()),
        n_human=n,
        n_llm=n + big_n,
    )


def ppi_by_query(
    human: Mapping[str, float], llm: Mapping[str, float], alpha: float = 0.05
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


def ppi_width(moments: Moments, n: int, total: int, alpha: float = 0.05) -> float:
    """The expected width of the PPI++ interval with ``n`` human-graded of ``total`` queries
    (the tuned weight at those sizes, clipped to [0, 1]; the others ``total - n``)."""
    others = total - n
    if n < 2 or others < 1:
        return float("nan")
    m = moments
    lam = 0.0 if m.var_yhat <= 0 else min(1.0, max(0.0, m.cov / ((1 + n / others) * m.var_yhat)))
    var = (m.var_y - 2 * lam * m.cov + lam**2 * m.var_yhat) / n + lam**2 * m.var_yhat / others
    return 2 * _z(alpha) * math.sqrt(max(var, 0.0))


def human_width(moments: Moments, n: int, alpha: float = 0.05) -> float:
    """The width of the human-only interval on ``n`` queries."""
    return 2 * _z(alpha) * math.sqrt(moments.var_y / n) if n >= 2 else float("nan")


def human_queries_needed(
    moments: Moments, width: float, total: int, alpha: float = 0.05
) -> tuple[int | None, int | None]:
    """The fewest human-graded queries (of ``total``) whose PPI++ interval is at most ``width``
    wide, and the fewest for the human-only interval; None where no sample below ``total``
    reaches it."""
    if not width > 0:
        raise ConfigError(f"the interval width must be positive, got {width!r}")
    ppi = next((n for n in range(2, total) if ppi_width(moments, n, total, alpha) <= width), None)
    alone = next((n for n in range(2, total) if human_width(moments, n, alpha) <= width), None)
    return ppi, alone
