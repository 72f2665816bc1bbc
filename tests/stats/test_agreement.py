import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.inter_rater import cohens_kappa as sm_kappa

from judgeaudit.stats import (
    bootstrap_ci,
    cohen_kappa,
    kappa_ci,
    kendall,
    pearson,
    percent_agreement,
    spearman,
    wilson,
)


def textbook_kappa(a, b, labels):
    """Cohen (1960) from the confusion matrix, written out."""
    k = len(labels)
    pos = {lab: i for i, lab in enumerate(labels)}
    table = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        table[pos[x], pos[y]] += 1
    n = table.sum()
    po = np.trace(table) / n
    pe = sum(table[i, :].sum() * table[:, i].sum() for i in range(k)) / n**2
    return (po - pe) / (1 - pe)


def test_kappa_worked_example():
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> p_o = .7, p_e = .5, kappa = .4.
    a = ["yes"] * 25 + ["no"] * 25
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)


@pytest.mark.parametrize("seed", range(4))
def test_kappa_matches_textbook_and_statsmodels(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 3, 120)
    b = np.where(rng.random(120) < 0.6, a, rng.integers(0, 3, 120))
    expected = textbook_kappa(a, b, [0, 1, 2])
    assert cohen_kappa(a, b) == pytest.approx(expected, rel=1e-12)
    table = np.zeros((3, 3))
    np.add.at(table, (a, b), 1)
    assert cohen_kappa(a, b, labels=[0, 1, 2]) == pytest.approx(sm_kappa(table).kappa,
                                                                 rel=1e-12)


def test_kappa_labels_fix_the_category_set_and_reject_others():
    # A category neither rater used does not change kappa (it adds zero to p_e)...
    a, b = [1, 2, 1, 2, 1], [1, 2, 2, 2, 1]
    assert cohen_kappa(a, b, labels=[0, 1, 2]) == pytest.approx(cohen_kappa(a, b))
    # ...floats compare equal to integer labels, and values outside the set are an error.
    assert cohen_kappa(np.array(a, float), np.array(b, float), labels=[0, 1, 2]) == \
        pytest.approx(cohen_kappa(a, b))
    with pytest.raises(ValueError, match="not in labels"):
        cohen_kappa([1, 2, 3], [1, 2, 2], labels=[1, 2])
    with pytest.raises(ValueError, match="aligned"):
        cohen_kappa([1, 2], [1])


def test_kappa_undefined_when_chance_agreement_is_total():
    assert math.isnan(cohen_kappa([1, 1, 1], [1, 1, 1]))
    assert cohen_kappa([1, 2, 1, 2], [2, 1, 2, 1]) == pytest.approx(-1.0)


def test_kappa_ci_is_a_bootstrap_over_item_pairs():
    rng = np.random.default_rng(5)
    a = rng.integers(0, 3, 200)
    b = np.where(rng.random(200) < 0.5, a, rng.integers(0, 3, 200))
    est = kappa_ci(a, b, n_boot=1000, seed=2)
    assert est.value == pytest.approx(cohen_kappa(a, b))
    assert est.n == 200
    # Same draws as the generic (loop) bootstrap over rows (a_i, b_i).
    ref = bootstrap_ci(np.column_stack([a, b]), lambda d: cohen_kappa(d[:, 0], d[:, 1]),
                       n_boot=1000, seed=2)
    assert est.ci95 == pytest.approx(ref, rel=1e-12)
    # And about as wide as the large-sample interval of statsmodels.
    table = np.zeros((3, 3))
    np.add.at(table, (a, b), 1)
    sm = sm_kappa(table)
    width = est.ci95[1] - est.ci95[0]
    assert width == pytest.approx(sm.kappa_upp - sm.kappa_low, rel=0.2)


def test_percent_agreement_with_wilson_interval():
    est = percent_agreement(["a", "b", "a", "c"], ["a", "b", "b", "c"])
    assert est.value == 0.75 and est.n == 4
    assert est.ci95 == wilson(3, 4)


@pytest.mark.parametrize("level", [0.9, 0.95])
def test_pearson_matches_scipy_with_fisher_interval(level):
    rng = np.random.default_rng(0)
    x = rng.normal(size=40)
    y = 0.5 * x + rng.normal(size=40)
    est = pearson(x, y, level=level)
    ref = sps.pearsonr(x, y)
    ci = ref.confidence_interval(confidence_level=level)
    assert est.value == pytest.approx(ref.statistic, rel=1e-12)
    assert est.ci95 == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert est.n == 40


def test_spearman_matches_scipy_with_ties_and_fieller_interval():
    rng = np.random.default_rng(1)
    x = rng.integers(1, 6, 60).astype(float)  # 1-5 scores: many ties
    y = x + rng.integers(-2, 3, 60)
    est = spearman(x, y)
    rho = sps.spearmanr(x, y).statistic
    assert est.value == pytest.approx(rho, rel=1e-12)
    se = math.sqrt(1.06 / 57)
    z = sps.norm.ppf(0.975)
    assert est.ci95 == pytest.approx((math.tanh(math.atanh(rho) - z * se),
                                      math.tanh(math.atanh(rho) + z * se)), rel=1e-12)


def test_bootstrap_correlation_interval_is_close_to_fisher():
    rng = np.random.default_rng(2)
    x = rng.normal(size=150)
    y = 0.4 * x + rng.normal(size=150)
    for f in (pearson, spearman):
        fz = f(x, y)
        bs = f(x, y, method="bootstrap", n_boot=1000, seed=1)
        assert bs.value == fz.value
        assert bs.ci95[0] < bs.value < bs.ci95[1]
        assert bs.ci95 == pytest.approx(fz.ci95, abs=0.05)


def test_correlation_degenerate_inputs():
    assert math.isnan(pearson([1.0, 1.0, 1.0, 1.0, 1.0], [1.0, 2.0, 3.0, 4.0, 5.0]).value)
    est = pearson([1.0, 2.0, 3.0], [1.0, 3.0, 2.0])
    assert math.isfinite(est.value) and all(math.isnan(v) for v in est.ci95)
    with pytest.raises(ValueError, match="finite"):
        spearman([1.0, np.nan, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="method"):
        pearson([1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 5.0], method="exact")


def test_estimates_name_their_interval_method():
    """Each Estimate says what computed its interval, so callers need not wrap it."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=40)
    y = x + rng.normal(size=40)
    a, b = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    assert kappa_ci(a, b, n_boot=100).method == "bootstrap-percentile"
    assert kappa_ci(a, b, n_boot=100, method="bca").method == "bootstrap-bca"
    assert percent_agreement(a, b).method == "wilson"
    assert pearson(x, y).method == "fisher-z"
    assert pearson(x[:3], y[:3]).method == "fisher-z"  # too few for an interval: nan, named
    assert spearman(x, y, method="bootstrap", n_boot=100).method == "bootstrap-bca"
    assert spearman(x, y, method="bootstrap", n_boot=100,
                    boot="percentile").method == "bootstrap-percentile"
    assert kendall(x, y, n_boot=100).method == "bootstrap-bca"
    assert kendall(x, y, method="fisher").method == "fisher-z"
    assert pearson(x, y).as_dict()["method"] == "fisher-z"


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (19, 20), (57, 80)])
def test_clopper_pearson_matches_scipys_exact_interval(k, n):
    from judgeaudit.stats.intervals import clopper_pearson

    ref = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson(k, n) == pytest.approx((ref.low, ref.high), abs=1e-12)


def test_kappa_ci_where_the_raters_rarely_disagree_is_the_agreements_exact_interval():
    """Ten items, all agreeing: the bootstrap said [1, 1]; now the interval carries the
    Clopper-Pearson interval of the agreement (10/10: [0.6915, 1]) through kappa at the
    observed chance agreement. From 5 disagreements on it is the bootstrap again."""
    from judgeaudit.stats.intervals import clopper_pearson

    a = [1, 2] * 5
    est = kappa_ci(a, a, labels=[1, 2], n_boot=500)
    pe = 0.5  # each rater: half 1, half 2
    lo = (clopper_pearson(10, 10)[0] - pe) / (1 - pe)
    assert est.value == 1.0 and est.method == "clopper-pearson-agreement"
    assert est.ci95 == pytest.approx((lo, 1.0)) and lo < 0.4
    rng = np.random.default_rng(3)
    lab = rng.integers(1, 3, 60)
    for flips, method in ((4, "clopper-pearson-agreement"), (5, "bootstrap-percentile")):
        ver = lab.copy()
        ver[:flips] = 3 - ver[:flips]
        est = kappa_ci(ver, lab, labels=[1, 2], n_boot=500)
        assert est.method == method and est.ci95[0] < est.value <= est.ci95[1]


def test_fleiss_kappa_matches_statsmodels_and_refuses_unlisted_ratings():
    from statsmodels.stats.inter_rater import aggregate_raters
    from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

    from judgeaudit.stats import fleiss_kappa

    rng = np.random.default_rng(3)
    for _ in range(20):
        r = rng.integers(0, 3, size=(int(rng.integers(5, 60)), int(rng.integers(2, 6))))
        assert fleiss_kappa(r, [0, 1, 2]) == pytest.approx(
            sm_fleiss(aggregate_raters(r, n_cat=3)[0]), abs=1e-12)
    with pytest.raises(ValueError, match=r"ratings \[2\] are not among labels"):
        fleiss_kappa([[0, 1], [1, 2], [2, 2]], labels=[0, 1])  # gave -0.161 silently
    assert math.isnan(fleiss_kappa(np.zeros((0, 3))))  # crashed in np.stack


def test_fleiss_kappa_ci_covers_the_population_kappa():
    """Raters who report an item's true category with probability 0.6 (else one at random):
    the bootstrap interval at n = 80 covers the population kappa (from 200,000 items) at
    about its nominal 95%; with almost no disagreement it gives no interval, not [1, 1]."""
    from judgeaudit.stats import fleiss_kappa, fleiss_kappa_ci

    def sample(rng, n, m=4):
        truth = rng.integers(0, 3, size=(n, 1))
        noise = rng.integers(0, 3, size=(n, m))
        return np.where(rng.random((n, m)) < 0.6, truth, noise)

    rng = np.random.default_rng(0)
    population = fleiss_kappa(sample(rng, 200_000), [0, 1, 2])
    hits = []
    for rep in range(200):
        est = fleiss_kappa_ci(sample(rng, 80), [0, 1, 2], n_boot=1000, seed=rep)
        hits.append(est.ci95[0] <= population <= est.ci95[1])
    assert 0.90 <= np.mean(hits) <= 0.99
    calm = np.zeros((30, 3), dtype=int)
    calm[:3, 0] = 1  # three items with a disagreement
    est = fleiss_kappa_ci(calm, [0, 1, 2])
    assert math.isnan(est.ci95[0]) and "fewer than 5" in est.method


@pytest.mark.parametrize("method", ["fisher", "bootstrap"])
def test_a_perfect_correlation_has_no_interval_rather_than_a_point(method):
    """r = 1 on 5 items gave the interval [1, 1] (every resample, and Fisher's z, give the
    same value), which reads as certainty; now none, and the method says why."""
    from judgeaudit.stats import kendall, pearson, spearman

    x = [1, 2, 3, 4, 5]
    for fn, y in ((pearson, [2, 4, 6, 8, 10]), (spearman, x), (kendall, [5, 4, 3, 2, 1])):
        est = fn(x, y, method=method)
        assert abs(est.value) == 1.0 and math.isnan(est.ci95[0]) and math.isnan(est.ci95[1])
        assert est.method.startswith("none: a perfect correlation")
    assert not math.isnan(spearman(x, [1, 3, 2, 4, 5], method=method).ci95[0])


def test_rank_correlations_of_fewer_than_5_items_get_no_bootstrap_interval():
    """3 items gave Spearman 0.866 [0.866, 1.000]: a handful of distinct resamples."""
    from judgeaudit.stats import kendall, spearman

    for fn in (spearman, kendall):
        est = fn([2, 5, 4], [2, 4, 4], method="bootstrap")
        assert math.isnan(est.ci95[0]) and "fewer than 5" in est.method
    assert not math.isnan(spearman([1, 2, 3, 4, 5, 6], [2, 1, 4, 3, 6, 5],
                                   method="bootstrap").ci95[0])


def test_mean_absolute_error_interval_stays_at_or_above_zero():
    from judgeaudit.audit.evaluate import _mae

    est = _mae(np.array([0.0, 0.0, 1.0]))
    assert est["ci95"][0] == 0.0 and est["ci95"][1] > est["value"]


def test_kappa_against_a_rater_giving_one_label_has_no_interval():
    """A judge answering 'first' throughout: kappa is 0 in every resample, and the bootstrap
    printed 0.000 [0.000, 0.000] at n = 20 as if it were measured exactly."""
    import math

    from judgeaudit.stats.agreement import kappa_ci

    labels = [1, 2] * 10
    est = kappa_ci([1] * 20, labels)
    assert est.value == 0.0 and all(math.isnan(x) for x in est.ci95) and est.n == 20
    assert est.method is None
    both = kappa_ci(labels, labels)  # both vary: the rules as before
    assert both.method == "clopper-pearson-agreement"
