"""Every command records its --seed (and every other setting that changes its numbers) in
results.json's `settings`, and --seed's help says what it seeds. quantify's --seed 1 moved
susceptibility 0.500 -> 0.475 and the test items, yet results.json held no seed; evaluate
kept its seed only under --sample, though --seed moves kappa's interval without it. The help
said --seed seeds "simulated judges": a sim judge's draws take its spec's seed= (judges_used
keeps seed 0 under --seed 1, and evaluate gives the same verdicts)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.config import CONFIGS, SEED_HELP

runner = CliRunner()
PANDALM = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "pandalm_testset"


def _doc(out: Path) -> dict:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def test_evaluate_records_its_seed_without_sample(tmp_path):
    args = ["evaluate", "--judge", "sim?position=0.8", "--data", "builtin:facts", "--limit",
            "20", "--no-cache"]
    for seed in (0, 4):
        res = runner.invoke(app, [*args, "--seed", str(seed), "--out", str(tmp_path / f"s{seed}")])
        assert res.exit_code == 0, res.output
    a, b = _doc(tmp_path / "s0"), _doc(tmp_path / "s4")
    assert (a["settings"]["seed"], b["settings"]["seed"]) == (0, 4)
    assert a["settings"]["limit"] == 20 and a["settings"]["sample"] is None
    # what the help says: --seed is not the sim judge's seed (its verdicts stay as they were)
    assert a["judges_used"] == b["judges_used"]
    assert next(iter(b["judges_used"].values()))["params"]["seed"] == 0


@pytest.mark.skipif(not PANDALM.is_dir(), reason="needs ../shared/data/pandalm_testset")
def test_quantify_records_its_seed(tmp_path):
    res = runner.invoke(app, ["quantify", "--judges", "simhubj?factor_verbosity=0,0.5,3,1,0",
                              "--data", f"pandalm:{PANDALM}", "--limit", "24", "--seed", "1",
                              "--no-cache", "--out", str(tmp_path / "q")])
    assert res.exit_code == 0, res.output
    got = _doc(tmp_path / "q")["settings"]
    assert got["seed"] == 1 and got["limit"] == 24 and got["factors"] == "verbosity,authority"


def test_a_sim_judges_seed_is_its_specs(tmp_path):
    """The help points at sim?seed=: that is what moves a simulated judge's draws."""
    res = runner.invoke(app, ["evaluate", "--judge", "sim?position=0.8&seed=1", "--data",
                              "builtin:facts", "--limit", "5", "--no-cache", "--out",
                              str(tmp_path / "e")])
    assert res.exit_code == 0, res.output
    assert next(iter(_doc(tmp_path / "e")["judges_used"].values()))["params"]["seed"] == 1


@pytest.mark.parametrize("command", [c for c, m in CONFIGS.items() if "seed" in m.model_fields
                                     and m.model_fields["seed"].description == SEED_HELP])
def test_seed_help_says_what_it_seeds(command):
    res = runner.invoke(app, [command, "--help"], terminal_width=200)
    assert res.exit_code == 0
    text = " ".join(res.output.replace("│", " ").split())
    assert "simulated judges" not in text
    assert "Not a simulated judge's draws: they take its spec's seed= (e.g. sim?seed=1)" in text
