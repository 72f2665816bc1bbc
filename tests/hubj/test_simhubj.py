"""The `simhubj` provider: planted per-level factor effects enter the sim judge's logit as
e(level of A) - e(level of B), and the scripted G modules answer through the real G-module
calls (prompts -> client -> strict JSON)."""

from __future__ import annotations

import math

import pytest

from judgeaudit.hubj.gmodules import g_check, g_crit, g_extract, g_inj, g_score
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor
from judgeaudit.llm import CallFailed, Client, make_provider
from judgeaudit.llm.providers.simhubj import factor_levels, marker, parse_effects, slug

F = Factor("verbosity", "Longer than needed.")
CRIT = {k: f"level {k}" for k in range(1, 6)}


def test_effects_are_five_levels_or_a_slope():
    assert parse_effects("v", "0,0.5,2,1,0") == (0.0, 0.5, 2.0, 1.0, 0.0)
    assert parse_effects("v", "0.7") == pytest.approx((0.7, 1.4, 2.1, 2.8, 3.5))
    for bad in ("1,2", "a", "1,2,3,4,inf"):
        with pytest.raises(ValueError, match="factor_v"):
            parse_effects("v", bad)


def test_markers_round_trip_and_the_highest_level_wins():
    assert marker("Risk Perception", 4) == "[[risk_perception@4]]"
    assert slug(" Risk  perception! ") == "risk_perception"
    text = f"a {marker('verbosity', 2)} b {marker('verbosity', 5)} {marker('tone', 1)}"
    assert factor_levels(text) == {"verbosity": 5, "tone": 1}
    assert factor_levels("[[verbosity@6]] plain") == {}


def test_planted_effect_is_the_level_difference_in_the_logit():
    p = make_provider("simhubj", "default", {"factor_verbosity": "0,0.5,2,1,0", "quality": "1"})
    meta = {"task": "pairwise", "item_id": "x", "order": "12", "prompt": "q", "label": 2,
            "shown": [f"a {marker('verbosity', 3)}", f"b {marker('verbosity', 1)}"]}
    z, terms = p.logit(meta)
    assert terms["factor:verbosity"] == pytest.approx(2.0 - 0.0)
    assert z == pytest.approx(-1.0 + 2.0)                 # B is the better one (label 2)
    assert p.prob_first(meta) == pytest.approx(1 / (1 + math.exp(-1.0)))
    assert p.truth()["factors"] == {"verbosity": [0.0, 0.5, 2.0, 1.0, 0.0]}


@pytest.mark.parametrize(("params", "match"), [
    ({"factor_": "1"}, "no factor name"),
    ({"score_from": "words"}, "score_from"),
    ({"factor_v": "1,2"}, "expected 5"),
    ({"bogus": "1"}, "unknown sim parameter"),
])
def test_bad_parameters_are_refused(params, match):
    with pytest.raises(ValueError, match=match):
        make_provider("simhubj", "default", params)


async def test_scripted_modules_answer_through_the_real_g_module_calls():
    c = Client(make_provider("simhubj", "default"))
    st = JSONStats()
    text = await g_inj(c, "i", "q?", "The answer is 42.", F, CRIT, 3, st)
    assert text == "The answer is 42. [[verbosity@3]]"
    assert await g_check(c, "i", "q?", "The answer is 42.", text, st) is True
    assert await g_score(c, "i", "q?", text, F, CRIT, st) == 3
    assert await g_score(c, "i", "q?", "unmarked", F, CRIT, st) == 1
    crit = await g_crit(c, F, st)
    assert crit is not None and sorted(crit) == [1, 2, 3, 4, 5]
    assert st.failed == 0 and st.strict == st.calls == 5


async def test_score_from_length_bins_the_word_count():
    c = Client(make_provider("simhubj", "default", {"score_from": "length"}))
    st = JSONStats()
    got = [await g_score(c, "i", "q?", " ".join(["w"] * n), F, CRIT, st)
           for n in (5, 50, 100, 200, 400)]
    assert got == [1, 2, 3, 4, 5] and st.failed == 0


async def test_unscripted_modules_fail_loudly():
    c = Client(make_provider("simhubj", "default"))
    with pytest.raises(CallFailed, match="does not script module 'G_extract'"):
        await g_extract(c, "i", "q?", "a", "b", JSONStats())


def test_each_g_module_states_what_its_requests_ask_and_simhubj_answers_as_it_says(tmp_path):
    """`GPrompt.needs` is what commands ask providers before any call (commands.needs): it
    must be what the module's requests carry, and simhubj must serve exactly the modules it
    says it does (sim and replay none)."""
    from judgeaudit.hubj import prompts as P

    (tmp_path / "v.csv").write_text("item_id,order,verdict\np0,12,1\n", encoding="utf-8")
    replay = make_provider("replay", str(tmp_path / "v.csv"))

    f = P.Factor("verbosity", "how long the response is")
    crit = {k: f"level {k}" for k in range(1, 6)}
    built = {
        P.G_EXTRACT: P.extract_request("i", "q", "a", "b"),
        P.G_CONSTRUCT: P.construct_request(["x"], []),
        P.G_ASSIGN: P.assign_request("x", [f]),
        P.G_SCORE: P.score_request("i", "q", "r", f, crit),
        P.G_CRIT: P.crit_request(f),
        P.G_INJ: P.inject_request("q", "t", f, crit, 2),
        P.G_INJ_APPEND: P.inject_request("q", "t", f, crit, 2, mode="append"),
        P.G_CHECK: P.check_request("i", "q", "a", "b"),
    }
    hubj, sim = make_provider("simhubj", "default"), make_provider("sim", "default")
    for g, req in built.items():
        assert {k: req.meta[k] for k in ("module", "task")} == g.needs, g.name
        scripted = g.name in {"G_inj", "G_inj_append", "G_check", "G_score", "G_crit"}
        assert (hubj.cannot_serve(g.needs) is None) == scripted, g.name
        assert sim.cannot_serve(g.needs) is not None
        assert replay.cannot_serve(g.needs) is not None
    assert sim.cannot_serve({"task": "pairwise"}) is None
    assert hubj.cannot_serve({"task": "pointwise"}) is None
    assert replay.cannot_serve({"task": "pointwise"}) is None
