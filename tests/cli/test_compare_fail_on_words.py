"""compare's --fail-on with a misspelt probe or an audit outcome: `--fail-on positon` said
"not in both audits ... audit A did not run them" with no "did you mean position", and
`--fail-on biased` got the same message. Now a misspelt name is an unknown probe with the
closest name, an audit outcome is named as such, and both say what compare's --fail-on
takes (exit 2)."""

from __future__ import annotations

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.report import write_results

runner = CliRunner()


def _audit() -> dict:
    probe = {"title": "Position", "metric": "m", "direction": "d",
             "no_bias_range": [-0.05, 0.05], "effect": {"value": 0.0, "ci95": [-0.02, 0.02]},
             "n": 200, "p": 0.5, "q": 0.5, "verdict": "not_biased", "notes": []}
    return {"command": "audit", "version": "0.1.0", "judge": "sim", "data": "builtin:facts",
            "n_items": 200, "template": {"name": "pairwise_v1", "sha256": "cd" * 32},
            "run": {"status": "ok", "message": "", "n_valid": 200, "n_planned": 200,
                    "calls_failed": 0, "calls_asked": 0},
            "alpha": 0.05, "summary": {"biased": []}, "probes": {"position": probe}}


def _compare(tmp_path, gate: str):
    a, b = tmp_path / "a", tmp_path / "b"
    write_results(a / "results.json", _audit())
    write_results(b / "results.json", _audit())
    return runner.invoke(app, ["compare", str(a), str(b), "--out", str(tmp_path / "c"),
                               "--fail-on", gate])


def test_a_misspelt_probe_gets_did_you_mean(tmp_path):
    r = _compare(tmp_path, "positon")
    text = " ".join(r.output.split())
    assert r.exit_code == 2, r.output
    assert "unknown probe(s): positon; did you mean position?" in text
    assert "did not run them" not in text
    assert "--fail-on takes worse" in text


def test_an_audit_outcome_says_what_compare_takes(tmp_path):
    r = _compare(tmp_path, "biased")
    text = " ".join(r.output.split())
    assert r.exit_code == 2, r.output
    assert "biased is an outcome of audit's --fail-on; compare's takes worse" in text
    assert "not in both audits" not in text
