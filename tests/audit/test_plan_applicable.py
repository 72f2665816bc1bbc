"""A probe's first n items are n pairs its perturbation applies to (s44 gate finding 2): the
plan skips a pair the perturbation cannot apply to (a pure function of the text, asked before
any call) and counts it, instead of taking the first n and then leaving those out. 40
Chinese pairs then 3 English ones gave verbosity n = 0 (not run) at --n 40 while 3 usable
pairs past the 40th were never taken; with --full it measured them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judgeaudit.audit.battery import check_runnable, plan_items
from judgeaudit.audit.probe import get_probe
from judgeaudit.cli.main import app
from judgeaudit.data.schema import PairwiseItem

ZH = ("二加二等于几？", "二加二等于四，这是基本的算术。", "二加二等于五。")
EN = ("What is two plus two?", "Two plus two is four, a basic sum.", "Two plus two is five.")


def _pair(i: int, lang: tuple[str, str, str], tag: str) -> PairwiseItem:
    q, good, bad = lang
    label = 1 + i % 2
    r1, r2 = (good, bad) if label == 1 else (bad, good)
    return PairwiseItem(id=f"{tag}{i}", prompt=q, response_1=r1, response_2=r2, label=label)


def _items(n_zh: int = 40, n_en: int = 3) -> list[PairwiseItem]:
    return [_pair(i, ZH, "zh") for i in range(n_zh)] + [_pair(i, EN, "en")
                                                        for i in range(n_en)]


def test_the_plan_takes_the_first_n_pairs_the_perturbation_applies_to():
    items = _items()
    plans = plan_items(items, [get_probe("verbosity"), get_probe("bandwagon")], limit=40)
    assert [it.id for it in plans["verbosity"].items] == ["en0", "en1", "en2"]
    assert plans["verbosity"].skipped == {
        "perturbation_not_applicable": [f"zh{i}" for i in range(40)]}
    # bandwagon adds no English to a response: it takes the first 40 as before
    assert [it.id for it in plans["bandwagon"].items] == [f"zh{i}" for i in range(40)]
    assert plans["bandwagon"].skipped == {}


def test_the_limit_counts_usable_pairs_only():
    items = [_pair(0, ZH, "zh"), *[_pair(i, EN, "en") for i in range(5)]]
    plan = plan_items(items, [get_probe("authority")], limit=3)["authority"]
    assert [it.id for it in plan.items] == ["en0", "en1", "en2"]
    assert plan.skipped == {"perturbation_not_applicable": ["zh0"]}


def test_no_probe_that_can_apply_is_refused_before_any_call_saying_why():
    with pytest.raises(ValueError) as exc:
        check_runnable(_items(n_en=0), ["verbosity", "authority"], limit=40)
    msg = str(exc.value)
    assert msg.startswith("no selected probe can run on this data: verbosity: the "
                          "perturbation left out every item (40): the padding would be English")
    assert "authority: the perturbation left out every item (40): the citation" in msg


def test_audit_n40_measures_the_usable_pairs_past_the_40th(tmp_path):
    data = tmp_path / "zh_en.jsonl"
    data.write_text("".join(it.model_dump_json() + "\n" for it in _items()),
                    encoding="utf-8")
    out = tmp_path / "a"
    r = CliRunner().invoke(app, ["audit", "--judge", "sim?seed=0", "--data", f"jsonl:{data}",
                                 "--probes", "verbosity,bandwagon", "--n", "40",
                                 "--out", str(out), "--no-cache"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    v = doc["probes"]["verbosity"]
    assert (v["n"], v["n_items"], v["verdict"] != "not_run") == (3, 3, True), v["notes"]
    assert v["dropped"] == {"perturbation_not_applicable": 40}
    assert v["n_dropped"] == 40
    assert ("40 item(s) not perturbed, left out: the padding would be English in a text 100% "
            "of whose letters are not Latin script (40)") in v["notes"]
    assert doc["probes"]["bandwagon"]["n"] == 40
    assert "each probe takes the first 40 pairs it can use" in " ".join(r.output.split())
    # the same as --full measures: the first 40 it can use are all 3 it can use
    full = tmp_path / "b"
    r2 = CliRunner().invoke(app, ["audit", "--judge", "sim?seed=0", "--data", f"jsonl:{data}",
                                  "--probes", "verbosity", "--full", "--out", str(full),
                                  "--no-cache"])
    assert r2.exit_code == 0, r2.output
    vf = json.loads((full / "results.json").read_text(encoding="utf-8"))["probes"]["verbosity"]
    assert (vf["n"], vf["effect"], vf["per_item"]) == (v["n"], v["effect"], v["per_item"])


def test_the_plans_check_leaves_out_what_the_probes_run_leaves_out():
    """The plan's check (without the edit) and the run's perturbation agree item by item and
    give the same reason, at any seed: builtin:format (markdown already there) and pairs in
    other scripts, for every shift probe."""
    from judgeaudit.audit.probe import probe_names
    from judgeaudit.audit.shift_probe import ShiftProbe
    from judgeaudit.commands import load_data_noted
    from judgeaudit.perturb import perturb_items

    loaded, _, _ = load_data_noted("builtin:format")
    items = [it for it in loaded if isinstance(it, PairwiseItem)] + _items(4, 4)
    probes = [p for p in map(get_probe, probe_names()) if isinstance(p, ShiftProbe)]
    n_na = 0
    for p in probes:
        for seed in (0, 7):
            ran = perturb_items(items, p.perturbation, target=p.target, seed=seed,
                                **p.options)
            for it, r in zip(items, ran, strict=True):
                mine = p.inapplicable(it)
                assert (mine is not None) == r.not_applicable, (p.name, it.id, r.reason)
                assert mine is None or mine.reason == r.reason, (p.name, it.id)
                n_na += r.not_applicable
    assert n_na > 100  # the check was exercised (beauty on markdown, English on Chinese)
