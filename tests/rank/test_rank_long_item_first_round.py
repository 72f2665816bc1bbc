"""topk's first round no longer spends a handful of picks on an item too long for the judge.
The picks of a round are made before any of its answers, and an item whose length
covariate is the pool's most extreme scores highest again after each pick, so the old loop
sent 2-5 calls with the long item at once (9 of 40 in a tester's run) before its first
refusal was known. Now a batch goes out in waves, an item with no verdict yet in one call of
a wave: its first refusal is known before a second call with it is sent, the picks it would
have taken go to other pairs, and a run with no refusal makes the same picks as before.
Through a real loopback OpenAI-compatible server that refuses the long item's prompts as
over the model's context (HTTP 400, context_length_exceeded)."""

from __future__ import annotations

import numpy as np
from fakeserver import FakeLLMServer

import judgeaudit
from judgeaudit.rank import loop
from judgeaudit.rank.simulate import SimOracle, random_pool

LONG = "LONGITEM"


def _records(n: int, long_at: int | None) -> list[dict]:
    """n items on one prompt; the item at ``long_at`` is by far the longest (the length
    covariate's extreme, which the top-k rule asks about first)."""
    rng = np.random.default_rng(0)
    return [{"id": f"it-{i:02d}", "prompt": "question", "quality": float(i),
             "response": (f"{LONG} " + "filler " * 300 if i == long_at else "")
             + "word " * int(rng.integers(20, 60)) + f"answer {i}"} for i in range(n)]


def _refuse_long(req, attempt):
    return "too_long" if LONG in req.prompt_text else None


def _rank(srv: FakeLLMServer, recs: list[dict], seed: int, budget: int = 40):
    return judgeaudit.rank(f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off",
                           recs, k=3, budget=budget, seed=seed, samples=300, max_failed=0.5,
                           cache=False, retry=0)


def test_topk_sends_at_most_two_calls_with_an_item_too_long_for_the_judge():
    """10 items, budget 40, default covariates (length): the old loop sent 3-4 calls with
    the long item in the first round on these seeds; now at most 2 (the DROP_AFTER
    refusals that name it), and the budget is spent on the other pairs."""
    recs = _records(10, long_at=4)
    for seed in range(4):
        with FakeLLMServer(rule=_refuse_long, answer="A") as srv:
            res = _rank(srv, recs, seed)
            sent = srv.snapshot()
        wasted = sum(LONG in r.prompt_text for r in sent)
        assert wasted <= 2, (seed, wasted)
        assert len(sent) == 40 and res["n_comparisons"] == 40, (seed, len(sent))
        tl = res["too_long"]
        assert tl["n_calls"] == wasted and tl["items_left_out"] == ["it-04"], (seed, tl)
        assert tl["unspent"] == 0


def test_a_run_with_no_long_item_makes_the_same_calls_as_one_batch_per_round():
    """No refusal: the waves change nothing but how a round's calls are grouped. The live
    run's comparisons (pairs, order, verdicts) are those of the loop sending each round as
    one batch (stage off, the old way), and its ranking is the same."""
    from judgeaudit.rank.live import select_covariates
    from judgeaudit.rank.pool import PoolRecords, records_pool

    recs = _records(10, long_at=None)
    pool = records_pool(PoolRecords(recs))
    X, _, _ = select_covariates(pool, ["length", "markdown"])
    for seed in (0, 1):
        with FakeLLMServer(answer="A") as srv:
            res = _rank(srv, recs, seed, budget=30)
        batches: list[int] = []

        def first_wins(pairs, batches=batches):  # the server's judge: the first shown
            batches.append(len(pairs))
            return [1.0] * len(pairs)

        ref = loop.run_active(None, 10, 30, 3, rule="topk", X=X, seed=seed, eb_lam=True,
                              n_samples=300, batch_oracle=first_wins, stage=False)
        assert batches == [8, 8, 8, 6]  # one call per round
        live = [(pool.ids.index(c["first_id"]), pool.ids.index(c["second_id"]), c["y"])
                for c in res["comparisons"]]
        assert live == [tuple(r) for r in ref.comparisons.astype(int).tolist()], seed
        order = np.argsort(-ref.bias_aware.theta, kind="stable")[:3]
        assert [r["id"] for r in res["ranking"][:3]] == [pool.ids[i] for i in order]


def test_staged_and_one_batch_loops_make_the_same_picks_without_refusals():
    """The loop alone, with checkpoints and three rules: sending a batch in waves (stage
    on) gives the same steps, comparisons, refits and fits as one call per batch, while
    the first round did go out in more than one wave."""
    pool = random_pool(14, 3, seed=4)
    for rule in ("topk", "global", "roundrobin"):
        o = SimOracle(pool.theta, pool.X, c=0.8, kappa=0.3, seed=4)
        runs, calls = [], []
        for stage in (False, True):
            sizes: list[int] = []

            def batch(pairs, sizes=sizes, o=o):
                sizes.append(len(pairs))
                return [o(f, s, f) for f, s in pairs]

            runs.append(loop.run_active(None, 14, 30, 3, X=pool.X, seed=9, rule=rule,
                                        batch_oracle=batch, checkpoints=(12,), stage=stage))
            calls.append(sizes)
        a, b = runs
        assert calls[0] == [8, 4, 4, 8, 6] and len(calls[1]) > len(calls[0]), calls
        np.testing.assert_array_equal(a.comparisons, b.comparisons)
        assert a.steps == b.steps
        np.testing.assert_array_equal(a.bias_aware.theta, b.bias_aware.theta)
        np.testing.assert_array_equal(a.checkpoints[12]["naive"].theta,
                                      b.checkpoints[12]["naive"].theta)
        assert [r["step"] for r in a.refits] == [r["step"] for r in b.refits] == [8, 16, 24]


def _long_items_run(long_items: set[int], seed: int, refit_every: int):
    """10 items, topk, budget 40, a length-like covariate on which the long items are the
    extremes; any pair with a long item TooLong. The run and every pair sent."""
    n = 10
    X = np.linspace(-0.5, 0.5, n)[:, None]
    for j, i in enumerate(sorted(long_items)):
        X[i] = 4.0 - 0.5 * j
    o = SimOracle(np.linspace(-1, 1, n), X, c=0.5, seed=1)
    asked: list[tuple[int, int]] = []

    def batch(pairs):
        asked.extend(pairs)
        return [loop.TooLong() if long_items & set(p) else o(p[0], p[1], p[0]) for p in pairs]

    res = loop.run_active(None, n, 40, 3, X=X, seed=seed, eb_lam=True, n_samples=300,
                          batch_oracle=batch, refit_every=refit_every, stage=True)
    return res, asked


def test_the_loop_wastes_at_most_two_picks_per_long_item_and_spends_the_budget():
    """20 seeds and three round sizes (the old loop: up to 6 calls at --refit-every 8, 3 at
    1, where each pick is its own round and the next one chose the refused item again
    beside an item with no verdict): at most 2 picks on the long item, steps numbered
    without gaps, the budget spent, the picks it would have taken counted."""
    for refit_every in (1, 4, 8):
        for seed in range(20):
            res, asked = _long_items_run({4}, seed, refit_every)
            wasted = sum(4 in p for p in asked)
            assert wasted <= 2, (refit_every, seed, wasted)
            assert len(asked) == 40 and [st["step"] for st in res.steps] == list(range(40))
            assert res.left_out["items"] == [4] and res.left_out["picks"] > 0
            assert res.comparisons.shape[0] == 40 - wasted


def test_two_long_items_cost_at_most_two_calls_each():
    """The old loop: 4-8 calls with one of two long items (10 items, budget 40)."""
    for seed in range(10):
        res, asked = _long_items_run({2, 6}, seed, 8)
        per_item = [sum(i in p for p in asked) for i in (2, 6)]
        assert max(per_item) <= 2, (seed, per_item)
        assert len(asked) == 40 and res.left_out["items"] == [2, 6], (seed, res.left_out)
