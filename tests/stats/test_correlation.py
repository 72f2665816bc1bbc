"""Kendall's tau-b and the item / group / system correlation levels, checked against
scipy.stats (pearsonr, spearmanr, kendalltau) on the same input."""

import math

import numpy as np
import pytest
from scipy import stats as sps

from judgeaudit.stats import bootstrap_ci
from judgeaudit.stats.agreement import KENDALL_BOOT_MAX_PAIRS, kendall, kendall_tau_b
from judgeaudit.stats.correlation import (
    correlations,
    group_correlations,
    system_correlations,
)


def _samples():
    rng = np.random.default_rng(11)
    gold = rng.integers(1, 6, 150).astype(float)
    yield "discrete, many ties", gold, np.clip(gold + rng.integers(-1, 2, 150), 1, 5)
    x = rng.normal(size=200)
    yield "continuous", x, x + rng.normal(size=200)
    thirds = np.round(rng.normal(3, 1, 120) * 3) / 3  # means of three 1-5 scores
    yield "thirds vs halves", thirds, np.round(thirds * 2 + rng.normal(0, 1, 120)) / 2
    yield "negative", x[:50], -x[:50] + rng.normal(0, 0.3, 50)
    yield "tiny", np.array([1.0, 2.0, 2.0]), np.array([3.0, 1.0, 2.0])


@pytest.mark.parametrize(("name", "x", "y"), list(_samples()))
def test_kendall_tau_b_matches_scipy(name, x, y):
    assert kendall_tau_b(x, y) == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)
    assert kendall_tau_b(y, x) == pytest.approx(kendall_tau_b(x, y), abs=1e-12)


def test_kendall_tau_b_edge_cases():
    assert math.isnan(kendall_tau_b([1, 1, 1], [1, 2, 3]))  # a constant side
    assert math.isnan(kendall_tau_b([1], [2]))
    assert kendall_tau_b([1, 2], [5, 9]) == 1.0
    assert kendall_tau_b([1, 2, 3], [3, 2, 1]) == -1.0
    with pytest.raises(ValueError, match="finite"):
        kendall_tau_b([1, np.nan], [1, 2])


@pytest.mark.parametrize(("name", "x", "y"), list(_samples())[:3])
def test_correlations_match_scipy_at_item_level(name, x, y):
    c = correlations(x, y, n_boot=300, seed=4)
    assert c.pearson.value == pytest.approx(sps.pearsonr(x, y).statistic, abs=1e-12)
    assert c.spearman.value == pytest.approx(sps.spearmanr(x, y).statistic, abs=1e-12)
    assert c.kendall.value == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)
    assert c.n == len(x)
    for est in (c.pearson, c.spearman, c.kendall):
        lo, hi = est.ci95
        assert lo <= est.value <= hi
    # Pearson's interval is Fisher z, as scipy's confidence_interval()
    ref = sps.pearsonr(x, y).confidence_interval(0.95)
    assert c.pearson.ci95 == pytest.approx((ref.low, ref.high), abs=1e-9)
    assert "Fisher z" in c.method["pearson"] and "bootstrap over items" in c.method["kendall"]


def test_kendall_bootstrap_is_the_generic_bootstrap_of_scipys_tau():
    """Same seed, same item resamples: the weighted-pairs shortcut gives the same interval as
    a loop computing scipy's kendalltau on every resample."""
    rng = np.random.default_rng(2)
    x = rng.integers(1, 6, 60).astype(float)
    y = np.clip(x + rng.normal(0, 1.2, 60).round(), 1, 5)
    est = kendall(x, y, n_boot=200, seed=9)
    xy = np.column_stack([x, y])
    ref = bootstrap_ci(xy, lambda d: sps.kendalltau(d[:, 0], d[:, 1]).statistic, n_boot=200,
                       seed=9, method="bca")
    assert est.ci95 == pytest.approx(ref, abs=1e-12)
    assert est.value == pytest.approx(sps.kendalltau(x, y).statistic)


def test_kendall_fisher_interval_formula():
    rng = np.random.default_rng(3)
    x = rng.normal(size=80)
    y = x + rng.normal(size=80)
    est = kendall(x, y, method="fisher")
    tau = sps.kendalltau(x, y).statistic
    se = math.sqrt(0.437 / 76)
    assert est.ci95 == pytest.approx((math.tanh(math.atanh(tau) - 1.959964 * se),
                                      math.tanh(math.atanh(tau) + 1.959964 * se)), abs=1e-6)


def test_many_distinct_pairs_switch_kendall_to_fisher(monkeypatch):
    import judgeaudit.stats.correlation as corr

    assert corr.KENDALL_BOOT_MAX_PAIRS == KENDALL_BOOT_MAX_PAIRS
    monkeypatch.setattr(corr, "KENDALL_BOOT_MAX_PAIRS", 100)
    rng = np.random.default_rng(5)
    n = 150
    x = rng.normal(size=n)
    y = x + rng.normal(size=n)
    c = correlations(x, y, n_boot=50)
    assert "Fisher z" in c.method["kendall"]
    assert c.kendall.value == pytest.approx(sps.kendalltau(x, y).statistic, abs=1e-12)


def test_constant_side_gives_no_correlation_and_no_interval():
    c = correlations([3, 3, 3, 3], [1, 2, 3, 4])
    for est in (c.pearson, c.spearman, c.kendall):
        assert math.isnan(est.value) and math.isnan(est.ci95[0])
        assert est.as_dict()["value"] is None
    two = correlations([1, 2], [2, 4])
    assert two.pearson.value == pytest.approx(1.0) and math.isnan(two.pearson.ci95[0])


def test_group_level_is_the_mean_of_within_group_correlations():
    rng = np.random.default_rng(7)
    groups, xs, ys = [], [], []
    for g in range(12):
        k = 6
        gold = rng.integers(1, 6, k).astype(float)
        xs += list(np.clip(gold + rng.integers(-1, 2, k), 1, 5))
        ys += list(gold)
        groups += [f"doc{g}"] * k
    # a one-item group, a group where the judge gives one score, one where gold is constant
    groups += ["single", "flat", "flat", "flat", "goldflat", "goldflat"]
    xs += [3, 4, 4, 4, 1, 5]
    ys += [2, 1, 3, 5, 3, 3]
    x, y = np.array(xs, float), np.array(ys, float)
    c = group_correlations(x, y, groups, n_boot=300)
    exp = {"pearson": [], "spearman": [], "kendall": []}
    for g in dict.fromkeys(groups):
        idx = [i for i, h in enumerate(groups) if h == g]
        gx, gy = x[idx], y[idx]
        if len(idx) < 2 or len(set(gx)) < 2 or len(set(gy)) < 2:
            continue
        exp["pearson"].append(sps.pearsonr(gx, gy).statistic)
        exp["spearman"].append(sps.spearmanr(gx, gy).statistic)
        exp["kendall"].append(sps.kendalltau(gx, gy).statistic)
    assert len(exp["pearson"]) == 12 - sum(  # doc groups whose own sides happen to be flat
        len(set(x[[i for i, h in enumerate(groups) if h == f"doc{g}"]])) < 2 or
        len(set(y[[i for i, h in enumerate(groups) if h == f"doc{g}"]])) < 2 for g in range(12))
    assert c.pearson.value == pytest.approx(np.mean(exp["pearson"]), abs=1e-12)
    assert c.spearman.value == pytest.approx(np.mean(exp["spearman"]), abs=1e-12)
    assert c.kendall.value == pytest.approx(np.mean(exp["kendall"]), abs=1e-12)
    assert c.n == c.extra["n_groups_used"] == len(exp["pearson"])
    assert c.extra["n_groups"] == 15
    assert c.extra["n_groups_too_small"] == 1
    assert c.extra["n_groups_x_constant"] >= 1 and c.extra["n_groups_y_constant"] >= 1
    lo, hi = c.kendall.ci95
    assert lo <= c.kendall.value <= hi
    assert "bootstrap over groups" in c.method["kendall"]


def test_system_level_correlates_per_system_means():
    rng = np.random.default_rng(8)
    systems = [f"sys{k % 7}" for k in range(140)]
    quality = {f"sys{k}": k / 2 for k in range(7)}
    y = np.array([1 + quality[s] + rng.normal(0, 0.8) for s in systems])
    x = np.clip(np.round(y + rng.normal(0, 1, 140)), 1, 5)
    c = system_correlations(x, y, systems, n_boot=300)
    names = list(dict.fromkeys(systems))
    mx = [x[[i for i, s in enumerate(systems) if s == n]].mean() for n in names]
    my = [y[[i for i, s in enumerate(systems) if s == n]].mean() for n in names]
    assert c.pearson.value == pytest.approx(sps.pearsonr(mx, my).statistic, abs=1e-12)
    assert c.spearman.value == pytest.approx(sps.spearmanr(mx, my).statistic, abs=1e-12)
    assert c.kendall.value == pytest.approx(sps.kendalltau(mx, my).statistic, abs=1e-12)
    assert c.n == 7 and c.extra["n_systems"] == 7 and c.extra["n_items_used"] == 140
    assert [s["n"] for s in c.extra["systems"]] == [20] * 7
    assert "bootstrap over systems" in c.method["spearman"]


def test_large_samples_use_a_percentile_bootstrap(monkeypatch):
    """BCa's jackknife holds n resamples of n - 1 items; above BCA_MAX_N the interval is a
    percentile bootstrap, and the method says so."""
    import judgeaudit.stats.correlation as corr

    monkeypatch.setattr(corr, "BCA_MAX_N", 50)
    rng = np.random.default_rng(9)
    x = rng.integers(1, 6, 80).astype(float)
    y = x + rng.normal(size=80)
    c = corr.correlations(x, y, n_boot=300, seed=1)
    assert c.method["spearman"].startswith("percentile bootstrap over items")
    ref = bootstrap_ci(np.column_stack([x, y]),
                       lambda d: sps.kendalltau(d[:, 0], d[:, 1]).statistic, n_boot=300,
                       seed=1, method="percentile")
    assert c.kendall.ci95 == pytest.approx(ref, abs=1e-12)
    assert corr.correlations(x[:40], y[:40], n_boot=300).method["kendall"].startswith("BCa")
