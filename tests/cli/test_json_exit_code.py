"""--json says the exit code a run is about to give when it is not 0 (a usage error's JSON
did; a failed run's, exit 3, and a tripped gate's, exit 1, did not), and an audit's summary
carries the items each probe left out by why (the split into not_sent / call_failed /
unparseable was in results.json and the report only)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def _json(res) -> dict:
    return json.loads(res.stdout.strip().splitlines()[-1])


def test_a_failed_run_s_json_says_exit_code_3(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = runner.invoke(app, ["audit", "--judge", "sim?invalid=0.4&seed=1", "--n", "20",
                              "--max-failed", "0.05", "--json", "--out", str(tmp_path / "o")])
    assert res.exit_code == 3, res.output
    doc = _json(res)
    assert doc["exit_code"] == 3 and doc["ok"] is False


def test_an_audit_s_json_gives_each_probe_s_left_out_items_by_why(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = runner.invoke(app, ["audit", "--judge", "sim?invalid=0.2&seed=1", "--n", "20",
                              "--max-failed", "0.9", "--json", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = _json(res)
    kept = json.loads((tmp_path / "o" / "results.json").read_text())
    for name, p in kept["probes"].items():
        assert doc["effects"][name]["left_out"] == (p.get("dropped") or {}), name
    assert any(e["left_out"].get("unparseable") for e in doc["effects"].values())
    assert doc["left_out"] == (kept.get("dropped") or {})


def test_a_tripped_gate_s_json_says_exit_code_1_and_a_passing_run_none(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = runner.invoke(app, ["audit", "--judge", "sim?position=3&seed=2", "--n", "40",
                              "--probes", "position", "--fail-on", "position", "--json",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 1, res.output
    assert _json(res)["exit_code"] == 1
    ok = runner.invoke(app, ["audit", "--judge", "sim?seed=2", "--n", "10", "--probes",
                             "position", "--json", "--out", str(tmp_path / "o2")])
    assert ok.exit_code == 0 and _json(ok)["exit_code"] == 0
