"""`judgeaudit judges` lists the sim presets that `audit --help` uses (`sim:biased`)."""

from __future__ import annotations

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.providers.sim import PRESETS


def test_judges_lists_the_sim_presets_under_sim():
    r = CliRunner().invoke(app, ["judges"], env={"COLUMNS": "300"})
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    at = lines.index("sim presets (sim:PRESET; parameters given override the preset's):")
    listed = {ln.split(":")[0].strip(): ln.split(":", 1)[1].strip()
              for ln in lines[at + 1:at + 1 + len(PRESETS)]}
    assert set(listed) == set(PRESETS) >= {"default", "unbiased", "positional", "verbose",
                                            "gullible", "biased"}
    assert listed["default"] == "no bias" and listed["positional"] == "position=1"
    assert "injection=1.5" in listed["biased"]
    # under sim, before the next provider's block
    assert lines[at - 1].startswith("  ") and "sim parameters:" in lines[:at]
    assert "sim:biased" in CliRunner().invoke(app, ["audit", "--help"]).output
