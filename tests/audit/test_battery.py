"""The bias battery against simulated judges with planted biases (known truth): each planted
bias is flagged with the right sign, and a judge with nothing planted is (almost) never
flagged."""

from __future__ import annotations

import asyncio

import pytest

from judgeaudit.audit.battery import decide, run_battery
from judgeaudit.audit.probe import ProbeResult, probe_names
from judgeaudit.data import load
from judgeaudit.judges import make_judge

DEFAULT = ["position", "verbosity", "authority", "bandwagon", "beauty", "injection"]
PLANT = {"position": "position", "verbosity": "length", "authority": "authority",
         "bandwagon": "bandwagon", "beauty": "markdown", "injection": "injection"}


def test_default_probe_set():
    assert set(DEFAULT) <= set(probe_names(default_only=True))
    assert {"distraction", "sentiment_angry", "fallacy"} <= set(probe_names()) - set(
        probe_names(default_only=True))


@pytest.mark.parametrize("sign", [1, -1])
async def test_each_planted_bias_is_flagged_with_its_sign(sign):
    items = load("builtin:facts?seed=1")[:120]
    coefs = "&".join(f"{c}={sign * 2.0}" for c in PLANT.values())
    judge = make_judge(f"sim?quality=1.5&{coefs}&seed=5")
    res = await run_battery(judge, items, DEFAULT, seed=5)
    for probe in DEFAULT:
        p = res["probes"][probe]
        assert p["verdict"] == "biased", (probe, p["effect"], p["q"])
        assert (p["effect"]["value"] > 0) == (sign > 0), (probe, p["effect"])
        assert p["n"] > 100 and p["q"] < 0.05


async def test_only_the_planted_bias_is_flagged():
    """Authority planted: flagged in every one of 10 seeds; the other five probes share the
    ~5% false-flag rate of any test at q < 0.05 (allow 10% here, 50 chances)."""
    others = 0
    for seed in range(10):
        items = load(f"builtin:facts?seed={seed}")[:120]
        judge = make_judge(f"sim?quality=1.5&authority=2.5&seed={seed}")
        res = await run_battery(judge, items, DEFAULT, seed=seed)
        assert "authority" in res["summary"]["biased"], seed
        others += len(res["summary"]["biased"]) - 1
    assert others <= 5


def test_unbiased_judge_is_rarely_flagged_across_50_seeds():
    """At most 5% false flags over 50 seeds x 6 probes (q < 0.05 within each report)."""

    async def one(seed: int) -> list[str]:
        items = load(f"builtin:facts?seed={seed}")[:40]
        judge = make_judge(f"sim?quality=1.5&seed={seed}")
        res = await run_battery(judge, items, DEFAULT, seed=seed)
        return res["summary"]["biased"]

    async def all_seeds() -> list[list[str]]:
        return [await one(s) for s in range(50)]

    flags = asyncio.run(all_seeds())
    n_flags = sum(len(f) for f in flags)
    assert n_flags <= 0.05 * 50 * len(DEFAULT), flags


def test_verdict_rules():
    r = ProbeResult(effect=0.01, ci95=(-0.02, 0.04), n=500, p=0.5, mde=0.03)
    assert decide(r, 0.5, (-0.05, 0.05), 0.05) == "not_biased"
    wide = ProbeResult(effect=0.01, ci95=(-0.2, 0.22), n=20, p=0.9, mde=0.3)
    assert decide(wide, 0.9, (-0.05, 0.05), 0.05) == "underpowered"
    strong = ProbeResult(effect=0.3, ci95=(0.2, 0.4), n=100, p=1e-6, mde=0.1)
    assert decide(strong, 1e-5, (-0.05, 0.05), 0.05) == "biased"
    # significant p but BH q above alpha: not called biased
    assert decide(strong, 0.2, (-0.05, 0.05), 0.05) == "underpowered"


async def test_production_checks_on_planted_judges():
    """Confidence planted: the PASS/FAIL judge passes confident wrong answers (flagged); the
    sim ignores template wording, so the prompt-format variants move nothing."""
    items = load("builtin:facts?seed=3")[:80]
    judge = make_judge("sim?quality=3&confidence=6&seed=3")
    res = await run_battery(judge, items, ["sycophancy_pass", "format_sensitivity",
                                           "refinement_aware", "self_preference"], seed=3)
    syc = res["probes"]["sycophancy_pass"]
    assert syc["verdict"] == "biased" and syc["effect"]["value"] > 0 and syc["flag"]["exceeds"]
    fmt = res["probes"]["format_sensitivity"]
    assert fmt["effect"]["value"] == 0 and fmt["flag"]["exceeds"] is False
    # Nothing moved on 80 items: the exact interval (+-0.045) is wider than the +-3 point
    # no-bias range, so the data cannot say "not biased" (the bootstrap's [0, 0] did).
    assert fmt["effect"]["ci95"] == pytest.approx([-(1 - 0.025 ** (1 / 80)),
                                                   1 - 0.025 ** (1 / 80)])
    assert fmt["verdict"] == "underpowered"
    ref = res["probes"]["refinement_aware"]
    assert ref["n"] == 80 and ref["span"] == 4.0  # scores 1..5 differ by at most 4
    assert {p["span"] for p in res["probes"].values() if "span" in p} == {1.0, 4.0}
    assert "not run" in res["probes"]["self_preference"]["notes"][0]
    clean = await run_battery(make_judge("sim?quality=1.5&seed=3"), items, ["sycophancy_pass"],
                              seed=3)
    assert clean["probes"]["sycophancy_pass"]["verdict"] != "biased"


def test_a_judge_that_never_moved_is_not_called_unbiased_on_too_few_items():
    """A judge whose verdicts did not move on any of 10 items has an interval of [0, 0] by
    the bootstrap, which read as "not biased"; the exact interval of the shares that could
    have moved says the data cannot tell (position: +-0.15). On 80 items it can (+-0.023)."""
    import judgeaudit

    small = judgeaudit.audit("sim?seed=0", "builtin:facts", probes=["position"], n=10,
                             cache=False)
    pos = small["probes"]["position"]
    assert pos["n"] == 10 and pos["per_item"] and not any(pos["per_item"].values())
    assert pos["effect"]["method"] == "clopper-pearson-movers"
    assert pos["effect"]["ci95"] == pytest.approx([-0.5 * (1 - 0.025 ** 0.1),
                                                   0.5 * (1 - 0.025 ** 0.1)])
    assert pos["verdict"] == "underpowered"
    big = judgeaudit.audit("sim?seed=0", "builtin:facts", probes=["position"], n=80,
                           cache=False)["probes"]["position"]
    if not any(big["per_item"].values()):
        assert big["verdict"] == "not_biased"


async def test_an_interval_that_excludes_0_without_a_verdict_says_why():
    """At n = 20 the bootstrap interval can exclude 0 while the exact test (after BH) does
    not reject: the row read '+0.20 [+0.05, +0.38] ... underpowered' with no word on it."""
    items = load("builtin:facts?seed=0")
    res = await run_battery(make_judge("sim:biased"), items, DEFAULT, seed=0, limit=20)
    said = 0
    for name, p in res["probes"].items():
        lo, hi = p["effect"]["ci95"]
        odd = p["verdict"] == "underpowered" and lo is not None and (lo > 0 or hi < 0)
        note = any("its 95% interval excludes 0 but its test does not reject" in n
                   for n in p["notes"])
        assert note == odd, (name, p["effect"], p["q"], p["notes"])
        said += note
    assert said >= 1  # this run has such a probe (injection: p = 0.065, q = 0.39)


def test_threshold_flag_without_data_is_unchecked_not_within():
    from judgeaudit.audit.probe import threshold_flag

    assert threshold_flag(0.7, "m", {"value": 0.8, "n": 20}) == {
        "threshold": 0.7, "metric": "m", "value": 0.8, "exceeds": True, "n": 20}
    assert threshold_flag(0.7, "m", {"value": 0.5, "n": 20})["exceeds"] is False
    # the value's interval goes with it ("exceeds 0.583 vs 0.550" hid [0.41, 0.71] at n = 18)
    assert threshold_flag(0.55, "m", {"value": 0.583, "n": 18, "ci95": [0.41, 0.71]})[
        "ci95"] == [0.41, 0.71]
    none = threshold_flag(0.7, "m", {"value": None, "n": 0})
    assert none["exceeds"] is None and none["n"] == 0 and none["reason"]
    assert threshold_flag(0.55, "first", {"value": 0.3, "n": 9},
                          lambda v: max(v, 1 - v) > 0.55)["exceeds"] is True


def test_a_judge_favouring_the_second_slot_is_flagged_by_that_slots_rate():
    """A judge always picking the second-shown response read 'first-slot rate = 0.000,
    threshold 0.550: exceeds' (terminal: 0.00>0.55): the check reads the favoured slot."""
    import judgeaudit

    res = judgeaudit.audit("sim?position=-30", "builtin:facts", probes="position", n=10,
                           cache=False)
    flag = res["probes"]["position"]["flag"]
    assert flag["metric"] == "second-slot rate" and flag["value"] == 1.0 and flag["exceeds"]
    lo, hi = flag["ci95"]
    assert 0.5 < lo <= hi == 1.0
    first = judgeaudit.audit("sim?position=30", "builtin:facts", probes="position", n=10,
                             cache=False)["probes"]["position"]["flag"]
    assert first["metric"] == "first-slot rate" and first["value"] == 1.0
