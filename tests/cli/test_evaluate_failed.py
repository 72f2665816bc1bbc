"""A failed evaluate shows no numbers on the terminal: a judge whose every answer was
unreadable printed "accuracy (invalid = wrong) 0.0%" and "position consistency (both
unreadable = same) 100.0% [51.0, 100.0]" above "error: run failed", though --json, audit and
the report withhold a failed run's numbers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize("args, unit", [
    (["--judge", "sim?invalid=0.99", "--data", "builtin:facts", "--limit", "6"], "pairs"),
    (["--judge", "sim", "--data", "builtin:facts", "--limit", "6", "--min-valid", "100"],
     "pairs"),
    (["--judge", "sim?invalid=0.99", "--data", "builtin:graded", "--limit", "6"], "items"),
])
def test_a_failed_evaluate_prints_counts_not_metrics(args, unit, tmp_path, isolated_cache):
    out = tmp_path / "o"
    res = runner.invoke(app, ["evaluate", *args, "--out", str(out)])
    assert res.exit_code == 3, res.output
    text = res.output
    assert "run failed, no metrics shown" in text
    for metric in ("accuracy", "position consistency", "first-position rate", "kappa",
                   "Pearson", "Spearman", "exact agreement", "mean absolute error", "%"):
        assert metric not in text.split("error: run failed")[0], text
    assert f" {unit} with a valid " in text and "error: run failed:" in text
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["status"] == "failed"  # the document keeps its numbers, as before
    assert "accuracy" in doc or "correlation" in doc


def test_an_ok_evaluate_still_prints_its_table(tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", "--judge", "sim", "--data", "builtin:facts",
                              "--limit", "6", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "accuracy (invalid = wrong)" in res.output and "no metrics shown" not in res.output
