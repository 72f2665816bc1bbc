"""Coverage of the intervals on simulated data with a known truth (200 replications each).

Observed on these seeds: Wilson p=0.3, n=100 -> 0.930 (its exact coverage there is 0.937,
so 200 replications sit within one Monte Carlo SD, 0.017, of the bound: the exact test below
is the robust check); Wilson p=0.05, n=40 -> 0.945; paired bootstrap of an accuracy
difference (n=100, true -0.125) -> percentile 0.945, BCa 0.950; exact McNemar size 0.034.
"""

import numpy as np
import pytest
from scipy import stats as sps

from judgeaudit.stats import mcnemar_exact, paired_bootstrap_diff, wilson

REPS = 200


def wilson_coverage(p: float, n: int) -> float:
    k = np.array([np.random.default_rng(s).binomial(n, p) for s in range(REPS)])
    lo, hi = wilson(k, n)
    return float(np.mean((lo <= p) & (p <= hi)))


def paired_flip_sample(seed: int, n: int = 100):
    """Baseline correct w.p. 0.7; the perturbation breaks a correct verdict w.p. 0.2 and fixes
    a wrong one w.p. 0.05. True accuracy difference (perturbed - baseline):
    0.3 * 0.05 - 0.7 * 0.2 = -0.125."""
    rng = np.random.default_rng(seed)
    base = (rng.random(n) < 0.7).astype(float)
    u = rng.random(n)
    pert = np.where(base == 1, (u >= 0.2).astype(float), (u < 0.05).astype(float))
    return pert, base


TRUE_DIFF = 0.3 * 0.05 - 0.7 * 0.2


def paired_diff_coverage(method: str) -> float:
    hits = 0
    for s in range(REPS):
        pert, base = paired_flip_sample(s)
        est = paired_bootstrap_diff(pert, base, lambda x: x.mean(axis=1), n_boot=2000,
                                    seed=s, method=method, vectorized=True)
        hits += est.ci95[0] <= TRUE_DIFF <= est.ci95[1]
    return hits / REPS


def test_wilson_covers_a_known_rate():
    assert wilson_coverage(0.3, 100) >= 0.93


def exact_wilson_coverage(p: float, n: int) -> float:
    """Coverage by enumeration: sum of Binomial(n, p) over the k whose interval holds p."""
    k = np.arange(n + 1)
    lo, hi = wilson(k, n)
    return float(sps.binom.pmf(k, n, p)[(lo <= p) & (p <= hi)].sum())


def test_wilson_exact_coverage_is_near_nominal():
    assert exact_wilson_coverage(0.3, 100) >= 0.93
    # Averaged over p (coverage oscillates with p by discreteness), Wilson is ~nominal.
    avg = np.mean([exact_wilson_coverage(p, 50) for p in np.linspace(0.02, 0.98, 49)])
    assert avg == pytest.approx(0.95, abs=0.01)


def test_wilson_covers_a_rate_near_the_boundary():
    # Where the Wald interval fails badly (p = 0.05, n = 40), Wilson stays near nominal.
    assert wilson_coverage(0.05, 40) >= 0.90


@pytest.mark.parametrize("method", ["percentile", "bca"])
def test_paired_bootstrap_covers_a_known_difference(method):
    assert paired_diff_coverage(method) >= 0.90


def test_mcnemar_exact_keeps_its_size_under_no_effect():
    # Flips equally likely both ways (p10 = p01 = 0.1, n = 100): an exact test rejects at most
    # 5% of the time (it is conservative); 2000 replications, slack for Monte Carlo error.
    rng = np.random.default_rng(0)
    counts = rng.multinomial(100, [0.1, 0.1, 0.8], size=2000)[:, :2]
    pairs, freq = np.unique(counts, axis=0, return_counts=True)
    rejected = sum(f for (b, c), f in zip(pairs, freq, strict=True)
                   if mcnemar_exact(int(b), int(c)) < 0.05)
    assert rejected / 2000 <= 0.06


def test_wilson_is_exact_at_the_ends():
    """0 of n gives lo exactly 0 and n of n hi exactly 1 (rounding gave 8.7e-19 and a
    frame showed it); the other bound is the textbook formula."""
    from judgeaudit.stats.intervals import wilson

    for n in (1, 7, 40, 1000):
        lo, hi = wilson(0, n)
        z = 1.959963984540054
        assert lo == 0.0 and hi == pytest.approx(z * z / n / (1 + z * z / n))
        lo, hi = wilson(n, n)
        assert hi == 1.0 and lo == pytest.approx(1 - z * z / n / (1 + z * z / n))


def test_wilson_refuses_a_count_that_is_not_a_number():
    from judgeaudit.stats.intervals import wilson

    with pytest.raises(ValueError, match="need 0 <= successes <= n"):
        wilson(3, float("nan"))  # gave (nan, nan)


@pytest.mark.parametrize(("agree", "low", "high"), [(True, 0.93, 0.98), (False, 0.93, 0.98)])
def test_clustered_rate_covers_when_an_items_two_orders_agree(agree, low, high):
    """20 items judged in both orders, right with p = 0.6. Orders that always agree: a
    plain Wilson over the 40 verdicts covers about 89% (it counts each item twice); the
    clustered interval about 95%. Independent orders: both about 95%."""
    from judgeaudit.stats.intervals import clustered_rate, wilson

    rng = np.random.default_rng(1)
    hits = plain = 0
    for _ in range(1500):
        x = rng.random((20, 1 if agree else 2)) < 0.6
        clusters = [(2.0 * r[0], 2) if agree else (float(r.sum()), 2) for r in x]
        est = clustered_rate(clusters)
        hits += est.ci95[0] <= 0.6 <= est.ci95[1]
        lo, hi = wilson(sum(c[0] for c in clusters), 40)
        plain += lo <= 0.6 <= hi
    assert low <= hits / 1500 <= high
    if agree:
        assert plain / 1500 < 0.92  # the defect the clustering fixes
    assert clustered_rate([(3, 4)]).method == "wilson"  # one item: nothing to cluster on
