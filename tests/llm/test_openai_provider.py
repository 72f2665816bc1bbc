"""The openai provider against a real loopback server: request shape (prefill, choices,
logprobs), probabilities from logprobs, usage and cost, keys, error mapping."""

from __future__ import annotations

import email.utils
import math
import subprocess
import sys
from pathlib import Path

import pytest
from fakeserver import GOOD, judge_request, sent_key

from judgeaudit.judges.parse import parse_choice
from judgeaudit.llm import (
    Client,
    FatalProviderError,
    ProviderError,
    make_provider,
)
from judgeaudit.llm.base import request_key
from judgeaudit.llm.providers.openai import (
    NEARLY_GREEDY,
    OpenAIProvider,
    choice_probs,
    parse_retry_after,
    redact,
    top_logprobs_limit,
)

pytestmark = pytest.mark.usefixtures("no_key_env")
SRC = Path(__file__).resolve().parents[2] / "src"


def provider(srv, **params):
    return make_provider("openai", "fake-model",
                         {"base_url": srv.openai_url, "api_key": "test-key-123", **params})


# ---- pure functions ------------------------------------------------------------------------

def test_choice_probs_renormalises_over_the_choices():
    top = [("A", math.log(0.6)), (" B", math.log(0.2)), ("The", math.log(0.15))]
    p = choice_probs(top, ("A", "B"))
    assert p == pytest.approx({"A": 0.75, "B": 0.25})


def test_choice_probs_sums_whitespace_variants_and_is_case_sensitive():
    top = [("A", math.log(0.3)), (" A", math.log(0.2)), ("\nB", math.log(0.25)),
           ("a", math.log(0.2)), (" b", math.log(0.05))]
    p = choice_probs(top, ("A", "B"), sampled="A")
    assert p == pytest.approx({"A": 0.5 / 0.75, "B": 0.25 / 0.75})


def test_choice_probs_missing_choice_gets_zero_and_none_present_gives_none():
    assert choice_probs([("B", math.log(0.9)), ("x", -3.0)], ("A", "B")) == {"A": 0.0, "B": 1.0}
    assert choice_probs([("The", -0.1), ("Response", -2.0)], ("A", "B")) is None
    assert choice_probs([], ("A", "B")) is None
    assert choice_probs([("A", -0.1)], ()) is None
    assert choice_probs([("A", float("-inf")), ("C", -0.1)], ("A", "B")) is None


def test_choice_probs_refuses_when_the_generated_token_is_not_a_choice():
    # The model wrote "Response ..." or "**": a distribution read there would contradict
    # the text, so the judge must parse the text instead.
    top = [("Response", math.log(0.7)), ("A", math.log(0.2)), ("B", math.log(0.1))]
    assert choice_probs(top, ("A", "B"), sampled="Response") is None
    assert choice_probs(top, ("A", "B"), sampled=" B") == pytest.approx({"A": 2 / 3, "B": 1 / 3})


def test_choice_probs_for_score_ids():
    top = [(str(k), math.log(w)) for k, w in zip(range(1, 6), (0.1, 0.1, 0.2, 0.4, 0.1),
                                                  strict=True)]
    p = choice_probs(top, ("1", "2", "3", "4", "5"), sampled="4")
    assert p == pytest.approx({"1": 1 / 9, "2": 1 / 9, "3": 2 / 9, "4": 4 / 9, "5": 1 / 9})


def test_parse_retry_after_seconds_and_http_date():
    assert parse_retry_after("2") == 2.0
    assert parse_retry_after(" 0.5 ") == 0.5
    now = 1_700_000_000.0
    date = email.utils.formatdate(now + 30, usegmt=True)
    assert parse_retry_after(date, now=now) == pytest.approx(30.0)
    assert parse_retry_after(email.utils.formatdate(now - 30, usegmt=True), now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_redact_removes_the_key_and_key_shaped_strings():
    msg = "Incorrect API key provided: my-secret-key-42. Also sk-proj-abc123XYZ and sk-ant-z9z9z9"
    out = redact(msg, ["my-secret-key-42", None])
    assert "my-secret-key-42" not in out and "abc123XYZ" not in out and "z9z9z9" not in out
    assert "Incorrect API key provided" in out


# ---- request shape ---------------------------------------------------------------------------

async def test_prefill_with_choices_becomes_an_answer_line_and_logprobs_are_asked(fake_server):
    srv = fake_server()
    p = provider(srv)
    out = await p.generate(judge_request(1, "B"))
    body = srv.requests[-1].body
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user"]  # no assistant prefill turn in instruct mode
    assert body["messages"][-1]["content"].endswith("A or B.\n\nAnswer with a single letter.")
    assert "The better response is" not in body["messages"][-1]["content"]
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert body["max_tokens"] == 8 and body["temperature"] == 0.0 and body["model"] == "fake-model"
    assert out.text == "B"
    await p.aclose()


async def test_score_choices_get_a_list_line_and_no_choices_no_logprobs(fake_server):
    srv = fake_server(answer="4")
    p = provider(srv)
    await p.generate(judge_request(2, choices=("1", "2", "3", "4", "5"), prefill="Score:"))
    assert srv.requests[-1].body["messages"][-1]["content"].endswith(
        "\n\nAnswer with only one of: 1, 2, 3, 4, 5.")
    gen = judge_request(3, choices=(), prefill="")
    await p.generate(gen)
    body = srv.requests[-1].body
    assert "logprobs" not in body
    assert body["messages"][-1]["content"] == gen.messages[-1].content  # untouched
    await p.aclose()


async def test_assistant_prefill_mode_sends_a_partial_assistant_turn(fake_server):
    srv = fake_server()
    p = provider(srv, prefill="assistant")
    await p.generate(judge_request(4, "A"))
    body = srv.requests[-1].body
    assert body["messages"][-1] == {"role": "assistant",
                                    "content": "The better response is Response"}
    assert body["continue_final_message"] is True and body["add_generation_prompt"] is False
    assert "Answer with a single letter." not in body["messages"][1]["content"]
    await p.aclose()


async def test_a_server_returning_the_prefill_with_its_answer_has_it_cut_off(fake_server):
    """llama.cpp's server answers a request ending in an assistant turn with that turn and
    its continuation ("The better response is Response A."). Read as the answer, it named
    no choice: against a real llama.cpp server with prefill=assistant and logprobs=off,
    every verdict was invalid (tests/llm/test_llamacpp_http.py, on the real server)."""
    srv = fake_server(echo_prefill=True)
    p = provider(srv, prefill="assistant", logprobs="off")
    for good in ("A", "B"):
        out = await p.generate(judge_request(5, good))
        assert out.text.strip() == f"{good}."
        assert parse_choice(out.text) == good
    plain = provider(srv, logprobs="off")  # instruct mode sends no assistant turn: untouched
    assert (await plain.generate(judge_request(6, "A"))).text == "A"
    await p.aclose()
    await plain.aclose()


async def test_temperature_param_overrides_the_request(fake_server):
    srv = fake_server()
    p = provider(srv, temperature="0.7")
    await p.generate(judge_request(5))
    assert srv.requests[-1].body["temperature"] == 0.7
    await p.aclose()


# ---- probabilities, labels, usage, cost ---------------------------------------------------

async def test_probs_come_from_the_first_token_logprobs(fake_server):
    srv = fake_server(confidence=0.7)  # server: P(answer)=0.7, P(" other")=0.3*0.8
    p = provider(srv)
    out = await p.generate(judge_request(6, "A"))
    assert out.text == "A"
    assert out.probs == pytest.approx({"A": 0.7 / 0.94, "B": 0.24 / 0.94})
    out = await p.generate(judge_request(7, "B"))
    assert out.probs == pytest.approx({"A": 0.24 / 0.94, "B": 0.7 / 0.94})
    await p.aclose()


@pytest.mark.parametrize("label", ["C", "Both", "", "I think the first one is better."])
async def test_wrong_labels_come_back_as_the_server_text(fake_server, label):
    srv = fake_server(answer=label)
    p = provider(srv)
    out = await p.generate(judge_request(8, "A"))
    assert out.text == label  # not coerced to A/B
    assert out.probs is None  # the generated token is not a choice
    await p.aclose()


async def test_server_rejecting_logprobs_is_retried_once_without_and_remembered(fake_server):
    srv = fake_server(reject_logprobs=True)
    p = provider(srv)
    out = await p.generate(judge_request(9, "A"))
    assert out.text == "A" and out.probs is None
    assert [r.status for r in srv.requests] == [400, 200]
    assert srv.requests[0].body["logprobs"] is True and "logprobs" not in srv.requests[1].body
    await p.generate(judge_request(10, "B"))
    assert srv.count() == 3 and "logprobs" not in srv.requests[2].body  # remembered
    await p.aclose()


async def test_a_server_allowing_fewer_top_logprobs_is_asked_for_what_it_allows(fake_server):
    """text-generation-inference allows 5 top logprobs unless told otherwise and answers 422
    to 20: every call failed as a bad request. Now the provider asks for the 5 it allows
    (and remembers), and the verdict keeps its probabilities."""
    srv = fake_server(max_top_logprobs=5, confidence=0.7)
    p = provider(srv)
    out = await p.generate(judge_request(11, "A"))
    assert [r.status for r in srv.requests] == [422, 200]
    assert srv.requests[1].body["top_logprobs"] == 5
    assert out.probs == pytest.approx({"A": 0.7 / 0.94, "B": 0.24 / 0.94})
    await p.generate(judge_request(12, "B"))
    assert srv.count() == 3 and srv.requests[2].body["top_logprobs"] == 5  # remembered
    await p.aclose()


async def test_a_server_refusing_temperature_0_gets_a_nearly_greedy_one(fake_server, caplog):
    """text-generation-inference before 2.0.1 refused temperature 0 ("must be strictly
    positive"): the 422 failed every call. Dropping the temperature would sample at the
    server's default of 1, so 0 is sent as NEARLY_GREEDY instead, once warned."""
    srv = fake_server(positive_temperature=True, tgi=True)
    p = provider(srv)
    out = await p.generate(judge_request(13, "A"))
    assert out.text == "A"
    assert [r.status for r in srv.requests] == [422, 200]
    assert srv.requests[1].body["temperature"] == NEARLY_GREEDY
    await p.generate(judge_request(14, "B"))
    assert srv.count() == 3 and srv.requests[2].body["temperature"] == NEARLY_GREEDY
    assert caplog.text.count("rejects temperature 0") == 1
    await p.aclose()


async def test_a_server_forbidding_the_logprobs_fields_is_asked_without_them(fake_server):
    """Mistral's API refuses fields it does not take with a 422 whose message is a list of
    pydantic errors (not a string); before, a 422 was never adapted: every call failed."""
    srv = fake_server(forbid_params={"logprobs", "top_logprobs"})
    p = provider(srv)
    out = await p.generate(judge_request(15, "A"))
    assert out.text == "A" and out.probs is None
    assert [r.status for r in srv.requests] == [422, 200]
    assert "logprobs" not in srv.requests[1].body
    await p.aclose()


@pytest.mark.parametrize(("message", "limit"), [
    ("Input validation error: `top_n_tokens` must be >= 0 and <= 5. Given: 20", 5),
    ("Requested sample logprobs of 20, which is greater than max allowed: 8 "
     "(parameter=logprobs, value=20)", 8),  # vLLM started with --max-logprobs 8
    ("Invalid value for 'top_logprobs': must be less than or equal to 5.", 5),  # Azure
    ("top_logprobs must be less than or equal to 10", 10),
    ("Logprobs is not enabled for models/gemini-2.5-pro", None),  # Gemini: none at all
    ("logprobs is not supported by this model", None),
    ("`top_n_tokens` != 0 is not allowed for this endpoint", None),
    ("max_tokens must be <= 4096", None),
])
def test_the_limit_a_refusal_of_top_logprobs_names(message, limit):
    assert top_logprobs_limit(message.lower()) == limit


async def test_logprobs_off_never_asks(fake_server):
    srv = fake_server()
    p = provider(srv, logprobs="off")
    out = await p.generate(judge_request(11, "A"))
    assert "logprobs" not in srv.requests[-1].body and out.probs is None and out.text == "A"
    await p.aclose()


async def test_usage_and_cost_accounting(fake_server):
    srv = fake_server()
    p = provider(srv, price_in="1.5", price_out="6")
    assert p.price_per_mtok == (1.5, 6.0)
    client = Client(p, concurrency=4)
    reqs = [judge_request(i, "AB"[i % 2]) for i in range(6)]
    outs = await client.map(reqs)
    words = [len(r.prompt_text.split()) for r in srv.requests]  # the server counts words
    assert sum(o.usage.prompt_tokens for o in outs) == sum(words)
    assert client.stats.prompt_tokens == sum(words) and client.stats.completion_tokens == 6
    assert client.stats.cost_usd == pytest.approx((sum(words) * 1.5 + 6 * 6.0) / 1e6)
    await client.aclose()


def test_builtin_prices_apply_to_hosted_models_only():
    hosted = OpenAIProvider("gpt-4o-mini", {"api_key": "k"})
    assert hosted.price_per_mtok == (0.15, 0.60)
    assert OpenAIProvider("gpt-4o-mini-2024-07-18", {}).price_per_mtok == (0.15, 0.60)
    assert OpenAIProvider("gpt-4o", {}).price_per_mtok == (2.50, 10.00)
    assert OpenAIProvider("my-finetune", {}).price_per_mtok is None
    local = OpenAIProvider("gpt-4o-mini", {"base_url": "http://127.0.0.1:9/v1"})
    assert local.price_per_mtok is None
    with pytest.raises(ValueError, match="price_in and price_out"):
        OpenAIProvider("m", {"price_in": "1"})


# ---- keys --------------------------------------------------------------------------------------

async def test_missing_key_is_fatal_and_names_the_env_var():
    p = make_provider("openai", "gpt-4o-mini", {})  # hosted, no key anywhere
    with pytest.raises(FatalProviderError, match=r"\$OPENAI_API_KEY"):
        await p.generate(judge_request(1))
    client = Client(p)  # before any call: bad input (exit 2), as a malformed key is
    with pytest.raises(ValueError, match=r"\$OPENAI_API_KEY"):
        await client.call(judge_request(1))
    assert client.stats.retries == 0


async def test_key_from_param_env_or_empty_for_local_servers(fake_server, monkeypatch):
    srv = fake_server()
    p = make_provider("openai", "m", {"base_url": srv.openai_url})
    await p.generate(judge_request(1))
    assert sent_key(srv.requests[-1].headers) == "EMPTY"
    monkeypatch.setenv("OPENAI_API_KEY", "env-key-777")
    p2 = make_provider("openai", "m", {"base_url": srv.openai_url})
    await p2.generate(judge_request(2))
    assert srv.requests[-1].headers["authorization"] == "Bearer env-key-777"
    p3 = provider(srv)  # the param wins over the environment
    await p3.generate(judge_request(3))
    assert srv.requests[-1].headers["authorization"] == "Bearer test-key-123"
    for x in (p, p2, p3):
        await x.aclose()


def test_cache_identity_excludes_secrets_and_operational_params():
    base = {"base_url": "http://127.0.0.1:1/v1", "temperature": "0"}
    a = OpenAIProvider("m", {**base, "api_key": "one", "timeout": "5"})
    b = OpenAIProvider("m", {**base, "api_key": "two", "timeout": "90", "max_connections": "8",
                             "price_in": "1", "price_out": "2"})
    req = judge_request(1)
    assert request_key(a, req) == request_key(b, req)
    assert "one" not in str(a.cache_identity())
    c = OpenAIProvider("m", {**base, "temperature": "0.5"})
    d = OpenAIProvider("m", {"base_url": "http://127.0.0.1:2/v1", "temperature": "0"})
    assert len({request_key(x, req) for x in (a, c, d)}) == 3


@pytest.mark.parametrize("params, match", [
    ({"timeout": "abc"}, "timeout='abc'"),
    ({"timeout": "0"}, "timeout='0'"),
    ({"logprobs": "yes"}, "logprobs='yes'"),
    ({"prefill": "system"}, "prefill='system'"),
    ({"max_connections": "-3"}, "max_connections='-3'"),
])
def test_bad_params_are_named(params, match):
    with pytest.raises(ValueError, match=match):
        OpenAIProvider("m", params)


# ---- error mapping ----------------------------------------------------------------------------

@pytest.mark.parametrize("fault, retryable", [
    ("429", True), ("500", True), ("503", True), ("drop", True), ("non_json", True),
    ("no_choices", True), ("400", False), ("401", False),
])
async def test_error_mapping(fake_server, fault, retryable):
    srv = fake_server(faults=[fault], retry_after="3")
    p = provider(srv)
    with pytest.raises(ProviderError) as ei:
        await p.generate(judge_request(1))
    err = ei.value
    assert err.retryable is retryable
    assert isinstance(err, FatalProviderError) is (not retryable)
    assert err.retry_after == (3.0 if fault == "429" else None)
    assert "test-key-123" not in str(err)
    out = await p.generate(judge_request(1))  # the next attempt is served normally
    assert out.text in ("A", "B")
    await p.aclose()


@pytest.mark.parametrize("body", [
    b'{"choices": []}', b'{"choices": ["A"]}', b'[1, 2]', b'{"choices": [{"message": null}]}',
    b'{"id": "x", "choices": [{"message": {"content": "A"}', b"",
])
def test_malformed_bodies_are_retryable_errors(body):
    p = OpenAIProvider("m", {"base_url": "http://127.0.0.1:1/v1"})
    with pytest.raises(ProviderError, match="malformed response") as ei:
        p.parse_body(body, judge_request(1))
    assert ei.value.retryable and not isinstance(ei.value, FatalProviderError)


def test_null_content_and_missing_top_logprobs_are_not_errors():
    p = OpenAIProvider("m", {"base_url": "http://127.0.0.1:1/v1"})
    body = (b'{"choices": [{"message": {"content": null, "refusal": "no"}, '
            b'"logprobs": {"content": [{"token": "I", "logprob": -0.1}]}}]}')
    out = p.parse_body(body, judge_request(1))
    assert out.text == "" and out.probs is None and out.usage.prompt_tokens == 0


async def test_timeout_is_retryable(fake_server):
    srv = fake_server(faults=["hang"], hang_seconds=5)
    p = provider(srv, timeout="0.3")
    with pytest.raises(ProviderError, match="within 0.3s") as ei:
        await p.generate(judge_request(1))
    assert ei.value.retryable
    await p.aclose()


async def test_unauthorised_message_hides_the_key(fake_server):
    srv = fake_server(api_keys={"the-right-key"})
    p = make_provider("openai", "m", {"base_url": srv.openai_url, "api_key": "wrong-key-abc987"})
    with pytest.raises(FatalProviderError) as ei:
        await p.generate(judge_request(1))
    msg = str(ei.value)
    assert "401" in msg and "OPENAI_API_KEY" in msg and "wrong-key-abc987" not in msg
    assert srv.requests[-1].headers["authorization"] == "Bearer wrong-key-abc987"
    await p.aclose()


async def test_sdk_client_is_rebuilt_for_a_new_event_loop(fake_server):
    """The CLI may run several asyncio.run() in one process; a pool bound to a closed loop
    must not be reused."""
    import asyncio
    import threading

    srv = fake_server()
    p = provider(srv)
    await p.generate(judge_request(1))
    result: list[str] = []
    t = threading.Thread(target=lambda: result.append(
        asyncio.run(p.generate(judge_request(2, "B"))).text))
    t.start()
    t.join(30)
    assert result == ["B"] and srv.count() == 2


def test_sdks_are_imported_lazily():
    code = ("import sys, judgeaudit.llm.providers.openai, judgeaudit.llm.providers.anthropic;"
            "print('openai' in sys.modules, 'anthropic' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={"PYTHONPATH": str(SRC)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "False"]


def test_marker_policy_sanity():
    # The fake server's default policy answers the side holding the marker (used throughout).
    from fakeserver import default_answer

    assert default_answer(f"Response A:\nx {GOOD}\n\nResponse B:\ny") == "A"
    assert default_answer(f"Response A:\nx\n\nResponse B:\ny {GOOD}") == "B"

