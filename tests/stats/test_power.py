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
