"""The simulated judge follows its planted model."""

import numpy as np
import pytest

from judgeaudit.rank.controlled import build_controlled_pool
from judgeaudit.rank.simulate import SimOracle, controlled_sim_pool, trusted_pairs


def test_verdict_frequencies_follow_planted_model():
    theta = np.array([0.0, 0.0, 1.0])
    X = np.array([[1.0], [0.0], [0.0]])
    freq = np.mean([SimOracle(theta, X, c=1.0, kappa=0.5, seed=s).matrix for s in range(3000)],
                   axis=0)
    expect = 1 / (1 + np.exp(-(1.0 + 0.5)))  # item 0 (verbose) shown first against item 1
    assert freq[0, 1] == pytest.approx(expect, abs=0.02)
    assert freq[1, 0] == pytest.approx(1 / (1 + np.exp(-(-1.0 + 0.5))), abs=0.02)


def test_oracle_call_and_full_comparisons():
    o = SimOracle(np.array([0.0, 1.0, 2.0]), seed=1)
    rows = o.full_comparisons()
    assert rows.shape == (6, 3)
    for f, s, y in rows:
        assert o(int(s), int(f), int(f)) == y  # shown order, not argument order, decides
    with pytest.raises(ValueError, match="first=2"):
        o(0, 1, 2)


def test_pools_and_trusted_pairs():
    p = controlled_sim_pool(seed=3)
    q = build_controlled_pool(seed=3).quality
    assert np.allclose(p.theta, q - q.mean())  # one logit per net true statement
    assert controlled_sim_pool(seed=3, unit="sd", scale=1.2).theta.std() == pytest.approx(1.2)
    assert set(p.true_topk) == set(np.argsort(-p.theta)[:5])
    legit = controlled_sim_pool(seed=3, covariate="legit")
    assert np.corrcoef(legit.X[:, 0], legit.theta)[0, 1] > 0.7
    t = trusted_pairs(p.theta, 10, seed=0)
    win, lose = t[:, 0].astype(int), t[:, 1].astype(int)
    assert t.shape == (10, 3) and np.all(p.theta[win] > p.theta[lose])
