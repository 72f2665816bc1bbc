"""The live loop with a judge behind the real client and SQLite cache (sim provider: local,
deterministic, planted values known): shown order, verdict mapping, invalid verdicts, cache
reuse, the full matrix and its replay."""

import numpy as np
import pytest

from judgeaudit.judges import make_judge
from judgeaudit.llm import Cache
from judgeaudit.rank.fitting import fit_model
from judgeaudit.rank.live import (
    full_matrix,
    judge_pair,
    max_budget,
    ordered_pairs,
    pair_item,
    planted_biases,
    rank_live,
)
from judgeaudit.rank.pool import load_pool
from judgeaudit.stats.bradley_terry import fit_map


@pytest.fixture
def pool():
    return load_pool("builtin:controlled?seed=2&n=10&k=3")


def test_pair_item_is_canonical_and_the_request_shows_first_first(pool):
    item, lo, hi = pair_item(pool, 7, 2)
    assert (lo, hi) == (2, 7) and item.id == f"{pool.ids[2]}|{pool.ids[7]}"
    assert item.response_1 == pool.items[2].text and item.quality == (
        pool.items[2].quality, pool.items[7].quality)
    bundle = make_judge("sim")
    for first, second, order in ((7, 2, "21"), (2, 7, "12")):
        req = bundle.pairwise.request(item, order)
        assert req.meta["shown"] == [pool.items[first].text, pool.items[second].text]
    with pytest.raises(ValueError, match="itself"):
        pair_item(pool, 3, 3)


async def test_verdicts_follow_the_shown_order(pool):
    # deterministic judge: A iff q_A - q_B + 0.25 > 0, i.e. iff q_first >= q_second
    bundle = make_judge("sim?quality=1&position=0.25&noise=0")
    m = await full_matrix(bundle, pool)
    q = pool.quality
    assert len(m.verdicts) == len(ordered_pairs(pool)) == 90
    for v in m.verdicts:
        assert v.y == (1.0 if q[v.first] >= q[v.second] else 0.0)
        assert v.choice == ("A" if v.y == 1.0 else "B") and not v.invalid
    assert m.comparisons().shape == (90, 3)
    o = m.oracle()
    assert o(3, 5, 5) == m.y[5, 3] and o.calls == 1


async def test_invalid_verdicts_are_counted_and_not_ties(pool):
    # changed on purpose: an invalid verdict was y = 0.5 (a tie in the fit); it is now y None,
    # left out of the fit (tests/rank/test_invalid_left_out.py)
    bundle = make_judge("sim?invalid=0.3")
    vs = [await judge_pair(bundle, pool, f, s) for f, s in ordered_pairs(pool)]
    bad = [v for v in vs if v.invalid]
    assert 10 < len(bad) < 45
    assert all(v.y is None and v.choice is None and v.raw == "I cannot decide" for v in bad)


async def test_rank_live_uses_the_cache_and_agrees_with_the_full_matrix(pool, tmp_path):
    spec = "sim?quality=1&length=1&position=0.3"
    cache = Cache(tmp_path / "c.sqlite")
    b1 = make_judge(spec, cache=cache)
    calls = []
    run = await rank_live(b1, pool, k=3, budget=40, covariates=["length", "markdown"],
                          on_call=calls.append)
    assert len(run.verdicts) == len(calls) == 40 and run.dropped == ["markdown"]
    assert b1.client.stats.made == 40
    np.testing.assert_array_equal(run.result.comparisons[:, :2],
                                  [(v.first, v.second) for v in run.verdicts])
    b2 = make_judge(spec, cache=Cache(tmp_path / "c.sqlite"))
    again = await rank_live(b2, pool, k=3, budget=40, covariates=["length"])
    assert b2.client.stats.made == 0 and b2.client.stats.cached == 40
    np.testing.assert_array_equal(again.result.comparisons, run.result.comparisons)
    m = await full_matrix(b2, pool)
    assert b2.client.stats.made == 90 - len({(v.first, v.second) for v in run.verdicts})
    assert all(m.y[v.first, v.second] == v.y for v in run.verdicts)
    with pytest.raises(ValueError, match="exceeds the 90"):
        await rank_live(b2, pool, k=3, budget=91)


async def test_full_matrix_fit_recovers_planted_biases():
    # one pool and one draw of verdicts (seeded); across seeds see benchmarks/rank_acceptance
    pool = load_pool("builtin:controlled?seed=7")
    bundle = make_judge("sim?quality=1&length=1.5&position=0.5&seed=7")
    m = await full_matrix(bundle, pool)
    X, _ = pool.covariates(["length"])
    fit = fit_model("bias_aware", 30, m.comparisons(), X=X, eb_lam=True)
    planted = planted_biases(bundle, ["length"])
    assert planted["c"] == {"length": 1.5} and planted["kappa"] == 0.5
    lo, hi = fit.c_interval()[0]
    assert lo <= 1.5 <= hi and fit.c[0] > 0.5
    klo, khi = fit.kappa_interval()
    assert klo <= 0.5 <= khi and klo > 0
    assert 0.15 < fit.lam < 0.4  # theta spread ~2 logits (1 per statement, sd(q) ~ 2)
    assert fit_map(30, m.comparisons(), X=X).lam == 1.0


def test_planted_values_are_in_logits_and_only_for_sim():
    b = make_judge("sim?length=1&position=0.4&noise=2&authority=1")
    p = planted_biases(b, ["length", "words"])
    assert p["c"] == {"length": 0.5, "words": None} and p["kappa"] == 0.2
    assert p["omitted"] == {"authority": 0.5} and p["quality"] == 1.5


def test_max_budget_counts_ordered_pairs_within_groups(tmp_path):
    rows = [f'{{"id": "{p}{i}", "prompt": "{p}", "response": "r{i}"}}'
            for p, n in (("P", 3), ("Q", 4)) for i in range(n)]
    (tmp_path / "g.jsonl").write_text("\n".join(rows))
    pool = load_pool(f"jsonl:{tmp_path / 'g.jsonl'}")
    assert max_budget(pool) == 3 * 2 + 4 * 3 == len(ordered_pairs(pool))
