import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from judgeaudit.stats import (
    Estimate,
    bootstrap_ci,
    mean_ci,
    movers_ci,
    paired_bootstrap_diff,
    rate,
    wilson,
)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (1, 10), (5, 10), (10, 10), (30, 100), (3, 7),
                                      (997, 1000)])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(k, n, level):
    lo, hi = wilson(k, n, level)
    elo, ehi = proportion_confint(k, n, alpha=1 - level, method="wilson")
    assert lo == pytest.approx(elo, abs=1e-12)
    assert hi == pytest.approx(ehi, abs=1e-12)


def test_wilson_accepts_half_successes_from_ties():
    # The Wilson formula only needs p = s/n; statsmodels computes it from a float count too.
    lo, hi = wilson(4.5, 10)
    elo, ehi = proportion_confint(4.5, 10, method="wilson")
    assert (lo, hi) == pytest.approx((elo, ehi), abs=1e-12)
    assert wilson(4.5, 10) != wilson(4, 10)


def test_wilson_empty_is_total_ignorance():
    assert wilson(0, 0) == (0.0, 1.0)


def test_wilson_broadcasts_over_arrays():
    k = np.array([0, 3, 7])
    lo, hi = wilson(k, 10)
    for i, ki in enumerate(k):
        assert (lo[i], hi[i]) == pytest.approx(wilson(int(ki), 10))


@pytest.mark.parametrize(("k", "n"), [(-1, 10), (11, 10), (1, -1)])
def test_wilson_rejects_impossible_counts(k, n):
    with pytest.raises(ValueError, match="successes"):
        wilson(k, n)


def test_rate_is_value_with_wilson_interval_and_n():
    est = rate(7, 20)
    assert est == Estimate(0.35, wilson(7, 20), 20, method="wilson")
    assert est.as_dict() == {"value": 0.35, "ci95": list(wilson(7, 20)), "n": 20,
                             "method": "wilson"}


def test_rate_of_nothing_serialises_without_nan():
    d = rate(0, 0).as_dict()
    assert d == {"value": None, "ci95": [0.0, 1.0], "n": 0, "method": "wilson"}


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_bootstrap_diff_names_its_interval(method):
    a = np.random.default_rng(1).normal(size=30)
    b = a + np.random.default_rng(2).normal(0.3, 0.5, size=30)
    est = paired_bootstrap_diff(b, a, np.mean, n_boot=200, method=method)
    assert est.method == f"bootstrap-{method}"
    assert est.as_dict()["method"] == f"bootstrap-{method}"


def test_mean_ci_matches_scipy_t_interval():
    x = np.random.default_rng(3).normal(2.0, 1.5, size=23)
    lo, hi = mean_ci(x, level=0.9)
    elo, ehi = sps.t.interval(0.9, df=22, loc=x.mean(), scale=sps.sem(x))
    assert (lo, hi) == pytest.approx((elo, ehi), rel=1e-12)


def test_mean_ci_needs_two_points():
    assert all(math.isnan(v) for v in mean_ci([1.0]))


# --- bootstrap -------------------------------------------------------------------------------

def test_percentile_bootstrap_is_the_quantiles_of_resampled_statistics():
    # Same seed -> same index draws; the interval is the 2.5/97.5% quantiles of them.
    x = np.random.default_rng(0).exponential(size=40)
    rng = np.random.default_rng(11)
    idx = rng.integers(0, 40, size=(500, 40))
    expected = np.percentile(x[idx].mean(axis=1), [2.5, 97.5])
    assert bootstrap_ci(x, np.mean, n_boot=500, seed=11) == pytest.approx(tuple(expected))


def test_vectorized_and_loop_bootstrap_agree():
    x = np.random.default_rng(1).normal(size=30)
    for method in ("percentile", "bca"):
        a = bootstrap_ci(x, np.mean, n_boot=300, seed=5, method=method)
        b = bootstrap_ci(x, lambda v: v.mean(axis=1), n_boot=300, seed=5, method=method,
                         vectorized=True)
        assert a == pytest.approx(b, rel=1e-12)


def test_bca_matches_scipy_bootstrap_on_skewed_data():
    # Same algorithm (bias correction with half-ties, jackknife acceleration), independent
    # resamples: endpoints agree up to Monte Carlo error of 20000 replicates.
    x = np.random.default_rng(2).exponential(scale=2.0, size=30)
    lo, hi = bootstrap_ci(x, lambda v: v.mean(axis=1), n_boot=20000, seed=0, method="bca",
                          vectorized=True)
    ref = sps.bootstrap((x,), np.mean, n_resamples=20000, method="BCa",
                        rng=np.random.default_rng(1)).confidence_interval
    width = ref.high - ref.low
    assert abs(lo - ref.low) < 0.03 * width
    assert abs(hi - ref.high) < 0.03 * width
    # ...and BCa is not the percentile interval here (the skew moves it right).
    plo, phi = bootstrap_ci(x, lambda v: v.mean(axis=1), n_boot=20000, seed=0,
                            vectorized=True)
    assert lo > plo and hi > phi


def test_bootstrap_resamples_rows_of_2d_data_together():
    # Rows are (x, x): any resample keeps the columns equal, so the difference is always 0.
    x = np.random.default_rng(4).normal(size=25)
    data = np.column_stack([x, x])
    lo, hi = bootstrap_ci(data, lambda a: a[:, 0].mean() - a[:, 1].mean(), n_boot=200)
    assert lo == hi == 0.0


def test_bootstrap_accepts_ragged_per_item_tuples():
    items = [("a", 1.0), ("b", 0.0), ("c", 1.0), ("d", 1.0)] * 5
    lo, hi = bootstrap_ci(items, lambda its: float(np.mean([v for _, v in its])), n_boot=200)
    assert 0.0 <= lo < 0.75 < hi <= 1.0


def test_bootstrap_drops_undefined_replicates():
    # A statistic undefined on some resamples (nan) does not poison the interval.
    x = np.array([0.0] * 3 + [1.0] * 2)
    def stat(v):
        return float(v.mean()) if v.min() != v.max() else float("nan")
    lo, hi = bootstrap_ci(x, stat, n_boot=500)
    assert 0.0 < lo <= hi < 1.0


def test_bootstrap_rejects_too_few_items_and_unknown_method():
    with pytest.raises(ValueError, match="at least 2 items"):
        bootstrap_ci([1.0], np.mean)
    with pytest.raises(ValueError, match="method"):
        bootstrap_ci([1.0, 2.0], np.mean, method="basic")


def test_paired_diff_uses_joint_resampling():
    # b = a + 1 exactly: jointly resampled, the difference of means is always -1 (an
    # independent resampling of a and b would give a wide interval).
    a = np.random.default_rng(6).normal(size=50)
    est = paired_bootstrap_diff(a, a + 1.0, np.mean, n_boot=300)
    assert est.value == pytest.approx(-1.0)
    assert est.ci95 == pytest.approx((-1.0, -1.0))
    assert est.n == 50


def test_paired_diff_interval_matches_bootstrap_of_differences():
    rng = np.random.default_rng(7)
    base = rng.binomial(1, 0.6, 80).astype(float)
    pert = np.where(rng.random(80) < 0.2, 1.0 - base, base)
    est = paired_bootstrap_diff(pert, base, np.mean, n_boot=400, seed=3)
    assert est.ci95 == pytest.approx(bootstrap_ci(pert - base, np.mean, n_boot=400, seed=3))
    assert est.value == pytest.approx(pert.mean() - base.mean())


def test_paired_diff_rejects_misaligned_inputs():
    with pytest.raises(ValueError, match="aligned"):
        paired_bootstrap_diff([1.0, 2.0, 3.0], [1.0, 2.0], np.mean)


@pytest.mark.parametrize("up, down, n", [(0, 0, 40), (2, 1, 40), (0, 3, 10), (4, 0, 200)])
def test_movers_ci_is_span_times_the_clopper_pearson_limits_of_each_direction(up, down, n):
    """Textbook check: each limit is span x the exact (Clopper-Pearson) two-sided 95% upper
    limit of the share that moved that way, as statsmodels computes it ('beta')."""
    d = np.array([0.5] * up + [-1.0] * down + [0.0] * (n - up - down))
    lo, hi = movers_ci(d, span=1.0)
    assert hi == pytest.approx(proportion_confint(up, n, alpha=0.05, method="beta")[1])
    assert lo == pytest.approx(-proportion_confint(down, n, alpha=0.05, method="beta")[1])
    if up == down == 0:  # the rule of three's exact form
        assert hi == pytest.approx(1 - 0.025 ** (1 / n))
    assert lo <= d.mean() <= hi


def test_movers_ci_covers_at_the_worst_case_it_is_built_for():
    """Coverage by simulation: sparse moves of the full span, all one way, 95% or more."""
    rng = np.random.default_rng(0)
    for n, p in ((10, 0.1), (40, 0.05), (40, 0.1)):
        d = np.where(rng.random((2000, n)) < p, 1.0, 0.0)
        hits = [lo <= p <= hi for lo, hi in (movers_ci(x, 1.0) for x in d)]
        assert np.mean(hits) >= 0.95
    with pytest.raises(ValueError, match="span > 0"):
        movers_ci(np.zeros(3), 0.0)


def test_paired_estimate_refuses_a_missing_difference():
    """A NaN difference made the value NaN beside a finite interval from the other items."""
    from judgeaudit.stats.intervals import paired_estimate

    with pytest.raises(ValueError, match="NaN"):
        paired_estimate([1.0, math.nan, 0.0, 1.0])


def test_every_item_moving_alike_gets_an_exact_interval_not_a_point():
    """Ten items all preferring the first-shown response gave +0.50 [+0.50, +0.50] (the
    bootstrap of equal values). constant_ci's interval misses the true mean only where all n
    items landing on one value has probability below 5% (checked over a grid of truths:
    a share q of items at c, the rest at the far end of the range)."""
    from judgeaudit.stats.intervals import constant_ci, paired_estimate

    est = paired_estimate([0.5] * 10, span=0.5)
    assert est.method == "clopper-pearson-constant" and est.value == 0.5
    p = 0.05 ** (1 / 10)
    assert est.ci95 == pytest.approx((0.5 * p - 0.5 * (1 - p), 0.5))
    assert est.ci95[0] > 0  # ten of ten one way is evidence, as the sign test says
    for n, c, span in ((10, 0.5, 0.5), (40, 0.25, 0.5), (6, -1.0, 2.0)):
        lo, hi = constant_ci(c, n, span)
        assert lo <= c <= hi
        for q in np.linspace(0.0, 1.0, 201):
            for rest in (-span, span):  # the worst cases for each bound
                mean = c * q + (1 - q) * rest
                if not lo <= mean <= hi:
                    assert q**n < 0.05, (n, c, q, rest)
    # a mean of 0 is fewer than 5 movers (movers_ci); without a bound, the bootstrap as before
    assert paired_estimate([0.0] * 10, span=0.5).method == "clopper-pearson-movers"
    assert paired_estimate([0.5] * 10).method == "bootstrap-percentile"


def test_a_clustered_rate_of_0_or_1_counts_each_item_once():
    """40 of 40 verdicts over 20 pairs gave Wilson's [91.2, 100] as if the two orders were
    independent: with no spread the design effect cannot be estimated, so each item counts
    once (Wilson at n = 20)."""
    from judgeaudit.stats.intervals import clustered_rate, wilson

    est = clustered_rate([(2, 2)] * 20)
    assert est.value == 1.0 and est.n == 40
    assert est.ci95 == pytest.approx(wilson(20, 20))
    assert clustered_rate([(0, 2)] * 20).ci95 == pytest.approx(wilson(0, 20))
    assert clustered_rate([(1, 1)] * 20).ci95 == pytest.approx(wilson(20, 20))  # one each
