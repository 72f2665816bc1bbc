"""Rate limits that say how long to wait. OpenAI states the wait in the 429's message ("Please
try again in 1m9.696s") rather than always in a Retry-After header; it was ignored, so a
tokens-per-day limit was retried on the short exponential backoff until each call gave up.
And a server asking to wait for hours (a daily quota) had every call wait the capped 120 s
per retry to hear the same again; the client now stops sending and the run says when to run
again. Real servers on loopback."""

from __future__ import annotations

import time

import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider
from judgeaudit.llm.providers.openai import retry_after_in_text

pytestmark = pytest.mark.usefixtures("no_key_env")


def provider(srv, kind: str = "openai"):
    if kind == "anthropic":
        return make_provider("anthropic", "claude-fake",
                             {"base_url": srv.anthropic_url, "api_key": "k"})
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k"})


@pytest.mark.parametrize(("text", "seconds"), [
    ("Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): Limit "
     "30000, Used 28770, Requested 2000. Please try again in 1.54s. Visit https://...", 1.54),
    ("... on requests per day (RPD): Limit 10000. Please try again in 1m9.696s. Visit", 69.696),
    ("Please try again in 579ms.", 0.579),
    ("Please try again in 6h0m0s.", 21600.0),
    ("Requests to the ChatCompletions_Create Operation have exceeded call rate limit. Please "
     "retry after 20 seconds.", 20.0),  # Azure
    ("Resource has been exhausted. Please retry in 39.48s.", 39.48),  # Gemini
    ("Rate limit reached, slow down", None),
    ("Please try again later.", None),
])
def test_the_wait_a_rate_limit_message_states_is_read(text, seconds):
    got = retry_after_in_text(text)
    assert got == pytest.approx(seconds) if seconds is not None else got is None


async def test_a_wait_named_only_in_the_message_is_honoured(fake_server):
    srv = fake_server(faults=["429"], retry_after="",
                      rate_limit_message="Rate limit reached. Please try again in 1.2s.")
    client = Client(provider(srv), retry=RetryPolicy(base_delay=0.01, max_delay=0.02))
    t0 = time.monotonic()
    assert (await client.call(judge_request(1))).text
    assert 1.2 <= time.monotonic() - t0 < 5  # not the 0.01 s backoff
    await client.aclose()


@pytest.mark.parametrize(("kind", "header", "message", "said"), [
    ("openai", "7200", "Rate limit reached, slow down", "2.0 h"),
    ("openai", "", "Rate limit reached for gpt-4o-mini on requests per day (RPD): Limit 10000, "
                   "Used 10000. Please try again in 6h0m0s.", "6.0 h"),
    ("anthropic", "1800", "Rate limit reached", "30 min"),
])
async def test_a_server_asking_to_wait_for_hours_is_not_asked_again(fake_server, kind, header,
                                                                    message, said):
    srv = fake_server(rule=lambda rec, attempt: "429", retry_after=header,
                      rate_limit_message=message)
    client = Client(provider(srv, kind), concurrency=2)
    t0 = time.monotonic()
    outs = await client.map([judge_request(i) for i in range(20)])
    assert time.monotonic() - t0 < 5  # no call sat out a capped 120 s wait
    assert all(isinstance(o, CallFailed) and o.kind == "rate_limit" and not o.fatal
               for o in outs)
    st = client.stats
    assert srv.count() <= 2 and st.retries == 0  # the calls under way, then none
    assert st.not_sent == 20 - srv.count()
    assert st.not_sent_why.startswith(f"the server asks to wait {said} before the next call")
    assert "run again then" in str(outs[-1])
    await client.aclose()


async def test_a_wait_under_the_longest_is_capped_and_retried_as_before(fake_server):
    srv = fake_server(faults=["429"], retry_after="300")  # 5 min: capped, not a stop
    client = Client(provider(srv), retry=RetryPolicy(max_retry_after=0.3))
    assert (await client.call(judge_request(1))).text
    assert client.stats.not_sent == 0 and client.stopped is None
    await client.aclose()


async def test_stop_after_0_never_stops_even_for_a_long_wait(fake_server):
    srv = fake_server(faults=["429"], retry_after="7200")
    client = Client(provider(srv), retry=RetryPolicy(max_retry_after=0.2, stop_after=0))
    assert (await client.call(judge_request(1))).text  # waited the cap, then answered
    await client.aclose()
