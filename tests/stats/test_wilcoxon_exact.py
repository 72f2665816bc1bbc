"""The "wilcox" signed-rank p is exact given the non-zero differences: zeros are dropped
first, and the p is the conditional one over sign flips given the midranks (ties exact).
scipy's "auto" picked exact or normal by the count including zeros, so the same five +1
differences gave p 0.0625 beside 8 zeros and 0.0253 beside 9."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats as sps

from judgeaudit.stats import wilcoxon_signed_rank
from judgeaudit.stats.tests import WILCOXON_EXACT_MAX


def brute_force(x: np.ndarray, alternative: str) -> float:
    """Enumerate all 2^n sign patterns of the non-zero |x| with their midranks."""
    nz = x[x != 0]
    r = sps.rankdata(np.abs(nz))
    t = r[nz > 0].sum()
    mu = r.sum() / 2
    hits = total = 0
    for signs in itertools.product((0, 1), repeat=nz.size):
        s = float(np.dot(r, signs))
        total += 1
        if alternative == "greater":
            hits += s >= t - 1e-9
        elif alternative == "less":
            hits += s <= t + 1e-9
        else:
            hits += abs(s - mu) >= abs(t - mu) - 1e-9
    return hits / total


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("seed", range(6))
def test_matches_enumeration_with_ties_and_zeros(seed, alternative):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 15))
    x = rng.integers(-3, 4, size=n + 5).astype(float)  # Likert-like: many ties and zeros
    x[: 3 + seed % 3] = 0.0
    want = brute_force(x, alternative)
    assert wilcoxon_signed_rank(x, alternative) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("n", [1, 5, 12, 30, 50])
def test_matches_scipy_exact_without_ties(n, alternative):
    x = np.random.default_rng(n).normal(0.3, 1.0, size=n)
    ref = sps.wilcoxon(x, alternative=alternative, method="exact").pvalue
    assert wilcoxon_signed_rank(x, alternative) == pytest.approx(ref, rel=1e-10)


def test_zeros_do_not_move_the_p_value():
    # the tester's first example: five +1 is 2/32 two-sided however many zeros stand beside
    for zeros in (0, 8, 9, 15, 100):
        assert wilcoxon_signed_rank([1.0] * 5 + [0.0] * zeros) == pytest.approx(2 / 32)


def test_held_out_set_of_20_with_5_nonzero():
    # the tester's second example: 20 held-out items, 5 non-zero Likert differences; the
    # tool gave 0.157 (normal approximation), the exact p is 0.3125
    x = np.array([1, 1, 1, 2, -1] + [0] * 15, dtype=float)
    assert brute_force(x, "two-sided") == pytest.approx(0.3125)
    assert wilcoxon_signed_rank(x) == pytest.approx(0.3125)


def test_large_samples_use_the_tie_corrected_normal_approximation():
    x = np.round(np.random.default_rng(3).normal(0.1, 1.0, size=WILCOXON_EXACT_MAX + 50), 1)
    x[:20] = 0.0
    nz = x[x != 0]
    assert nz.size > WILCOXON_EXACT_MAX
    ref = sps.wilcoxon(nz, method="asymptotic").pvalue
    assert wilcoxon_signed_rank(x) == pytest.approx(ref, rel=1e-12)


def test_exact_and_normal_meet_at_the_switch():
    # just under the switch the exact p is close to the normal one it hands over to
    x = np.round(np.random.default_rng(4).normal(0.1, 1.0, size=WILCOXON_EXACT_MAX), 1)
    x = x[x != 0]
    exact = wilcoxon_signed_rank(x)
    normal = sps.wilcoxon(x, method="asymptotic").pvalue
    assert exact == pytest.approx(normal, abs=0.01)
