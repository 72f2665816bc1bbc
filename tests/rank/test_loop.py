"""The active loop: budget, shown order, pair bookkeeping, refits, warm checkpoints."""

import numpy as np
import pytest

from judgeaudit.rank.acquisition import AcquisitionContext
from judgeaudit.rank.loop import _rank_one_update, run_active
from judgeaudit.rank.simulate import SimOracle, random_pool
from judgeaudit.stats.bradley_terry import fit_map, hessian


class Recorder:
    def __init__(self, oracle):
        self.oracle, self.calls = oracle, []

    def __call__(self, i, j, first):
        self.calls.append((i, j, first))
        return self.oracle(i, j, first)


def test_budget_order_and_recording():
    pool = random_pool(10, 3, seed=0)
    rec = Recorder(SimOracle(pool.theta, pool.X, c=0.5, kappa=0.3, seed=0))
    res = run_active(rec, 10, 30, 3, rule="topk", X=pool.X, seed=1)
    assert res.comparisons.shape == (30, 3) and len(rec.calls) == 30
    for (i, j, first), (f, s, y) in zip(rec.calls, res.comparisons, strict=True):
        assert first in (i, j) and f == first and {f, s} == {i, j}
        assert y == rec.oracle.matrix[int(f), int(s)]
    firsts = [int(f) == min(i, j) for (i, j, _), (f, _, _) in zip(rec.calls, res.comparisons,
                                                                    strict=True)]
    assert 0 < sum(firsts) < 30  # order is randomised
    assert [r["step"] for r in res.refits] == [8, 16, 24]


def test_pairs_are_not_repeated_until_all_asked_then_shown_reversed():
    pool = random_pool(5, 2, seed=1)
    o = SimOracle(pool.theta, pool.X, seed=1)
    res = run_active(o, 5, 15, 2, rule="random", X=pool.X, seed=0)
    first10 = {tuple(sorted(map(int, r[:2]))) for r in res.comparisons[:10]}
    assert len(first10) == 10
    shown = {tuple(map(int, r[:2])) for r in res.comparisons[:10]}
    for f, s, _ in res.comparisons[10:]:
        assert (int(s), int(f)) in shown


def test_deterministic_in_seed_and_checkpoints_fit_the_prefix():
    pool = random_pool(12, 3, seed=2)
    o = SimOracle(pool.theta, pool.X, c=1.0, seed=2)
    a = run_active(o, 12, 24, 3, rule="topk", X=pool.X, seed=5, checkpoints=(16,))
    b = run_active(o, 12, 24, 3, rule="topk", X=pool.X, seed=5)
    np.testing.assert_array_equal(a.comparisons, b.comparisons)
    ref = fit_map(12, a.comparisons[:16], X=pool.X)
    np.testing.assert_allclose(a.checkpoints[16]["bias_aware"].theta, ref.theta, atol=1e-5)
    np.testing.assert_allclose(a.bias_aware.theta, fit_map(12, a.comparisons, pool.X).theta,
                               atol=1e-5)


def test_rank_one_update_equals_refactored_hessian():
    pool = random_pool(6, 2, seed=3)
    o = SimOracle(pool.theta, pool.X, c=1.0, kappa=0.2, seed=3)
    comps = o.full_comparisons()[:12]
    fit = fit_map(6, comps, X=pool.X)
    ctx = AcquisitionContext(theta=fit.theta, cov=fit.cov.copy(), k=2, shift=np.zeros(6))
    _rank_one_update(ctx, fit, pool.X, 4, 1)
    # the Hessian at the same point with the extra comparison (its y does not matter)
    H = hessian(fit.params, 6, np.vstack([comps, [(4, 1, 1.0)]]), pool.X)
    np.testing.assert_allclose(ctx.cov, np.linalg.inv(H), atol=1e-10)


def test_topk_rule_spends_budget_near_the_top():
    # compared with global uncertainty, top-k-aware acquisition asks more about the items
    # that could be in the top k
    frac = {"topk": [], "global": []}
    for seed in range(3):
        pool = random_pool(20, 3, seed=seed)
        o = SimOracle(2.0 * pool.theta, seed=seed)
        top = set(np.argsort(-pool.theta)[:6])
        for rule in frac:
            res = run_active(o, 20, 64, 3, rule=rule, model="naive", seed=seed, n_samples=500)
            later = res.comparisons[24:]
            frac[rule].append(np.mean([int(f) in top or int(s) in top for f, s, _ in later]))
    assert np.mean(frac["topk"]) > np.mean(frac["global"]) + 0.1


def test_bad_oracle_answer_and_arguments():
    with pytest.raises(ValueError, match="oracle returned 2"):
        run_active(lambda i, j, f: 2, 4, 3, 2)
    with pytest.raises(ValueError, match="unknown model"):
        run_active(lambda i, j, f: 1, 4, 3, 2, model="fancy")


def test_batch_oracle_gives_the_same_run_and_batches_end_at_refits_and_checkpoints():
    pool = random_pool(14, 3, seed=4)
    o = SimOracle(pool.theta, pool.X, c=0.8, kappa=0.3, seed=4)
    batches = []

    def batch(pairs):
        batches.append(list(pairs))
        return [o(f, s, f) for f, s in pairs]

    seen = []
    a = run_active(None, 14, 30, 3, X=pool.X, seed=9, batch_oracle=batch, checkpoints=(12,),
                   on_batch=lambda done, fit, ctx: seen.append(done))
    b = run_active(o, 14, 30, 3, X=pool.X, seed=9, checkpoints=(12,))
    np.testing.assert_array_equal(a.comparisons, b.comparisons)
    assert [len(x) for x in batches] == [8, 4, 4, 8, 6]  # refits at 8, 16, 24; checkpoint 12
    assert seen == [8, 12, 16, 24, 30]
    with pytest.raises(ValueError, match="exactly one"):
        run_active(o, 14, 4, 3, batch_oracle=batch)


def test_groups_restrict_comparisons_to_a_group():
    theta = np.linspace(-1, 1, 9)
    groups = np.array([0, 0, 0, 1, 1, 1, 1, 2, 2])
    o = SimOracle(theta, seed=0)
    res = run_active(o, 9, 20, 2, rule="topk", model="naive", seed=0, groups=groups,
                     n_samples=300)
    f, s = res.comparisons[:, 0].astype(int), res.comparisons[:, 1].astype(int)
    assert np.all(groups[f] == groups[s])
    with pytest.raises(ValueError, match="every group has one item"):
        run_active(o, 3, 2, 1, groups=np.array([0, 1, 2]))
