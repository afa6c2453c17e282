"""rageval.scoring.ppi against ppi_py, the PPI++ authors' reference implementation."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.errors import InputError
from rageval.scoring.ppi import classical_mean, ppi_by_query, ppi_mean, tuned_lambda

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
def test_estimate_and_interval_equal_ppi_py(seed):
    y, yhat, unl = _case(seed)
    alpha = [0.05, 0.1, 0.2][seed % 3]
    got = ppi_mean(y, yhat, unl, alpha=alpha)
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
    got = ppi_mean(y, yhat, unl, alpha=0.05, lam=lam)
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
    got = classical_mean([0.0, 1.0], alpha=0.05)
    assert got.estimate == 0.5
    assert got.high - 0.5 == pytest.approx(1.959963984540054 * 0.5 / np.sqrt(2))


def test_by_query_splits_the_sample_from_the_others():
    y, yhat, unl = _case(5)
    human = {f"s{i}": v for i, v in enumerate(y)}
    llm = {**{f"u{i}": v for i, v in enumerate(unl)}, **{f"s{i}": v for i, v in enumerate(yhat)}}
    assert ppi_by_query(human, llm) == ppi_mean(y, yhat, unl)


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
    ppi, alone = human_queries_needed(good, 0.1, 1000)
    assert alone == int(np.ceil((2 * 1.959963984540054 * 0.3 / 0.1) ** 2))
    assert human_width(good, alone) <= 0.1 < human_width(good, alone - 1)
    assert ppi < alone / 3
    assert human_queries_needed(useless, 0.1, 1000) == (alone, alone)  # lambda 0: humans alone
    assert human_queries_needed(good, 0.001, 1000) == (None, None)  # not below 1,000 queries


def test_the_agreement_is_the_correlation_on_the_sample():
    from rageval.scoring.ppi import Moments

    rng = np.random.default_rng(9)
    y = rng.uniform(size=30)
    yhat = y + rng.normal(0, 0.1, 30)
    every = np.concatenate([yhat, rng.uniform(0.4, 0.6, 200)])  # the others vary less
    got = Moments.of(y, yhat, every).correlation
    assert got == pytest.approx(np.corrcoef(y, yhat)[0, 1], abs=1e-12)
