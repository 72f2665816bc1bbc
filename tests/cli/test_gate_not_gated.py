"""A probe --full brings whose requirement the run lacks fails no gate (reviewer finding on
80f1e0f): under `audit --full` without --panel, self_preference is always not_run (it needs
other judges), and `--fail-on biased,undecided` failed on it every time, a probe the user
never chose. Now it is named (gate.not_run and gate.not_gated in results.json and --json,
and the gate line says why it is not gated) and fails no gate. A probe the user names still
counts: in --fail-on it leaves the gate unchecked (exit 3); a probe not run for want of
usable items stays undecided (tests/cli/test_gate_not_run.py). Through the real CLI with a
noiseless simulated judge, so every other probe is decided."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

JUDGE = "sim?seed=0&noise=0"


def _audit(tmp_path, gate: str, name: str):
    out = tmp_path / name
    r = CliRunner().invoke(app, ["audit", "--judge", JUDGE, "--data", "builtin:facts",
                                 "--full", "--fail-on", gate, "--json", "--out", str(out),
                                 "--no-cache"])
    summary = json.loads(r.stdout.splitlines()[0])
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return r, summary, doc


def test_full_without_a_panel_passes_biased_undecided(tmp_path):
    r, summary, doc = _audit(tmp_path, "biased,undecided", "a")
    assert r.exit_code == 0, r.output
    assert summary["exit_code"] == 0
    assert doc["probes"]["self_preference"]["verdict"] == "not_run"
    for gate in (summary["gate"], doc["gate"]):
        assert gate["outcome"] == "passed" and gate["by"] == []
        assert gate["not_run"] == ["self_preference"]
        assert gate["not_gated"] == ["self_preference"]
        assert "self_preference" not in gate.get("undecided", [])
    said = " ".join(r.stderr.split())
    assert ("not run: 1 probe (self_preference) that --full added, which needs --panel "
            "(other judges) and this run has none: not gated") in said
    assert "fails on them" not in said  # nothing left for ,undecided to fail on
    report = " ".join((tmp_path / "a" / "report.html").read_text(encoding="utf-8").split())
    assert ("Not run and not gated (added by <code>--full</code>, needing what this run "
            "lacks, such as <code>--panel</code>): <code>self_preference</code>.") in report


def test_a_probe_named_in_fail_on_still_counts(tmp_path):
    r, summary, doc = _audit(tmp_path, "self_preference", "b")
    assert r.exit_code == 3, r.output
    assert doc["gate"]["outcome"] == "unchecked" and doc["gate"]["by"] == ["self_preference"]
    assert "not_gated" not in doc["gate"]
