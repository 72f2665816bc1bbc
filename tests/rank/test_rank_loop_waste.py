"""The active loop no longer spends its budget on comparisons the judge cannot hold: a pair
refused as too long for the judge's context (HTTP 400, context length) is not asked again,
an item whose every call was refused is left out of further picks, and the result says how
many picks went elsewhere. Through a real loopback OpenAI-compatible server."""

from __future__ import annotations

import math

import numpy as np
from fakeserver import FakeLLMServer

import judgeaudit
from judgeaudit.rank import loop

LONG = "LONGITEM"


def _records(n: int, long_ids: dict[int, str]) -> list[dict]:
    """n items on one prompt, quality rising with the index; `long_ids`: index -> a marker
    put in that item's response."""
    return [{"id": f"it-{i:02d}", "prompt": "question",
             "response": f"{long_ids.get(i, '')} " + "word " * (3 + i % 5) + f"answer {i}",
             "quality": float(i)} for i in range(n)]


def _spec(srv: FakeLLMServer) -> str:
    return f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"


def _rank(recs: list[dict], refuse, budget: int, **kw):
    with FakeLLMServer(rule=refuse, answer="A") as srv:
        res = judgeaudit.rank(_spec(srv), recs, k=3, budget=budget, samples=200,
                              max_failed=0.9, covariates="none", cache=False, retry=0,
                              lam=1.0, **kw)
        sent = srv.snapshot()
    return res, sent


def test_an_item_too_long_for_the_judge_is_left_out_of_further_picks():
    """The top-k rule kept choosing the item it knew nothing about: with 10 items and a
    budget of 60, 18 of 60 calls (every pair with it, both orders) were refused as too
    long. Now it is asked until it is known too long (twice, with different partners, plus
    what the first round picked before any answer), and the budget goes to other pairs."""
    recs = _records(10, {4: LONG})

    def rule(req, attempt):
        return "too_long" if LONG in req.prompt_text else None

    res, sent = _rank(recs, rule, budget=60, refit_every=4)
    to_long = [r for r in sent if LONG in r.prompt_text]
    assert len(to_long) <= 2 + 4, len(to_long)  # DROP_AFTER + a round; the old loop: 18
    assert len(sent) == 60 and res["n_comparisons"] == 60  # the budget was spent, elsewhere
    assert res["n_invalid"] == len(to_long)
    tl = res["too_long"]
    assert tl["n_calls"] == len(to_long) and tl["items_left_out"] == ["it-04"]
    assert tl["pairs_left_out"] == 9  # every pair of it-04
    assert tl["picks_skipped"] > 0 and tl["unspent"] == 0
    warn = " | ".join(res["warnings"])
    assert "every pair of 'it-04' (each call of it too long)" in warn
    assert f"{tl['picks_skipped']} pick" in warn and "went to other pairs instead" in warn
    assert res.summary()["too_long"]["picks_skipped"] == tl["picks_skipped"]  # --json


def test_a_pair_too_long_once_is_not_asked_again_in_its_other_order():
    """Two half-long items are too long together only: that pair is refused once, neither
    item is left out (each answered with others), and the other order is not asked (a
    budget of every ordered pair asked it twice)."""
    recs = _records(5, {1: "HALF", 3: "HALF"})

    def rule(req, attempt):
        return "too_long" if req.prompt_text.count("HALF") >= 2 else None

    res, sent = _rank(recs, rule, budget=20, rule="roundrobin", refit_every=2)
    both = [r for r in sent if r.prompt_text.count("HALF") >= 2]
    assert len(both) == 1  # the old loop: 2 (both orders)
    tl = res["too_long"]
    assert tl["items_left_out"] == [] and tl["pairs_left_out"] == 1
    assert res["n_comparisons"] == 20 and res["n_invalid"] == 1
    assert "not asked again: 1 pair;" in " | ".join(res["warnings"])


def test_the_loop_stops_when_every_pair_left_is_too_long():
    """Every call refused: each pair is left out after its refusal, and the rest of the
    budget is said to be unspent rather than spent on calls that cannot succeed. No item is
    named as the long one: with no verdict anywhere, the refusals do not say which is."""
    calls: list[tuple[int, int]] = []

    def oracle(pairs):
        calls.extend(pairs)
        return [loop.TooLong() for _ in pairs]

    res = loop.run_active(None, 3, 6, 1, rule="topk", batch_oracle=oracle, refit_every=1,
                     n_samples=100, lam=1.0)
    assert len(calls) == 3  # each of the 3 pairs once; the old loop asked all 6
    assert res.left_out == {"items": [], "pairs": 3, "picks": 0, "unspent": 3}
    assert all(st.get("too_long") and st["invalid"] for st in res.steps)
    assert res.comparisons.shape == (0, 3)


def test_a_plain_nan_is_no_verdict_but_leaves_nothing_out():
    """An unreadable answer (NaN, not TooLong) says nothing about the prompt's length: the
    picks are what they were (a pair is asked again in its other order)."""
    def oracle(pairs):
        return [math.nan for _ in pairs]

    res = loop.run_active(None, 3, 6, 1, rule="roundrobin", batch_oracle=oracle, refit_every=1,
                     n_samples=100, lam=1.0)
    assert len(res.steps) == 6 and res.left_out == {}
    pairs = [tuple(sorted((st["first"], st["second"]))) for st in res.steps]
    assert sorted(set(pairs)) == [(0, 1), (0, 2), (1, 2)]
    assert np.all(np.unique(pairs, axis=0, return_counts=True)[1] == 2)


def test_a_replayed_matrix_leaves_out_what_a_live_run_would():
    """rank-eval replays a verdict matrix: a pair recorded as too long replays as TooLong
    (a NaN the loop also stops picking), an unreadable one as a plain NaN."""
    from judgeaudit.rank.live import MatrixOracle

    y = np.full((3, 3), np.nan)
    y[0, 1], y[1, 0] = 1.0, 0.0
    bad = np.isnan(y) & ~np.eye(3, dtype=bool)
    long = np.zeros_like(bad)
    long[[0, 2], [2, 0]] = True
    o = MatrixOracle(y, bad, long)
    assert isinstance(o(0, 2, 0), loop.TooLong) and math.isnan(o(0, 2, 0))
    v = o(1, 2, 1)
    assert math.isnan(v) and not isinstance(v, loop.TooLong)
    res = loop.run_active(MatrixOracle(y, bad, long), 3, 6, 1, rule="roundrobin",
                          refit_every=1, n_samples=100, lam=1.0)
    asked = [tuple(sorted((st["first"], st["second"]))) for st in res.steps]
    assert asked.count((0, 2)) == 1 and res.left_out["pairs"] == 1


def test_a_short_item_refused_only_beside_long_items_is_not_left_out():
    """Two long items in a pool of five: a short item whose first two calls were with the
    two long ones had 2 refusals and no verdict, and was left out as if long itself (5 of
    20 seeds with the random rule), then ranked by the prior alone. Now an item is blamed
    only when a partner of its refusals has a verdict; the long ones are still left out."""
    long_items = {0, 1}

    def oracle(pairs):
        return [loop.TooLong() if a in long_items or b in long_items else float(a > b)
                for a, b in pairs]

    for seed in range(20):
        res = loop.run_active(None, 5, 20, 1, rule="random", batch_oracle=oracle,
                              refit_every=1, n_samples=100, lam=1.0, seed=seed)
        assert res.left_out["items"] == [0, 1], (seed, res.left_out)
        compared = set(res.comparisons[:, :2].astype(int).ravel())
        assert compared == {2, 3, 4}, seed
