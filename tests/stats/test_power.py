import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.power import NormalIndPower

from judgeaudit.stats import (
    mde_paired_flip,
    mde_proportion,
    required_n_paired_flip,
    required_n_proportion,
)

Z975 = sps.norm.ppf(0.975)


def score_test_power(n: int, p0: float, p1: float, z: float = Z975) -> float:
    """Exact power of the two-sided one-sample score z-test, by summing Binomial(n, p1)."""
    k = np.arange(n + 1)
    reject = np.abs(k / n - p0) >= z * math.sqrt(p0 * (1 - p0) / n)
    return float(sps.binom.pmf(k, n, p1)[reject].sum())


def mcnemar_power(n: int, p10: float, p01: float, z: float = Z975) -> float:
    """Exact power of the asymptotic McNemar test |b - c| / sqrt(b + c) >= z, by summing the
    trinomial distribution of (b, c, concordant)."""
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    ok = b + c <= n
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.abs(b - c) / np.sqrt(b + c)
    reject = ok & (b + c > 0) & (stat >= z)
    logpmf = sps.multinomial.logpmf(
        np.stack([b[reject], c[reject], n - b[reject] - c[reject]], axis=1), n,
        [p10, p01, 1 - p10 - p01])
    return float(np.exp(logpmf).sum())


@pytest.mark.parametrize(("n", "p0"), [(400, 0.5), (300, 0.3), (1000, 0.1)])
def test_mde_proportion_has_the_stated_power(n, p0):
    d = mde_proportion(n, p0)
    # Detected with ~80% power in the harder direction, at least that in the other.
    powers = [score_test_power(n, p0, p0 + d), score_test_power(n, p0, p0 - d)]
    assert min(powers) == pytest.approx(0.8, abs=0.03)
    assert max(powers) >= 0.79


@pytest.mark.parametrize(("n", "p0"), [(100, 0.5), (400, 0.5), (500, 0.3), (1000, 0.1)])
def test_mde_proportion_agrees_with_statsmodels_arcsine_mde(n, p0):
    # statsmodels solves for Cohen's h (arcsine transform) instead of the score test:
    # the MDEs (larger direction) agree closely, exactly only in the limit.
    h = NormalIndPower().solve_power(None, nobs1=n, alpha=0.05, power=0.8, ratio=0)
    a = math.asin(math.sqrt(p0))
    ref = max(math.sin(a + h / 2) ** 2 - p0, p0 - math.sin(a - h / 2) ** 2)
    assert mde_proportion(n, p0) == pytest.approx(ref, rel=0.03)


def test_mde_proportion_textbook_value_at_half():
    # p0 = 0.5 and a small effect: d ~ (1.96 + 0.8416) * 0.5 / sqrt(n).
    assert mde_proportion(10000, 0.5) == pytest.approx((Z975 + sps.norm.ppf(0.8)) * 0.005,
                                                       rel=1e-3)


def test_mde_shrinks_with_n_and_one_sided_is_smaller():
    ds = [mde_proportion(n) for n in (50, 100, 200, 400)]
    assert all(a > b for a, b in zip(ds, ds[1:], strict=False))
    assert mde_proportion(100, two_sided=False) < mde_proportion(100)
    assert mde_proportion(100, power=0.9) > mde_proportion(100)


@pytest.mark.parametrize(("effect", "p0"), [(0.1, 0.5), (0.05, 0.3), (0.2, 0.8)])
def test_required_n_proportion_inverts_mde(effect, p0):
    n = required_n_proportion(effect, p0)
    assert mde_proportion(n, p0) <= effect + 1e-12
    assert mde_proportion(n - 1, p0) > effect


@pytest.mark.parametrize(("n", "psi"), [(200, 0.3), (500, 0.1), (100, 0.6)])
def test_mde_paired_flip_has_the_stated_power(n, psi):
    d = mde_paired_flip(n, psi)
    assert 0 < d <= psi
    pw = mcnemar_power(n, (psi + d) / 2, (psi - d) / 2)
    assert pw == pytest.approx(0.8, abs=0.03)


def test_mde_paired_flip_connor_formula():
    # Connor (1987): n = (z_a sqrt(psi) + z_b sqrt(psi - d^2))^2 / d^2, checked by hand.
    d = mde_paired_flip(250, 0.2)
    n = (Z975 * math.sqrt(0.2) + sps.norm.ppf(0.8) * math.sqrt(0.2 - d * d)) ** 2 / d ** 2
    assert n == pytest.approx(250, rel=1e-9)


@pytest.mark.parametrize(("effect", "psi"), [(0.05, 0.2), (0.1, 0.3), (0.02, 0.05)])
def test_required_n_paired_flip_inverts_mde(effect, psi):
    n = required_n_paired_flip(effect, psi)
    assert mde_paired_flip(n, psi) <= effect + 1e-12
    assert mde_paired_flip(n - 1, psi) > effect


def test_undetectable_designs_give_nan():
    assert math.isnan(mde_paired_flip(5, 0.05))  # even all-one-way flips can't reach power
    assert math.isnan(mde_paired_flip(100, 0.0))
    assert math.isnan(mde_proportion(1, 0.5))


def test_power_inputs_are_checked():
    with pytest.raises(ValueError, match="p0"):
        mde_proportion(100, p0=1.0)
    with pytest.raises(ValueError, match="power"):
        mde_proportion(100, power=1.5)
    with pytest.raises(ValueError, match="effect"):
        required_n_paired_flip(0.3, 0.2)


# ---------------------------------------------------------------- exact sign test, realised data

def test_sign_test_critical_matches_the_binomial_test():
    from judgeaudit.stats import binomial_test
    from judgeaudit.stats.power import sign_test_critical

    # p grows with min(up, down): c[K] rejects and c[K] + 1 does not.
    for alpha in (0.05, 0.2):
        c = sign_test_critical(60, alpha)
        for k_total in range(61):
            if c[k_total] >= 0:
                assert binomial_test(int(c[k_total]), k_total, 0.5) < alpha, (alpha, k_total)
            if c[k_total] + 1 <= k_total // 2:
                assert binomial_test(int(c[k_total]) + 1, k_total, 0.5) >= alpha


@pytest.mark.parametrize(("n", "psi", "pi"), [(40, 0.3, 0.8), (120, 0.5, 0.6), (60, 1.0, 0.5)])
def test_power_sign_test_sums_the_exact_distribution(n, psi, pi):
    from judgeaudit.stats.power import power_sign_test

    # (up, down, unmoved) ~ Multinomial(n; psi pi, psi (1 - pi), 1 - psi); the sign test's
    # two-sided p at 1/2 is min(1, 2 P(X <= min(up, down))).
    total = 0.0
    for k in range(1, n + 1):
        pk = sps.binom.pmf(k, n, psi)
        if pk < 1e-14:
            continue
        ups = np.arange(k + 1)
        p = np.minimum(1.0, 2 * sps.binom.cdf(np.minimum(ups, k - ups), k, 0.5))
        total += pk * float(sps.binom.pmf(ups, k, pi)[p < 0.05].sum())
    assert power_sign_test(n, psi, pi) == pytest.approx(total, abs=1e-9)


@pytest.mark.parametrize(("n", "psi", "m"), [(60, 0.3, 1.0), (200, 0.5, 0.5), (400, 0.1, 0.7)])
def test_mde_sign_test_has_the_stated_power_by_simulation(n, psi, m):
    """Draw paired differences from the effect model at delta = MDE and run the sign test."""
    from judgeaudit.stats.power import mde_sign_test, sign_test_critical

    d = mde_sign_test(n, psi, m)
    assert 0 < d <= m
    psi_eff = max(psi, d / m)
    pi = 0.5 + d / (2 * psi_eff * m)
    rng = np.random.default_rng(7)
    reps = 4000
    moved = rng.binomial(n, psi_eff, reps)
    up = rng.binomial(moved, pi)
    c = sign_test_critical(n)
    power = float(np.mean(np.minimum(up, moved - up) <= c[moved]))
    assert power == pytest.approx(0.8, abs=0.025)  # ~3 SE of 4000 draws


def test_mde_sign_test_approaches_the_normal_and_connor_values_at_large_n():
    from judgeaudit.stats.power import mde_from_se, mde_sign_test

    n, psi = 4000, 0.3
    exact = mde_sign_test(n, psi)
    assert exact == pytest.approx(mde_paired_flip(n, psi), rel=0.02)
    assert exact == pytest.approx(mde_from_se(math.sqrt(psi / n)), rel=0.03)
    assert mde_from_se(0.01) == pytest.approx((Z975 + sps.norm.ppf(0.8)) * 0.01)


def test_mde_sign_test_follows_the_realised_spread_not_n_alone():
    from judgeaudit.stats.power import mde_sign_test

    steady, noisy = mde_sign_test(100, 0.05), mde_sign_test(100, 0.6)
    assert steady < noisy / 2
    # A judge that never moved still has a finite MDE: a bias must move items to show.
    floor = mde_sign_test(100, 0.0)
    assert 0.05 < floor < 0.12
    assert math.isnan(mde_sign_test(4, 0.5))  # 4 items cannot reach p < 0.05 at all
    assert mde_sign_test(100, 0.3, alpha=0.01) > mde_sign_test(100, 0.3)
    assert mde_sign_test(100, 0.3, magnitude=0.5) == pytest.approx(
        mde_sign_test(100, 0.3) / 2, rel=1e-6)
