"""The compare report shows the --fail-on gate: its outcome, the probes that tripped it and
those it could not decide (underpowered). A gate that passed with undecided probes was said
nowhere on the page."""

from __future__ import annotations

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.report import write_results

runner = CliRunner()


def _audit(value: float, lo: float, hi: float) -> dict:
    probe = {"title": "Position", "metric": "m", "direction": "d",
             "no_bias_range": [-0.05, 0.05], "effect": {"value": value, "ci95": [lo, hi]},
             "n": 20, "p": 0.5, "q": 0.5, "verdict": "underpowered", "notes": []}
    return {"command": "audit", "version": "0.1.0", "judge": "sim", "data": "builtin:facts",
            "n_items": 20, "template": {"name": "pairwise_v1", "sha256": "cd" * 32},
            "run": {"status": "ok", "message": "", "n_valid": 20, "n_planned": 20,
                    "calls_failed": 0, "calls_asked": 0},
            "alpha": 0.05, "summary": {"biased": []}, "probes": {"position": probe}}


def _page(tmp_path, gate: str) -> str:
    a, b, out = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    write_results(a / "results.json", _audit(0.0, -0.2, 0.2))
    write_results(b / "results.json", _audit(0.2, -0.1, 0.5))
    runner.invoke(app, ["compare", str(a), str(b), "--out", str(out), "--fail-on", gate])
    return " ".join((out / "report.html").read_text(encoding="utf-8").split())


def test_the_compare_page_says_a_passing_gate_left_probes_undecided(tmp_path):
    page = _page(tmp_path, "worse")
    assert 'id="gate"' in page
    assert "passed, undecided: 1 probe" in page
    assert "<code>--fail-on worse,underpowered</code> fails on them" in page


def test_the_compare_page_says_which_probes_tripped_the_gate(tmp_path):
    page = _page(tmp_path, "worse,underpowered")
    assert "tripped</strong> (by <code>position</code>)" in page
