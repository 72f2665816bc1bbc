"""The length control (`audit --length-control`, `audit.length_control`) on simulated judges
with planted biases (known truth). A judge that only prefers longer answers moves toward any
probe that adds words, so on its own the authority probe calls it authority-biased; the
control pads the same response with as many neutral words instead, and the cue's effect
beyond its length comes out near 0 for that judge and clearly positive for a judge with an
authority bias planted."""

from __future__ import annotations

import random

import pytest
from typer.testing import CliRunner

from judgeaudit.audit.battery import run_battery
from judgeaudit.audit.length_control import control_items, words_added
from judgeaudit.cli.main import app
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.llm.features import word_count
from judgeaudit.perturb import perturb_items
from judgeaudit.perturb.verbosity import neutral_padding

PROBES = ["verbosity", "authority", "injection"]


def beyond(res, probe):
    return res["probes"][probe]["rates"]["length_control"]["beyond_length"]


def length_notes(res, probe):
    return [n for n in res["probes"][probe]["notes"] if n.startswith("length:")]


@pytest.mark.parametrize("n", [1, 2, 7, 15, 40, 120])
def test_neutral_padding_has_exactly_the_words_asked_and_no_number(n):
    text = neutral_padding(n, random.Random(n))
    assert word_count(text) == n and not any(c.isdigit() for c in text)
    assert text.endswith(".") and neutral_padding(0, random.Random(n)) == ""


def test_each_control_item_adds_as_many_words_as_its_perturbation():
    items = load("builtin:facts?seed=2")[:30]
    kept = [r for r in perturb_items(items, "authority", target="worse", seed=2) if r.preserved]
    added = [words_added(r) for r in kept]
    assert all(a is not None and a > 0 for a in added)
    for r, a, c in zip(kept, added, control_items(kept, added, 2, "authority"), strict=True):
        side = r.changed
        assert word_count(getattr(c, side)) == word_count(getattr(r.item, side))
        other = "response_2" if side == "response_1" else "response_1"
        assert getattr(c, other) == getattr(r.original, other) and c.id != r.original.id
        assert word_count(getattr(c, side)) - word_count(getattr(r.original, side)) == a


async def test_a_length_only_judge_is_biased_on_authority_but_not_beyond_its_length():
    items = load("builtin:facts?seed=3")
    res = await run_battery(make_judge("sim?length=1&seed=3"), items, PROBES, seed=3,
                            limit=150, length_control=True)
    assert res["length_control"] is True
    assert res["probes"]["verbosity"]["verdict"] == "biased"
    assert "length_control" not in res["probes"]["verbosity"]["rates"]  # length is its cue
    for probe in ("authority", "injection"):
        p = res["probes"][probe]
        assert p["verdict"] == "biased", (probe, p["effect"])  # the naive shift: length
        lo, hi = beyond(res, probe)["ci95"]
        assert lo < 0 < hi, (probe, beyond(res, probe))
        alone = p["rates"]["length_control"]["shift"]
        assert alone["ci95"][0] > 0, (probe, alone)  # its words alone move the judge
        assert any("holds 0" in n for n in length_notes(res, probe))


async def test_a_planted_authority_bias_shows_beyond_its_length():
    items = load("builtin:facts?seed=3")
    res = await run_battery(make_judge("sim?length=1&authority=1&seed=3"), items, PROBES,
                            seed=3, limit=150, length_control=True)
    assert res["probes"]["authority"]["verdict"] == "biased"
    assert beyond(res, "authority")["ci95"][0] > 0, beyond(res, "authority")
    assert not length_notes(res, "authority")


async def test_without_the_control_the_audit_says_which_shifts_may_be_length():
    """No extra call: the words each probe added are known, and the note is made only when
    verbosity came out biased."""
    items = load("builtin:facts?seed=3")
    res = await run_battery(make_judge("sim?length=1&seed=3"), items, PROBES, seed=3,
                            limit=150)
    assert "length_control" not in res
    assert res["probes"]["authority"]["rates"]["words_added"]["mean"] > 5
    assert "--length-control" in " ".join(length_notes(res, "authority"))
    res = await run_battery(make_judge("sim?authority=2&seed=3"), items, PROBES, seed=3,
                            limit=150)
    assert res["probes"]["verbosity"]["verdict"] != "biased"
    assert res["probes"]["authority"]["verdict"] == "biased"
    assert not length_notes(res, "authority")


def test_the_cli_runs_the_control_and_says_what_it_found(tmp_path, isolated_cache):
    args = ["audit", "--judge", "sim?length=1&seed=3", "--data", "builtin:facts?seed=3",
            "--probes", ",".join(PROBES), "--n", "150"]
    plain = CliRunner().invoke(app, [*args, "--out", str(tmp_path / "a")])
    controlled = CliRunner().invoke(app, [*args, "--length-control", "--out",
                                          str(tmp_path / "b")])
    assert plain.exit_code == 0 and controlled.exit_code == 0, controlled.output
    text = " ".join(plain.output.split())
    assert "length: authority (+" in text and "--length-control measures" in text
    text = " ".join(controlled.output.split())
    assert "length control (each cue's shift beyond its length" in text
    assert "authority: " in text and "its effect beyond its length is not established" in text
    # --json's summary carries each cue's effect beyond its length too
    from judgeaudit.result import Result

    summary = Result.load(tmp_path / "b" / "results.json").summary()
    assert set(summary["beyond_length"]) == {"authority", "injection"}
    assert summary["beyond_length"]["authority"]["n"] == 150


def test_adaptive_settings_without_adaptive_are_refused(tmp_path):
    for opt, value in (("--max-n", "10"), ("--round-size", "5"), ("--max-calls", "9")):
        res = CliRunner().invoke(app, ["audit", "--judge", "sim", opt, value, "--out",
                                       str(tmp_path / "x")])
        assert res.exit_code == 2, res.output
        assert f"{opt} applies to --adaptive" in " ".join(res.output.split())


def test_the_control_with_no_probe_that_adds_words_says_so(tmp_path, isolated_cache):
    res = CliRunner().invoke(app, ["audit", "--judge", "sim", "--probes", "position,verbosity",
                                   "--n", "10", "--length-control", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "nothing to control" in " ".join(res.output.split())


async def test_refinement_aware_is_controlled_too():
    """The pointwise refinement probe adds a 'refined version' line before the answer: a
    judge that only scores length up scored it +0.87 'biased', with no word on length."""
    items = load("builtin:facts?seed=3")
    probes = ["verbosity", "refinement_aware"]
    plain = await run_battery(make_judge("sim?length=1&seed=3"), items, probes, seed=3,
                              limit=100)
    ra = plain["probes"]["refinement_aware"]
    assert ra["verdict"] == "biased" and ra["rates"]["words_added"]["mean"] > 5
    assert any("--length-control" in n for n in length_notes(plain, "refinement_aware"))
    res = await run_battery(make_judge("sim?length=1&seed=3"), items, probes, seed=3,
                            limit=100, length_control=True)
    lo, hi = beyond(res, "refinement_aware")["ci95"]
    assert lo < 0 < hi
    assert res["probes"]["refinement_aware"]["rates"]["length_control"]["shift"]["ci95"][0] > 0
    assert any("holds 0" in n for n in length_notes(res, "refinement_aware"))


def test_a_cue_beyond_its_length_must_survive_bh_across_the_controls():
    """With ten controls one interval in about twenty excludes 0 by chance; a cue counts as
    shown beyond its length only when its p also survives Benjamini-Hochberg across them."""
    from judgeaudit.audit.length_control import beyond_shown

    def probe(p, lo, hi):
        return {"rates": {"length_control": {"beyond_length": {"value": (lo + hi) / 2,
                                                               "ci95": [lo, hi], "n": 100,
                                                               "p": p}}}}

    lone = {"a": probe(0.03, 0.01, 0.2), **{f"x{i}": probe(0.9, -0.1, 0.1) for i in range(9)}}
    assert beyond_shown(lone, 0.05) == set()  # q = 0.3: not shown, though its CI excludes 0
    many = {f"a{i}": probe(0.03, 0.01, 0.2) for i in range(10)}
    assert beyond_shown(many, 0.05) == set(many)  # q = 0.03 each
    assert beyond_shown({"a": probe(0.001, 0.05, 0.3)}, 0.05) == {"a"}
    assert beyond_shown({"a": probe(0.001, -0.01, 0.3)}, 0.05) == set()  # its CI holds 0
