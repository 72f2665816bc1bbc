"""An adaptive audit's --json summary gives each probe's stop: why it stopped, its e-value,
its rounds and whether the budget stopped it undecided (`effects.*.adaptive`), and the run's
own stop (`adaptive`). It gave only {"value", "ci95", "n", "q": null} per probe; results.json
had them under probes.*.adaptive. A fixed-n audit's summary carries none of them."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
pytestmark = pytest.mark.usefixtures("isolated_cache")


def _summary(tmp_path, *extra: str) -> dict:
    r = runner.invoke(app, ["audit", "--judge", "sim?position=1&seed=0", "--probes",
                            "position,verbosity", "--out", str(tmp_path / "o"), "--json",
                            *extra])
    assert r.exit_code == 0, r.output
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_an_adaptive_summary_gives_each_probes_stop_reason_evalue_and_budget_stop(tmp_path):
    s = _summary(tmp_path, "--adaptive", "--max-calls", "500")
    res = json.loads((tmp_path / "o" / "results.json").read_text())
    for name in ("position", "verbosity"):
        ad, own = s["effects"][name]["adaptive"], res["probes"][name]["adaptive"]
        assert ad["stop_reason"] == own["stop_reason"] == "budget"
        assert ad["evalue"] == own["evalue"] and ad["rounds"] == own["rounds"] >= 1
        assert ad["budget_stop"] is True and ad["stop_reason_text"]
    assert s["adaptive"]["stopped_by"] == "max_calls" and s["adaptive"]["max_calls"] == 500


def test_an_adaptive_probe_that_decided_is_no_budget_stop_and_fixed_n_has_none(tmp_path):
    s = _summary(tmp_path, "--adaptive", "--data", "builtin:facts?seeds=0-2")
    pos = s["effects"]["position"]["adaptive"]
    assert pos["stop_reason"] in ("rejected", "cleared") and pos["budget_stop"] is False
    assert pos["evalue"] > 0
    fixed = _summary(tmp_path, "--n", "20")
    assert "adaptive" not in fixed and "adaptive" not in fixed["effects"]["position"]
