"""audit's --panel compares the judge with other judges: the judge itself in the panel, or
one panel judge twice (in any spelling its provider reads the same: `sim?seed=0` is `sim`),
agreed 100% with itself and counted in the panel's kappa ("panel agreement 100.0%" of
`--judge sim --panel sim,sim?seed=0`). Refused before any call, naming both specs, as the
HUB-J commands refuse a judge given twice (`_distinct_judges`)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app

runner = CliRunner()


def _audit(tmp_path, judge: str, panel: str):
    return runner.invoke(app, ["audit", "--judge", judge, "--panel", panel, "--probes",
                               "position", "--data", "builtin:facts", "--n", "12",
                               "--out", str(tmp_path / "o")])


@pytest.mark.parametrize(("judge", "panel", "said"), [
    ("sim", "sim?seed=2,sim", "--panel: sim is the judge itself (--judge sim); a panel "
                              "compares the judge with other judges"),
    ("sim", "sim?seed=0", "--panel: sim?seed=0 is the same judge as --judge sim"),
    # one order's answers are the judge's own (the panel "agreed" on every pair it shared)
    ("sim?position=0.5", "sim?position=0.5&orders=one,sim?seed=5",
     "--panel: sim?position=0.5&orders=one is the same judge as --judge sim?position=0.5"),
    ("sim?seed=1", "sim?seed=2,sim?seed=2.0",
     "--panel: sim?seed=2 and sim?seed=2.0 are the same judge (given twice); give each judge "
     "once"),
])
def test_the_judge_or_a_panel_judge_again_is_refused(judge, panel, said, tmp_path,
                                                     isolated_cache):
    res = _audit(tmp_path, judge, panel)
    assert res.exit_code == 2, res.output
    assert said in " ".join(res.output.split()), res.output
    assert not (tmp_path / "o" / "results.json").exists()


def test_other_judges_make_the_panel(tmp_path, isolated_cache):
    res = _audit(tmp_path, "sim", "sim?seed=2,sim:positional")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["panel"]["judges"] == ["sim", "sim?seed=2", "sim:positional"]


def test_the_api_names_its_fields(tmp_path, isolated_cache):
    with pytest.raises(ValueError, match=r"^panel: sim\?seed=0 is the same judge as judge sim;"):
        judgeaudit.audit("sim", "builtin:facts", panel=["sim?seed=0"], probes="position", n=12)
