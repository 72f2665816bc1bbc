"""A plan of a simulated judge's requests (sim, simhubj, replay answer from the request's
meta, which a plan's body does not carry) says so, and ingesting answers for them says that
they replace the simulation's verdicts: a tester planned mitigate with two simhubj judges,
ingested "B" for each request, and both judges then read win 0.500 with no word of why."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer

from tests.cli.test_plan_ingest import _sim_plan_and_answers, _write, execute, invoke


def _said(res) -> str:
    return " ".join(res.output.split())


def test_a_plan_for_the_sim_judge_says_judgeaudit_answers_it_itself(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = invoke("--plan-only", tmp_path / "p.jsonl", "evaluate", "--judge", "sim",
                 "--limit", "4", "--out", tmp_path / "o")
    text = _said(res)
    n = len((tmp_path / "p.jsonl").read_text().splitlines())
    assert n > 0 and f"{n} of them for a simulated judge (sim)" in text
    assert "answers ingested for them replace the simulation's" in text


def test_ingesting_answers_for_the_sim_judge_says_they_replace_its_verdicts(
        tmp_path, monkeypatch):
    _, lines, answers = _sim_plan_and_answers(tmp_path, monkeypatch)
    text = _said(invoke("ingest", _write(tmp_path / "out.jsonl", answers)))
    assert f"{len(lines)} answers are for a simulated judge (sim)" in text
    assert "replacing what the simulation would answer" in text


@pytest.mark.usefixtures("no_keys")
def test_a_plan_for_a_served_judge_says_nothing_of_simulation(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    with FakeLLMServer(answer="A") as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=EMPTY&logprobs=off"
        plan = tmp_path / "p.jsonl"
        res = invoke("--plan-only", plan, "evaluate", "--judge", spec, "--limit", "3",
                     "--out", tmp_path / "o")
        assert "simulated" not in _said(res)
        out = tmp_path / "out.jsonl"
        execute(plan, out, srv.openai_url.rsplit("/v1", 1)[0])
        text = _said(invoke("ingest", out))
    assert "simulated" not in text and json.loads(plan.read_text().splitlines()[0])
