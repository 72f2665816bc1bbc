"""Refusals, a spent account and a pasted key: each fails as what it is.

- A content filter refusing one prompt (Azure OpenAI's 400 `content_filter`, OpenAI's 400
  `invalid_prompt`) used to be a fatal 400 that ended the run at the first such item; the
  injection and authority probes write exactly the text filters flag. It now fails that
  call alone, counted as `refused`, like a prompt over the context (test_too_long.py).
- An answer withheld after the fact (a 200 with `message.refusal`, finish_reason
  `content_filter`, Anthropic's stop_reason `refusal`) was an empty text, shown as a bare
  unreadable verdict; it now carries why.
- A 429 `insufficient_quota` (the account is out of credit) was retried like a rate limit,
  six times per call, until the breaker stopped it as "stopped answering"; waiting cannot
  cure it, so the first one is fatal and says so. Anthropic's 400 for the same is `auth`.
- A key with a line break after it (a key file, a Kubernetes secret) was refused by the HTTP
  library as a header value, which read as "connection failed" and then "the server could
  not be reached". It is now sent without the whitespace; a space inside the key is refused
  before any call, without echoing the key.

Real servers on loopback (tests/llm/fakeserver.py) answering in each service's own words.
"""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, judge_request, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider
from judgeaudit.llm.base import http_error_kind
from judgeaudit.llm.batch import http_line_error

pytestmark = pytest.mark.usefixtures("no_key_env")


def item_of(text: str) -> str | None:
    m = re.search(r"question item (\d+)\n", text)
    return m.group(1) if m else None


def fault_for(items: set[str], fault: str):
    return lambda rec, attempt: fault if item_of(rec.prompt_text) in items else None


def openai(srv, key: str = "k"):
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": key})


def anthropic(srv):
    return make_provider("anthropic", "claude-fake",
                         {"base_url": srv.anthropic_url, "api_key": "k"})


@pytest.mark.parametrize("fault", ["content_filter", "invalid_prompt"])
async def test_a_prompt_a_content_filter_refuses_fails_that_call_only(fake_server, fault):
    srv = fake_server(rule=fault_for({"2", "5"}, fault))
    client = Client(openai(srv), concurrency=2,
                    retry=RetryPolicy(max_retries=3, base_delay=0.001))
    outs = await client.map([judge_request(i) for i in range(8)])
    failed = {str(i): o for i, o in enumerate(outs) if isinstance(o, CallFailed)}
    assert set(failed) == {"2", "5"}
    assert all(o.kind == "refused" and not o.fatal for o in failed.values())
    assert all("content filter refused this prompt" in str(o) for o in failed.values())
    s = client.stats
    assert (s.made, s.failed, s.retries, s.not_sent) == (6, 2, 0, 0)
    assert s.errors == {"refused": 2}
    assert srv.count() == 8  # each sent once, and the calls after them still went out
    await client.aclose()


@pytest.mark.parametrize(("make", "fault", "why"), [
    (openai, "refusal", "the model refused to answer: I'm sorry"),
    (openai, "filtered", "withheld (finish_reason content_filter)"),
    (anthropic, "refusal", "withheld (stop_reason refusal)"),
])
async def test_an_answer_withheld_is_an_invalid_verdict_that_says_why(fake_server, make,
                                                                      fault, why):
    srv = fake_server(rule=fault_for({"1"}, fault), logprobs=False)
    client = Client(make(srv), concurrency=2)
    out = await client.call(judge_request(1))
    assert out.invalid is not None and why in out.invalid
    ok = await client.call(judge_request(0))
    assert ok.invalid is None and ok.text
    await client.aclose()


@pytest.mark.parametrize(("make", "status"), [(openai, 429), (anthropic, 400)])
async def test_an_account_out_of_credit_stops_at_the_first_call(fake_server, make, status):
    srv = fake_server(faults=["quota"] * 20)
    client = Client(make(srv), concurrency=1,
                    retry=RetryPolicy(max_retries=5, base_delay=0.001))
    with pytest.raises(CallFailed) as err:
        await client.map([judge_request(i) for i in range(5)])
    assert err.value.fatal and err.value.kind == "auth"
    assert srv.snapshot()[0].status == status
    assert srv.count() == 1 and client.stats.retries == 0  # waiting cannot cure it
    if status == 429:
        assert "out of credit" in str(err.value)
    assert "credit" in str(err.value) or "quota" in str(err.value)
    await client.aclose()


@pytest.mark.parametrize("tail", ["\n", "\r\n", "  "])
async def test_a_key_with_a_line_break_after_it_is_sent_without_it(monkeypatch, tail):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key-0123456789" + tail)
    with FakeLLMServer(api_keys={"sk-test-key-0123456789"}) as srv:
        client = Client(make_provider("openai", "fake", {"base_url": srv.openai_url}))
        out = await client.call(judge_request(0))
        await client.aclose()
    assert out.text and client.stats.failed == 0


async def test_a_key_with_a_space_inside_is_refused_before_any_call(monkeypatch):
    """Refused at the first call to be sent (a ValueError: the CLI's bad input, exit 2),
    not as a failed run (exit 3); not when the judge is made (a cached run sends no key)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test key-0123456789")
    with FakeLLMServer() as srv:
        client = Client(make_provider("openai", "fake", {"base_url": srv.openai_url}))
        with pytest.raises(ValueError) as err:
            await client.call(judge_request(0))
        await client.aclose()
        assert srv.count() == 0
    assert "$OPENAI_API_KEY" in str(err.value) and "position 8 of 22" in str(err.value)
    assert "key-0123456789" not in str(err.value)
    # given as the spec's api_key: named as the parameter, the message intact (it read
    # "the API key from api_key= has a space", which the secret mask cut to "api_key= ***")
    client = Client(make_provider("openai", "fake", {"base_url": "http://127.0.0.1:9/v1",
                                                     "api_key": "ab cd"}))
    with pytest.raises(ValueError) as err:
        await client.call(judge_request(0))
    await client.aclose()
    assert "the API key from the api_key parameter has a space" in str(err.value)


@pytest.mark.parametrize("fault", ["content_filter", "refusal"])
def test_evaluate_with_one_item_refused_finishes_and_says_why(tmp_path, isolated_cache, fault):
    """1 item of 10 refused: by the filter (2 of 20 calls fail, under --max-failed 0.2) or
    by the model (2 verdicts unreadable, with the refusal as their reason): exit 0 either
    way. Before, exit 3 at the first filter refusal; a model refusal was a bare empty text."""
    data = tmp_path / "items.jsonl"
    write_pairs(data, 10)
    with FakeLLMServer(rule=fault_for({"4"}, fault)) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = CliRunner().invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                       "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["run"]["status"] == "ok" and doc["n"] == 10
    row = next(v for v in doc["verdicts"] if v["item_id"] == "t:4")
    if fault == "content_filter":
        assert doc["calls"]["failed"] == 2 and doc["calls"]["errors"] == {"refused": 2}
        why = "content filter refused this prompt"
    else:
        assert doc["calls"]["failed"] == 0 and doc["n_invalid"] == 2
        why = "the model refused to answer"
    assert all(why in (o["error"] or "") for o in row["orders"])


@pytest.mark.parametrize(("status", "message", "kind", "retryable"), [
    (429, "Rate limit reached for gpt-4o on tokens per min. Visit "
          "https://platform.openai.com/account/billing to raise it", "rate_limit", True),
    (429, "insufficient_quota You exceeded your current quota", "auth", False),
    (402, "Payment required", "auth", False),
    (400, "content_filter The response was filtered due to the prompt triggering Azure "
          "OpenAI's content management policy", "refused", False),
    (400, "This model's maximum context length is 4096 tokens", "too_long", False),
    (413, "", "too_long", False),
    (400, "Unsupported parameter: 'foo'", "bad_request", False),
    (403, "Forbidden", "auth", False),
    (503, "overloaded", "server", True),
    (408, "", "timeout", True),
])
def test_http_error_kinds_are_the_same_live_and_in_a_batch(status, message, kind, retryable):
    assert http_error_kind(status, message) == (kind, retryable)
    line = http_line_error("k", status, message)
    assert (line.kind, line.retryable) == (kind, retryable)


@pytest.mark.parametrize(("message", "kind"), [
    ("prompt is too long: 210000 tokens > 200000 maximum", "too_long"),
    ("Prefill is not supported for this model", "bad_request"),
    ("Your credit balance is too low to access the Anthropic API.", "auth"),
])
def test_an_anthropic_batch_line_rejected_as_invalid_is_classified_as_live(message, kind):
    from judgeaudit.llm.batch_anthropic import read_result

    line = read_result({"custom_id": "k", "result": {"type": "errored", "error": {
        "type": "error", "error": {"type": "invalid_request_error", "message": message}}}})
    assert (line.kind, line.retryable) == (kind, False)


# ---- a 200 whose body is an error object (OpenRouter) -----------------------------------------

async def test_a_200_carrying_an_error_is_classified_by_the_status_it_names(fake_server):
    """OpenRouter answers 200 with {"error": {"message", "code"}} when the model's provider
    fails. It read as "malformed (not a chat completion)" and was retried whatever it said:
    now an upstream error is retried, no credits is fatal, a prompt over the context fails
    that call only, each with the server's words."""
    srv = fake_server(faults=["error_200_502"])
    client = Client(openai(srv), retry=RetryPolicy(max_retries=2, base_delay=0.01))
    resp = await client.call(judge_request(1))
    assert resp.text and client.stats.errors == {"server": 1}
    assert "answered 200 with an error (code 502): Upstream provider returned an error" in (
        client.stats.first_error)
    await client.aclose()

    srv = fake_server(faults=["error_200_402"])
    client = Client(openai(srv))
    with pytest.raises(CallFailed) as err:
        await client.call(judge_request(1))
    assert err.value.fatal and err.value.kind == "auth" and "Insufficient credits" in str(err.value)
    assert srv.count() == 1  # not retried
    await client.aclose()

    srv = fake_server(faults=["error_200_400"])
    client = Client(openai(srv))
    with pytest.raises(CallFailed) as err:
        await client.call(judge_request(1))
    assert not err.value.fatal and err.value.kind == "too_long"
    assert (await client.call(judge_request(2))).text  # the next call goes on
    await client.aclose()
