"""`selfcheck --json` and `--plan-only ... --json` carry `exit_code` as every other --json
does (4465670): both left it out, so a script reading d["exit_code"] got a KeyError. Through
the real CLI app, on simulated judges."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judgeaudit import selfcheck as S
from judgeaudit.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize("planted", [True, False])
def test_selfcheck_json_says_the_exit_code_it_gives(monkeypatch, planted):
    judge = "sim?quality=1.5&position=1.5&seed=0" if planted else "sim?quality=1.5&seed=0"
    one = S.AuditScenario("audit: position", judge, ("position",), flags=("position",), n=60)
    monkeypatch.setattr(S, "default_scenarios", lambda: [one])
    res = runner.invoke(app, ["selfcheck", "--json"])
    assert res.exit_code == (0 if planted else 1), res.output
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc.get("exit_code") == res.exit_code, f"selfcheck --json: exit_code missing: {doc}"


def test_plan_only_json_says_exit_code_0(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "plan.jsonl"
    res = runner.invoke(app, ["--plan-only", str(plan), "audit", "--judge", "sim", "--n", "5",
                              "--probes", "position", "--json", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc.get("exit_code") == 0, f"--plan-only --json: exit_code missing: {doc}"
    assert doc["planned"] > 0
