"""OpenAI's reasoning models (o-series, gpt-5) as judges.

They refuse `max_tokens` (asking for `max_completion_tokens`), any temperature but 1 and
logprobs, each with a 400 that used to end the run at its first call, whatever the user
set. The provider now sends the request again without what was refused, once each, and
remembers it. They also spend tokens thinking before they answer: an 8-token verdict budget
gives an empty answer cut at the limit, now marked as such with what to do (`max_tokens=`
in the judge spec), and `reasoning_effort=` is passed through.

A real loopback server that answers as these models do (tests/llm/fakeserver.py,
`reasoning=True`)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer, judge_request, write_pairs
from typer.testing import CliRunner, Result

from judgeaudit.cli.main import app
from judgeaudit.llm import Client, make_provider
from judgeaudit.llm.base import request_key

pytestmark = pytest.mark.usefixtures("no_key_env")


def provider(srv, **params: str):
    return make_provider("openai", "gpt-5-mini", {"base_url": srv.openai_url, "api_key": "k",
                                                  **params})


async def test_refused_parameters_are_dropped_once_and_remembered(fake_server, caplog):
    srv = fake_server(reasoning=True, reject_logprobs=True)
    client = Client(provider(srv, max_tokens="200"))
    with caplog.at_level(logging.WARNING, logger="judgeaudit.llm"):
        first = await client.call(judge_request(0, "A"))
    assert first.text == "A" and first.invalid is None
    bodies = [r.body for r in srv.snapshot()]
    assert len(bodies) == 4  # logprobs, then max_tokens, then temperature refused
    sent = bodies[-1]
    assert "max_tokens" not in sent and sent["max_completion_tokens"] == 200
    assert "temperature" not in sent and "logprobs" not in sent
    said = caplog.text
    assert "rejects logprobs" in said and "max_completion_tokens instead" in said
    assert "sending none (the model's default)" in said
    # every later call goes in one request
    outs = await client.map([judge_request(i, "AB"[i % 2]) for i in range(1, 9)])
    assert [o.text for o in outs] == ["AB"[i % 2] for i in range(1, 9)]
    assert srv.count() == 4 + 8
    assert client.stats.made == 9 and client.stats.failed == 0
    await client.aclose()


async def test_a_verdict_budget_spent_thinking_is_marked_with_what_to_do(fake_server):
    srv = fake_server(reasoning=True, think_tokens=100)
    client = Client(provider(srv))  # the request's 8 tokens: all spent thinking
    out = await client.call(judge_request(0, "A"))
    assert out.text == "" and out.invalid is not None
    assert "no answer within the token limit" in out.invalid
    assert "max_tokens=2000" in out.invalid
    await client.aclose()


async def test_max_tokens_and_reasoning_effort_are_sent_and_keyed(fake_server):
    srv = fake_server(reasoning=True)
    p = provider(srv, max_tokens="300", reasoning_effort="low")
    client = Client(p)
    out = await client.call(judge_request(0, "B"))
    assert out.text == "B"
    body = srv.snapshot()[-1].body
    assert body["max_completion_tokens"] == 300 and body["reasoning_effort"] == "low"
    # they change what comes back, so they are part of the cache key
    req = judge_request(0, "B")
    assert request_key(p, req) != request_key(provider(srv), req)
    assert request_key(p, req) != request_key(provider(srv, max_tokens="300"), req)
    await client.aclose()
    with pytest.raises(ValueError, match="max_tokens='0'"):
        provider(srv, max_tokens="0")


def test_evaluate_with_a_reasoning_judge_through_the_cli(tmp_path, isolated_cache):
    """Without room to think every verdict is empty and the run fails (exit 3), saying why
    in results.json; with max_tokens it runs."""
    data = tmp_path / "items.jsonl"
    write_pairs(data, 6)
    with FakeLLMServer(reasoning=True, reject_logprobs=True) as srv:
        spec = f"openai:gpt-5-mini?base_url={srv.openai_url}&api_key=k"
        args = ["evaluate", "--data", f"jsonl:{data}"]
        bad = CliRunner().invoke(app, [*args, "--judge", spec, "--out", str(tmp_path / "a")])
        good = CliRunner().invoke(app, [*args, "--judge", spec + "&max_tokens=500",
                                        "--out", str(tmp_path / "b")])
    assert bad.exit_code == 3, bad.output
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    assert all("no answer within the token limit" in (x["error"] or "")
               for x in doc["invalid_examples"])
    assert good.exit_code == 0, good.output
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    assert doc["accuracy"]["value"] == 1.0 and doc["n_invalid"] == 0


async def test_content_as_a_list_of_parts_is_read_from_its_text_parts(fake_server):
    """Mistral's reasoning models answer with content as parts: thinking, then text. That
    was "malformed" (retried, then failed); the verdict is now the text part, never the
    thinking part (which names the other response here)."""
    srv = fake_server(faults=["content_parts"] * 2, logprobs=False)
    client = Client(make_provider("openai", "magistral", {"base_url": srv.openai_url,
                                                          "api_key": "k"}))
    for i, good in enumerate("AB"):
        out = await client.call(judge_request(i, good))
        assert out.text == good and out.invalid is None
    assert client.stats.retries == 0 and client.stats.failed == 0
    await client.aclose()


def evaluate(data: Path, spec: str, out: Path, *extra: str) -> Result:
    """`judgeaudit evaluate` of `data` (a JSONL file) with judge `spec` into folder `out`."""
    return CliRunner().invoke(app, ["evaluate", "--data", f"jsonl:{data}", "--judge", spec,
                                    "--out", str(out), *extra])


def test_a_run_whose_answers_are_all_spent_thinking_stops_early(tmp_path, isolated_cache):
    """40 pairs (80 calls) to a reasoning model without room to answer: every answer is
    paid for and empty. The client stops after its first 16 (max(8, 2 x concurrency 8))
    instead of making all 80; the run fails saying why and what to give."""
    data = tmp_path / "items.jsonl"
    write_pairs(data, 40)
    with FakeLLMServer(reasoning=True) as srv:
        spec = f"openai:gpt-5-mini?base_url={srv.openai_url}&api_key=k"
        res = evaluate(data, spec, tmp_path / "a")
        answered = srv.served()
    assert res.exit_code == 3, res.output
    assert 16 <= answered <= 16 + 8  # the 16, and at most those already in flight
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    reason = doc["run"]["message"]
    assert "the first 16 answers could not be used as verdicts" in reason
    assert "max_tokens=2000" in reason


async def test_one_usable_answer_ends_the_watch(fake_server):
    """A usable answer first: later unusable ones (a few items refused) never stop it."""
    srv = fake_server(rule=lambda rec, attempt: None if "item 0\n" in rec.prompt_text
                      else "refusal", logprobs=False)
    client = Client(provider(srv), concurrency=1)
    outs = [await client.call(judge_request(i)) for i in range(30)]
    assert outs[0].invalid is None and all(o.invalid for o in outs[1:])
    assert srv.count() == 30
    await client.aclose()


@pytest.mark.parametrize("answer", ["", "I think it's fine."])
def test_a_judge_whose_answers_give_no_verdict_stops_being_paid(answer, tmp_path,
                                                                isolated_cache):
    """Empty or prose answers are usable to the client (HTTP 200, no refusal) but give no
    verdict: all 80 were paid for (640 in an audit). Now the judge's reading feeds the same
    watch: no call after the first 16 such answers, and the run fails saying why."""
    data = tmp_path / "items.jsonl"
    write_pairs(data, 40)
    with FakeLLMServer(answer=answer) as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = evaluate(data, spec, tmp_path / "a")
        answered = srv.served()
        # the same command again: its cached unreadable answers count (it paid for 16 new
        # ones each time, after the 16 it had cached), so it pays for none
        again = evaluate(data, spec, tmp_path / "b")
        assert again.exit_code == 3 and srv.served() == answered, again.output
    assert res.exit_code == 3, res.output
    assert 16 <= answered <= 16 + 8  # max(8, 2 x concurrency 8), and those in flight
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    assert "the first 16 answers could not be read as verdicts" in doc["run"]["message"]


def test_one_verdict_first_ends_the_verdict_watch(tmp_path, isolated_cache):
    """A judge whose first answer is read keeps being asked, however many answers after it
    are unreadable."""
    data = tmp_path / "items.jsonl"
    write_pairs(data, 20)
    answers = iter(["A"] + ["no idea"] * 100)
    with FakeLLMServer(answer=lambda _prompt: next(answers)) as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = evaluate(data, spec, tmp_path / "a", "--concurrency", "1")
        answered = srv.served()
    assert answered == 40, res.output
