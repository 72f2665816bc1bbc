"""`judgeaudit audit --adaptive`: options, results, report and the gate."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def test_adaptive_fail_on_biased_exits_1(tmp_path):
    out = tmp_path / "a"
    r = runner.invoke(app, ["audit", "--judge", "sim?position=4", "--probes", "position",
                            "--adaptive", "--max-n", "100", "--out", str(out),
                            "--fail-on", "biased", "--no-cache"])
    assert r.exit_code == 1, r.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["probes"]["position"]["verdict"] == "biased"
    assert doc["adaptive"]["rounds"] >= 1
    html = (out / "report.html").read_text()
    assert "Adaptive audit" in html and "<svg" in html
    # its header states the rule the adaptive verdicts follow (e-BH), not the q-value one
    assert "biased when e-BH across the probes rejects" in html
    assert "biased when q &lt;" not in html
    # so do the summary's legend and the verdict key (they described the bootstrap and q)
    assert "a bootstrap over items" not in html and "Benjamini&ndash;Hochberg q-value" not in html
    assert "anytime-valid confidence sequence at the probe's stop" in html
    assert "include the baseline verdicts every probe shares" in html
    # the table shows each probe's item count (not the dict's .items method's repr)
    items = doc["probes"]["position"]["adaptive"]["items"]
    assert "built-in method" not in html and f"<td>{int(items)}</td>" in html


def test_adaptive_unbiased_passes(tmp_path):
    r = runner.invoke(app, ["audit", "--judge", "sim", "--probes", "position", "--adaptive",
                            "--max-n", "60", "--out", str(tmp_path / "b"), "--fail-on",
                            "biased", "--no-cache"])
    assert r.exit_code == 0, r.output


def test_adaptive_refuses_n_and_budget_without_adaptive(tmp_path):
    r = runner.invoke(app, ["audit", "--judge", "sim", "--adaptive", "--n", "10",
                            "--out", str(tmp_path / "c")])
    assert r.exit_code == 2
    r = runner.invoke(app, ["audit", "--judge", "sim", "--max-calls", "10",
                            "--out", str(tmp_path / "d")])
    assert r.exit_code == 2


def test_a_later_round_the_budget_cuts_is_not_a_failure_and_a_rerun_agrees(tmp_path,
                                                                           isolated_cache):
    """--max-calls 300 cut round 2: its unsent calls counted as failed calls, so the warm
    re-run (which gets further, and cuts more) failed (exit 3, 280 of 1040 calls failed)
    where the first run passed. Now both pass; the cut is said in a note."""
    args = ["audit", "--judge", "sim?position=3&seed=1", "--adaptive", "--max-calls", "300",
            "--json"]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    again = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert first.exit_code == 0 and again.exit_code == 0, again.output
    # a cut first round within --max-failed passed without a word: now a note says it
    notes = json.loads((tmp_path / "a" / "results.json").read_text())["notes"]
    assert any("cut round 1" in n and "within --max-failed" in n for n in notes), notes
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    assert doc["run"]["status"] == "ok" and doc["calls"]["not_sent"] > 0
    assert doc["adaptive"]["stopped_by"] == "max_calls"
    assert any(n.startswith("the budget (max_calls) cut round") for n in doc["notes"])
    assert "note: the budget (max_calls) cut round" in " ".join(again.output.split())
