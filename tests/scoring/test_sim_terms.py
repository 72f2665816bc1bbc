"""The sim's planted scoring-prompt sensitivities (ref_pull, order_bias, id_bias) act exactly
as documented on the noiseless score, and a changed prompt variant is a fresh noise draw
unless crn=1."""

from __future__ import annotations

import asyncio

import pytest

from judgeaudit.llm import Message, Request
from judgeaudit.llm.providers.sim import SimProvider


def _meta(**kw) -> dict:
    m = {"task": "pointwise", "item_id": "i", "prompt": "p", "response": "r", "quality": 0.5,
         "score_ids": ["1", "2", "3", "4", "5"], "reference": None, "reference_score": None}
    m.update(kw)
    return m


def test_terms_on_the_mean() -> None:
    sim = SimProvider("default", {"order_bias": "0.7", "id_bias": "-0.4", "ref_pull": "0.5"})
    base = sim.score_mean(_meta())
    assert base == pytest.approx(3.0)
    assert sim.score_mean(_meta(rubric_order="descending")) == pytest.approx(3.7)
    assert sim.score_mean(_meta(rubric_order="random")) == pytest.approx(3.0)
    assert sim.score_mean(_meta(score_ids=list("EDCBA"))) == pytest.approx(2.6)
    assert sim.score_mean(_meta(reference_score=5)) == pytest.approx(4.0)
    assert sim.score_mean(_meta(reference_score=1, rubric_order="descending")) == pytest.approx(
        3.7 + 0.5 * (1 - 3.7))


def test_defaults_leave_old_scores_alone() -> None:
    sim = SimProvider("default", {})
    assert sim.score_mean(_meta(rubric_order="descending", reference_score=1,
                                score_ids=list("EDCBA"))) == pytest.approx(3.0)


def test_ref_pull_range() -> None:
    with pytest.raises(ValueError, match="ref_pull"):
        SimProvider("default", {"ref_pull": "1.5"})


def _draw(sim: SimProvider, meta: dict) -> float:
    req = Request(messages=(Message("user", "x"),), choices=tuple(meta["score_ids"]), meta=meta)
    resp = asyncio.run(sim.generate(req))
    return resp.raw["score"]


def test_a_changed_variant_is_a_fresh_draw_unless_crn() -> None:
    for crn, expect_same in (("0", False), ("1", True)):
        sim = SimProvider("default", {"score_noise": "2", "crn": crn})
        same = [_draw(sim, _meta(item_id=f"i{j}", variant="baseline", rubric_order="ascending"))
                == _draw(sim, _meta(item_id=f"i{j}", variant="order_random",
                                    rubric_order="random", rubric_shown=[3, 1, 5, 2, 4]))
                for j in range(60)]
        assert all(same) == expect_same
        if not expect_same:
            assert sum(same) < 45
