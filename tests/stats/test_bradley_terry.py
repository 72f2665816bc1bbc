"""Bias-aware Bradley-Terry: analytic derivatives against finite differences, the Laplace
covariance against a numerical Hessian, plain BT against choix, planted-value recovery."""

import choix
import numpy as np
import pytest
from scipy import optimize

from judgeaudit.stats.bradley_terry import (
    as_comparisons,
    fit_map,
    fit_naive,
    from_winner_loser,
    hessian,
    neg_log_posterior,
)


def _simulate(n=12, m=2, c=(0.8, -0.5), kappa=0.4, reps=2, seed=0, ties=0.1):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    X = rng.normal(size=(n, m))
    rows = []
    for _ in range(reps):
        for a in range(n):
            for b in range(n):
                if a == b:
                    continue
                p = 1 / (1 + np.exp(-(theta[a] - theta[b] + (X[a] - X[b]) @ np.array(c) + kappa)))
                u = rng.random()
                y = 0.5 if u < ties else float(rng.random() < p)
                rows.append((a, b, y))
    return theta, X, np.array(rows)


@pytest.fixture(scope="module")
def data():
    return _simulate()


def test_gradient_matches_finite_differences(data):
    _, X, C = data
    n = X.shape[0]
    rng = np.random.default_rng(1)
    z = rng.normal(scale=0.5, size=n + X.shape[1] + 1)

    def f(v):
        return neg_log_posterior(v, n, C, X, True, 1.3, 0.7)[0]

    g = neg_log_posterior(z, n, C, X, True, 1.3, 0.7)[1]
    num = optimize.approx_fprime(z, f, 1e-6)
    assert np.max(np.abs(g - num)) < 1e-3 * max(1.0, np.max(np.abs(g)))
    assert np.max(np.abs(g)) > 1.0  # a non-trivial point


def test_laplace_cov_is_inverse_of_numerical_hessian(data):
    _, X, C = data
    n = X.shape[0]
    fit = fit_map(n, C, X, lam=1.0, tau=1.0)
    z = fit.params
    h = 1e-5
    P = z.shape[0]
    H = np.zeros((P, P))
    for a in range(P):
        e = np.zeros(P)
        e[a] = h
        gp = neg_log_posterior(z + e, n, C, X, True, 1.0, 1.0)[1]
        gm = neg_log_posterior(z - e, n, C, X, True, 1.0, 1.0)[1]
        H[:, a] = (gp - gm) / (2 * h)
    H = 0.5 * (H + H.T)
    np.testing.assert_allclose(hessian(z, n, C, X, True, 1.0, 1.0), H, atol=1e-5)
    np.testing.assert_allclose(fit.cov, np.linalg.inv(H), rtol=1e-4, atol=1e-7)


def test_map_is_a_stationary_point_and_converged(data):
    _, X, C = data
    fit = fit_map(X.shape[0], C, X)
    g = neg_log_posterior(fit.params, X.shape[0], C, X)[1]
    assert fit.converged
    assert np.max(np.abs(g)) < 1e-5


def test_naive_fit_matches_choix_opt_pairwise():
    rng = np.random.default_rng(3)
    n = 20
    theta = rng.normal(scale=0.5, size=n)
    pairs = []
    for _ in range(800):
        a, b = rng.choice(n, 2, replace=False)
        pairs.append((a, b) if rng.random() < 1 / (1 + np.exp(theta[b] - theta[a])) else (b, a))
    alpha = 0.05  # choix penalises alpha * ||theta||^2: a prior of precision 2 * alpha
    ref = choix.opt_pairwise(n, pairs, alpha=alpha, method="Newton-CG", tol=1e-10)
    ours = fit_naive(n, from_winner_loser(pairs), lam=2 * alpha).theta
    np.testing.assert_allclose(ours - ours.mean(), ref - ref.mean(), atol=1e-5)
    ml = choix.ilsr_pairwise(n, pairs, alpha=0.0, tol=1e-12)
    ours_ml = fit_naive(n, from_winner_loser(pairs), lam=1e-9).theta
    np.testing.assert_allclose(ours_ml - ours_ml.mean(), ml - ml.mean(), atol=1e-3)


def test_tie_counts_as_half_a_win():
    # one tie row == a win and a loss at half weight: doubling every other row and lam
    # gives the same MAP
    base = np.array([(0, 1, 1.0), (1, 2, 0.0), (2, 0, 1.0), (0, 2, 0.5), (1, 0, 0.5)])
    split = []
    for i, j, y in base:
        if y == 0.5:
            split += [(i, j, 1.0), (i, j, 0.0)]
        else:
            split += [(i, j, y), (i, j, y)]
    a = fit_map(3, base, position=True, lam=0.5, tau=0.8)
    b = fit_map(3, np.array(split), position=True, lam=1.0, tau=0.8 / np.sqrt(2))
    np.testing.assert_allclose(a.params, b.params, atol=1e-6)


def test_planted_bias_recovered_with_covering_intervals():
    theta, X, C = _simulate(n=25, c=(1.0, -0.5), kappa=0.4, reps=3, seed=5, ties=0.0)
    fit = fit_map(25, C, X)
    iv = fit.c_interval()
    assert np.all((iv[:, 0] <= [1.0, -0.5]) & (iv[:, 1] >= [1.0, -0.5]))
    lo, hi = fit.kappa_interval()
    assert lo <= 0.4 <= hi
    assert np.corrcoef(fit.theta, theta)[0, 1] > 0.9


def test_hierarchical_tau_shrinks_for_unbiased_judge_and_satisfies_update():
    _, X, C0 = _simulate(n=20, c=(0.0, 0.0), kappa=0.0, reps=2, seed=7, ties=0.0)
    _, _, C1 = _simulate(n=20, c=(1.5, -1.0), kappa=0.8, reps=2, seed=7, ties=0.0)
    f0 = fit_map(20, C0, X, hierarchical=True)
    f1 = fit_map(20, C1, X, hierarchical=True)
    assert f0.tau < 0.3 < 0.8 < f1.tau
    b = slice(20, None)
    t2 = (np.sum(f1.params[b] ** 2) + np.trace(f1.cov[b, b])) / 3
    assert abs(np.sqrt(t2) - f1.tau) < 1e-3


def test_warm_start_reaches_same_optimum_in_fewer_iterations(data):
    _, X, C = data
    n = X.shape[0]
    cold = fit_map(n, C[:-10], X)
    full_cold = fit_map(n, C, X)
    warm = fit_map(n, C, X, init=cold)
    np.testing.assert_allclose(warm.params, full_cold.params, atol=1e-5)
    assert warm.n_iter < full_cold.n_iter


def test_loglik_is_the_data_log_likelihood(data):
    _, X, C = data
    fit = fit_map(X.shape[0], C, X)
    i, j, y = C[:, 0].astype(int), C[:, 1].astype(int), C[:, 2]
    eta = fit.theta[i] - fit.theta[j] + (X[i] - X[j]) @ fit.c + fit.kappa
    p = 1 / (1 + np.exp(-eta))
    assert fit.loglik == pytest.approx(np.sum(y * np.log(p) + (1 - y) * np.log(1 - p)))


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(0, 1, 0.3)], "row 0: y=0.3"),
        ([(0, 1, 1), (2, 2, 1)], "row 1: an item compared with itself"),
        ([(0, 5, 1)], "row 0: item index"),
        ([(0, 1.5, 1)], "non-negative integers"),
        ([(0, 1)], "shape"),
    ],
)
def test_bad_comparisons_are_named(rows, message):
    with pytest.raises(ValueError, match=message):
        as_comparisons(rows, n_items=3)


def test_covariate_rows_must_match_items():
    with pytest.raises(ValueError, match="expected 3 rows"):
        fit_map(3, [(0, 1, 1)], X=np.zeros((4, 1)))
