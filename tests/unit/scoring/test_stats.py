"""rageval.scoring.stats: bootstrap CI, paired randomization test, Holm correction."""

from __future__ import annotations

import numpy as np
import pytest

from rageval.errors import ConfigError, InputError
from rageval.scoring.stats import bootstrap_ci, holm, paired_randomization_test


def scores(seed: int, n: int = 200, shift: float = 0.0) -> np.ndarray:
    return np.clip(np.random.default_rng(seed).normal(0.5 + shift, 0.2, n), 0, 1)


def test_bootstrap_ci_contains_the_mean_and_narrows_with_more_queries():
    x = scores(1)
    low, high = bootstrap_ci(x)
    assert low < x.mean() < high
    wide = bootstrap_ci(x[:20])
    assert wide[1] - wide[0] > high - low
    assert bootstrap_ci(x, confidence=0.5)[1] - bootstrap_ci(x, confidence=0.5)[0] < high - low


def test_bootstrap_ci_is_seeded_and_deterministic():
    x = scores(2)
    assert bootstrap_ci(x, seed=3) == bootstrap_ci(list(x), seed=3)
    assert bootstrap_ci(x, seed=3) != bootstrap_ci(x, seed=4)


def test_bootstrap_ci_matches_the_normal_approximation():
    x = scores(3, n=2000)
    low, high = bootstrap_ci(x, n_resamples=4000)
    half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)
    assert low == pytest.approx(x.mean() - half, abs=0.15 * half)
    assert high == pytest.approx(x.mean() + half, abs=0.15 * half)


def test_bootstrap_ci_of_one_value_or_constant_values():
    assert bootstrap_ci([0.25]) == (0.25, 0.25)
    assert bootstrap_ci([1.0] * 50) == (1.0, 1.0)


def test_bootstrap_ci_bounded_memory_for_many_queries():
    x = scores(4, n=300_000)  # 2000 resamples x 300k queries would be 4.8 GB in one block
    low, high = bootstrap_ci(x, n_resamples=50)
    assert low < x.mean() < high


def _reference_ci(x: np.ndarray, n_resamples: int, seed: int) -> tuple[float, float]:
    """The definition, drawn afresh: n_resamples samples of len(x) with replacement from
    default_rng(seed), in blocks of at most 2**22 numbers, then the 2.5% and 97.5% quantiles."""
    rng, n, means = np.random.default_rng(seed), x.size, []
    per_block = max(1, (1 << 22) // n)
    for start in range(0, n_resamples, per_block):
        b = min(per_block, n_resamples - start)
        means.append(x[rng.integers(0, n, size=(b, n))].mean(axis=1))
    alpha = (1 - 0.95) / 2  # as bootstrap_ci computes it (0.025000000000000022)
    low, high = np.quantile(np.concatenate(means), [alpha, 1 - alpha])
    return float(low), float(high)


@pytest.mark.parametrize(("n", "n_resamples"), [(168, 2000), (700, 2000), (3000, 1500)])
def test_bootstrap_ci_reuses_the_drawn_indices_and_gives_the_same_numbers(n, n_resamples):
    """A run bootstraps every metric and slice with one seed: the indices for one size are drawn
    once (up to 2**20 of them; more are drawn anew each time) and every CI equals the one drawn
    afresh, to the last bit, however many came before it."""
    base = scores(5, n=n)
    for i in range(4):
        x = np.clip(base + 0.05 * i, 0, 1)
        assert bootstrap_ci(x, n_resamples=n_resamples) == _reference_ci(x, n_resamples, 0)
        assert bootstrap_ci(x, n_resamples=n_resamples, seed=9) == _reference_ci(x, n_resamples, 9)


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        ({"values": []}, InputError),
        ({"values": [0.1, float("nan")]}, InputError),
        ({"values": [[0.1, 0.2]]}, InputError),
        ({"values": [0.1], "confidence": 1.0}, ConfigError),
        ({"values": [0.1], "confidence": 0}, ConfigError),
        ({"values": [0.1], "n_resamples": 0}, ConfigError),
        ({"values": [0.1], "n_resamples": "2000"}, ConfigError),
        ({"values": [0.1], "n_resamples": True}, ConfigError),
    ],
)
def test_bootstrap_ci_rejects_bad_input(kwargs, error):
    with pytest.raises(error):
        bootstrap_ci(**kwargs)


def test_randomization_test_small_p_for_a_clear_shift():
    a, b = scores(5, shift=0.1), scores(5)
    p = paired_randomization_test(a, b)
    assert p == pytest.approx(1 / 10001)  # no sign flip is as extreme: the +1 floor
    assert paired_randomization_test(b, a) == p  # two-sided


def test_randomization_test_identical_runs_give_one():
    a = scores(6)
    assert paired_randomization_test(a, a.copy()) == 1.0


def test_randomization_test_no_real_difference_gives_a_large_p():
    a, b = scores(7), scores(8)
    assert paired_randomization_test(a, b) > 0.05


def test_randomization_test_matches_exact_enumeration():
    d = np.array([0.3, -0.1, 0.2, 0.05, -0.25, 0.4])
    signs = np.array(np.meshgrid(*[[-1, 1]] * d.size)).reshape(d.size, -1).T
    exact = np.mean(np.abs(signs @ d) >= abs(d.sum()) - 1e-12)
    p = paired_randomization_test(d, np.zeros_like(d), n_resamples=20000, seed=1)
    assert p == pytest.approx(exact, abs=0.01)


def test_randomization_test_is_seeded():
    a, b = scores(9), scores(10)
    assert paired_randomization_test(a, b, seed=1) == paired_randomization_test(a, b, seed=1)


def test_randomization_test_needs_paired_scores():
    with pytest.raises(InputError, match="same queries"):
        paired_randomization_test([0.1, 0.2], [0.1])


def test_holm_against_a_hand_example():
    # sorted: 0.01 (x4 = 0.04), 0.02 (x3 = 0.06), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04 -> 0.06)
    assert holm([0.03, 0.01, 0.04, 0.02]) == pytest.approx([0.06, 0.04, 0.06, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]
    assert holm([]) == []
    assert holm([0.2]) == [0.2]


def test_holm_rejects_values_outside_0_1():
    with pytest.raises(InputError):
        holm([0.5, 1.5])


def test_one_sided_randomization_test_matches_exact_enumeration_in_both_directions():
    d = np.array([0.3, -0.1, 0.2, 0.05, -0.25, 0.4, 0.15])
    signs = np.array(np.meshgrid(*[[-1, 1]] * d.size)).reshape(d.size, -1).T
    for sign in (1, -1):
        x = sign * d
        exact = np.mean(signs @ x >= x.sum() - 1e-12)
        p = paired_randomization_test(x, np.zeros_like(x), 20000, seed=2, alternative="greater")
        assert p == pytest.approx(exact, abs=0.01)
    # a clear gain is confirmed one-sided; the same gain read the other way round is not
    a, b = scores(1, shift=0.1), scores(2)
    assert paired_randomization_test(a, b, alternative="greater") < 0.001
    assert paired_randomization_test(b, a, alternative="greater") > 0.99
    with pytest.raises(ConfigError, match="alternative must be"):
        paired_randomization_test(a, b, alternative="less")


def test_difference_ci_covers_the_difference_of_means_and_matches_the_normal_approximation():
    from rageval.scoring.stats import difference_ci

    a, b = scores(3, n=400, shift=0.1), scores(4, n=150)
    lo, hi = difference_ci(a, b, n_resamples=4000)
    diff = a.mean() - b.mean()
    assert lo < diff < hi
    se = np.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    assert lo == pytest.approx(diff - 1.96 * se, abs=0.25 * se)
    assert hi == pytest.approx(diff + 1.96 * se, abs=0.25 * se)
    assert difference_ci(a, b, n_resamples=500) == difference_ci(a, b, n_resamples=500)
    with pytest.raises(InputError):
        difference_ci([], b)
