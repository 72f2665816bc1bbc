"""The sparse Laplace posterior against the dense one, and the large-N path's memory."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from judgeaudit.stats import bt_posterior
from judgeaudit.stats.bradley_terry import _layout, _Problem, fit_map, fit_naive
from judgeaudit.stats.bt_posterior import _spd_inverse


def _problem(n: int, m: int, seed: int, n_cov: int = 2, ties: float = 0.1,
             groups: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Random comparisons; ``groups`` > 1 gives a disconnected comparison graph, and the
    last item is never compared (an isolated node)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    X = rng.normal(size=(n, n_cov))
    g = np.arange(n - 1) % groups
    a = rng.integers(0, n - 1, 4 * m)
    b = rng.integers(0, n - 1, 4 * m)
    keep = (a != b) & (g[a] == g[b])
    a, b = a[keep][:m], b[keep][:m]
    eta = theta[a] - theta[b] + X[a] @ np.full(n_cov, 0.4) - X[b] @ np.full(n_cov, 0.4) + 0.3
    y = (rng.random(a.shape[0]) < 1 / (1 + np.exp(-eta))).astype(float)
    y[rng.random(a.shape[0]) < ties] = 0.5
    return np.column_stack([a, b, y]), X


CASES = [
    # (n, m, seed, n_cov, groups, position, lam)
    (12, 40, 0, 2, 1, True, 1.0),
    (30, 200, 1, 1, 1, True, 0.3),
    (25, 60, 2, 0, 3, True, 1.0),  # three components and an isolated item
    (40, 500, 3, 2, 1, False, 2.0),
    (20, 80, 4, 0, 1, False, 1e-6),  # fit_naive's tiny ridge: deflation carries it
]


@pytest.mark.parametrize("n,m,seed,n_cov,groups,position,lam", CASES)
def test_sparse_posterior_equals_dense_at_the_same_point(n, m, seed, n_cov, groups, position,
                                                         lam):
    C, X = _problem(n, m, seed, n_cov, groups=groups)
    Xa, mm, _ = _layout(n, X if n_cov else None, position)
    prob = _Problem(n, C, Xa, mm, position)
    rng = np.random.default_rng(seed)
    z = rng.normal(scale=0.5, size=n + prob.nb)
    cov = _spd_inverse(prob.dense_hessian(z, lam, 0.7))
    post = prob.sparse_posterior(z, lam, 0.7, n_probes=4000)
    scale = np.abs(cov).max()
    # c / kappa block, solves and pair variances: exact
    np.testing.assert_allclose(post.b_cov, cov[n:, n:], rtol=1e-8, atol=1e-12)
    R = rng.normal(size=(n + prob.nb, 3))
    np.testing.assert_allclose(post.solve(R), cov @ R, rtol=1e-7, atol=1e-8 * scale)
    a, b = np.triu_indices(n, 1)
    d = np.diag(cov)
    exact_pairs = d[a] + d[b] - 2 * cov[a, b]
    np.testing.assert_allclose(post.pair_var(a, b), exact_pairs, rtol=1e-7, atol=1e-9 * scale)
    # the full covariance on request
    np.testing.assert_allclose(post.dense_cov(), cov, rtol=1e-9, atol=1e-12 * scale)
    # theta variances: unbiased estimate, within its own standard error
    v, se = post.theta_var, post.theta_var_se
    assert np.all(np.abs(v - d[:n]) <= 5 * se + 1e-9 * scale)
    assert np.max(np.abs(v / d[:n] - 1)) < 0.02


@pytest.mark.parametrize("n,m,seed,n_cov,groups,position,lam", CASES[:4])
def test_sparse_fit_matches_dense_fit(n, m, seed, n_cov, groups, position, lam):
    C, X = _problem(n, m, seed, n_cov, groups=groups)
    Xn = X if n_cov else None
    fd = fit_map(n, C, Xn, position=position, lam=lam, posterior="dense")
    fs = fit_map(n, C, Xn, position=position, lam=lam, posterior="sparse")
    assert fd.is_dense and not fs.is_dense and fs.converged
    np.testing.assert_allclose(fs.theta, fd.theta, atol=1e-5)
    np.testing.assert_allclose(fs.c, fd.c, atol=1e-5)
    assert fs.kappa == pytest.approx(fd.kappa, abs=1e-5)
    np.testing.assert_allclose(fs.c_se, fd.c_se, rtol=1e-4)
    assert fs.kappa_se == pytest.approx(fd.kappa_se, rel=1e-4)
    a, b = np.triu_indices(n, 1)
    np.testing.assert_allclose(fs.var_diff(a, b), fd.var_diff(a, b), rtol=1e-4)
    np.testing.assert_allclose(fs.var_diff(a, b), fd.var_diff()[a, b], rtol=1e-4)
    np.testing.assert_allclose(fs.theta_var, fd.theta_var, rtol=0.05)
    assert fs.loglik == pytest.approx(fd.loglik, abs=1e-6)
    np.testing.assert_allclose(fs.cov, fd.cov, rtol=1e-3, atol=1e-6)  # built on request


def test_sparse_naive_and_hierarchical_match_dense():
    C, X = _problem(30, 300, 5, 2)
    fd, fs = fit_naive(30, C, posterior="dense"), fit_naive(30, C, posterior="sparse")
    np.testing.assert_allclose(fs.theta - fs.theta.mean(), fd.theta - fd.theta.mean(),
                               atol=1e-5)
    hd = fit_map(30, C, X, hierarchical=True, posterior="dense")
    hs = fit_map(30, C, X, hierarchical=True, posterior="sparse")
    assert hs.tau == pytest.approx(hd.tau, rel=1e-3)
    np.testing.assert_allclose(hs.c, hd.c, atol=1e-4)


def test_hierarchical_tau_is_the_em_fixed_point_and_reaches_the_floor():
    C, X = _problem(40, 400, 6, 2, ties=0.0)
    f = fit_map(40, C, X, hierarchical=True)
    t2 = (np.sum(f.params[40:] ** 2) + np.trace(f.b_cov)) / 3
    assert np.sqrt(t2) == pytest.approx(f.tau, rel=2e-4)
    # no bias at all in the data: tau shrinks to the floor
    rng = np.random.default_rng(0)
    a = rng.integers(0, 40, 400)
    b = (a + rng.integers(1, 40, 400)) % 40
    y = np.where(a < b, 1.0, 0.0)  # quality only, balanced order
    C0 = np.vstack([np.column_stack([a, b, y]), np.column_stack([b, a, 1 - y])])
    f0 = fit_map(40, C0, rng.normal(size=(40, 2)), hierarchical=True, tau_floor=1e-3)
    assert f0.tau < 0.05


def test_large_n_path_never_builds_a_dense_matrix(monkeypatch):
    """N = 20,000: an N x N float64 array would be 3.2 GB; the traced peak stays far below."""
    def no_dense(self):  # pragma: no cover - failing is the point
        raise AssertionError("dense covariance built on the large-N path")

    monkeypatch.setattr(bt_posterior.SparsePosterior, "dense_cov", no_dense)
    n, m = 20_000, 60_000
    rng = np.random.default_rng(0)
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    y = (rng.random(m) < 0.5).astype(float)
    X = rng.normal(size=(n, 1))
    tracemalloc.start()
    try:
        f = fit_map(n, np.column_stack([a, b, y]), X)
        var = f.theta_var
        se = (f.c_se, f.kappa_se)
        pv = f.var_diff(a[:20], b[:20])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not f.is_dense and f.converged
    assert var.shape == (n,) and np.all(var > 0) and np.all(pv > 0) and se[0][0] > 0
    assert peak < 0.05 * n * n * 8  # 160 MB against 3.2 GB for one dense N x N array


def test_btfit_needs_cov_or_posterior():
    with pytest.raises(ValueError, match="cov or posterior"):
        fit_map.__globals__["BTFit"](theta=np.zeros(2), c=np.zeros(0), kappa=0.0)
    with pytest.raises(ValueError, match="posterior must be"):
        fit_map(3, [[0, 1, 1]], posterior="cholmod")  # type: ignore[arg-type]
