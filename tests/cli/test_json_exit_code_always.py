"""Every run command's `--json`, and `report --json` of its folder, carries `exit_code`, 0
too: it was left out of a run that exited 0 (evaluate, audit, rank, rank-eval, scoring-bias,
quantify, mitigate), so a script reading d["exit_code"] got a KeyError where the README says
`report --json` gives "the exit_code its command gave" (replay-check's said 0 already).
Through the real CLI, on simulated judges with small n."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
PANDALM = "pandalm:../shared/data/pandalm_testset"


def _last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


def _equal_pool(tmp_path: Path) -> str:
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"id": f"e{i}", "prompt": "Explain water boiling.",
                                        "response": "Water boils. " * (i + 1),
                                        "quality": 1}) + "\n" for i in range(6)))
    return f"jsonl:{pool}"


def _args(kind: str, tmp_path: Path) -> list[str]:
    """A passing run of each command kind, small enough for seconds."""
    return {
        "evaluate": ["evaluate", "--judge", "sim?seed=3", "--data", "builtin:facts",
                     "--limit", "10"],
        "audit": ["audit", "--judge", "sim?seed=2", "--n", "10", "--probes", "position"],
        "scoring-bias": ["scoring-bias", "--judge", "sim?seed=1", "--data", "builtin:graded",
                         "--limit", "6"],
        "rank": ["rank", "--judge", "sim?length=1", "--items", _equal_pool(tmp_path),
                 "--budget", "10", "--k", "2"],
        "rank-eval": ["rank-eval", "--oracle", "sim?length=1", "--items",
                      _equal_pool(tmp_path), "--k", "2", "--budgets", "4", "--seeds", "2",
                      "--samples", "50"],
        "quantify": ["quantify", "--judges", "simhubj?factor_verbosity=0,0.5,3,1,0",
                     "--data", PANDALM, "--limit", "6"],
        "mitigate": ["mitigate", "--judges", "sim?length=2&seed=1", "--data", PANDALM,
                     "--scorer", "simhubj?score_from=length", "--limit", "20"],
    }[kind]


@pytest.mark.parametrize("kind", ["evaluate", "audit", "scoring-bias", "rank", "rank-eval",
                                  "quantify", "mitigate"])
def test_a_passing_run_s_json_and_its_report_json_say_exit_code_0(kind, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    out = tmp_path / "o"
    res = runner.invoke(app, [*_args(kind, tmp_path), "--json", "--out", str(out)])
    assert res.exit_code == 0, res.output
    said = _last_json(res.stdout)
    assert said["command"] == kind and said["ok"] is True
    assert said.get("exit_code", "absent") == 0, f"{kind} --json: {sorted(said)}"
    rep = runner.invoke(app, ["report", str(out), "--json"])
    assert rep.exit_code == 0, rep.output
    again = _last_json(rep.stdout)
    assert again.get("exit_code", "absent") == 0, f"{kind}: report --json: {sorted(again)}"


def test_a_tripped_gate_and_a_failed_run_keep_their_codes_in_both(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    gate = runner.invoke(app, ["audit", "--judge", "sim?position=3&seed=2", "--n", "40",
                               "--probes", "position", "--fail-on", "position", "--json",
                               "--out", str(tmp_path / "g")])
    assert gate.exit_code == 1, gate.output
    assert _last_json(gate.stdout)["exit_code"] == 1
    rep = runner.invoke(app, ["report", str(tmp_path / "g"), "--json"])
    assert _last_json(rep.stdout)["exit_code"] == 1
    bad = runner.invoke(app, ["audit", "--judge", "sim?invalid=0.4&seed=1", "--n", "20",
                              "--max-failed", "0.05", "--json", "--out", str(tmp_path / "f")])
    assert bad.exit_code == 3, bad.output
    assert _last_json(bad.stdout)["exit_code"] == 3
    rep = runner.invoke(app, ["report", str(tmp_path / "f"), "--json"])
    assert _last_json(rep.stdout)["exit_code"] == 3
