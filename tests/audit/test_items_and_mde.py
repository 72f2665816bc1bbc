"""Real data in: probes that need no label run on unlabelled and tie-labelled pairs, every item
left out is counted by reason, the MDE follows each judge's realised spread, the --by
breakdown regroups each probe's own differences, and the inverted-labels warning applies to
the audit's unperturbed verdicts. Simulated judges with planted truth throughout."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.audit.battery import check_runnable, plan_items, run_battery
from judgeaudit.audit.metrics import INVALID_REASONS
from judgeaudit.audit.paired import paired_stats
from judgeaudit.audit.probe import get_probe
from judgeaudit.data import load
from judgeaudit.judges import make_judge


def mixed(n: int = 60, seed: int = 1) -> list:
    """builtin:facts with every 5th pair unlabelled and every 7th (of the rest) tie-labelled,
    and a `category` metadata key."""
    out = []
    for i, it in enumerate(load(f"builtin:facts?seed={seed}")[:n]):
        upd: dict = {"metadata": {**it.metadata, "category": ["geo", "sci", "misc"][i % 3]}}
        if i % 5 == 0:
            upd.update(label=None, quality=None)
        elif i % 7 == 0:
            upd.update(label=0, quality=None)
        out.append(it.model_copy(update=upd))
    return out


def counts(items) -> tuple[int, int, int]:
    return (sum(it.label is None for it in items), sum(it.label == 0 for it in items),
            sum(it.label in (1, 2) for it in items))


def test_needs_label_is_declared_per_probe():
    assert get_probe("position").needs_label is False
    for name in ("verbosity", "authority", "bandwagon", "beauty", "injection", "cot",
                 "format_sensitivity", "sycophancy_pass", "refinement_aware",
                 "self_preference"):
        assert get_probe(name).needs_label is True, name


async def test_position_uses_every_pair_and_shift_probes_the_labelled_ones():
    items = mixed()
    no_label, tie, lab = counts(items)
    assert no_label and tie and lab
    res = await run_battery(make_judge("sim?quality=1.5&position=1.5&seed=2"), items,
                            ["position", "verbosity"], seed=2)
    pos, verb = res["probes"]["position"], res["probes"]["verbosity"]
    assert pos["n_items"] == len(items) and pos["dropped"] == {}
    assert pos["n"] == len(items)  # the sim never says tie in one order nor fails
    assert verb["n_items"] == lab
    assert verb["dropped"]["no_label"] == no_label and verb["dropped"]["tie_label"] == tie
    assert verb["n"] + sum(verb["dropped"].get(r, 0) for r in INVALID_REASONS) \
        + verb["dropped"].get("perturbation_not_applicable", 0) == lab
    assert any("left out" in n for n in verb["notes"])
    # overall: distinct items, by reason; and 60 in, 60 judged (was: 60 in, 'lab items')
    assert res["dropped"]["no_label"] == no_label and res["dropped"]["tie_label"] == tie
    assert res["n_items"] == len(items) and res["items"]["given"] == len(items)
    assert set(res["drop_reasons"]) >= {"no_label", "tie_label"}
    assert pos["verdict"] == "biased" and pos["effect"]["value"] > 0


async def test_a_probe_without_usable_items_reports_why_and_the_others_run():
    items = [it.model_copy(update={"label": None, "quality": None})
             for it in load("builtin:facts?seed=3")[:40]]
    res = await run_battery(make_judge("sim?quality=1.5&position=1.5&seed=3"), items,
                            ["position", "authority"], seed=3)
    auth = res["probes"]["authority"]
    # "not_run", not "underpowered" (which says the data could not tell)
    assert auth["n"] == 0 and auth["verdict"] == "not_run" and auth["mde"] is None
    assert res["summary"]["not_run"] == ["authority"]
    assert auth["dropped"] == {"no_label": 40}
    assert auth["notes"][0].startswith("not run:") and "label 1 or 2" in auth["notes"][0]
    assert res["probes"]["position"]["n"] == 40
    assert res["probes"]["position"]["verdict"] == "biased"  # planted, found without labels
    assert res["warnings"] == [] and res["baseline"]["n_labelled"] == 0
    with pytest.raises(ValueError, match="no selected probe can run"):
        await run_battery(make_judge("sim"), items, ["authority", "verbosity"])
    with pytest.raises(ValueError, match="no selected probe can run"):
        check_runnable(items, ["authority"])


async def test_position_without_labels_stays_quiet_without_a_planted_bias():
    flagged = 0
    for seed in range(8):
        items = [it.model_copy(update={"label": None, "quality": None})
                 for it in load(f"builtin:facts?seed={seed}")[:60]]
        res = await run_battery(make_judge(f"sim?quality=1.5&seed={seed}"), items,
                                ["position"], seed=seed)
        flagged += res["probes"]["position"]["verdict"] == "biased"
    assert flagged <= 1


def test_limit_takes_each_probes_first_usable_items_and_counts_skips_up_to_there():
    items = mixed()
    probes = [get_probe("position"), get_probe("verbosity")]
    plans = plan_items(items, probes, limit=10)
    assert [it.id for it in plans["position"].items] == [it.id for it in items[:10]]
    verb = plans["verbosity"]
    assert len(verb.items) == 10 and all(it.label in (1, 2) for it in verb.items)
    last = next(i for i, it in enumerate(items) if it.id == verb.items[-1].id)
    assert len(verb.skipped.get("no_label", [])) == counts(items[: last + 1])[0]
    assert len(verb.skipped.get("tie_label", [])) == counts(items[: last + 1])[1]


async def test_invalid_verdicts_are_counted_by_reason():
    items = load("builtin:facts?seed=4")[:60]
    res = await run_battery(make_judge("sim?quality=1.5&invalid=0.15&seed=4"), items,
                            ["position", "authority"], seed=4)
    for name in ("position", "authority"):
        p = res["probes"][name]
        # the sim's invalid answers are prose with no verdict: unparseable, no call failed
        bad = p["dropped"].get("unparseable", 0)
        assert bad > 0, name
        assert "not_sent" not in p["dropped"] and "call_failed" not in p["dropped"], name
        assert p["n"] + sum(p["dropped"].values()) == p["n_items"], (name, p["dropped"])
    assert res["dropped"]["unparseable"] >= res["probes"]["position"]["dropped"][
        "unparseable"]


def test_mde_follows_the_realised_standard_error_not_n_alone():
    """Same n = 100: a steady judge (interval about +-0.02) gets a much smaller MDE than a
    noisy one (about +-0.15); the noisy one's is close to 2.8 x its standard error."""
    rng = np.random.default_rng(0)
    steady = np.zeros(100)
    steady[:4] = [0.5, -0.5, 0.5, 0.5]
    noisy = np.where(rng.random(100) < 0.6, rng.choice([-1.0, 1.0], 100), 0.0)
    a, b = paired_stats(steady, seed=1), paired_stats(noisy, seed=1)
    assert a["n"] == b["n"] == 100
    assert (a["ci95"][1] - a["ci95"][0]) / 2 < 0.03
    assert (b["ci95"][1] - b["ci95"][0]) / 2 > 0.12
    assert a["mde"] < b["mde"] / 3
    assert b["mde"] == pytest.approx(2.8 * b["se"], rel=0.15)
    assert b["mde_detail"]["method"] == "exact two-sided sign test"
    assert b["mde_detail"]["discordance"] == pytest.approx(np.mean(noisy != 0))
    # a judge that never moved still gets a finite MDE: a bias would have to move about 8%
    # of the items (here by the probe's unit step) to be detected with 80% power
    still = paired_stats(np.zeros(100), unit=0.5)["mde"]
    assert still == pytest.approx(a["mde"]) and 0.03 < still < 0.05


async def test_two_judges_same_n_get_mdes_from_their_own_noise():
    items = load("builtin:facts?seed=5")[:100]
    quiet = await run_battery(make_judge("sim?quality=1.5&noise=0.3&seed=5"), items,
                              ["position"], seed=5)
    loud = await run_battery(make_judge("sim?quality=1.5&noise=3&seed=5"), items,
                             ["position"], seed=5)
    q, lo = quiet["probes"]["position"], loud["probes"]["position"]
    assert q["n"] == lo["n"] == 100
    assert q["mde"] < lo["mde"] / 2, (q["mde"], lo["mde"])
    width = [p["effect"]["ci95"][1] - p["effect"]["ci95"][0] for p in (q, lo)]
    assert width[0] < width[1] / 2
    assert quiet["mde"]["power"] == 0.8 and quiet["mde"]["alpha"] == 0.05


async def test_mde_uses_the_reports_alpha():
    items = load("builtin:facts?seed=6")[:80]
    a = await run_battery(make_judge("sim?quality=1.5&seed=6"), items, ["position"], seed=6)
    b = await run_battery(make_judge("sim?quality=1.5&seed=6"), items, ["position"], seed=6,
                          alpha=0.01)
    assert b["probes"]["position"]["mde"] > a["probes"]["position"]["mde"]
    assert b["probes"]["position"]["mde_detail"]["alpha"] == 0.01


async def test_by_breaks_each_probe_down_with_n_and_interval():
    items = mixed(90)
    res = await run_battery(make_judge("sim?quality=1.5&position=1.5&seed=7"), items,
                            ["position", "authority"], seed=7, by="category")
    assert res["by"] == "category"
    for name in ("position", "authority"):
        p = res["probes"][name]
        rows = p["breakdown"]["rows"]
        assert [r["value"] for r in rows] == ["geo", "misc", "sci"]
        assert sum(r["n"] for r in rows) == p["n"]
        assert sum(r["n_items"] for r in rows) == p["n_items"]
        for r in rows:
            lo, hi = r["effect"]["ci95"]
            assert lo <= r["effect"]["value"] <= hi and 0 <= r["p"] <= 1
        # the categories' means, weighted by n, give the probe's effect
        assert sum(r["effect"]["value"] * r["n"] for r in rows) / p["n"] == pytest.approx(
            p["effect"]["value"])
    with pytest.raises(ValueError, match="metadata keys: .*category"):
        await run_battery(make_judge("sim"), items, ["position"], by="nope")


async def test_a_category_where_few_items_moved_gets_the_exact_interval():
    """A category with fewer than 5 items that moved: the exact interval of the probe's span,
    as the probe's own (before: the bootstrap's [0, 0] where none moved)."""
    from judgeaudit.stats import movers_ci

    items = mixed(30)
    res = await run_battery(make_judge("sim?seed=7"), items, ["position"], seed=7,
                            by="category")
    p = res["probes"]["position"]
    units = p["per_item"]
    cats = {it.id: it.metadata["category"] for it in items}
    for r in p["breakdown"]["rows"]:
        d = [v for k, v in units.items() if cats[k] == r["value"]]
        if sum(x != 0 for x in d) < 5:
            assert r["effect"]["method"] == "clopper-pearson-movers"
            assert r["effect"]["ci95"] == pytest.approx(list(movers_ci(d, 0.5)))
        else:
            assert r["effect"]["method"] == "bootstrap-percentile"
    assert any(r["effect"]["method"] == "clopper-pearson-movers"
               for r in p["breakdown"]["rows"])


async def test_inverted_labels_warning_on_the_baseline_verdicts():
    items = load("builtin:facts?seed=8")[:60]
    # the judge still sees the true quality; only the file's labels are swapped
    assert all(it.quality is not None for it in items)
    inverted = [it.model_copy(update={"label": {1: 2, 2: 1}[it.label]}) for it in items]
    judge = "sim?quality=3&seed=8"
    bad = await run_battery(make_judge(judge), inverted, ["position"], seed=8)
    assert bad["warnings"] and "labels may be inverted" in bad["warnings"][0]
    assert bad["baseline"]["accuracy"]["ci95"][1] < 0.5
    good = await run_battery(make_judge(judge), items, ["position"], seed=8)
    assert good["warnings"] == [] and good["baseline"]["accuracy"]["value"] > 0.8
