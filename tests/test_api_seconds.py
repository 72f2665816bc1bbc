"""The Python API's `seconds` is the wall time of the whole run, as the CLI's is.

discover, quantify and mitigate judge their items with the live judges before the step that
starts its own clock (`hubj.run.run_discover` and the others), so `judgeaudit.discover(...)`
said 0.1 s of a run that spent 10 s judging: ca5957c measured the CLI's runs around the
whole run (`cli.runner.run_command`), but the API calls `Run.document` itself. The run's wall
time is now set in `commands.Run.document`, the one place both go through.

A real loopback server answering each request after LATENCY seconds is the live judge, one
call at a time, so the run takes at least (requests it got) x LATENCY."""

from __future__ import annotations

import pytest
from fakeserver import FakeLLMServer

import judgeaudit
from tests.hubj.conftest import StubEmbedder
from tests.hubj.test_discover_reason import _ReasonScript

LATENCY = 0.25
SIM = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"


def _run(command: str, data: str, judge: str, cache: str) -> judgeaudit.Result:
    common = {"concurrency": 1, "cache": cache}
    if command == "discover":
        return judgeaudit.discover([judge], data=f"{data}?limit=8", recorded="pandalm",
                                   llm=f"{_ReasonScript.name}:x", limit=4, holdout_limit=4,
                                   iterations=1, embedder=StubEmbedder(), **common)
    if command == "quantify":
        return judgeaudit.quantify([SIM, judge], data=f"{data}?limit=12", generator="simhubj",
                                   factors="verbosity", pool=12, limit=2, **common)
    return judgeaudit.mitigate([judge], data=f"{data}?limit=8", scorer="simhubj",
                               factor="verbosity", **common)


@pytest.mark.parametrize("command", ["discover", "quantify", "mitigate"])
def test_api_seconds_is_the_wall_time_of_the_whole_run(shared_data, tmp_path, command):
    """`Result["seconds"]` is at least the time the live judge took to answer."""
    data = f"pandalm:{shared_data / 'pandalm_testset'}"
    with FakeLLMServer(latency=LATENCY, logprobs=False) as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = _run(command, data, judge, str(tmp_path / "cache.sqlite"))
        slept = srv.count() * LATENCY
    assert srv.count() >= 8, srv.count()  # the judging happened, live
    assert res["seconds"] >= slept, (
        f"{command}: seconds {res['seconds']} is less than the {slept:.2f} s the judge "
        f"took to answer {srv.count()} requests one at a time")
