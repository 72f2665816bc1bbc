import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar

from judgeaudit.stats import binomial_test, mcnemar_exact, one_sample_t, wilcoxon_signed_rank


@pytest.mark.parametrize(("b", "c"), [(0, 0), (0, 5), (3, 10), (10, 3), (7, 7), (1, 40),
                                      (25, 60)])
def test_mcnemar_exact_matches_statsmodels(b, c):
    ref = mcnemar([[50, b], [c, 50]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(ref, rel=1e-12)


def test_mcnemar_textbook_value():
    # b=3, c=10: 2 * P(X <= 3), X ~ Bin(13, 1/2) = 2 * (1 + 13 + 78 + 286) / 8192.
    assert mcnemar_exact(3, 10) == pytest.approx(2 * 378 / 8192)


def test_mcnemar_without_discordant_pairs_is_no_evidence():
    assert mcnemar_exact(0, 0) == 1.0


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize(("k", "n", "p0"), [(7, 20, 0.5), (2, 30, 0.2), (18, 20, 0.6),
                                            (0, 5, 0.5)])
def test_binomial_test_matches_scipy(k, n, p0, alternative):
    ref = sps.binomtest(k, n, p0, alternative=alternative).pvalue
    assert binomial_test(k, n, p0, alternative) == pytest.approx(ref, rel=1e-12)


def test_binomial_test_textbook_value():
    # 9 of 10 heads: two-sided p = 2 * (1 + 10) / 1024.
    assert binomial_test(9, 10) == pytest.approx(22 / 1024)


def test_binomial_test_accepts_integral_floats_and_empty():
    assert binomial_test(3.0, 10.0) == binomial_test(3, 10)
    assert binomial_test(0, 0) == 1.0


@pytest.mark.parametrize(("k", "n"), [(2.5, 10), (11, 10), (-1, 4)])
def test_binomial_test_rejects_bad_counts(k, n):
    with pytest.raises(ValueError):
        binomial_test(k, n)


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
def test_one_sample_t_matches_scipy(alternative):
    x = np.random.default_rng(0).normal(0.3, 1.0, size=25)
    t, p = one_sample_t(x, 0.1, alternative)
    ref = sps.ttest_1samp(x, 0.1, alternative=alternative)
    assert (t, p) == pytest.approx((ref.statistic, ref.pvalue), rel=1e-12)


def test_one_sample_t_constant_input():
    assert one_sample_t(np.zeros(10)) == (0.0, 1.0)
    assert one_sample_t(np.full(10, 0.5)) == (math.inf, 0.0)
    assert one_sample_t(np.full(10, 0.5), alternative="less") == (math.inf, 1.0)
    assert one_sample_t(np.full(10, -0.5), alternative="less") == (-math.inf, 0.0)
    assert all(math.isnan(v) for v in one_sample_t([1.0]))


@pytest.mark.parametrize("alternative", ["two-sided", "greater", "less"])
@pytest.mark.parametrize("zero_method", ["pratt", "zsplit"])
def test_wilcoxon_matches_scipy(alternative, zero_method):
    # "wilcox" is no longer scipy's "auto" (its normal approximation here, 30 values with
    # zeros and ties): it is exact given the non-zero differences (test_wilcoxon_exact.py)
    x = np.round(np.random.default_rng(1).normal(0.2, 1.0, size=30), 1)
    x[:4] = 0.0
    ref = sps.wilcoxon(x, zero_method=zero_method, alternative=alternative).pvalue
    assert wilcoxon_signed_rank(x, alternative, zero_method) == pytest.approx(ref, rel=1e-12)


def test_wilcoxon_all_zero_is_no_evidence():
    assert wilcoxon_signed_rank(np.zeros(12)) == 1.0
    assert wilcoxon_signed_rank([]) == 1.0


def test_wilcoxon_detects_a_planted_shift():
    x = np.random.default_rng(2).normal(1.0, 1.0, size=40)
    assert wilcoxon_signed_rank(x) < 1e-4
    assert wilcoxon_signed_rank(x, alternative="less") > 0.99


def test_unknown_alternative_is_an_error():
    with pytest.raises(ValueError, match="alternative"):
        binomial_test(1, 2, alternative="bigger")


def test_wilcoxon_float_noise_neither_breaks_nor_makes_a_tie():
    """0.1 + 0.2 is not 0.3 in floats: the two ranked apart (p 0.5 against 0.75)."""
    assert wilcoxon_signed_rank([0.1 + 0.2, -0.3, 0.5]) == wilcoxon_signed_rank([0.3, -0.3, 0.5])
    assert wilcoxon_signed_rank([1e-16, 1.0, 2.0]) == wilcoxon_signed_rank([1.0, 2.0])
