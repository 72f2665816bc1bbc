"""The trusted-anchor gate: on for spurious cues, off for covariates that carry quality."""

import numpy as np
import pytest

from judgeaudit.rank.gate import anchor_gate, trusted_agreement
from judgeaudit.rank.membership import recall_at_k
from judgeaudit.rank.simulate import SimOracle, controlled_sim_pool, trusted_pairs
from judgeaudit.stats.bradley_terry import fit_map, fit_naive


def _gate(seed, covariate, c):
    pool = controlled_sim_pool(seed, covariate=covariate)
    o = SimOracle(pool.theta, pool.X, c=c, kappa=0.3, seed=seed)
    comps = o.full_comparisons()
    naive, bias = fit_naive(30, comps, lam=1.0), fit_map(30, comps, X=pool.X)
    d = anchor_gate(naive, bias, trusted_pairs(pool.theta, 10, seed=seed + 99))
    return d, recall_at_k(d.choose(naive, bias).theta, pool.true_topk), \
        recall_at_k(bias.theta, pool.true_topk)


def test_gate_enables_on_spurious_and_disables_on_legitimate_covariates():
    spurious = [_gate(s, "verbosity", 1.0) for s in range(10)]
    legit = [_gate(s, "legit", 0.0) for s in range(10)]
    assert np.mean([d.enabled for d, _, _ in spurious]) >= 0.8
    assert np.mean([d.enabled for d, _, _ in legit]) <= 0.1
    # blind debiasing collapses recall on legitimate pools; the gate avoids it
    assert np.mean([g for _, g, _ in legit]) > np.mean([b for _, _, b in legit]) + 0.2


def test_trusted_agreement():
    theta = np.array([3.0, 2.0, 1.0])
    trusted = np.array([(0, 1, 1), (2, 1, 1), (1, 2, 0.0), (0, 2, 0.5)])
    # agrees on (0, 1); disagrees on (2, 1) and on (1, 2, y=0); the tie label is skipped
    assert trusted_agreement(theta, trusted) == pytest.approx(1 / 3)
    assert trusted_agreement(np.array([1.0, 1.0, 0.0]), trusted[:1]) == 0.5
    with pytest.raises(ValueError, match="at least one pair"):
        trusted_agreement(theta, np.array([(0, 1, 0.5)]))
