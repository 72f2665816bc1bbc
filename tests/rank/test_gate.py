"""The trusted-anchor gate: the trusted pairs decide when they can; when they cannot tell
the rankings apart the simpler (naive) ranking is kept unless a bias term's interval
excludes 0 and the trusted pairs do not lean towards the naive ranking. On the simulated
length pools of benchmarks/rank_gate.py: off where length legitimately tracks quality, on
where the judge prefers longer answers independent of quality."""

import asyncio

import numpy as np
import pytest
from scipy import stats

from judgeaudit.judges import make_judge
from judgeaudit.rank.fitting import fit_model
from judgeaudit.rank.gate import RULE, anchor_gate, pair_probabilities, trusted_agreement
from judgeaudit.rank.live import pair_item, select_covariates
from judgeaudit.rank.membership import recall_at_k
from judgeaudit.rank.pool import load_pool
from judgeaudit.rank.simulate import (
    GATE_POOLS,
    gate_pool_spec,
    sim_judge_oracle,
    sim_judge_spec,
    trusted_pairs,
)
from judgeaudit.rank.summary import gate_summary
from judgeaudit.stats.bradley_terry import BTFit

# ---- the rule on hand-made fits -------------------------------------------------------------
# Four disjoint trusted pairs (0 > 1, 2 > 3, 4 > 5, 6 > 7); theta variance 0.5 per item, so
# Var(theta_i - theta_j) = 1 and a ranking's probability for pair p is Phi(theta gap).
TRUSTED = np.array([(0, 1, 1), (2, 3, 1), (4, 5, 1), (6, 7, 1)], dtype=float)


def _fit(probs, c=(), c_se=(), kappa=None, kappa_se=0.1):
    gaps = stats.norm.ppf(np.asarray(probs, float))
    theta = np.zeros(8)
    theta[0::2] = gaps / 2
    theta[1::2] = -gaps / 2
    m, pos = len(c), kappa is not None
    cov = np.eye(8 + m + pos) * 0.5
    for k, se in enumerate(c_se):
        cov[8 + k, 8 + k] = se ** 2
    if pos:
        cov[-1, -1] = kappa_se ** 2
    return BTFit(theta=theta, c=np.asarray(c, float), kappa=float(kappa or 0.0), cov=cov,
                 loglik=0.0, converged=True, position=pos)


NAIVE = _fit([0.5, 0.5, 0.5, 0.5])


def test_pair_probabilities_and_agreement():
    f = _fit([0.9, 0.2, 0.5, 0.7])
    np.testing.assert_allclose(pair_probabilities(f, TRUSTED), [0.9, 0.2, 0.5, 0.7])
    # the same pairs given the other way round (y = 0: the second item is better)
    flipped = TRUSTED[:, [1, 0, 2]] * [1, 1, 0]
    np.testing.assert_allclose(pair_probabilities(f, flipped), [0.9, 0.2, 0.5, 0.7])
    assert trusted_agreement(f.theta, TRUSTED) == pytest.approx(2.5 / 4)  # a tie counts half


def test_trusted_pairs_decide_when_their_interval_excludes_zero():
    on = anchor_gate(NAIVE, _fit([0.9, 0.95, 0.92, 0.97], c=[0.1], c_se=[1.0]), TRUSTED,
                     names=["length"])
    assert on.enabled and on.decision == "on" and on.basis == "trusted_pairs"
    assert on.difference["lo"] > 0 and "favour the corrected ranking" in on.reason
    off = anchor_gate(NAIVE, _fit([0.1, 0.05, 0.08, 0.02], c=[3.0], c_se=[0.5]), TRUSTED,
                      names=["length"])
    assert not off.enabled and off.basis == "trusted_pairs"
    assert off.difference["hi"] < 0 and "favour the naive ranking" in off.reason
    assert off.bias["length"]["excludes_zero"]  # an evident bias does not overrule them
    assert off.difference["n_favour_naive"] == 4 and off.agree_bias_aware == 0.0


def test_a_tie_keeps_the_simpler_ranking_unless_the_bias_is_evident():
    # identical rankings: difference 0 with interval [0, 0]
    same = [0.8, 0.7, 0.9, 0.6]
    weak = anchor_gate(_fit(same), _fit(same, c=[0.5], c_se=[0.5]), TRUSTED, names=["length"])
    assert not weak.enabled and weak.basis == "simpler_model"
    assert weak.difference["estimate"] == 0 and weak.difference["lo"] <= 0 <= weak.difference["hi"]
    assert "cannot tell the rankings apart" in weak.reason
    assert "no bias term's 95% interval excludes 0" in weak.reason
    strong = anchor_gate(_fit(same), _fit(same, c=[1.5], c_se=[0.5]), TRUSTED,
                         names=["length"])
    assert strong.enabled and strong.basis == "bias_term" and strong.bias_term == "length"
    assert "length = +1.500" in strong.reason and "excludes 0" in strong.reason


def test_a_tie_leaning_towards_naive_keeps_it_even_with_an_evident_bias():
    # differences -0.2, -0.1, -0.1, +0.1: mean -0.075 < -se (0.0625), t interval contains 0
    g = anchor_gate(NAIVE, _fit([0.3, 0.4, 0.4, 0.6], c=[2.0], c_se=[0.5]), TRUSTED,
                    names=["length"])
    d = g.difference
    assert d["lo"] < 0 < d["hi"] and d["estimate"] < -d["se"]
    assert not g.enabled and g.basis == "simpler_model" and "lean towards the naive" in g.reason
    # within one standard error of 0 the bias decides: -0.1, -0.1, +0.1, +0.05
    g = anchor_gate(NAIVE, _fit([0.4, 0.4, 0.6, 0.55], c=[2.0], c_se=[0.5]), TRUSTED,
                    names=["length"])
    assert g.enabled and g.basis == "bias_term"


def test_position_is_the_bias_term_only_without_covariates():
    same = [0.8, 0.7, 0.9, 0.6]
    g = anchor_gate(_fit(same), _fit(same, kappa=0.5), TRUSTED)
    assert g.enabled and g.bias_term == "kappa"
    g = anchor_gate(_fit(same), _fit(same, c=[0.1], c_se=[0.5], kappa=0.5), TRUSTED,
                    names=["length"])
    assert not g.enabled and set(g.bias) == {"length"}
    with pytest.raises(ValueError, match="at least one pair"):
        anchor_gate(NAIVE, NAIVE, np.array([(0, 1, 0.5)]))


def test_gate_summary_reports_decision_reason_and_intervals():
    same = [0.8, 0.7, 0.9, 0.6]
    s = gate_summary(anchor_gate(_fit(same), _fit(same, c=[1.5], c_se=[0.5]), TRUSTED,
                                 names=["length"]))
    assert s["decision"] == "on" and s["chosen"] == "bias_aware" and s["enabled"]
    assert s["reason"] and s["rule"] == RULE and s["n_trusted"] == 4
    for key in ("agreement_naive", "agreement_corrected", "difference"):
        assert {"estimate", "lo", "hi", "se", "n"} <= set(s[key])
    assert s["bias_ci"] == pytest.approx([1.5 - 1.96 * 0.5, 1.5 + 1.96 * 0.5], abs=1e-3)
    assert s["bias_term"] == "length" and s["agreement_naive"]["ordered_correctly"] == 1.0


# ---- the simulated length pools (a few seeds; benchmarks/rank_gate.py runs >= 100) -----------

def _pool_gate(kind: str, seed: int, n_trusted: int = 30):
    cfg = GATE_POOLS[kind]
    pool = load_pool(gate_pool_spec(str(cfg["design"]), seed))
    X, info, _ = select_covariates(pool, ["length", "markdown"])
    comps = sim_judge_oracle(pool.quality, X[:, 0], float(cfg["length"]),
                             seed + 5000).full_comparisons()
    fn = fit_model("naive", pool.n_items, comps, eb_lam=True)
    fb = fit_model("bias_aware", pool.n_items, comps, X, eb_lam=True)
    g = anchor_gate(fn, fb, trusted_pairs(pool.quality, n_trusted, seed=seed + 99),
                    names=[c.name for c in info])
    true = pool.true_topk(5)
    return g, recall_at_k(fn.theta, true), recall_at_k(fb.theta, true)


@pytest.mark.parametrize("kind, want_on", [("legitimate", False), ("spurious", True)])
def test_gate_on_the_simulated_length_pools(kind, want_on):
    runs = [_pool_gate(kind, s) for s in range(6)]
    assert sum(g.enabled == want_on for g, _, _ in runs) >= 5
    rn, rb = np.mean([r[1] for r in runs]), np.mean([r[2] for r in runs])
    if kind == "legitimate":
        # the correction subtracts real quality, yet its length coefficient looks like a
        # bias: the interval excludes 0 in most pools (what the old tie rule fell for)
        assert rb < rn
        assert sum(g.bias["length"]["excludes_zero"] for g, _, _ in runs) >= 3
    else:
        assert rb > rn


def test_sim_judge_oracle_has_the_sim_judges_probabilities():
    pool = load_pool(gate_pool_spec("classic", 3, n_items=8, k=2))
    X, _, _ = select_covariates(pool, ["length"])
    oracle = sim_judge_oracle(pool.quality, X[:, 0], 2.0, seed=0)
    bundle = make_judge(sim_judge_spec(2.0, seed=0), cache=None)
    try:
        for first, second in [(0, 1), (1, 0), (2, 7), (7, 2), (4, 5)]:
            item, lo, _ = pair_item(pool, first, second)
            req = bundle.pairwise.request(item, "12" if first == lo else "21")
            p = bundle.client.provider.prob_first(req.meta)
            assert p == pytest.approx(oracle.prob[first, second], abs=1e-9)
    finally:
        asyncio.run(bundle.aclose())
