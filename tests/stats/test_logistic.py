import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from scipy import special

from judgeaudit.stats import LogisticFit, add_constant, fit_logistic


def simulate(n=500, seed=0, coef=(-0.3, 0.8, -0.5, 0.2)):
    rng = np.random.default_rng(seed)
    X = add_constant(rng.normal(size=(n, len(coef) - 1)))
    p = special.expit(X @ np.array(coef))
    return X, p, rng


def test_binary_fit_matches_statsmodels_logit():
    X, p, rng = simulate()
    y = (rng.random(len(p)) < p).astype(float)
    fit = fit_logistic(X, y)
    ref = sm.Logit(y, X).fit(disp=0, method="newton", tol=1e-12)
    assert fit.converged
    np.testing.assert_allclose(fit.coef, ref.params, rtol=1e-6)
    np.testing.assert_allclose(fit.se, ref.bse, rtol=1e-6)
    np.testing.assert_allclose(fit.cov, ref.cov_params(), rtol=1e-6)
    np.testing.assert_allclose(fit.pvalues, ref.pvalues, rtol=1e-6)
    assert fit.loglik == pytest.approx(ref.llf, rel=1e-10)


def test_fractional_ties_and_weights_match_glm_binomial():
    # Ties as y = 0.5, frequency weights: the quasi-likelihood fit is GLM Binomial's.
    X, p, rng = simulate(n=400, seed=1)
    u = rng.random(len(p))
    y = np.where(u < 0.15, 0.5, (u < p).astype(float))
    w = rng.integers(1, 4, len(p)).astype(float)
    fit = fit_logistic(X, y, weights=w)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = sm.GLM(y, X, family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-13)
    assert fit.converged
    np.testing.assert_allclose(fit.coef, ref.params, rtol=1e-6)
    np.testing.assert_allclose(fit.se, ref.bse, rtol=1e-6)
    # The loglik is the quasi-likelihood sum, without GLM's binomial-coefficient terms.
    eta = X @ fit.coef
    expected = np.sum(w * (y * np.log(special.expit(eta)) + (1 - y) * np.log(special.expit(-eta))))
    assert fit.loglik == pytest.approx(expected, rel=1e-12)


def test_offset_matches_glm_offset():
    X, p, rng = simulate(n=300, seed=2)
    y = (rng.random(len(p)) < p).astype(float)
    off = rng.normal(scale=0.5, size=len(p))
    fit = fit_logistic(X, y, offset=off)
    ref = sm.GLM(y, X, family=sm.families.Binomial(), offset=off).fit(tol=1e-13)
    np.testing.assert_allclose(fit.coef, ref.params, rtol=1e-6)
    np.testing.assert_allclose(fit.se, ref.bse, rtol=1e-6)
    np.testing.assert_allclose(fit.predict(X, offset=off), ref.fittedvalues, rtol=1e-6)


def test_planted_coefficients_are_recovered_within_their_intervals():
    coef = np.array([0.2, 1.0, -0.7])
    X, p, rng = simulate(n=20000, seed=3, coef=tuple(coef))
    y = (rng.random(len(p)) < p).astype(float)
    fit = fit_logistic(X, y)
    assert np.all(np.abs(fit.coef - coef) < 3.5 * fit.se)
    assert np.all(fit.se < 0.03)


def test_l2_is_a_ridge_map_with_laplace_covariance():
    X, p, rng = simulate(n=200, seed=4)
    y = (rng.random(len(p)) < p).astype(float)
    pen = np.array([0.0, 5.0, 5.0, 5.0])  # intercept left free
    fit = fit_logistic(X, y, l2=pen)
    q = special.expit(X @ fit.coef)
    grad = X.T @ (y - q) - pen * fit.coef
    np.testing.assert_allclose(grad, 0.0, atol=1e-8)
    hess = (X * (q * (1 - q))[:, None]).T @ X + np.diag(pen)
    np.testing.assert_allclose(fit.cov, np.linalg.inv(hess), rtol=1e-8)
    free = fit_logistic(X, y)
    assert np.all(np.abs(fit.coef[1:]) < np.abs(free.coef[1:]))


def test_separation_is_reported_not_hidden():
    x = np.linspace(-1, 1, 40)
    X = add_constant(x)
    y = (x > 0).astype(float)  # perfectly separated: the MLE slope is infinite
    fit = fit_logistic(X, y, max_iter=50)
    assert not fit.converged
    ridge = fit_logistic(X, y, l2=1.0)
    assert ridge.converged and np.all(np.isfinite(ridge.se))


def test_bad_inputs_say_what_is_wrong():
    X = add_constant(np.arange(5.0))
    with pytest.raises(ValueError, match=r"y\[2\] = 1.5"):
        fit_logistic(X, [0, 1, 1.5, 0, 1])
    with pytest.raises(ValueError, match="y has 4 entries, X has 5 rows"):
        fit_logistic(X, [0, 1, 1, 0])
    with pytest.raises(ValueError, match="rank"):
        fit_logistic(np.column_stack([X, X[:, 1]]), [0, 1, 1, 0, 1])
    with pytest.raises(ValueError, match="weights"):
        fit_logistic(X, [0, 1, 1, 0, 1], weights=[1, 1, -1, 1, 1])


def test_result_type():
    X, p, rng = simulate(n=100, seed=5)
    fit = fit_logistic(X, (rng.random(100) < p).astype(float))
    assert isinstance(fit, LogisticFit)
    np.testing.assert_allclose(fit.z, fit.coef / fit.se)
    assert fit.n_iter >= 3
