"""rageval.scoring.ppi: the z interval against ppi_py, the PPI++ authors' reference
implementation; the default Student-t interval (Welch-Satterthwaite df) against its definition
with scipy's t quantiles."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rageval.errors import ConfigError, InputError
from rageval.scoring.ppi import (
    classical_mean,
    ppi_by_query,
    ppi_mean,
    tuned_lambda,
    welch_df,
)

ppi_py = pytest.importorskip("ppi_py")  # a dev dependency (pyproject)


def _case(seed: int):
    """Per-query metric-like values: human in [0, 1], the LLM's correlated, biased, noisy."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    big_n = int(rng.integers(20, 500))
    y_all = rng.beta(0.8, 1.2, size=n + big_n)
    noise = rng.normal(0, rng.uniform(0.01, 0.5), size=n + big_n)
    yhat_all = np.clip(rng.uniform(0.3, 1.0) * y_all + rng.uniform(-0.1, 0.2) + noise, 0, 1)
    return y_all[:n], yhat_all[:n], yhat_all[n:]


@pytest.mark.parametrize("seed", range(40))
def test_the_z_interval_equals_ppi_py(seed):
    y, yhat, unl = _case(seed)
    alpha = [0.05, 0.1, 0.2][seed % 3]
    got = ppi_mean(y, yhat, unl, alpha=alpha, interval="z")
    point = float(np.ravel(ppi_py.ppi_mean_pointestimate(y, yhat, unl, lam=None))[0])
    low, high = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, yhat, unl, alpha=alpha))
    assert got.ppi.estimate == pytest.approx(point, abs=1e-9)
    assert got.ppi.low == pytest.approx(low, abs=1e-9)
    assert got.ppi.high == pytest.approx(high, abs=1e-9)
    c_low, c_high = (float(np.ravel(v)[0]) for v in ppi_py.classical_mean_ci(y, alpha=alpha))
    assert got.human_only.low == pytest.approx(c_low, abs=1e-9)
    assert got.human_only.high == pytest.approx(c_high, abs=1e-9)
    assert got.human_only.estimate == pytest.approx(y.mean(), abs=1e-12)
    assert 0 <= got.lam <= 1
    assert got.n_human == y.size and got.n_llm == y.size + unl.size


@pytest.mark.parametrize("lam", [0.0, 0.3, 1.0])
def test_fixed_lambda_equals_ppi_py(lam):
    y, yhat, unl = _case(7)
    got = ppi_mean(y, yhat, unl, alpha=0.05, lam=lam, interval="z")
    low, high = (float(np.ravel(v)[0]) for v in ppi_py.ppi_mean_ci(y, yhat, unl, 0.05, lam=lam))
    assert (got.ppi.low, got.ppi.high) == pytest.approx((low, high), abs=1e-9)
    if lam == 0:  # the humans alone
        assert got.ppi.estimate == pytest.approx(y.mean(), abs=1e-12)


def test_lambda_clips_to_the_unit_interval():
    rng = np.random.default_rng(3)
    y = rng.uniform(size=30)
    assert tuned_lambda(y, 1 - y, rng.uniform(size=100)) == 0.0  # anti-correlated judge
    # a judge on half the scale: the optimal weight is above 1, clipped
    assert tuned_lambda(y, y / 2, rng.uniform(0, 0.5, size=1000)) == 1.0
    assert tuned_lambda(y, np.full(30, 0.4), np.full(50, 0.4)) == 0.0  # constant: no information


def test_a_good_judge_narrows_the_interval_and_a_biased_one_is_corrected():
    rng = np.random.default_rng(11)
    y_all = rng.uniform(size=2030)
    yhat_all = y_all - 0.15 + rng.normal(0, 0.05, size=y_all.size)  # 0.15 too low, little noise
    y, yhat, unl = y_all[:30], yhat_all[:30], yhat_all[30:]
    got = ppi_mean(y, yhat, unl)
    assert got.ppi.high - got.ppi.low < 0.5 * (got.human_only.high - got.human_only.low)
    assert got.ppi.low <= 0.5 <= got.ppi.high  # the true mean
    assert got.llm_only.high < 0.45  # the LLM alone misses it
    assert got.bias == pytest.approx(-0.15, abs=0.03)


def test_classical_mean_matches_its_formula():
    got = classical_mean([0.0, 1.0], alpha=0.05, interval="z")  # sd with divisor n: 0.5
    assert got.estimate == 0.5
    assert got.high - 0.5 == pytest.approx(1.959963984540054 * 0.5 / np.sqrt(2))
    # Student's t with n - 1 = 1 df and the unbiased sd, sqrt(1/2): 12.706 * 0.5
    got = classical_mean([0.0, 1.0], alpha=0.05)
    assert got.high - 0.5 == pytest.approx(12.706204736174694 * 0.5, rel=1e-12)
    assert got.df == 1


@pytest.mark.parametrize("n", [3, 8, 30])
def test_the_human_only_t_interval_is_scipys_student_t_interval(n):
    y = np.random.default_rng(n).uniform(size=n)
    got = classical_mean(y, alpha=0.1)
    low, high = stats.t.interval(0.9, n - 1, loc=y.mean(), scale=stats.sem(y))
    assert (got.low, got.high) == pytest.approx((low, high), abs=1e-12)
    est = ppi_mean(y, y + 0.1, np.full(5, 0.3), alpha=0.1)
    assert (est.human_only.low, est.human_only.high) == pytest.approx((low, high), abs=1e-12)


def test_the_t_interval_by_hand():
    """A hand example: the rectifier and the weighted unlabelled values, their unbiased
    variances, the Welch-Satterthwaite df and scipy's t quantile."""
    y = np.array([0.2, 0.9, 0.5, 0.7, 0.1])
    yhat = np.array([0.1, 0.8, 0.6, 0.4, 0.0])
    unl = np.array([0.3, 0.5, 0.9, 0.2, 0.6, 0.7, 0.1, 0.4])
    lam = 0.5
    r, u = y - lam * yhat, lam * unl  # the two independent sample means
    a, b = r.var(ddof=1) / 5, u.var(ddof=1) / 8
    df = (a + b) ** 2 / (a**2 / 4 + b**2 / 7)
    half = stats.t.ppf(0.975, df) * math.sqrt(a + b)
    got = ppi_mean(y, yhat, unl, lam=lam)
    assert got.ppi.estimate == pytest.approx(r.mean() + u.mean(), abs=1e-15)
    assert got.ppi.df == pytest.approx(df, rel=1e-12)
    assert 4 < got.ppi.df < 11  # between min(n - 1, N - 1) and n + N - 2
    assert got.ppi.high - got.ppi.estimate == pytest.approx(half, rel=1e-12)
    assert got.ppi.estimate - got.ppi.low == pytest.approx(half, rel=1e-12)
    # the z interval of the same estimate: divisor-n sds and the normal quantile, narrower
    z = ppi_mean(y, yhat, unl, lam=lam, interval="z")
    z_half = 1.959963984540054 * math.sqrt(r.var() / 5 + u.var() / 8)
    assert z.ppi.high - z.ppi.estimate == pytest.approx(z_half, rel=1e-12)
    assert z.ppi.high - z.ppi.estimate < 0.8 * half


def test_a_tuned_lambda_is_a_fitted_slope_in_the_t_interval():
    """With lam tuned on the sample (strictly inside [0, 1]) the rectifier is a regression
    residual: its variance has divisor n - 2 and n - 2 df in the Welch-Satterthwaite sum
    (Cochran's regression estimator). The z interval (ppi_py) keeps treating lam as fixed."""
    y = np.array([0.2, 0.9, 0.5, 0.7, 0.1, 0.4, 0.8])
    yhat = np.array([0.1, 0.8, 0.6, 0.4, 0.0, 0.5, 0.6])
    unl = np.array([0.3, 0.5, 0.9, 0.2, 0.6, 0.7, 0.1, 0.4, 0.8, 0.0])
    lam = tuned_lambda(y, yhat, unl)
    assert 0 < lam < 1
    n, big_n = y.size, unl.size
    r, u = y - lam * yhat, lam * unl
    a, b = r.var(ddof=2) / n, u.var(ddof=1) / big_n
    df = (a + b) ** 2 / (a**2 / (n - 2) + b**2 / (big_n - 1))
    half = stats.t.ppf(0.975, df) * math.sqrt(a + b)
    got = ppi_mean(y, yhat, unl)
    assert got.lam == lam
    assert got.ppi.df == pytest.approx(df, rel=1e-12)
    assert got.ppi.high - got.ppi.estimate == pytest.approx(half, rel=1e-12)
    assert got.ppi.se == pytest.approx(math.sqrt(a + b), rel=1e-12)
    # the same lam given by the caller is fixed: divisor and df n - 1, a narrower interval
    fixed = ppi_mean(y, yhat, unl, lam=lam)
    assert fixed.ppi.estimate == got.ppi.estimate
    assert fixed.ppi.high - fixed.ppi.low < got.ppi.high - got.ppi.low
    # a tuned lam clipped to 0 is no free slope: exactly the human-only interval
    clipped = ppi_mean(y, 1 - y, unl)
    assert clipped.lam == 0.0 and clipped.ppi.df == n - 1
    assert (clipped.ppi.low, clipped.ppi.high) == pytest.approx(
        (clipped.human_only.low, clipped.human_only.high), abs=1e-12
    )


def test_welch_df_is_the_satterthwaite_formula_and_one_sample_gives_n_minus_1():
    assert welch_df([(0.04, 50)]) == 49
    a, b = 0.04 / 50, 0.09 / 450
    assert welch_df([(0.04, 50), (0.09, 450)]) == pytest.approx(
        (a + b) ** 2 / (a**2 / 49 + b**2 / 449), rel=1e-12
    )
    assert welch_df([(0.04, 50), (0.0, 450)]) == 49  # no LLM term: the human-only df
    for v1, v2 in [(1e-6, 1.0), (1.0, 1e-6), (0.3, 0.2)]:
        assert 49 <= welch_df([(v1, 50), (v2, 450)]) <= 498


def test_lambda_zero_gives_the_human_only_t_interval():
    y, yhat, unl = _case(3)
    got = ppi_mean(y, yhat, unl, lam=0.0)
    assert (got.ppi.low, got.ppi.high) == pytest.approx(
        (got.human_only.low, got.human_only.high), abs=1e-12
    )
    assert got.ppi.df == y.size - 1


@pytest.mark.parametrize("seed", range(6))
def test_the_t_interval_is_wider_than_z_and_converges_to_it(seed):
    y, yhat, unl = _case(seed)
    t, z = ppi_mean(y, yhat, unl), ppi_mean(y, yhat, unl, interval="z")
    assert t.ppi.estimate == z.ppi.estimate and t.lam == z.lam
    assert t.ppi.high - t.ppi.low > z.ppi.high - z.ppi.low
    rng = np.random.default_rng(seed)
    big = rng.beta(0.8, 1.2, size=20_000)
    y, yhat, unl = big[:5000], np.clip(big[:5000] + 0.05, 0, 1), big[5000:]
    t, z = ppi_mean(y, yhat, unl), ppi_mean(y, yhat, unl, interval="z")
    ratio = (t.ppi.high - t.ppi.low) / (z.ppi.high - z.ppi.low)
    assert 1 < ratio < 1.001


def test_an_unknown_interval_is_refused():
    with pytest.raises(ConfigError, match="one of t, z"):
        ppi_mean([0.0, 1.0], [0.0, 1.0], [0.5], interval="normal")


def test_by_query_splits_the_sample_from_the_others():
    y, yhat, unl = _case(5)
    human = {f"s{i}": v for i, v in enumerate(y)}
    llm = {**{f"u{i}": v for i, v in enumerate(unl)}, **{f"s{i}": v for i, v in enumerate(yhat)}}
    assert ppi_by_query(human, llm) == ppi_mean(y, yhat, unl)
    assert ppi_by_query(human, llm, interval="z") == ppi_mean(y, yhat, unl, interval="z")


def test_by_query_refuses_a_sample_the_llm_did_not_label():
    with pytest.raises(InputError, match="no LLM-label value.*'b'"):
        ppi_by_query({"a": 1.0, "b": 0.0}, {"a": 1.0, "c": 0.5})
    with pytest.raises(InputError, match="nothing for the LLM labels to add"):
        ppi_by_query({"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.5})


def test_too_small_a_sample_is_refused():
    with pytest.raises(InputError, match="at least 2"):
        ppi_mean([1.0], [1.0], [0.5, 0.2])
    with pytest.raises(InputError, match="same sampled queries"):
        ppi_mean([1.0, 0.0], [1.0, 0.0, 1.0], [0.5])


def test_the_planned_width_is_the_mean_width_of_real_intervals():
    from rageval.scoring.ppi import Moments, ppi_width

    rng = np.random.default_rng(5)
    total, n = 400, 40
    y_pop = rng.beta(0.9, 1.1, size=200_000)
    yhat_pop = np.clip(0.8 * y_pop + 0.05 + rng.normal(0, 0.12, y_pop.size), 0, 1)
    moments = Moments.of(y_pop[:50_000], yhat_pop[:50_000], yhat_pop)
    widths = []
    for _ in range(300):
        idx = rng.choice(y_pop.size, size=total, replace=False)
        est = ppi_mean(y_pop[idx[:n]], yhat_pop[idx[:n]], yhat_pop[idx[n:]])
        widths.append(est.ppi.high - est.ppi.low)
    assert ppi_width(moments, n, total) == pytest.approx(np.mean(widths), rel=0.03)
    assert 0.8 < moments.correlation < 0.95


def test_the_plan_needs_fewer_graded_queries_with_a_good_judge():
    from rageval.scoring.ppi import Moments, human_queries_needed, human_width

    good = Moments(var_y=0.09, cov=0.085, var_yhat=0.09)
    useless = Moments(var_y=0.09, cov=0.0, var_yhat=0.09)
    ppi, alone = human_queries_needed(good, 0.1, 1000, interval="z")
    assert alone == int(np.ceil((2 * 1.959963984540054 * 0.3 / 0.1) ** 2))
    assert (
        human_width(good, alone, interval="z") <= 0.1 < human_width(good, alone - 1, interval="z")
    )
    assert ppi < alone / 3
    # the t interval: the smallest n with 2 t(0.975; n - 1) 0.3 / sqrt(n) <= 0.1
    ppi_t, alone_t = human_queries_needed(good, 0.1, 1000)
    want = next(n for n in range(2, 1000) if 2 * stats.t.ppf(0.975, n - 1) * 0.3 / n**0.5 <= 0.1)
    assert alone_t == want and want > alone
    assert human_width(good, alone_t) <= 0.1 < human_width(good, alone_t - 1)
    assert ppi <= ppi_t < alone_t / 3
    assert human_queries_needed(useless, 0.1, 1000) == (alone_t, alone_t)  # lambda 0: alone
    assert human_queries_needed(good, 0.001, 1000) == (None, None)  # not below 1,000 queries


def test_the_agreement_is_the_correlation_on_the_sample():
    from rageval.scoring.ppi import Moments

    rng = np.random.default_rng(9)
    y = rng.uniform(size=30)
    yhat = y + rng.normal(0, 0.1, 30)
    every = np.concatenate([yhat, rng.uniform(0.4, 0.6, 200)])  # the others vary less
    got = Moments.of(y, yhat, every).correlation
    assert got == pytest.approx(np.corrcoef(y, yhat)[0, 1], abs=1e-12)
