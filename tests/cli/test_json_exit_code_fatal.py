"""A run a fatal call failure ends (a wrong key) prints --json with the exit code it gives,
3: it printed "exit_code": 0 beside "ok": false while the process exited 3, where
`report --json` on the same folder said 3 (`runner.write_failed` printed a passing run's
default). A real OpenAI-compatible server on loopback that refuses the key."""

from __future__ import annotations

import json

from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from tests.cli.test_cli import write_items

runner = CliRunner()


def test_a_fatal_failure_prints_exit_code_3(tmp_path, isolated_cache, no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 3)
    with FakeLLMServer(api_keys=["right-key"]) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=wrong-key-xyz"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--out", str(tmp_path / "out"), "--json"])
    assert res.exit_code == 3, res.output
    printed = json.loads(res.stdout[res.stdout.index("{"):])
    assert printed["ok"] is False and printed["exit_code"] == 3, printed
    again = runner.invoke(app, ["report", str(tmp_path / "out"), "--json"])
    assert json.loads(again.stdout[again.stdout.index("{"):])["exit_code"] == 3
