"""compare with a baseline written by an earlier judgeaudit build: the same version string
(0.1.0) and schema, but no per-item bound (`span`) on its probes. Two audits of the same sim
judge and seed change no item, and the percentile bootstrap of 40 zero changes is [0, 0], so
every probe read "no change" with +0.000 [+0.000, +0.000] and a --fail-on gate passed. Now the
other run's bound is assumed where the old run's values fit it (the interval a current
baseline gets), a change of too few items with no bound at all is underpowered, and the
comparison names the older build."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.audit.battery import run_battery
from judgeaudit.audit.compare import compare
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.stats import movers_ci

PROBES = ["position", "verbosity", "authority"]


async def _audit() -> dict:
    return await run_battery(make_judge("sim?position=1&seed=0"), load("builtin:facts")[:40],
                             PROBES, seed=0, data_spec="builtin:facts")


def _without_span(doc: dict) -> dict:
    """The document as a build from before runs recorded `span` wrote it."""
    return {**doc, "probes": {k: {kk: vv for kk, vv in p.items() if kk != "span"}
                              for k, p in doc["probes"].items()}}


async def test_a_baseline_without_span_is_never_no_change_with_a_zero_width_interval():
    new = await _audit()
    old = _without_span(new)
    assert old["version"] == new["version"]  # versions_differ cannot catch it
    current = compare(new, new)
    res = compare(old, new)
    for name in PROBES:
        p, ref = res["probes"][name], current["probes"][name]
        assert p["items"]["n_up"] == p["items"]["n_down"] == 0
        lo, hi = p["change"]["ci95"]
        assert hi - lo > 0.1, (name, p["change"])  # was [0, 0]
        assert p["change"]["ci95"] == pytest.approx(ref["change"]["ci95"])  # as a current one
        assert p["verdict"] == "underpowered", (name, p["reason"])
        assert any("run A records no per-item bound" in n for n in p["notes"]), p["notes"]
    assert res["older_build"] == {"A": sorted(PROBES)}
    assert "earlier judgeaudit build" in res["notes"][0]
    assert "re-run the baseline with this version" in res["notes"][0]
    assert "older_build" not in current


async def test_no_bound_in_either_run_and_few_changes_is_underpowered():
    old = _without_span(await _audit())
    res = compare(old, old)
    for name in PROBES:
        p = res["probes"][name]
        assert p["change"]["method"] == "bootstrap-percentile"
        assert p["change"]["ci95"] == [0.0, 0.0]  # why it read +0.000 [+0.000, +0.000]
        assert p["verdict"] == "underpowered" and p.get("no_bound") is True
        assert "re-run the baseline with this version" in p["reason"]
    assert res["older_build"] == {"A": sorted(PROBES), "B": sorted(PROBES)}


def test_a_bound_the_old_values_break_is_not_assumed():
    """An old run whose values exceed the other run's bound (another probe definition) does
    not take it: the change falls back to the bootstrap and may not say 'no change'."""
    ids = [f"i{k}" for k in range(30)]
    va = dict.fromkeys(ids, 0.0) | {"i0": 0.9}
    vb = dict.fromkeys(ids, 0.0) | {"i0": 0.9}

    def doc(vals, span=None):
        v = float(np.mean(list(vals.values())))
        p = {"title": "Position", "metric": "m", "no_bias_range": [-0.05, 0.05],
             "effect": {"value": v, "ci95": [v - 0.02, v + 0.02]}, "n": 30, "p": 0.5,
             "per_item": vals, **({"span": span} if span is not None else {})}
        return {"command": "audit", "version": "0.1.0", "data": "d", "n_items": 30,
                "run": {"status": "ok"}, "probes": {"position": p}}

    p = compare(doc(va), doc(vb, span=0.5))["probes"]["position"]
    assert p["change"]["method"] == "bootstrap-percentile" and p["verdict"] == "underpowered"
    p = compare(doc(va), doc(vb, span=1.0))["probes"]["position"]
    assert p["change"]["method"] == "clopper-pearson-movers"
    assert p["change"]["ci95"] == pytest.approx(list(movers_ci(np.zeros(30), 2.0)))
