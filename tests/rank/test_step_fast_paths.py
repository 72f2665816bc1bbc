"""The active step's fast paths (issue 15: an active step at N = 1,000 in <= 50 ms) against the
exact dense computations on the same input, at N = 200 and N = 1,000:

- warm-started Newton with the empirical-Bayes tau update (the loop's refit) against the
  L-BFGS fit;
- the float32 inverse and its factor (``dense_inverse_factor``) against the float64 inverse;
- membership draws from the precision factor (antithetic pairs) against the covariance;
- the acquisition context the loop builds against one built from the exact covariance.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from judgeaudit.rank.acquisition import get_rule
from judgeaudit.rank.acquisition.base import AcquisitionContext
from judgeaudit.rank.loop import LoopConfig, _context, _fit
from judgeaudit.rank.membership import (
    membership_from_draws,
    precision_draws,
    topk_membership,
)
from judgeaudit.stats.bradley_terry import fit_map
from judgeaudit.stats.bt_posterior import _spd_inverse, dense_inverse_factor


def _data(n: int, m: int, seed: int = 0, c: float = 0.8, kappa: float = 0.3):
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n)
    X = rng.normal(size=(n, 1))
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    eta = theta[a] - theta[b] + c * (X[a, 0] - X[b, 0]) + kappa
    y = (rng.random(m) < 1.0 / (1.0 + np.exp(-eta))).astype(float)
    return np.column_stack([a, b, y]), X


def _state(n: int):
    """A fit on 3N comparisons and the loop's warm refit after 8 more (benchmarks/rank_scale
    'step')."""
    C, X = _data(n, 3 * n + 8, seed=n)
    cfg = LoopConfig(k=10, budget=0, hierarchical=True)
    prev = _fit("bias_aware", n, C[:-8], X, cfg, None)
    return C, X, cfg, prev


@pytest.mark.parametrize("n", [200, 1000])
def test_warm_newton_with_eb_tau_matches_the_lbfgs_fit(n):
    C, X, cfg, prev = _state(n)
    fast = _fit("bias_aware", n, C, X, cfg, prev, driving=True)
    exact = fit_map(n, C, X, hierarchical=True, init=prev, posterior="dense", method="lbfgs")
    assert fast.converged and exact.converged
    # both stop at max |gradient| ~1e-8; tau at the EB fixed point to 1e-4 relative
    assert np.max(np.abs(fast.theta - exact.theta)) < 1e-5
    assert abs(fast.tau / exact.tau - 1.0) < 1e-3
    assert np.max(np.abs(fast.c - exact.c)) < 1e-5
    # the lazy posterior is the dense one at its own MAP
    H = fast.dense_hessian()
    np.testing.assert_allclose(fast.cov, _spd_inverse(H), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n", [200, 1000])
def test_float32_inverse_and_factor_match_the_float64_inverse(n):
    C, X, cfg, prev = _state(n)
    fit = _fit("bias_aware", n, C, X, cfg, prev, driving=True)
    H = fit.dense_hessian()
    exact = _spd_inverse(H)
    M, cov = dense_inverse_factor(H, min_eig=min(fit.lam, fit.tau ** -2))
    assert M.dtype == np.float32 and cov.dtype == np.float64
    assert cov.flags.c_contiguous
    np.testing.assert_array_equal(cov, cov.T)
    a, b = np.triu_indices(n, 1)
    d, de = np.diag(cov), np.diag(exact)
    vd = d[a] + d[b] - 2 * cov[a, b]
    vde = de[a] + de[b] - 2 * exact[a, b]
    assert np.max(np.abs(vd / vde - 1.0)) < 1e-5  # measured ~4e-7 at N = 1,000
    assert np.max(np.abs(d / de - 1.0)) < 1e-5
    Mt = M.astype(np.float64)
    assert np.max(np.abs(Mt.T @ Mt - exact)) < 1e-5 * np.max(np.abs(exact))
    # without a bound on the smallest eigenvalue: float64, exact
    M64, cov64 = dense_inverse_factor(H)
    assert M64.dtype == np.float64
    np.testing.assert_allclose(cov64, exact, rtol=1e-10, atol=1e-13)


def test_ill_conditioned_hessian_takes_float64():
    C, X = _data(60, 400)
    fit = fit_map(60, C, X, lam=1e-6)
    H = fit.dense_hessian()
    M, cov = dense_inverse_factor(H, min_eig=1e-6)
    assert M.dtype == np.float64
    np.testing.assert_allclose(cov, fit.cov, rtol=1e-8, atol=1e-10)


def test_precision_draws_have_the_posterior_covariance():
    C, X = _data(50, 300, seed=3)
    fit = fit_map(50, C, X)
    M, _ = dense_inverse_factor(fit.dense_hessian(), min_eig=1.0)
    S = 40_000
    for anti in (False, True):
        x = precision_draws(fit.theta, M, S, seed=1, antithetic=anti).astype(np.float64)
        cov = fit.theta_cov
        emp = np.cov(x.T)
        # sd of an empirical covariance entry: sqrt((s_ii s_jj + s_ij^2) / S)
        sd = np.sqrt((np.outer(np.diag(cov), np.diag(cov)) + cov ** 2) / S)
        assert np.max(np.abs(emp - cov) / sd) < 5.5
        assert np.max(np.abs(x.mean(axis=0) - fit.theta)) < (
            0.0 if anti else 5.0 * np.sqrt(np.max(np.diag(cov)) / S)) + 1e-6


@pytest.mark.parametrize("n", [200, 1000])
def test_membership_from_the_factor_matches_the_covariance_path(n):
    C, X, cfg, prev = _state(n)
    fit = _fit("bias_aware", n, C, X, cfg, prev, driving=True)
    M, _ = dense_inverse_factor(fit.dense_hessian(), min_eig=min(fit.lam, fit.tau ** -2))
    S = 6000
    p_fac = membership_from_draws(precision_draws(fit.theta, M, S, seed=5, antithetic=True), 10)
    p_cov = topk_membership(fit.theta, fit.theta_cov, 10, S, seed=6)
    assert p_fac.sum() == pytest.approx(10.0)
    # two independent Monte-Carlo estimates: 5 standard errors of their difference
    p = 0.5 * (p_fac + p_cov)
    tol = 5.0 * np.sqrt(2.0 * p * (1.0 - p) / S) + 2.0 / S
    assert np.all(np.abs(p_fac - p_cov) <= tol)


def test_antithetic_draws_do_not_inflate_the_monte_carlo_error():
    C, X = _data(80, 500, seed=4)
    fit = fit_map(80, C, X)
    M, _ = dense_inverse_factor(fit.dense_hessian(), min_eig=1.0)
    reps = [[membership_from_draws(precision_draws(fit.theta, M, 600, seed=s, antithetic=a), 5)
             for s in range(40)] for a in (False, True)]
    sd_ind, sd_anti = (np.std(np.array(r), axis=0, ddof=1) for r in reps)
    live = sd_ind > 0.01
    assert live.sum() >= 5
    assert np.median(sd_anti[live] ** 2 / sd_ind[live] ** 2) < 1.2


def test_grouped_membership_from_draws_counts_each_groups_top_k():
    rng = np.random.default_rng(0)
    draws = rng.normal(size=(300, 30)).astype(np.float32)
    groups = np.arange(30) % 3
    p = membership_from_draws(draws, 4, groups)
    for g in range(3):
        idx = np.nonzero(groups == g)[0]
        top = np.argsort(-draws[:, idx], axis=1, kind="stable")[:, :4]
        np.testing.assert_array_equal(p[idx], np.bincount(top.ravel(), minlength=10) / 300)
    top = np.argsort(-draws, axis=1, kind="stable")[:, :4]
    np.testing.assert_array_equal(membership_from_draws(draws, 4),
                                  np.bincount(top.ravel(), minlength=30) / 300)


@pytest.mark.parametrize("n", [200, 1000])
def test_loop_context_matches_the_exact_dense_context(n):
    C, X, cfg, prev = _state(n)
    fit = _fit("bias_aware", n, C, X, cfg, prev, driving=True)
    ctx = _context(fit, X, cfg, np.zeros(n), np.random.default_rng(1))
    assert ctx.factor is not None
    exact = AcquisitionContext(theta=fit.theta, cov=fit.cov.copy(), k=cfg.k,
                               shift=X @ fit.c, kappa=fit.kappa, n_samples=cfg.n_samples)
    exact._membership = ctx.membership  # the same membership: compare the rest exactly
    a, b = np.triu_indices(n, 1)
    assert np.max(np.abs(ctx.var_diff(a, b) / exact.var_diff(a, b) - 1.0)) < 1e-5
    d = fit.theta[a] - fit.theta[b] + (X[a] - X[b]) @ fit.c
    p1, p2 = special.expit(d + fit.kappa), special.expit(d - fit.kappa)
    np.testing.assert_allclose(ctx.outcome_variance(a, b),
                               0.5 * (p1 * (1 - p1) + p2 * (1 - p2)), rtol=1e-9, atol=1e-15)
    for rule in ("topk", "global", "uncertainty_only"):
        s, se = get_rule(rule)(ctx, a, b), get_rule(rule)(exact, a, b)
        np.testing.assert_allclose(s, se, rtol=1e-5, atol=1e-12)
        assert se[int(np.argmax(s))] >= (1.0 - 2e-5) * se.max()


def test_var_diff_reads_a_fortran_ordered_cov_too():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(20, 20))
    cov = A @ A.T
    a, b = np.triu_indices(20, 1)
    ctx_c = AcquisitionContext(theta=np.zeros(20), cov=np.ascontiguousarray(cov), k=3,
                               shift=np.zeros(20))
    ctx_f = AcquisitionContext(theta=np.zeros(20), cov=np.asfortranarray(cov), k=3,
                               shift=np.zeros(20))
    expected = np.maximum(np.diag(cov)[a] + np.diag(cov)[b] - 2 * cov[a, b], 0.0)
    np.testing.assert_allclose(ctx_c.var_diff(a, b), expected, rtol=1e-13)
    np.testing.assert_allclose(ctx_f.var_diff(a, b), expected, rtol=1e-13)


def test_cg_from_a_starting_guess_reaches_the_same_solution():
    from judgeaudit.stats.bradley_terry import _layout, _Problem

    C, X = _data(300, 1500, seed=7)
    fit = fit_map(300, C, X)
    Xa, m, _ = _layout(300, X, True)
    prob = _Problem(300, C, Xa, m, True)
    cold = prob.sparse_posterior(fit.params, 1.0, 1.0, n_probes=0)
    guess = cold.X * (1.0 + 1e-3 * np.random.default_rng(0).normal(size=cold.X.shape))
    prob._X = guess
    warm = prob.sparse_posterior(fit.params, 1.0, 1.0, n_probes=0)
    np.testing.assert_allclose(warm.X, cold.X, rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(warm.b_cov, fit.b_cov, rtol=1e-10)
    assert warm.cg_iters < cold.cg_iters


@pytest.mark.parametrize("scale", [1.0, 3.0])
def test_topk_score_is_the_product_whether_few_or_most_pairs_are_live(scale):
    rng = np.random.default_rng(2)
    n = 60
    A = rng.normal(size=(n, n))
    cov = np.linalg.inv(A @ A.T / n * 20 + np.eye(n))
    ctx = AcquisitionContext(theta=rng.normal(size=n) * scale, cov=cov, k=5,
                             shift=rng.normal(size=n) * 0.1, kappa=0.2, n_samples=400)
    a, b = np.triu_indices(n, 1)
    h = ctx.entropy(a, b)
    frac = np.mean(h > 0)
    assert (frac > 0.5) == (scale == 1.0) and 0 < frac < 1
    full = ctx.outcome_variance(a, b) * ctx.var_diff(a, b) * h
    np.testing.assert_array_equal(get_rule("topk")(ctx, a, b), full)


def test_hessian_bound_and_float32_hessian():
    C, X, cfg, prev = _state(200)
    fit = _fit("bias_aware", 200, C, X, cfg, prev, driving=True)
    H = fit.dense_hessian()
    gersh = float(np.max(np.abs(H).sum(axis=1)))
    assert fit.hessian_max_eig_bound() == pytest.approx(gersh, rel=1e-12)
    assert fit.hessian_max_eig_bound() >= np.linalg.eigvalsh(H)[-1]
    np.testing.assert_array_equal(fit.dense_hessian(np.float32), H.astype(np.float32))
    ctx = _context(fit, X, cfg, np.zeros(200), np.random.default_rng(1))
    assert ctx.factor.dtype == np.float32  # well conditioned: the float32 path


def test_a_lazy_fit_pickles_with_its_posterior():
    import pickle

    C, X = _data(40, 300)
    lazy = fit_map(40, C, X, posterior="lazy")
    eager = fit_map(40, C, X)
    back = pickle.loads(pickle.dumps(lazy))
    np.testing.assert_allclose(back.cov, eager.cov, rtol=1e-12, atol=1e-15)


def test_topk_score_in_blocks_equals_one_pass(monkeypatch):
    from judgeaudit.rank.acquisition import topk

    rng = np.random.default_rng(5)
    n = 120
    A = rng.normal(size=(n, n))
    cov = np.linalg.inv(A @ A.T / n * 20 + np.eye(n))
    ctx = AcquisitionContext(theta=rng.normal(size=n) * 2, cov=cov, k=6,
                             shift=rng.normal(size=n) * 0.1, kappa=0.2, n_samples=400)
    a, b = np.triu_indices(n, 1)
    whole = topk.score(ctx, a, b)
    monkeypatch.setattr(topk, "_BLOCK", 500)
    np.testing.assert_array_equal(topk.score(ctx, a, b), whole)
    full = ctx.outcome_variance(a, b) * ctx.var_diff(a, b) * ctx.entropy(a, b)
    np.testing.assert_array_equal(whole, full)


def test_matheron_updates_keep_the_draws_those_of_the_updated_covariance():
    # draws of the context's posterior, then comparisons added by the loop's rank-one update:
    # the draws' covariance follows the Sherman-Morrison covariance (the carried context)
    from judgeaudit.rank.loop import _rank_one_update
    from judgeaudit.rank.membership import precision_noise

    n = 40
    C, X = _data(n, 200, seed=7)
    fit = fit_map(n, C, X)
    M, cov = dense_inverse_factor(fit.dense_hessian(), min_eig=1.0)
    S = 40_000
    ctx = AcquisitionContext(theta=fit.theta, cov=cov.copy(), k=5, shift=np.zeros(n),
                             kappa=fit.kappa,
                             noise=precision_noise(M.astype(np.float64), S, 1, antithetic=True))
    rng = np.random.default_rng(2)
    for i, j in [(0, 1), (0, 2), (3, 4), (5, 0), (0, 1), (7, 8), (9, 3), (1, 2)]:
        _rank_one_update(ctx, fit, X, i, j, rng)
    assert np.max(np.abs(np.diag(ctx.cov) - np.diag(cov))) > 0.05  # the updates moved it
    emp = np.cov(ctx.noise.T)
    target = ctx.cov
    sd = np.sqrt((np.outer(np.diag(target), np.diag(target)) + target ** 2) / S)
    assert np.max(np.abs(emp - target) / sd) < 5.5
    assert np.max(np.abs(emp - cov) / sd) > 10.0  # and no longer those of the old one


def _loop(n, exact_every, seed=0, budget=96):
    from judgeaudit.rank.loop import run_active
    from judgeaudit.rank.simulate import SimOracle, random_pool

    pool = random_pool(n, 10, seed=n)
    o = SimOracle(pool.theta, pool.X, c=1.0, kappa=0.3, seed=seed)
    return run_active(o, n, budget, pool.k, X=pool.X, seed=seed, hierarchical=True,
                      exact_every=exact_every)


def test_large_pools_carry_contexts_between_exact_ones_and_stay_reproducible():
    from judgeaudit.rank.loop import CARRY_MIN

    n = CARRY_MIN
    res = _loop(n, exact_every=4)
    kinds = [r["context"] for r in res.refits]
    assert kinds[:8] == ["exact", "carried", "carried", "carried"] * 2
    again = _loop(n, exact_every=4)
    assert np.array_equal(res.comparisons, again.comparisons)
    exact = _loop(n, exact_every=1)
    assert {r["context"] for r in exact.refits} == {"exact"}
    # small pools: an exact context at every refit, whatever exact_every says
    small = _loop(60, exact_every=8, budget=40)
    assert {r["context"] for r in small.refits} == {"exact"}
    with pytest.raises(ValueError, match="exact_every"):
        _loop(60, exact_every=0)


def test_a_carried_context_is_close_to_the_exact_one_it_stands_for():
    # the loop's state after carried rounds against the exact context at the same fit
    from judgeaudit.rank.loop import CARRY_MIN, _rank_one_update
    from judgeaudit.rank.membership import precision_noise

    n = CARRY_MIN
    C, X, cfg, prev = _state(n)
    ctx = _context(prev, X, cfg, np.zeros(n), np.random.default_rng(0))
    fit = prev
    rng = np.random.default_rng(1)
    extra, _ = _data(n, 64, seed=99)
    if ctx.factor is None:  # the first fit is not lazy: make the draws from its covariance
        ctx.noise = np.random.default_rng(3).multivariate_normal(
            np.zeros(ctx.cov.shape[0]), ctx.cov, size=cfg.n_samples).astype(np.float32)
    else:
        ctx.noise = precision_noise(ctx.factor, cfg.n_samples, 3, antithetic=True)
    comps = C[:-8]
    for r in range(8):  # eight rounds of 8 comparisons, each followed by a warm refit
        batch = extra[8 * r : 8 * r + 8]
        for a, b, _y in batch:
            _rank_one_update(ctx, fit, X, int(a), int(b), rng)
        comps = np.vstack([comps, batch])
        fit = _fit("bias_aware", n, comps, X, cfg, fit, driving=True)
        ctx = _context(fit, X, cfg, np.zeros(n), np.random.default_rng(r), carry=ctx)
    exact = _context(fit, X, cfg, np.zeros(n), np.random.default_rng(0))
    A, B = np.triu_indices(n, 1)
    rel = np.abs(ctx.var_diff(A, B) / exact.var_diff(A, B) - 1.0)
    assert np.median(rel) < 0.01 and rel.max() < 0.2
    # membership from the carried draws against the exact context's (Monte-Carlo apart)
    p, q = ctx.membership, exact.membership
    tol = 5.0 * np.sqrt(2.0 * 0.25 / cfg.n_samples) + 0.02
    assert np.max(np.abs(p - q)) < tol
    assert p.sum() == pytest.approx(10.0)
