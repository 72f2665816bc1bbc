"""`judgeaudit report --json` prints the summary as the command that wrote the results did,
with the same `exit_code`: a compare whose gate tripped read `gate.outcome: "tripped"` beside
`exit_code: null`, and a failed audit `ok: false` beside no exit code. The report command
itself exits 0: it rebuilt the report (the gate's own step already failed with that code)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.report import write_results

runner = CliRunner()


def _audit(value: float, lo: float, hi: float, status: str = "ok") -> dict:
    probe = {"title": "Position", "metric": "m", "direction": "d",
             "no_bias_range": [-0.05, 0.05], "effect": {"value": value, "ci95": [lo, hi]},
             "n": 200, "p": 0.01, "q": 0.01, "verdict": "biased", "notes": []}
    return {"command": "audit", "version": "0.1.0", "judge": "sim", "data": "builtin:facts",
            "n_items": 200, "template": {"name": "pairwise_v1", "sha256": "cd" * 32},
            "run": {"status": status, "message": "the judge's server refused every call"
                    if status == "failed" else "", "n_valid": 200, "n_planned": 200,
                    "calls_failed": 0, "calls_asked": 0},
            "alpha": 0.05, "summary": {"biased": []}, "probes": {"position": probe}}


def _last_json(text: str) -> dict:
    return json.loads(text.strip().splitlines()[-1])


def test_report_json_of_a_tripped_compare_gives_its_exit_code(tmp_path):
    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "cmp"
    write_results(a / "results.json", _audit(0.0, -0.02, 0.02))
    write_results(b / "results.json", _audit(0.06, 0.04, 0.08))
    r = runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--fail-on", "worse",
                            "--json"])
    assert r.exit_code == 1, r.output
    said = _last_json(r.stdout)
    r = runner.invoke(app, ["report", str(out), "--json"])
    assert r.exit_code == 0, r.output
    again = _last_json(r.stdout)
    assert again["gate"]["outcome"] == "tripped"
    assert again["exit_code"] == said["exit_code"] == 1


def test_report_json_of_a_failed_audit_gives_exit_code_3_and_of_a_clean_one_none(tmp_path):
    write_results(tmp_path / "f" / "results.json", _audit(0.0, -0.02, 0.02, status="failed"))
    r = runner.invoke(app, ["report", str(tmp_path / "f"), "--json"])
    assert r.exit_code == 0, r.output
    doc = _last_json(r.stdout)
    assert doc["ok"] is False and doc["exit_code"] == 3
    write_results(tmp_path / "ok" / "results.json", _audit(0.0, -0.02, 0.02))
    r = runner.invoke(app, ["report", str(tmp_path / "ok"), "--json"])
    assert _last_json(r.stdout)["exit_code"] == 0  # as the audit's --json: 0 always said
