"""Top-k membership by Monte-Carlo against exact answers."""

import numpy as np
import pytest
from scipy import stats

from judgeaudit.rank.membership import (
    binary_entropy,
    recall_at_k,
    topk_membership,
    topk_set,
)


def test_membership_sums_to_k_and_is_seeded():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=12)
    A = rng.normal(size=(12, 12))
    cov = 0.3 * A @ A.T / 12
    p = topk_membership(theta, cov, k=4, n_samples=2000, seed=3)
    assert p.sum() == pytest.approx(4.0)
    np.testing.assert_array_equal(p, topk_membership(theta, cov, 4, 2000, seed=3))


def test_two_items_top1_matches_normal_cdf():
    theta = np.array([0.3, 0.0])
    cov = np.array([[0.5, 0.1], [0.1, 0.4]])
    exact = stats.norm.cdf(0.3 / np.sqrt(0.5 + 0.4 - 0.2))
    p = topk_membership(theta, cov, k=1, n_samples=40000, seed=0)
    assert p[0] == pytest.approx(exact, abs=0.01)


def test_common_shift_variance_does_not_change_membership():
    # a tiny-ridge naive fit leaves huge variance along the all-ones direction
    theta = np.array([1.0, 0.5, 0.0, -0.5])
    cov = 0.2 * np.eye(4)
    p1 = topk_membership(theta, cov, 2, 20000, seed=1)
    p2 = topk_membership(theta, cov + 1e6 * np.ones((4, 4)), 2, 20000, seed=2)
    np.testing.assert_allclose(p1, p2, atol=0.015)  # equal up to Monte-Carlo error
    naive_draws = np.random.default_rng(0).multivariate_normal(theta, cov + 1e6, 20000)
    assert np.ptp(naive_draws.mean(axis=1)) > 1e3  # the shift really is huge


def test_certain_posterior_gives_zero_one_membership():
    theta = np.array([3.0, 2.0, 1.0, 0.0])
    p = topk_membership(theta, 1e-8 * np.eye(4), 2, 500, seed=0)
    np.testing.assert_array_equal(p, [1, 1, 0, 0])
    assert binary_entropy(p).sum() == 0.0
    assert binary_entropy(np.array([0.5]))[0] == pytest.approx(np.log(2))


def test_recall_and_topk_set():
    assert list(topk_set(np.array([0.1, 0.9, 0.5, 0.7]), 2)) == [1, 3]
    assert recall_at_k(np.array([0.1, 0.9, 0.5, 0.7]), np.array([1, 2])) == 0.5


def test_bad_k():
    with pytest.raises(ValueError, match="k must be"):
        topk_membership(np.zeros(3), np.eye(3), 0)


def test_grouped_membership_and_recall():
    from judgeaudit.rank.membership import (
        group_index,
        recall_grouped,
        topk_membership_grouped,
        topk_set_grouped,
    )

    rng = np.random.default_rng(1)
    theta = rng.normal(size=9)
    groups = np.array([0, 0, 0, 0, 1, 1, 1, 2, 2])
    cov = 0.2 * np.eye(9)
    p = topk_membership_grouped(theta, cov, 3, groups, n_samples=3000, seed=0)
    # k per group = min(k, size - 1): 3, 2, 1
    for idx, kg in zip(group_index(groups, 9), (3, 2, 1), strict=True):
        assert p[idx].sum() == pytest.approx(kg)
    top = topk_set_grouped(theta, 3, groups)
    assert len(top) == 6
    assert recall_grouped(theta, top, 3, groups) == 1.0
    assert recall_grouped(-theta, top, 3, groups) < 1.0
    # without groups it is the plain function
    np.testing.assert_array_equal(topk_membership_grouped(theta, cov, 3, None, 500, 2),
                                  topk_membership(theta, cov, 3, 500, 2))


def _best_recall_over_tie_breaks(theta_hat, quality, k, groups):
    """Textbook: every true top-k a tie at the k-th place allows, and the best recall."""
    import itertools

    from judgeaudit.rank.membership import group_index, group_k, recall_grouped

    per_group = []
    for idx in group_index(groups, len(quality)):
        kg = group_k(k, idx.shape[0]) if groups is not None else k
        q = quality[idx]
        q_k = np.sort(q)[::-1][kg - 1]
        above = list(idx[q > q_k])
        tied = list(idx[q == q_k])
        per_group.append([above + list(c) for c in
                          itertools.combinations(tied, kg - len(above))])
    best = 0.0
    for choice in itertools.product(*per_group):
        true = np.sort(np.concatenate([np.array(c, dtype=int) for c in choice]))
        best = max(best, recall_grouped(theta_hat, true, k, groups))
    return best


@pytest.mark.parametrize("seed", range(40))
def test_recall_ties_is_the_best_recall_over_every_tie_break(seed):
    """Items tied in quality at the k-th place are interchangeable: recall_ties equals the
    best recall over every true top-k the tie allows, with and without groups."""
    from judgeaudit.rank.membership import recall_ties

    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 11))
    quality = rng.integers(0, 4, size=n).astype(float)  # few levels: many ties
    theta_hat = rng.normal(size=n)
    groups = None if seed % 2 else rng.integers(0, 2, size=n)
    if groups is not None and len(set(groups.tolist())) < 2:
        groups[0] = 1 - groups[1]
    k = int(rng.integers(1, n - 1 if groups is None else 3))
    expected = _best_recall_over_tie_breaks(theta_hat, quality, k, groups)
    assert recall_ties(theta_hat, quality, k, groups) == pytest.approx(expected)


def test_recall_ties_equals_recall_without_ties():
    from judgeaudit.rank.membership import recall_grouped, recall_ties

    quality = np.array([5.0, 4, 3, 2, 1, 0])
    theta_hat = np.array([0.1, 2.0, 1.0, 3.0, -1.0, 0.0])
    true = topk_set(quality, 3)
    assert recall_ties(theta_hat, quality, 3, None) == recall_grouped(theta_hat, true, 3, None)
    # a tie at the 3rd place: picking the other tied item is not a miss
    tied = np.array([5.0, 4, 3, 3, 1, 0])
    picks_other = np.array([3.0, 2.0, 0.0, 1.0, -1.0, -2.0])  # picks items 0, 1, 3
    assert recall_grouped(picks_other, topk_set(tied, 3), 3, None) == pytest.approx(2 / 3)
    assert recall_ties(picks_other, tied, 3, None) == 1.0
