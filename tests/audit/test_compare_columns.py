"""compare's A and B effects beside the change describe the same items as the change.

The change B - A is over the items both audits judged (matched by id); the A and B effects
were each audit's own, over all its items, so at different --n (or with dropped items) the
columns did not add up: effect B - effect A was not the change shown between them. Now `a`
and `b` are over the matched items (n and 95% interval from `paired_estimate`, the audit's
own function), and each audit's own effect is kept apart (`own`), labelled.

Checked on sim judges at --n 80 and --n 120 of the same data: the judges are deterministic
per item, so an audit's values on the shared items are the same at either n, and the
matched column of a run at n = 120 must equal that run's own effect at n = 80 exactly."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from judgeaudit.audit.battery import run_battery
from judgeaudit.audit.compare import compare
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.stats import paired_estimate

PROBES = ["position", "verbosity"]


def _audit(spec: str, n: int) -> dict:
    items = load("builtin:facts")[:n]
    return asyncio.run(run_battery(make_judge(spec), items, PROBES, seed=0,
                                   data_spec="builtin:facts"))


@pytest.fixture(scope="module")
def runs() -> dict[str, dict]:
    """A: position bias planted (sim position 2.0); B: none (0.0); each at n = 80 and 120."""
    return {f"{k}{n}": _audit(f"sim?position={pos}&seed=0", n)
            for k, pos in (("a", 2.0), ("b", 0.0)) for n in (80, 120)}


def _columns_add_up(p: dict) -> None:
    a, b, ch = p["a"]["effect"]["value"], p["b"]["effect"]["value"], p["change"]["value"]
    assert b - a == pytest.approx(ch, abs=1e-12), (a, b, ch)
    assert p["a"]["n"] == p["b"]["n"] == p["items"]["n_matched"]
    assert (p["bias"]["a"], p["bias"]["b"]) == pytest.approx((a, b), abs=1e-12)


def test_columns_are_over_the_matched_items_at_another_n(runs):
    """A at n = 80, B at n = 120: B's column is B's effect on the 80 shared items (B's own
    effect at n = 80, interval and all), not B's effect over its 120; B - A is the change."""
    res = compare(runs["a80"], runs["b120"])
    for name in PROBES:
        p = res["probes"][name]
        assert p["items"]["n_matched"] == 80 and p["items"]["n_only_b"] == 40
        _columns_add_up(p)
        assert p["a"]["over"] == p["b"]["over"] == "matched"
        assert p["b"]["effect"] == runs["b80"]["probes"][name]["effect"]
        assert p["a"]["effect"] == runs["a80"]["probes"][name]["effect"]
        # each audit's own effect over all its items is kept beside, with its n
        assert p["b"]["own"]["effect"] == runs["b120"]["probes"][name]["effect"]
        assert p["b"]["own"]["n"] == 120 and p["a"]["own"]["n"] == 80
        # and the verdict logic is the one it was: it reads the matched means
        assert p["verdict"] == compare(runs["a80"], runs["b80"])["probes"][name]["verdict"]
    pos = res["probes"]["position"]
    own_b = runs["b120"]["probes"]["position"]["effect"]["value"]
    assert pos["b"]["effect"]["value"] != own_b  # the extra 40 items moved it before
    note = next(n for n in pos["notes"] if "80 items matched by id" in n)
    assert "left out of the change and of the A and B effects beside it" in note
    assert f"B {own_b:+.3f}" in note and "(n = 120)" in note


def test_a_run_with_extra_items_does_not_move_the_a_column(runs):
    """A at n = 120 against B at n = 80: A's 40 extra items leave A's column where A at
    n = 80 puts it; the change and verdict are those of the n = 80 pair."""
    wide = compare(runs["a120"], runs["b80"])
    same = compare(runs["a80"], runs["b80"])
    for name in PROBES:
        w, s = wide["probes"][name], same["probes"][name]
        _columns_add_up(w)
        assert w["a"]["effect"] == s["a"]["effect"] == runs["a80"]["probes"][name]["effect"]
        assert w["a"]["n"] == s["a"]["n"] == 80
        assert w["b"]["effect"] == s["b"]["effect"]
        assert w["change"] == s["change"] and w["verdict"] == s["verdict"]
        assert w["a"]["own"]["n"] == 120 and s["a"]["own"]["n"] == 80


def test_a_subset_column_takes_the_audits_interval_function_and_span():
    """Some of A's items unmatched: A's column is `paired_estimate` of A's values on the
    matched items with A's per-item bound (span), as the audit computes an effect; with
    every item matched, the audit's own stored effect, unchanged."""
    rng = np.random.default_rng(3)
    ids = [f"i{k}" for k in range(50)]
    va = {i: float(rng.choice([-0.5, 0.0, 0.5])) for i in ids}
    vb = {i: float(rng.choice([-0.5, 0.0, 0.5])) for i in ids[:30]}

    def doc(vals: dict, span: float | None) -> dict:
        v = float(np.mean(list(vals.values())))
        p = {"title": "Position", "no_bias_range": [-0.05, 0.05], "n": len(vals),
             "effect": {"value": v, "ci95": [v - 0.1, v + 0.1], "method": "stored"},
             "p": 0.5, "q": 0.5, "verdict": "underpowered", "notes": [], "per_item": vals}
        if span is not None:
            p["span"] = span
        return {"command": "audit", "data": "builtin:facts", "n_items": len(vals),
                "run": {"status": "ok"}, "probes": {"position": p}}

    p = compare(doc(va, 0.5), doc(vb, 0.5))["probes"]["position"]
    want = paired_estimate([va[i] for i in ids[:30]], span=0.5)
    assert p["a"]["effect"]["value"] == pytest.approx(want.value)
    assert p["a"]["effect"]["ci95"] == pytest.approx(list(want.ci95))
    assert p["a"]["effect"]["method"] == want.method == "score-bounded"
    assert p["b"]["effect"]["method"] == "stored"  # all of B's items matched: B's own
    assert p["a"]["own"]["effect"]["method"] == "stored" and p["a"]["own"]["n"] == 50
    _columns_add_up(p)
    # no span recorded (older results): the bootstrap the audit used then, seeded
    q = compare(doc(va, None), doc(vb, None))["probes"]["position"]
    assert q["a"]["effect"]["method"] == "bootstrap-percentile"
    lo, hi = q["a"]["effect"]["ci95"]
    assert lo < q["a"]["effect"]["value"] < hi


def test_unpaired_columns_stay_each_audits_own():
    """Without per-item values nothing is matched: the columns are the audits' own effects,
    and the change is their difference, so they add up as before."""
    def doc(v: float) -> dict:
        return {"command": "audit", "data": "d", "n_items": 40, "run": {"status": "ok"},
                "probes": {"position": {"no_bias_range": [-0.05, 0.05], "n": 40,
                                        "effect": {"value": v, "ci95": [v - .05, v + .05]},
                                        "verdict": "biased", "notes": []}}}

    p = compare(doc(0.2), doc(0.05))["probes"]["position"]
    assert p["pairing"] == "unpaired" and p["a"]["over"] == "own" and p["a"]["n"] == 40
    assert p["b"]["effect"]["value"] - p["a"]["effect"]["value"] == pytest.approx(
        p["change"]["value"])
    assert p["a"]["own"] == {"effect": p["a"]["effect"], "n": 40}
