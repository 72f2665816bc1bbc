"""Adaptive audits (issue 16): early stopping with anytime-valid statistics on the sim judge."""

from __future__ import annotations

import asyncio

import numpy as np

from judgeaudit.audit.adaptive import AdaptiveRule, ProbeState, run_adaptive, sequence
from judgeaudit.data import load
from judgeaudit.judges import make_judge


def _run(spec: str, probes: list[str], **kw) -> dict:
    items = load("builtin:facts")
    return asyncio.run(run_adaptive(make_judge(spec), items, probes, **kw))


def test_strong_position_bias_stops_early_as_biased():
    doc = _run("sim?position=4", ["position"], max_n=200, round_size=20)
    p = doc["probes"]["position"]
    a = p["adaptive"]
    assert p["verdict"] == "biased" and a["stop_reason"] == "rejected"
    assert a["items"] <= 60
    assert a["calls"] <= 0.35 * a["fixed_n_calls"]
    assert doc["adaptive"]["calls"] < doc["adaptive"]["fixed_n_calls"]
    lo, hi = a["ci"]
    assert lo > 0 and p["effect"]["ci95"] == [lo, hi]
    # the interval is the sequence's; the fixed-n one it replaced keeps its own name
    assert p["effect"]["method"] == "betting-confidence-sequence"
    assert a["naive_fixed_n"]["method"] == "score-bounded"
    assert a["evalue"] >= 1 / 0.05


def test_no_position_bias_is_never_biased_over_seeds():
    for seed in range(20):
        doc = _run(f"sim?seed={seed}", ["position"], max_n=60, round_size=20, seed=seed)
        assert doc["probes"]["position"]["verdict"] in ("not_biased", "underpowered")


def test_results_carry_the_adaptive_fields():
    doc = _run("sim?position=3", ["position", "authority"], max_n=40, round_size=20)
    ad = doc["adaptive"]
    for k in ("rounds", "calls", "fixed_n_calls", "max_n", "round_size", "stopped_by",
              "method"):
        assert k in ad
    for p in doc["probes"].values():
        a = p["adaptive"]
        for k in ("n", "items", "calls", "ci", "evalue", "stop_reason", "fixed_n_calls",
                  "path"):
            assert k in a
        assert a["path"] and a["path"][-1]["ci"] == a["ci"]
    assert doc["run"]["status"] == "ok"
    # the fixed-n battery re-run over the stopped prefixes costs no call
    assert doc["calls"]["made"] + doc["calls"]["cached"] == ad["calls"]


def test_units_grow_as_a_prefix():
    """A probe's per-item differences on a longer prefix extend those on a shorter one (the
    sequential stream is well defined)."""
    from judgeaudit.audit.probe import AuditContext, get_probe

    items = load("builtin:facts")[:40]
    ctx = AuditContext(make_judge("sim?authority=1"), items)
    p = get_probe("authority")
    a = asyncio.run(p.run(ctx.view(items[:20])))
    b = asyncio.run(p.run(ctx.view(items)))
    assert b.units[:len(a.units)] == a.units


def test_budget_stops_the_run():
    doc = _run("sim", ["position", "authority"], max_n=200, round_size=20, max_calls=300)
    assert doc["adaptive"]["stopped_by"] == "max_calls"
    assert doc["adaptive"]["calls"] <= 300
    assert all(p["adaptive"]["stop_reason"] in ("budget", "cleared", "rejected")
               for p in doc["probes"].values())


def test_rule_controls_false_rejections_on_null_streams():
    rng = np.random.default_rng(0)
    false = 0
    for _ in range(40):
        states = [ProbeState(f"p{i}", (-0.05, 0.05)) for i in range(3)]
        rule = AdaptiveRule(states, 0.05)
        x = rng.choice([-1.0, 0.0, 1.0], p=[0.1, 0.8, 0.1], size=(3, 200))
        rnd = 0
        while not rule.all_stopped:
            rnd += 1
            m = min(20 * rnd, 200)
            for i, s in enumerate(states):
                lo, hi, e = sequence(x[i, :m], -1, 1, 0.05)
                s.update(m, m, (lo, hi), e, rnd)
            rule.step(rnd, {s.name: "max_n" if m >= 200 else None for s in states})
        false += sum(v == "biased" for v in rule.verdicts().values())
    assert false <= 2


def test_a_probe_on_a_wider_scale_runs_under_its_own_span():
    """refinement_aware's per-item differences are of 1-5 scores (span 4); before, the run
    held them to [-1, 1] and failed on the first larger one ("observations must lie in
    [lo, hi]"). Its range now comes from its result, as every probe's."""
    doc = _run("sim?seed=1", ["refinement_aware", "cot"], max_n=40, round_size=20)
    assert doc["run"]["status"] == "ok"
    assert doc["adaptive"]["bounds"] == {"refinement_aware": [-4.0, 4.0], "cot": [-1.0, 1.0]}
    ref = doc["probes"]["refinement_aware"]
    assert any(abs(v) > 1 for v in ref["per_item"].values())  # what failed before
    lo, hi = ref["adaptive"]["ci"]
    assert -4 <= lo <= ref["effect"]["value"] <= hi <= 4


def test_a_difference_outside_a_probes_range_is_bad_input():
    import pytest

    from judgeaudit.audit.adaptive import with_span
    from judgeaudit.audit.probe import ProbeResult

    s = ProbeState("plugin_probe", (-0.05, 0.05))
    r = ProbeResult(0.5, (None, None), 2, None, None)  # no span stated
    with pytest.raises(ValueError, match="plugin_probe.*2 lies outside \\[-1, 1\\]"):
        with_span(s, r, [0.0, 2.0])
    r.span = 2.0
    with_span(s, r, [0.0, 2.0])  # a stated span is taken before the first observation
    assert (s.lo, s.hi, s.ci) == (-2.0, 2.0, (-2.0, 2.0))


async def test_without_a_cache_no_call_is_sent_twice_or_past_max_calls():
    """The last step re-runs each probe on its items; a PASS/FAIL judge's calls are not in
    the AuditContext's memo, so without a cache they were all sent again: 640 calls made
    against --max-calls 400, the summary saying 400. The run now keeps a cache of its own."""
    items = load("builtin:facts?seeds=0-2")
    judge = make_judge("sim?position=1")
    assert judge.client.cache is None
    doc = await run_adaptive(judge, items, ["sycophancy_pass"], max_n=100, max_calls=400)
    made = judge.client.stats.made
    assert doc["adaptive"]["calls"] <= 400 and made <= 400, (doc["adaptive"], made)
    assert made == doc["adaptive"]["calls"]  # every call it asked for is one it made
    assert judge.client.cache is None  # the run's own cache is gone with it


async def test_a_probe_that_cannot_run_stops_at_once():
    """Under --full without a panel self_preference cannot run; it stayed open to max-n,
    the run paying rounds for it alone, and its note said to raise --max-n."""
    items = load("builtin:facts?seeds=0-2")
    doc = await run_adaptive(make_judge("sim?noise=0&position=2"), items,
                             ["position", "self_preference"], max_n=200)
    sp = doc["probes"]["self_preference"]
    assert sp["adaptive"]["stop_reason"] == "not_run" and sp["adaptive"]["rounds"] == 1
    assert not any("raise --max-n" in n for n in sp["notes"])
    assert doc["adaptive"]["rounds"] == doc["probes"]["position"]["adaptive"]["rounds"]
