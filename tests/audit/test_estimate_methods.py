"""The audit's estimates are built as `Estimate`s that name their interval ("wilson",
"bootstrap-percentile", "t", "wald", ...) and are written with `as_dict`; results written
before "method" existed still compare and read."""

from __future__ import annotations

import math

import numpy as np

from judgeaudit.audit import compare as C
from judgeaudit.audit.evaluate import _mae
from judgeaudit.audit.metrics import estimate, position, rate_estimate
from judgeaudit.audit.paired import effect_dict, paired_difference, paired_stats
from judgeaudit.audit.probe import ProbeResult
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict
from judgeaudit.stats import bootstrap_ci, mean_ci, wilson
from judgeaudit.stats.types import Estimate


def test_rates_are_wilson_estimates_and_nothing_has_no_method():
    assert estimate(3, 4) == {"value": 0.75, "ci95": list(wilson(3, 4)), "n": 4,
                              "method": "wilson"}
    assert rate_estimate(3, 4) == Estimate(0.75, wilson(3, 4), 4, method="wilson")
    assert estimate(0, 0) == {"value": None, "ci95": [None, None], "n": 0}


def test_paired_stats_carry_their_estimate():
    d = [0.0, 1.0, 0.5, 1.0, -0.5, 0.0, 1.0]
    st = paired_stats(d, seed=3)
    est = st["estimate"]
    lo, hi = bootstrap_ci(np.asarray(d), np.mean, seed=3)
    assert est == Estimate(float(np.mean(d)), (lo, hi), 7, method="bootstrap-percentile")
    assert (st["effect"], st["ci95"], st["n"], st["method"]) == (
        est.value, (lo, hi), 7, "bootstrap-percentile")
    one = paired_stats([0.5])  # no interval from one item, so no method
    assert one["ci95"] == (None, None) and one["method"] is None
    assert one["estimate"].as_dict() == {"value": 0.5, "ci95": [None, None], "n": 1}
    none = paired_stats([])
    assert none["effect"] is None and none["method"] is None
    assert paired_difference([1.0, None, 0.0], [1.0, 1.0, 1.0])["method"] == \
        "bootstrap-percentile"


def test_effects_are_written_without_their_n():
    est = Estimate(0.1, (0.0, 0.2), 9, method="bootstrap-percentile")
    assert effect_dict(est) == {"value": 0.1, "ci95": [0.0, 0.2],
                                "method": "bootstrap-percentile"}
    r = ProbeResult(None, (None, None), 0, None, None)
    assert effect_dict(r.estimate()) == {"value": None, "ci95": [None, None]}
    r = ProbeResult(0.1, (0.0, 0.2), 9, 0.5, None, method="bootstrap-percentile")
    assert r.estimate() == est


def _both(first: bool) -> PairwiseVerdict:
    """Both orders pick the response shown first (or, with first=False, the same response
    in both orders)."""
    w12, w21 = (1, 2) if first else (1, 1)
    return PairwiseVerdict("i", [OrderVerdict("12", "A", "A", w12),
                                 OrderVerdict("21", "A" if first else "B", "A", w21)])


def test_position_first_rate_shares_the_effects_interval():
    vs = [_both(True), _both(False), _both(True), _both(False), _both(False)]
    m = position(vs, seed=1)
    eff = m["estimate"]
    fr = m["first_rate"]
    # two items moved, fewer than SPARSE_MOVERS: the exact interval, for both
    assert fr["method"] == eff.method == "clopper-pearson-movers"
    assert fr["ci95"] == [eff.ci95[0] + 0.5, eff.ci95[1] + 0.5]
    m = position(vs * 2, seed=1)  # four moved both times, of ten: still exact
    assert m["estimate"].method == "clopper-pearson-movers"
    m = position(vs * 3, seed=1)  # six: the score interval, for both
    assert m["first_rate"]["method"] == m["estimate"].method == "score-bounded"
    assert m["consistency"]["method"] == "wilson"


def test_position_of_a_single_item_has_a_first_rate_without_interval():
    m = position([_both(True)])
    assert m["first_rate"] == {"value": 1.0, "ci95": [None, None], "n": 1}


def test_mae_is_a_t_interval():
    diff = np.array([0.0, 1.0, 2.0, 1.0])
    lo, hi = mean_ci(diff)
    assert lo < 0  # the t interval's lower end; an absolute error is never negative
    assert _mae(diff) == {"value": 1.0, "ci95": [0.0, hi], "n": 4, "method": "t"}
    assert _mae(np.array([2.0])) == {"value": 2.0, "ci95": [None, None], "n": 1}
    assert _mae(np.array([])) == {"value": None, "ci95": [None, None], "n": 0}


def test_compare_changes_name_their_interval():
    paired = C.paired_change({"a": 0.0, "b": 1.0, "c": 0.5}, {"a": 1.0, "b": 1.0, "c": 1.0})
    assert paired["estimate"].method == "bootstrap-percentile"
    assert paired["ci95"] == [paired["estimate"].ci95[0], paired["estimate"].ci95[1]]
    assert C.paired_change({"a": 0.0}, {"a": 1.0})["estimate"].method is None
    un = C.unpaired_change((0.1, 0.0, 0.2), (0.3, 0.2, 0.4))
    se = math.hypot(0.2 / (2 * C.Z95), 0.2 / (2 * C.Z95))
    assert un["estimate"].method == "wald" and un["se"] == se
    assert un["ci95"] == [0.3 - 0.1 - C.Z95 * se, 0.3 - 0.1 + C.Z95 * se]
    assert C.unpaired_change((0.1, None, None), (0.3, 0.2, 0.4))["ci95"] == [None, None]
    assert C.unpaired_change((None, None, None), (0.3, 0.2, 0.4))["value"] is None


def test_compare_sides_keep_a_method_when_the_file_has_one():
    old = {"effect": {"value": 0.1, "ci95": [0.0, 0.2]}, "n": 9}
    new = {"effect": {"value": 0.1, "ci95": [0.0, 0.2], "method": "bootstrap-percentile"},
           "n": 9}
    assert C._side(old)["effect"] == {"value": 0.1, "ci95": [0.0, 0.2]}
    assert C._side(new)["effect"] == new["effect"]


async def test_self_preference_names_its_intervals(monkeypatch):
    """The sim cannot write answers, so the judge's own answers are stubbed."""
    from judgeaudit.audit.battery import run_battery
    from judgeaudit.data import load
    from judgeaudit.judges import make_judge
    from judgeaudit.llm import Response

    items = [it for it in load("builtin:facts?seed=1") if it.label in (1, 2)][:12]
    judge = make_judge("sim?seed=1")
    monkeypatch.setattr(judge.client.provider, "cannot_serve", lambda meta: None)
    real = judge.client.map

    async def answers(reqs, *a, **k):
        if reqs and reqs[0].meta.get("task") == "generate":
            return [Response(text=f"My own answer number {i}.") for i in range(len(reqs))]
        return await real(reqs, *a, **k)

    monkeypatch.setattr(judge.client, "map", answers)
    res = await run_battery(judge, items, ["self_preference"], seed=1,
                            panel=[make_judge("sim?seed=2")])
    p = res["probes"]["self_preference"]
    assert p["n"] == 12 and p["effect"]["method"] == "score-bounded"
    assert p["span"] == 1.0  # a win rate minus a win rate
    assert p["rates"]["error_rate_se"]["method"] == "bootstrap-percentile"
    assert p["rates"]["own_win_rate_by_judge"]["method"] == "wilson"
    # 12 items: under 5 disagreements the kappa interval is the exact agreement one
    assert res["panel"]["cohen_kappa"]["method"] in ("bootstrap-percentile",
                                                    "clopper-pearson-agreement")
