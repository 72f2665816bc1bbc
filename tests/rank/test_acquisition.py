"""Acquisition rules: one signature, registered by name, each scoring what its name says."""

import numpy as np
import pytest

from judgeaudit.rank.acquisition import RULES, AcquisitionContext, get_rule, register


def _ctx(k=2, counts=None):
    theta = np.array([2.0, 1.0, 0.9, -1.0, -2.0])
    cov = np.diag([0.05, 0.5, 0.6, 0.5, 0.05])
    return AcquisitionContext(theta=theta, cov=cov, k=k, shift=np.zeros(5), kappa=0.0,
                              item_counts=counts, rng=np.random.default_rng(0),
                              n_samples=4000, membership_seed=1)


def test_all_rules_share_the_signature():
    ctx = _ctx(counts=np.array([3.0, 1, 0, 2, 5]))
    a, b = np.triu_indices(5, 1)
    for name in ["topk", "global", "roundrobin", "random", "entropy", "uncertainty_only",
                 "outcome_only"]:
        s = get_rule(name)(ctx, a, b)
        assert s.shape == a.shape and np.all(np.isfinite(s)), name


def test_topk_rule_prefers_the_boundary_pair():
    ctx = _ctx(k=2)
    a, b = np.triu_indices(5, 1)
    s = get_rule("topk")(ctx, a, b)
    best = (a[np.argmax(s)], b[np.argmax(s)])
    assert best == (1, 2)  # both undecided about top-2 membership, close, uncertain
    # global uncertainty likes the uncertain pair in the bottom half just as much
    g = get_rule("global")(ctx, a, b)
    t = np.nonzero((a == 2) & (b == 3))[0][0]
    t12 = np.nonzero((a == 1) & (b == 2))[0][0]
    assert s[t] / s[t12] < g[t] / g[t12]


def test_factors_multiply():
    ctx = _ctx()
    a, b = np.triu_indices(5, 1)
    prod = RULES["outcome_only"](ctx, a, b) * RULES["uncertainty_only"](ctx, a, b)
    np.testing.assert_allclose(RULES["global"](ctx, a, b), prod)
    np.testing.assert_allclose(RULES["topk"](ctx, a, b), prod * RULES["entropy"](ctx, a, b))


def test_outcome_variance_averages_presentation_orders():
    ctx = _ctx()
    ctx.kappa = 1.0
    ctx.theta = np.zeros(5)
    v = ctx.outcome_variance(np.array([0]), np.array([1]))
    p = 1 / (1 + np.exp(-1.0))
    assert v[0] == pytest.approx(p * (1 - p))


def test_roundrobin_prefers_least_compared_items():
    ctx = _ctx(counts=np.array([4.0, 4, 0, 0, 4]))
    a, b = np.triu_indices(5, 1)
    s = get_rule("roundrobin")(ctx, a, b)
    assert (a[np.argmax(s)], b[np.argmax(s)]) == (2, 3)


def test_unknown_and_duplicate_rules():
    with pytest.raises(ValueError, match="unknown acquisition rule 'nope'"):
        get_rule("nope")
    with pytest.raises(ValueError, match="already registered"):
        register("topk", RULES["topk"])
