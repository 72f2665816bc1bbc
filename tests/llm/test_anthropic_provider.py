"""The anthropic provider against a real loopback server speaking the Messages API: system
prompt, assistant prefill, text-only answers, usage and cost, keys, error mapping."""

from __future__ import annotations

import pytest
from fakeserver import judge_request, sent_key

from judgeaudit.llm import Client, FatalProviderError, ProviderError, make_provider
from judgeaudit.llm.base import Message, Request, request_key
from judgeaudit.llm.providers.anthropic import AnthropicProvider

pytestmark = pytest.mark.usefixtures("no_key_env")
KEY = "sk-ant-test-0123456789"


def provider(srv, **params):
    return make_provider("anthropic", "claude-fake",
                         {"base_url": srv.anthropic_url, "api_key": KEY, **params})


def test_build_moves_system_out_and_prefill_to_a_final_assistant_turn():
    req = Request(
        messages=(Message("system", "rule one"), Message("system", "rule two"),
                  Message("user", "question")),
        prefill="The better response is Response ", choices=("A", "B"),
    )
    system, msgs = AnthropicProvider.build(req)
    assert system == "rule one\n\nrule two"
    assert msgs == [{"role": "user", "content": "question"},
                    {"role": "assistant", "content": "The better response is Response"}]
    system, msgs = AnthropicProvider.build(req, prefill=False)
    assert msgs == [{"role": "user", "content": "question\n\nAnswer with a single letter."}]
    system, msgs = AnthropicProvider.build(Request(messages=(Message("user", "hi"),)))
    assert system is None and msgs == [{"role": "user", "content": "hi"}]


async def test_request_shape_and_prefill_continued_text(fake_server):
    srv = fake_server()
    p = provider(srv)
    out = await p.generate(judge_request(1, "B"))
    rec = srv.requests[-1]
    assert rec.path == "/v1/messages"
    assert rec.body["system"] == "You are a careful, impartial judge."
    assert [m["role"] for m in rec.body["messages"]] == ["user", "assistant"]
    assert rec.body["messages"][-1]["content"] == "The better response is Response"
    assert rec.body["max_tokens"] == 8 and rec.body["model"] == "claude-fake"
    assert "temperature" not in rec.body  # the 2.x SDK has no temperature argument
    assert sent_key(rec.headers) == KEY
    # The text is the continuation of the prefill; no probabilities from this API.
    assert out.text == " B" and out.probs is None
    assert out.usage.prompt_tokens == len(rec.prompt_text.split())
    assert out.usage.completion_tokens == 1
    await p.aclose()


async def test_temperature_param_is_passed_through(fake_server):
    srv = fake_server()
    p = provider(srv, temperature="0.3")
    await p.generate(judge_request(1))
    assert srv.requests[-1].body["temperature"] == 0.3
    await p.aclose()


@pytest.mark.parametrize("label", ["C", "Both", "I prefer the first."])
async def test_wrong_labels_come_back_as_the_server_text(fake_server, label):
    srv = fake_server(answer=label)
    p = provider(srv)
    out = await p.generate(judge_request(2, "A"))
    assert out.text == " " + label and out.probs is None
    await p.aclose()


async def test_refused_prefill_falls_back_to_an_answer_line_once(fake_server):
    srv = fake_server(reject_prefill=True)
    p = provider(srv)
    out = await p.generate(judge_request(3, "A"))
    assert out.text == "A"
    assert [r.status for r in srv.requests] == [400, 200]
    second = srv.requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user"]
    assert second[0]["content"].endswith("\n\nAnswer with a single letter.")
    await p.generate(judge_request(4, "B"))
    assert srv.count() == 3 and srv.requests[2].status == 200  # remembered: no 400 again
    await p.aclose()


async def test_usage_and_cost_through_the_client(fake_server):
    srv = fake_server()
    p = provider(srv, price_in="3", price_out="15")
    client = Client(p, concurrency=3)
    await client.map([judge_request(i, "AB"[i % 2]) for i in range(5)])
    words = sum(len(r.prompt_text.split()) for r in srv.requests)
    assert client.stats.made == 5 and client.stats.prompt_tokens == words
    assert client.stats.completion_tokens == 5
    assert client.stats.cost_usd == pytest.approx((words * 3 + 5 * 15) / 1e6)
    await client.aclose()


def test_builtin_prices_and_cache_identity():
    assert AnthropicProvider("claude-3-5-haiku-20241022", {}).price_per_mtok == (0.80, 4.00)
    assert AnthropicProvider("claude-3-5-haiku-latest", {}).price_per_mtok == (0.80, 4.00)
    assert AnthropicProvider("claude-opus-4-5-20251101", {}).price_per_mtok is None  # unknown
    assert AnthropicProvider("claude-3-5-haiku", {"base_url": "http://127.0.0.1:1"}
                             ).price_per_mtok is None
    a = AnthropicProvider("c", {"api_key": "k1", "timeout": "3"})
    b = AnthropicProvider("c", {"api_key": "k2", "timeout": "30"})
    assert request_key(a, judge_request(1)) == request_key(b, judge_request(1))


async def test_missing_key_is_fatal_and_names_the_env_var(fake_server):
    srv = fake_server()
    p = make_provider("anthropic", "claude-fake", {"base_url": srv.anthropic_url})
    with pytest.raises(FatalProviderError, match=r"\$ANTHROPIC_API_KEY"):
        await p.generate(judge_request(1))
    client = Client(p)  # before any call: bad input (exit 2), as a malformed key is
    with pytest.raises(ValueError, match=r"\$ANTHROPIC_API_KEY"):
        await client.call(judge_request(1))
    assert srv.count() == 0


async def test_env_key_is_used(fake_server, monkeypatch):
    srv = fake_server()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    p = make_provider("anthropic", "claude-fake", {"base_url": srv.anthropic_url})
    await p.generate(judge_request(1))
    assert sent_key(srv.requests[-1].headers) == "sk-ant-from-env"
    await p.aclose()


@pytest.mark.parametrize("fault, retryable", [
    ("429", True), ("500", True), ("503", True), ("drop", True), ("non_json", True),
    ("no_choices", True), ("400", False), ("401", False),
])
async def test_error_mapping(fake_server, fault, retryable):
    srv = fake_server(faults=[fault], retry_after="2")
    p = provider(srv)
    with pytest.raises(ProviderError) as ei:
        await p.generate(judge_request(1))
    assert ei.value.retryable is retryable
    assert isinstance(ei.value, FatalProviderError) is (not retryable)
    assert ei.value.retry_after == (2.0 if fault == "429" else None)
    assert KEY not in str(ei.value) and "0123456789" not in str(ei.value)
    assert (await p.generate(judge_request(1))).text in (" A", " B")
    await p.aclose()


async def test_timeout_is_retryable(fake_server):
    srv = fake_server(faults=["hang"], hang_seconds=5)
    p = provider(srv, timeout="0.3")
    with pytest.raises(ProviderError, match="within 0.3s") as ei:
        await p.generate(judge_request(1))
    assert ei.value.retryable
    await p.aclose()
