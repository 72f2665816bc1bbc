"""A run's `seconds` (the terminal's calls line, --json, results.json) is the wall time of
the whole run. discover, quantify and mitigate judge the items with their live judges before
the step that timed itself (`hubj.run.run_discover` and the others start their clock after
the judging), so a discover run that spent 10 s judging said 0.1 s. Now every command's
seconds is measured around the whole run (`cli.runner.run_command`).

A real loopback server that answers each request after LATENCY seconds is the live judge,
one call at a time, so the run takes at least (requests it got) x LATENCY; the G modules
answer by rule (`_ReasonScript`), the generator is simulated."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from tests.hubj.test_discover_reason import _ReasonScript

runner = CliRunner()
LATENCY = 0.25
SIM = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"


@pytest.fixture(autouse=True)
def _own_cache(stub_embedder, isolated_cache):
    """Every test here: MiniLM stood in for, the cache its own."""


def _args(command: str, data: str, judge: str) -> list[str]:
    if command == "discover":
        return ["discover", "--recorded", "pandalm", "--judges", judge, "--llm",
                f"{_ReasonScript.name}:x", "--data", f"{data}?limit=8", "--limit", "4",
                "--holdout-limit", "4", "--iterations", "1"]
    if command == "quantify":
        return ["quantify", "--judges", f"{SIM},{judge}", "--generator", "simhubj", "--data",
                f"{data}?limit=12", "--factors", "verbosity", "--pool", "12", "--limit", "2"]
    return ["mitigate", "--judges", judge, "--scorer", "simhubj", "--factor", "verbosity",
            "--data", f"{data}?limit=8"]


@pytest.mark.parametrize("command", ["discover", "quantify", "mitigate"])
def test_seconds_is_the_wall_time_of_the_whole_run(shared_data, tmp_path, command):
    data = f"pandalm:{shared_data / 'pandalm_testset'}"
    with FakeLLMServer(latency=LATENCY, logprobs=False) as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, [*_args(command, data, judge), "--concurrency", "1",
                                  "--out", str(tmp_path), "--json"])
        slept = srv.count() * LATENCY
    assert srv.count() >= 8, (srv.count(), res.output)  # the judging happened, live
    assert res.exit_code in (0, 3), res.output  # (the outcome is not what is tested)
    doc = json.loads((tmp_path / "results.json").read_text())
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["seconds"] >= slept, (doc["seconds"], slept)
    assert summary["seconds"] == doc["seconds"]
    said = re.findall(r"; (\d+(?:\.\d+)?) s\b", res.output)  # the calls line's time
    assert said and float(said[-1]) >= round(slept, 1) - 0.05, (said, slept, res.output)
