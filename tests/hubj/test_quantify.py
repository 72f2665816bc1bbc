"""Algorithm 2 end to end with `simhubj` as generator, checker and judge: the planted
per-level effects give a known l* and known flip probabilities, read from the sim model itself
(both orders, a fresh noise draw per call, so a flip value has mean
(P(r- picked in order 12) + P(r- picked in order 21)) / 2)."""

from __future__ import annotations

import math
from typing import Any, ClassVar

import pytest

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor
from judgeaudit.hubj.quantify import (
    QuantifyOutcome,
    Rewrite,
    agreement_items,
    quantify,
    rewritten_item,
)
from judgeaudit.judges.factory import JudgeBundle, make_judge
from judgeaudit.llm import Client, Request, Response, make_provider
from judgeaudit.llm.base import Provider
from judgeaudit.llm.providers.simhubj import marker
from judgeaudit.llm.registry import register
from judgeaudit.perturb.preserve import numbers

EFFECTS = (0.0, 0.5, 2.0, 1.0, 0.0)
QUALITY, POSITION = 1.0, 0.5
SPEC = (f"simhubj?quality={QUALITY}&position={POSITION}"
        f"&factor_verbosity={','.join(map(str, EFFECTS))}")
FACTOR = Factor("verbosity", "Longer and more detailed than the question needs.")
CRITERIA = {"verbosity": {k: f"verbosity level {k}" for k in range(1, 6)}}


def _sig(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def _items(n: int) -> list[PairwiseItem]:
    return [PairwiseItem(id=f"q{i}", prompt=f"Question {i}?", response_1=f"Answer A to {i}.",
                         response_2=f"Answer B to {i}.", label=1 + i % 2) for i in range(n)]


def planted_flip(bundle: JudgeBundle, item: PairwiseItem, rw: Rewrite) -> float:
    """E[flip value] of one rewrite under the judge's own sim model."""
    prov = bundle.client.provider
    it = rewritten_item(item, rw)
    p12 = prov.prob_first(bundle.pairwise.request(it, "12").meta)   # P(first shown wins)
    p21 = prov.prob_first(bundle.pairwise.request(it, "21").meta)
    if rw.side == "response_1":          # r- is shown first in order 12
        return (p12 + (1 - p21)) / 2
    return ((1 - p12) + p21) / 2


async def _run(judges: dict[str, str], seed: int, n: int = 600, n_cal: int = 100,
               checker: Client | None = None, on_violation: str = "drop"
               ) -> tuple[QuantifyOutcome, dict[str, JudgeBundle], dict[str, JSONStats]]:
    bundles = {k: make_judge(f"{v}&seed={seed}") for k, v in judges.items()}
    gen = Client(make_provider("simhubj", "default"))
    agr, _ = await agreement_items(bundles, _items(n))
    stats: dict[str, JSONStats] = {}
    out = await quantify(bundles, gen, agr, [FACTOR], CRITERIA, stats, n_cal=n_cal, seed=seed,
                         checker=checker, on_violation=on_violation)
    return out, bundles, stats


async def test_planted_l_star_and_flip_rates_are_recovered_within_their_intervals():
    covered, total = 0, 0
    for seed in range(3):
        out, bundles, _ = await _run({"j": SPEC}, seed)
        res = out.per_judge["j"]["verbosity"]
        assert res["l_star"] == 3                                   # argmax of EFFECTS
        by_id = {it.id: it for it in out.items}
        for lv, e in enumerate(EFFECTS, 1):
            truths = [planted_flip(bundles["j"], by_id[rw.item_id], rw) for rw in out.rewrites
                      if rw.level == lv]
            truth = sum(truths) / len(truths)
            # the sim model's value is the closed form: r+ has quality 1, the rewrite adds e
            closed = (_sig(e - QUALITY - POSITION) + _sig(e - QUALITY + POSITION)) / 2
            assert truth == pytest.approx(closed, abs=1e-9)
            fr = res["by_level"][str(lv)]
            assert fr["n"] == len(out.items) and fr["n_invalid"] == 0
            covered += fr["ci95"][0] <= truth <= fr["ci95"][1]
            total += 1
        sus = res["susceptibility"]
        assert sus["n"] == len(out.test) == len(out.items) - 100
        truth3 = (_sig(EFFECTS[2] - QUALITY - POSITION) + _sig(EFFECTS[2] - QUALITY + POSITION)) / 2
        assert sus["ci95"][0] <= truth3 <= sus["ci95"][1]
    # 15 nominal-95% intervals: at most two misses (P(> 2 misses) < 0.04 at 95% coverage)
    assert covered >= total - 2, (covered, total)


async def test_scripted_rewrites_keep_the_answer_and_every_one_is_checked():
    out, _, stats = await _run({"j": SPEC}, seed=7, n=120, n_cal=10)
    ac = out.answer_change()
    assert ac["value"] == 0.0 and ac["n"] == len(out.rewrites) == 5 * len(out.items)
    for rw in out.rewrites:
        assert rw.kept and rw.same_answer is True
        assert rw.text == f"{rw.original} {marker('verbosity', rw.level)}"
        # the string-level check is a flag only: it sees the marker's level digit as a new
        # number (unless the original has it), and that does not drop the rewrite
        assert rw.string_ok is (str(rw.level) in numbers(rw.original))
    assert stats["G_inj"].strict == stats["G_check"].strict == len(out.rewrites)
    assert stats["G_inj"].failed == stats["G_check"].failed == 0


async def test_every_judge_sees_the_same_rewrites_and_the_profile_orders_judges():
    flat = "simhubj?quality=1&position=0.5&factor_verbosity=0"
    out, _, _ = await _run({"biased": SPEC, "flat": flat}, seed=3, n=800)
    for name in ("biased", "flat"):
        assert set(out.flips[name]) == {(rw.item_id, rw.factor, rw.level) for rw in out.rewrites}
    prof = out.profile()
    # the flat judge only flips by noise: sigmoid(-1.5) and sigmoid(-0.5) averaged, ~0.26
    baseline = (_sig(-QUALITY - POSITION) + _sig(-QUALITY + POSITION)) / 2
    flat_fr = out.per_judge["flat"]["verbosity"]["by_level"]
    for lv in map(str, range(1, 6)):
        assert flat_fr[lv]["ci95"][0] <= baseline <= flat_fr[lv]["ci95"][1]
    assert prof["biased"]["verbosity"] > prof["flat"]["verbosity"] + 0.2


@register
class NoToLevelFive(Provider):
    """Scripted G_check (test-only): says the answer changed for every level-5 rewrite, so the
    drop/flag bookkeeping can be checked exactly."""

    name: ClassVar[str] = "test-quantify-checker"

    async def generate(self, request: Request) -> Response:
        meta: dict[str, Any] = request.meta or {}
        assert meta.get("module") == "G_check"
        ans = "no" if "@5]]" in str(meta.get("rewritten")) else "yes"
        return Response(text=f'{ans}"}}')


@pytest.mark.parametrize("mode", ["drop", "flag"])
async def test_rewrites_that_change_the_answer_are_dropped_or_flagged(mode):
    checker = Client(make_provider("test-quantify-checker", "x"))
    out, _, _ = await _run({"j": SPEC}, seed=1, n=120, n_cal=10, checker=checker,
                           on_violation=mode)
    ac = out.answer_change()
    assert ac["value"] == pytest.approx(1 / 5)
    level5 = [rw for rw in out.rewrites if rw.level == 5]
    assert all(rw.same_answer is False for rw in level5)
    fr5 = out.per_judge["j"]["verbosity"]["by_level"]["5"]
    if mode == "drop":
        assert not any(rw.kept for rw in level5) and fr5["n"] == 0
        assert all(k[2] != 5 for k in out.flips["j"])
        assert out.per_judge["j"]["verbosity"]["l_star"] == 3
    else:
        assert all(rw.kept for rw in level5) and fr5["n"] == len(out.items)


def test_a_bad_violation_mode_is_refused():
    with pytest.raises(ValueError, match="on_violation"):
        import asyncio

        asyncio.run(_run({"j": SPEC}, seed=0, n=10, n_cal=2, on_violation="keep"))
