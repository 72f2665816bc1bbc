"""Baselines do what they claim, and fail where they should."""

import numpy as np

from judgeaudit.rank.baselines import length_residualised, naive_bt, order_swap_majority
from judgeaudit.rank.simulate import SimOracle, controlled_sim_pool
from judgeaudit.stats.bradley_terry import fit_naive


def test_order_swap_majority_cancels_a_pure_position_judge():
    n = 6
    rows = [(a, b, 1.0) for a in range(n) for b in range(n) if a != b]  # first always wins
    s = order_swap_majority(n, np.array(rows))
    np.testing.assert_allclose(s, 0.5)
    assert fit_naive(n, np.array(rows), lam=1.0).theta.std() < 1e-6


def test_order_swap_majority_counts_pairs():
    rows = np.array([(0, 1, 1.0), (1, 0, 0.0), (1, 2, 1.0), (2, 1, 1.0)])
    np.testing.assert_allclose(order_swap_majority(3, rows), [1.0, 0.25, 0.5])


def test_length_residualised_is_orthogonal_to_covariates():
    pool = controlled_sim_pool(0)
    o = SimOracle(pool.theta, pool.X, c=1.0, seed=0)
    comps = o.full_comparisons()
    r = length_residualised(30, comps, pool.X)
    assert abs(np.corrcoef(r, pool.X[:, 0])[0, 1]) < 1e-8
    np.testing.assert_allclose(naive_bt(30, comps), fit_naive(30, comps, lam=1.0).theta)
