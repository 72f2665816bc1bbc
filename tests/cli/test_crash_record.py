"""A run that an exception no command expected ended (a bug, a plugin's code) is recorded as
failed in its folder by the runner (`runner.record_crash`), not left saying "did not finish;
run the same command again to resume": a crash is no interruption.

The bug is planted in the `sim` judge's `generate` (a KeyError at run time, after the run's
work has begun). In process (CliRunner calls the app, not `main`), the runner alone must
record it; through `python -m judgeaudit`, `main` says where it was recorded and exits 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.providers.sim import SimProvider

ARGS = ["evaluate", "--judge", "sim", "--data", "builtin:facts", "--limit", "4", "--no-cache"]


async def _broken(self, request):
    return {}["missing"]  # a planted bug


def test_the_runner_records_a_crashed_run_as_failed(tmp_path, monkeypatch):
    monkeypatch.setattr(SimProvider, "generate", _broken)
    out = tmp_path / "o"
    res = CliRunner().invoke(app, [*ARGS, "--out", str(out)])
    assert isinstance(res.exception, KeyError), res.output  # the crash reaches the caller
    doc = json.loads((out / "results.json").read_text())
    run = doc["run"]
    assert run["status"] == "failed" and not run.get("unfinished") and run["crashed"] is True
    assert run["message"] == "run failed: unexpected KeyError: a bug in judgeaudit"
    assert "did not finish" not in json.dumps(doc)


CRASH = f"""
import sys
from judgeaudit.llm.providers.sim import SimProvider
async def broken(self, request):
    return {{}}["missing"]
SimProvider.generate = broken
sys.argv = ["judgeaudit", *{ARGS!r}, "--out", "o", "--json"]
from judgeaudit.cli.main import main
main()
"""


def test_main_says_where_the_crashed_run_was_recorded(tmp_path):
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    r = subprocess.run([sys.executable, "-c", CRASH], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 3, r.stderr
    err = " ".join(r.stderr.split())
    assert "Traceback" in r.stderr and "KeyError" in r.stderr
    assert ("error: unexpected KeyError: a bug in judgeaudit; please report it with the "
            "traceback above (the run failed: exit 3; recorded in o/results.json)") in err
    summary = json.loads(r.stdout)  # --json: the recorded failed run's summary
    assert summary["ok"] is False and summary["exit_code"] == 3
    assert "a bug in judgeaudit" in summary["reason"]
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["run"]["status"] == "failed" and doc["run"]["crashed"] is True
