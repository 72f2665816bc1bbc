"""A 429's Retry-After limits the whole account, not the one call that got it. Each call used
to wait on its own: with 40 calls at --concurrency 2 and a server rate limiting for its
first seconds, every call went out within a second of the first 429, each got its own 429,
and all were sent again at once (80 requests for 40 calls). Now, after a 429 that says how
long to wait, no attempt of any call starts until that wait has passed, then calls resume
as the concurrency slots allow; a long wait is said once (it was silent for 120 s).

Real servers on loopback; the only timing asserted is a lower bound (the wait the server
asked for) with the server and the client on one clock."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest
from fakeserver import FakeLLMServer, Recorded, judge_request

from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")


def provider(srv: FakeLLMServer, kind: str = "openai"):
    if kind == "anthropic":
        return make_provider("anthropic", "claude-fake",
                             {"base_url": srv.anthropic_url, "api_key": "k"})
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k"})


def limited_for(seconds: float):
    """A rule that rate limits every request arriving in the first `seconds` after the
    first request (as an account's per-minute limit does), then answers."""
    first: list[float] = []

    def rule(rec: Recorded, attempt: int) -> str | None:
        if not first:
            first.append(rec.t_start)
        return "429" if rec.t_start < first[0] + seconds else None

    return rule


@pytest.mark.parametrize(("kind", "calls", "concurrency"), [
    ("openai", 12, 3), ("openai", 4, 1), ("anthropic", 10, 2)])
async def test_after_a_429_no_call_is_sent_until_its_retry_after_has_passed(
        fake_server, kind, calls, concurrency):
    retry_after = 2.0
    srv = fake_server(rule=limited_for(1.0), retry_after="2")
    client = Client(provider(srv, kind), concurrency=concurrency)
    outs = await client.map([judge_request(i) for i in range(calls)])
    assert not any(isinstance(o, CallFailed) for o in outs)
    recs = sorted(srv.snapshot(), key=lambda r: r.t_start)
    limited = [r for r in recs if r.status == 429]
    first_429 = min(r.t_end for r in limited)
    # the calls under way when the first 429 came, then each call once (was: each call 429'd)
    assert len(recs) <= calls + concurrency, [r.status for r in recs]
    assert len(limited) <= concurrency
    # No request but those already under way went out before the wait the server asked for
    # (the client waits from when it read the 429, after the server sent it).
    early = [round(r.t_start - first_429, 3) for r in recs[concurrency:]
             if r.t_start < first_429 + retry_after - 0.05]
    assert early == []
    assert srv.max_inflight <= concurrency  # resumed as slots allow, no burst
    st = client.stats
    assert st.made == calls and st.errors == {"rate_limit": len(limited)}
    assert st.retries == len(limited)
    await client.aclose()


async def test_a_retry_after_past_the_cap_waits_the_cap_and_says_so_once(fake_server, caplog):
    """Retry-After: 200 is waited for 120 s (`max_retry_after`), and the user is told once,
    however many calls in flight got the 429."""
    srv = fake_server(rule=lambda rec, attempt: "429", retry_after="200")
    client = Client(provider(srv), concurrency=3)
    caplog.set_level(logging.WARNING, logger="judgeaudit.llm")
    task = asyncio.ensure_future(client.map([judge_request(i) for i in range(9)]))

    def notices() -> list[str]:
        return [r.getMessage() for r in caplog.records if "rate limited" in r.getMessage()]

    t0 = time.monotonic()
    while not notices() and time.monotonic() - t0 < 20:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # the other calls' 429s arrive: the same wait, no new notice
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert notices() == [
        "openai: rate limited by the server: waiting 120 s (it asked for 200 s; capped at "
        "120 s) before sending more calls"]
    assert srv.count() <= 3  # the calls under way, then none
    assert client.stats.not_sent == 9 - srv.count()  # cancelled while waiting: never sent
    await client.aclose()


async def test_a_wait_longer_than_the_notice_threshold_is_said_as_asked(fake_server, caplog):
    srv = fake_server(faults=["429"], retry_after="15")
    client = Client(provider(srv), concurrency=1)
    caplog.set_level(logging.WARNING, logger="judgeaudit.llm")
    task = asyncio.ensure_future(client.call(judge_request(1)))
    t0 = time.monotonic()
    while not caplog.records and time.monotonic() - t0 < 20:
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [r.getMessage() for r in caplog.records] == [
        "openai: rate limited by the server: waiting 15 s (as it asked) before sending more "
        "calls"]
    await client.aclose()


async def test_a_short_wait_is_not_said(fake_server, caplog):
    srv = fake_server(faults=["429", "429"], retry_after="1")
    client = Client(provider(srv), concurrency=2)
    caplog.set_level(logging.WARNING, logger="judgeaudit.llm")
    outs = await client.map([judge_request(i) for i in range(4)])
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert caplog.records == []
    await client.aclose()


async def test_a_429_without_a_wait_backs_off_per_call_as_before(fake_server):
    """No Retry-After (and none in the message): each call backs off on its own, the other
    calls are not held up."""
    srv = fake_server(faults=["429"], retry_after="")
    client = Client(provider(srv), concurrency=2,
                    retry=RetryPolicy(base_delay=3.0, max_delay=3.0))
    t0 = time.monotonic()
    outs = await client.map([judge_request(i) for i in range(6)])
    assert not any(isinstance(o, CallFailed) for o in outs)
    recs = sorted(srv.snapshot(), key=lambda r: r.t_start)
    assert len(recs) == 7
    # the five other calls did not wait out the limited call's backoff (1.5 s at the least)
    assert sum(r.t_start - t0 < 1.4 for r in recs if r.status == 200) >= 5
    await client.aclose()


async def test_a_stop_ends_the_shared_wait(fake_server):
    """Calls held by a shared wait do not sit it out once the client stops sending (here the
    run's stop, as the spend cap or a quota of hours stops it): they fail as not sent."""
    srv = fake_server(faults=["429"], retry_after="60")
    client = Client(provider(srv), concurrency=1)
    task = asyncio.ensure_future(client.map([judge_request(i) for i in range(4)]))
    t0 = time.monotonic()
    while srv.count() < 1 and time.monotonic() - t0 < 10:
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.3)
    client._stop_for_run("test stop", "other")
    outs = await asyncio.wait_for(task, 10)
    assert all(isinstance(o, CallFailed) and "test stop" in str(o) for o in outs)
    assert srv.count() == 1 and client.stats.not_sent == 3
    await client.aclose()


def test_a_short_wait_made_long_by_a_later_429_is_said_once(caplog):
    """Two calls under way get 429s asking 5 s then 200 s: the wait becomes the capped 120 s
    and is said once; a new wait after it has passed is said again."""
    client = Client(make_provider("openai", "fake", {"base_url": "http://127.0.0.1:9/v1",
                                                     "api_key": "k"}))
    caplog.set_level(logging.WARNING, logger="judgeaudit.llm")
    client._pause(5.0, "rate_limit")
    assert caplog.records == []
    client._pause(200.0, "rate_limit")
    client._pause(150.0, "rate_limit")
    assert [r.getMessage() for r in caplog.records] == [
        "openai: rate limited by the server: waiting 120 s (it asked for 200 s; capped at "
        "120 s) before sending more calls"]
    assert client._pause_until - time.monotonic() > 100
    client._pause_until = time.monotonic() - 1  # that wait has passed
    client._pause(30.0, "server")
    assert caplog.records[-1].getMessage() == (
        "openai: the server asked to wait after a server error: waiting 30 s (as it asked) "
        "before sending more calls")
