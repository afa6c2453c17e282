"""The gate's statistics are checked, not asserted: simulated on per-query differences shaped like
retrieval metrics' (many zeros, bounded, skewed), the paired t-test keeps its level, the predicted
power matches the simulated one and the interval covers the true mean as often as it says.

Measured with these seeds (20,000 simulated golden sets per cell): type-I error 0.040-0.051
(0.040 on the tie-heavy shape at n = 25, where the t-test is slightly conservative), power within
0.048 of the prediction, coverage 0.939-0.959 for the interval (the t interval widened by Hall's
skewness correction), its lower bound above the true mean 1.8-5.4% of the time; the plain t
interval covers 0.920 on the skewed shape at n = 25, its lower bound missing 7.4% of the time."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from rageval.scoring.power import (
    FAIL,
    INCONCLUSIVE,
    PASS,
    bounds,
    decide,
    mde,
    paired,
    power_of,
    queries_needed,
)

SIMS = 20_000
NS = (25, 50, 100, 200)


def population(shape: str, size: int = 200_000) -> np.ndarray:
    rng = np.random.default_rng(0)
    if shape == "ties":  # 60% of queries unchanged, the changes skewed toward drops
        tied = rng.random(size) < 0.6
        return np.where(tied, 0.0, -rng.beta(2, 5, size) + 0.35 * rng.random(size))
    if shape == "hit":  # hit@k: -1, 0 or +1 per query
        return rng.choice([-1.0, 0.0, 1.0], size=size, p=[0.12, 0.8, 0.08])
    a = rng.beta(0.6, 0.9, size)  # ndcg-like: two bounded, skewed scores
    changed = rng.random(size) < 0.5
    b = np.clip(a - 0.05 + rng.normal(0, 0.25, size) * changed, 0, 1)
    return b - a


def simulate(pop: np.ndarray, n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return pop[rng.integers(0, pop.size, size=(SIMS, n))]


def t_stats(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """Per simulated set: mean, sd, t statistic (0 for a set of identical differences), and the
    two-sided 5% critical value."""
    n = x.shape[1]
    m, s = x.mean(1), x.std(1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.nan_to_num(m / (s / math.sqrt(n)))
    return m, s, t, float(stats.t.ppf(0.975, n - 1))


@pytest.mark.parametrize("shape", ["ties", "hit", "ndcg"])
def test_type_one_error_power_and_coverage_by_simulation(shape):
    pop = population(shape)
    mu, sd = float(pop.mean()), float(pop.std())
    for i, n in enumerate(NS):
        x = simulate(pop, n, seed=10 + i)
        m, s, t, crit = t_stats(x)
        simulated = float((np.abs(t) > crit).mean())
        assert abs(simulated - power_of(mu, sd, n)) <= 0.05, (shape, n, simulated)
        c = x - m[:, None]
        with np.errstate(divide="ignore", invalid="ignore"):
            skew = (c**3).mean(1) / (c**2).mean(1) ** 1.5
        lo, hi = bounds(m, s, skew, n)
        coverage = float(((lo <= mu) & (mu <= hi)).mean())
        assert 0.93 <= coverage <= 0.97, (shape, n, coverage)
        # the side a gate's pass rests on: the lower bound above the true mean at most 6% (2.5%
        # nominal; the plain t bound misses 7.4% on the skewed shape at n = 25)
        assert float((mu < lo).mean()) <= 0.06, (shape, n)
        # the null: each query's difference as likely one sign as the other
        flips = np.random.default_rng(100 + i).choice([-1.0, 1.0], size=x.shape)
        *_, t0, _ = t_stats(x * flips)
        type_one = float((np.abs(t0) > crit).mean())
        assert (0.038 if n == 25 else 0.04) <= type_one <= 0.06, (shape, n, type_one)


def test_the_detectable_drop_and_set_size_match_the_textbook_formula():
    # the demo's figures (per-query sd of nDCG@5 differences, 168 queries): issue table
    for sd, want_mde, want_n in ((0.357, 0.077, 1100), (0.239, 0.052, 500), (0.153, 0.033, 200)):
        assert mde(sd, 168) == pytest.approx(want_mde, abs=0.001)
        assert queries_needed(sd, 0.03) == pytest.approx(want_n, rel=0.1)
        z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
        assert mde(sd, 5000) == pytest.approx(z * sd / math.sqrt(5000), rel=0.002)
    n = queries_needed(0.3, 0.05)
    assert power_of(0.05, 0.3, n) >= 0.8 > power_of(0.05, 0.3, n - 1)
    assert mde(0.0, 50) == 0.0 and math.isnan(mde(0.3, 1))


def test_the_three_verdicts():
    assert decide(-0.01, -0.02, 0.0, 0.03) == PASS  # the drop is within tolerance
    assert decide(-0.06, -0.09, -0.03, 0.03) == FAIL  # beyond tolerance, and surely a drop
    assert decide(-0.012, -0.041, 0.017, 0.03) == INCONCLUSIVE  # cannot tell
    assert decide(-0.04, -0.08, 0.005, 0.03) == INCONCLUSIVE  # a drop, not established


def test_paired_agrees_with_scipy_and_a_reference_randomization_test():
    rng = np.random.default_rng(3)
    a = rng.random(60)
    b = np.clip(a - 0.04 + rng.normal(0, 0.2, 60) * (rng.random(60) < 0.5), 0, 1)
    r = paired("ndcg@5", a, b, tolerance=0.03, resamples=20_000)
    assert r.p_t == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-9)
    # the reference: every sign flip drawn independently, 200,000 times
    d = b - a
    flips = np.random.default_rng(7).choice([-1.0, 1.0], size=(200_000, d.size))
    reference = float((np.abs((flips * d).mean(1)) >= abs(d.mean()) - 1e-12).mean())
    assert abs(r.p_randomization - reference) <= 3 * math.sqrt(reference * (1 - reference) / 20_000)
    lo, hi = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    # the t interval, widened (never narrowed) by Hall's skewness correction
    assert r.low <= lo + 1e-12 and r.high >= hi - 1e-12
    assert r.high - r.low <= 1.1 * (hi - lo)
    symmetric = np.concatenate([d, -d])  # no skewness: exactly the t interval
    s_lo, s_hi = stats.t.interval(0.95, symmetric.size - 1, loc=0, scale=stats.sem(symmetric))
    rs = paired("ndcg@5", np.zeros(symmetric.size), symmetric)
    assert (rs.low, rs.high) == (pytest.approx(s_lo), pytest.approx(s_hi))
    same = paired("ndcg@5", a, a)
    assert same.verdict == PASS and same.low == same.high == 0.0 and same.mde == 0.0


def test_power_and_the_t_test_equal_scipy_stats_noncentral_t_and_ttest_rel():
    """The gate computes from scipy.special (scipy.stats cost every `rageval check` 0.5 s to
    import); the figures are scipy.stats' own: the power as the noncentral t's two tails, the
    p-value as ttest_rel's."""
    from rageval.scoring.power import power_of, t_test_p

    for n in (2, 3, 10, 168, 5000, 100000):
        for sd in (0.02, 0.3):
            for delta in (0.0, 1e-4, 0.01, 0.05, 0.3, 2.0):
                for alpha in (0.01, 0.05):
                    crit = stats.t.ppf(1 - alpha / 2, n - 1)
                    nc = delta * math.sqrt(n) / sd
                    lower = stats.nct.cdf(-crit, n - 1, nc)
                    want = min(1.0, stats.nct.sf(crit, n - 1, nc) + np.nan_to_num(lower))
                    got = power_of(delta, sd, n, alpha)
                    assert got == pytest.approx(want, rel=1e-12, abs=1e-300), (n, sd, delta)
    # so large an effect on 2 queries that the noncentral t's series gives nan: certain
    # rejection, as before, and the detectable effect's search for a bracket ends
    assert math.isnan(stats.nct.sf(12.7, 1, 1e10))
    assert power_of(1.0, 1e-10, 2) == 1.0 and 0 < mde(1e-12, 2) < 1e-10
    rng = np.random.default_rng(3)
    for n in (2, 5, 40, 400):
        a = rng.random(n)
        b = np.clip(a + rng.normal(-0.02, 0.2, n), 0, 1)
        d = b - a
        want = stats.ttest_rel(b, a).pvalue
        assert t_test_p(float(d.mean()), float(d.std(ddof=1)), n) == pytest.approx(want, rel=1e-12)


def test_a_gate_comparison_imports_neither_scipy_stats_nor_scipy_optimize():
    import subprocess
    import sys

    code = (
        "import sys, numpy as np\n"
        "from rageval.scoring.power import paired\n"
        "a = np.linspace(0, 1, 30); b = np.roll(a, 1)\n"
        "r = paired('ndcg@5', a, b, resamples=200)\n"
        "assert r.mde > 0 and 0 < r.p_t <= 1, r\n"
        "print(sorted(m for m in ('scipy.stats', 'scipy.optimize') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_brentq_takes_scipys_steps_to_the_same_root():
    """The minimum detectable effect's root finder is Brent's method as scipy.optimize.brentq
    runs it (importing scipy.optimize cost every check 0.3 s): the same root to the last bit."""
    from scipy import optimize

    from rageval.scoring.power import brentq, power_of

    cases = []
    for n in (2, 25, 168, 5000):
        for sd in (0.01, 0.2, 1.0):
            for target in (0.5, 0.8, 0.95):
                hi = sd
                while power_of(hi, sd, n) < target:
                    hi *= 2
                cases.append(
                    (lambda d, sd=sd, n=n, t=target: power_of(d, sd, n) - t, 0.0, hi, 1e-9)
                )
    for c in np.linspace(-3, 3, 13):
        cases.append((lambda x, c=c: x**3 - c, -5.0, 5.0, 2e-12))
        cases.append((lambda x, c=c: math.tanh(x - c) + 0.1, -10.0, 10.0, 1e-9))
        cases.append((lambda x, c=c: math.exp(x) - 2 - c * c, -1.0, 4.0, 2e-12))
    for f, a, b, xtol in cases:
        assert brentq(f, a, b, xtol=xtol) == optimize.brentq(f, a, b, xtol=xtol)
    assert brentq(lambda x: x - 1, 1.0, 3.0) == 1.0  # a root at an end
    with pytest.raises(ValueError, match="different signs"):
        brentq(lambda x: x * x + 1, -1.0, 1.0)
