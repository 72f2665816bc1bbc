"""The faster rank-step paths give the same answers as the plain computations."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.rank.acquisition import get_rule
from judgeaudit.rank.acquisition.base import AcquisitionContext
from judgeaudit.rank.fitting import em_lam
from judgeaudit.rank.loop import run_active
from judgeaudit.rank.membership import sample_theta, topk_membership, topk_membership_grouped
from judgeaudit.stats import threads
from judgeaudit.stats.bradley_terry import fit_map


def _posterior(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, n))
    return rng.normal(size=n), np.linalg.inv(A @ A.T / n * 20 + np.eye(n))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_membership_counts_equal_those_of_the_float64_draws(seed):
    theta, cov = _posterior(60, seed)
    draws = sample_theta(theta, cov, 800, seed)
    top = np.argpartition(-draws, 4, axis=1)[:, :5]
    expected = np.bincount(top.ravel(), minlength=60) / 800.0
    np.testing.assert_array_equal(topk_membership(theta, cov, 5, 800, seed), expected)
    groups = np.arange(60) % 3
    p = topk_membership_grouped(theta, cov, 3, groups, 800, seed)
    for g in range(3):
        idx = np.nonzero(groups == g)[0]
        t = np.argpartition(-draws[:, idx], 2, axis=1)[:, :3]
        np.testing.assert_array_equal(p[idx], np.bincount(t.ravel(), minlength=idx.size) / 800)


def test_topk_score_equals_the_product_when_settled_pairs_are_skipped():
    theta, cov = _posterior(40, 3)
    theta = theta * 4  # many items settled: membership exactly 0 or 1
    ctx = AcquisitionContext(theta=theta, cov=cov, k=5, shift=np.zeros(40), kappa=0.2,
                             n_samples=400)
    a, b = np.triu_indices(40, 1)
    h = ctx.entropy(a, b)
    assert (h == 0).any() and (h > 0).any()
    full = ctx.outcome_variance(a, b) * ctx.var_diff(a, b) * h
    np.testing.assert_array_equal(get_rule("topk")(ctx, a, b), full)


def test_em_lam_reads_the_sparse_theta_variances():
    rng = np.random.default_rng(0)
    n, m = 200, 3000
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    C = np.column_stack([a, b, (rng.random(m) < 0.6).astype(float)])
    X = rng.normal(size=(n, 1))
    dense = fit_map(n, C, X, posterior="dense")
    sparse = fit_map(n, C, X, posterior="sparse")
    assert em_lam(sparse) == pytest.approx(em_lam(dense), rel=1e-3)


def test_the_loop_runs_with_blas_limited_to_one_thread():
    ctl = threads._get_controller()
    if not ctl:
        pytest.skip("threadpoolctl not installed")
    seen: list[list[int]] = []

    def oracle(i: int, j: int, first: int) -> float:
        seen.append([lib["num_threads"] for lib in ctl.select(user_api="blas").info()])
        return 1.0 if i < j else 0.0

    run_active(oracle, 8, 6, 2, refit_every=3)
    assert seen and all(t == 1 for row in seen for t in row)


def test_limit_blas_threads_restores_and_skips_large_problems():
    ctl = threads._get_controller()
    if not ctl:
        pytest.skip("threadpoolctl not installed")
    before = [lib["num_threads"] for lib in ctl.select(user_api="blas").info()]
    with threads.limit_blas_threads(100):
        assert all(lib["num_threads"] == 1 for lib in ctl.select(user_api="blas").info())
    assert [lib["num_threads"] for lib in ctl.select(user_api="blas").info()] == before
    assert threads.blas_threads_for(10 * threads.SMALL_PROBLEM) is None
