"""Empirical-Bayes prior scale: recovers a planted spread, is a fixed point of its EM step,
and does not touch fits without the flag."""

import numpy as np
import pytest

from judgeaudit.rank.fitting import fit_model
from judgeaudit.rank.simulate import SimOracle
from judgeaudit.stats.bradley_terry import fit_map, fit_naive


def _data(sd: float, seed: int, n: int = 40, reps: int = 3):
    rng = np.random.default_rng(seed)
    theta = sd * rng.standard_normal(n)
    X = (rng.random((n, 1)) < 0.5).astype(float)
    comps = np.vstack([SimOracle(theta, X, c=0.5, kappa=0.2, seed=seed * 10 + r)
                       .full_comparisons() for r in range(reps)])
    return theta, X, comps


@pytest.mark.parametrize("sd", [0.7, 3.0])
def test_eb_lam_recovers_the_spread_of_theta(sd):
    theta, X, comps = _data(sd, seed=1)
    fit = fit_model("bias_aware", 40, comps, X=X, eb_lam=True)
    true_lam = 1.0 / np.mean(theta ** 2)
    assert 0.6 * true_lam < fit.lam < 1.6 * true_lam
    # converged: lam is (nearly) a fixed point of the EM step
    second = np.sum(fit.theta ** 2 + np.diag(fit.theta_cov))
    assert fit.lam == pytest.approx(40 / second, rel=5e-3)


def test_wide_spread_tight_prior_attenuates_kappa_eb_does_not():
    theta, X, comps = _data(3.0, seed=2)
    fixed = fit_model("bias_aware", 40, comps, X=X, lam=1.0)
    eb = fit_model("bias_aware", 40, comps, X=X, eb_lam=True)
    assert abs(eb.kappa - 0.2) < abs(fixed.kappa - 0.2)
    lo, hi = eb.kappa_interval()
    assert lo <= 0.2 <= hi


def test_without_flag_it_is_the_plain_fits_and_naive_works_too():
    _, X, comps = _data(1.0, seed=3, n=12, reps=1)
    np.testing.assert_allclose(fit_model("bias_aware", 12, comps, X=X, lam=0.5).theta,
                               fit_map(12, comps, X=X, lam=0.5).theta)
    np.testing.assert_allclose(fit_model("naive", 12, comps, lam=0.5).theta,
                               fit_naive(12, comps, lam=0.5).theta)
    assert fit_model("naive", 12, comps, eb_lam=True).lam > 0
    with pytest.raises(ValueError, match="unknown model"):
        fit_model("fancy", 12, comps)
