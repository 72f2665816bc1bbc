"""The client's breaker (`RetryPolicy.stop_after`): a server that cannot be reached, or has
stopped answering, is not asked again for the rest of the run. The remaining calls fail at
once as `not_sent` instead of each waiting out its retries, which for a run of hundreds of
calls against a wrong port took minutes. Scattered failures between answers never stop a
client.

Real servers on loopback (tests/llm/fakeserver.py); "unreachable" is a port nobody listens
on, and a server whose every reply is a dropped connection."""

from __future__ import annotations

import asyncio
import re
import socket

import pytest
from fakeserver import dropping_port, judge_request

from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"base_delay": 0.005, "max_delay": 0.02}


def provider(url: str):
    return make_provider("openai", "fake", {"base_url": url, "api_key": "k"})


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def requests(n: int, start: int = 0):
    return [judge_request(i, "AB"[i % 2]) for i in range(start, start + n)]


def items_sent(srv, since: int = 0) -> set[str]:
    """The items (by their `question item N` line) the server was asked about."""
    return {re.search(r"question item (\d+)", r.prompt_text).group(1)
            for r in srv.snapshot()[since:]}


async def test_unreachable_server_stops_after_the_first_call_gives_up(fake_server):
    srv = fake_server(rule=lambda rec, attempt: "drop")  # accepts, then closes: no answer
    client = Client(provider(srv.openai_url), concurrency=4,
                    retry=RetryPolicy(max_retries=2, **FAST))
    outs = await client.map(requests(50))
    assert all(isinstance(o, CallFailed) and o.kind == "connection" for o in outs)
    assert any("could not be reached" in str(o) for o in outs)
    s = client.stats
    assert s.failed == 50 and s.made == 0 and s.not_sent == 50 - len(items_sent(srv))
    assert s.errors == {"connection": srv.count()}  # every attempt counted
    assert srv.count() == len(items_sent(srv)) + s.retries  # a stopped retry is no retry
    # What comes after (the next stage of a pipeline) is not sent, and says why.
    before, not_sent = srv.count(), s.not_sent
    outs = await client.map(requests(200, start=100))
    assert all(isinstance(o, CallFailed) and "not sent: the server could not be reached"
               in str(o) for o in outs)
    assert srv.count() == before and client.stats.not_sent == not_sent + 200
    assert client.stats.failed == 250
    await client.aclose()


async def test_nothing_listening_is_unreachable_too():
    client = Client(provider(f"http://127.0.0.1:{closed_port()}/v1"), concurrency=4,
                    retry=RetryPolicy(max_retries=1, **FAST))
    outs = await client.map(requests(10))
    assert all(isinstance(o, CallFailed) for o in outs)
    with pytest.raises(CallFailed, match="could not be reached"):
        await client.call(judge_request(99))
    assert client.stats.not_sent >= 1
    await client.aclose()


async def test_a_server_that_never_answers_in_time_stops_the_client_and_says_so(fake_server):
    """Accepted connections but no answer within the client's timeout, not once: the client
    stops and says a slow server needs a longer timeout."""
    srv = fake_server(rule=lambda rec, attempt: "hang", hang_seconds=5)
    client = Client(provider(srv.openai_url), concurrency=2, timeout=0.2,
                    retry=RetryPolicy(max_retries=1, **FAST))
    outs = await client.map(requests(6))
    assert all(isinstance(o, CallFailed) and o.kind == "timeout" for o in outs)
    before = srv.count()
    with pytest.raises(CallFailed, match="never answered in time .*--timeout"):
        await client.call(judge_request(99))
    assert srv.count() == before
    await client.aclose()


async def test_calls_waiting_to_retry_stop_waiting_when_the_client_stops(fake_server):
    """Item 0's connection is dropped every time; item 1 is told to come back in 60 s
    (429, Retry-After: 60) while item 0's last attempt is under way. When item 0 gives up
    the client stops, and item 1 stops waiting at once instead of a minute later. (A 429's
    wait holds every call's next attempt, so item 0's last attempt must be under way when
    the 429 comes: it is answered slowly, the 429 a little less slowly.)"""

    def rule(rec, attempt):
        return "drop" if "question item 0\n" in rec.prompt_text else "429"

    def delay(rec, attempt):
        if "question item 0\n" in rec.prompt_text:
            return 2.0 if attempt else 0.0
        return 1.0

    srv = fake_server(rule=rule, delay_rule=delay, retry_after="60")
    client = Client(provider(srv.openai_url), concurrency=2,
                    retry=RetryPolicy(max_retries=1, stop_after=1, **FAST))
    outs = await asyncio.wait_for(client.map(requests(2)), timeout=30)
    assert all(isinstance(o, CallFailed) for o in outs)
    assert "not sent" in str(outs[1])
    assert srv.count() == 3  # item 0 twice, item 1 once
    await client.aclose()


async def test_a_server_that_stops_answering_stops_the_client_after_stop_after_calls(
        fake_server):
    down = {"on": False}
    srv = fake_server(rule=lambda rec, attempt: "500" if down["on"] else None)
    client = Client(provider(srv.openai_url), concurrency=2,
                    retry=RetryPolicy(max_retries=1, stop_after=5, **FAST))
    outs = await client.map(requests(20))
    assert not any(isinstance(o, CallFailed) for o in outs) and client.stats.made == 20
    mark = srv.count()
    down["on"] = True
    outs = await client.map(requests(100, start=100))
    assert all(isinstance(o, CallFailed) for o in outs)
    sent = items_sent(srv, since=mark)
    # The server had answered, and a 500 is no sign of a wrong address: it took 5 calls in
    # a row giving up before the client stopped.
    assert len(sent) >= 5 and client.stats.not_sent == 100 - len(sent)
    assert any("stopped answering (5 calls in a row gave up)" in str(o) for o in outs)
    before = srv.count()
    with pytest.raises(CallFailed, match="not sent: the server stopped answering"):
        await client.call(judge_request(999))
    assert srv.count() == before
    await client.aclose()


async def test_scattered_failures_between_answers_never_stop_the_client(fake_server):
    bad = {"3", "4", "10", "20", "21"}

    def rule(rec, attempt):
        m = re.search(r"question item (\d+)", rec.prompt_text)
        return "500" if m and m.group(1) in bad else None

    srv = fake_server(rule=rule)
    client = Client(provider(srv.openai_url), concurrency=1,
                    retry=RetryPolicy(max_retries=0, stop_after=3, **FAST))
    outs = await client.map(requests(30))
    failed = {str(i) for i, o in enumerate(outs) if isinstance(o, CallFailed)}
    assert failed == bad
    assert client.stats.not_sent == 0 and client.stats.made == 25
    assert items_sent(srv) == {str(i) for i in range(30)}
    await client.aclose()


async def test_stop_after_0_keeps_asking(fake_server):
    srv = fake_server(rule=lambda rec, attempt: "drop")
    client = Client(provider(srv.openai_url), concurrency=2,
                    retry=RetryPolicy(max_retries=1, stop_after=0, **FAST))
    outs = await client.map(requests(12))
    assert all(isinstance(o, CallFailed) for o in outs)
    assert client.stats.not_sent == 0 and srv.count() == 24  # every call, every attempt
    await client.aclose()


def test_the_run_outcome_says_how_many_calls_were_not_sent(tmp_path):
    """Through the Python API: an audit against a port nobody listens on fails (nothing
    judged) after its first stage; its reason says how many calls were not sent and that a
    re-run resumes."""
    import judgeaudit

    res = judgeaudit.audit(f"openai:m?base_url=http://127.0.0.1:{closed_port()}/v1&api_key=k",
                           "builtin:facts", probes="position,verbosity", n=10, cache=False,
                           retry=RetryPolicy(max_retries=1, **FAST))
    assert not res.ok
    calls = res.calls
    assert calls["made"] == 0 and 0 < calls["not_sent"] < calls["failed"]
    assert f"{calls['not_sent']} of them not sent" in res.reason
    assert "finished calls are cached" in res.reason
    page = res.html()
    assert f"{calls['not_sent']} not sent: the server kept failing (failed attempts: " in page


def test_an_adaptive_audit_sends_no_further_round_once_the_server_stops():
    """An adaptive audit against a port nobody listens on ends after its first round (its
    calls fail at once); before, it went through every round up to max-n (10 here)."""
    import judgeaudit

    res = judgeaudit.audit(f"openai:m?base_url=http://127.0.0.1:{closed_port()}/v1&api_key=k",
                           "builtin:facts", probes="position", adaptive=True, max_n=200,
                           round_size=20, cache=False, retry=RetryPolicy(max_retries=1, **FAST))
    assert not res.ok
    ad = res["adaptive"]
    assert (ad["rounds"], ad["stopped_by"]) == (1, "server not answering")
    assert res["probes"]["position"]["adaptive"]["stop_reason"] == "not_sent"


async def test_a_session_asks_a_server_again_in_its_next_command(fake_server, tmp_path):
    """A notebook's Session: the server was down for one command (the breaker stopped it);
    once it is back, the next command of the same Session is sent and succeeds."""
    import judgeaudit
    from judgeaudit.session import Session

    down = {"on": True}
    srv = fake_server(rule=lambda rec, attempt: "drop" if down["on"] else None)
    spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
    async with Session(cache=False, retry=RetryPolicy(max_retries=1, **FAST)) as s:
        first = await judgeaudit.aevaluate(spec, "builtin:facts", limit=10, session=s)
        assert not first.ok
        assert "could not be reached" in (s.judges[spec].client.stopped or "")
        down["on"] = False
        second = await judgeaudit.aevaluate(spec, "builtin:facts", limit=10, session=s)
    assert second.ok, second.reason
    assert second.calls["made"] == 20 and second.calls["failed"] == 0


async def test_a_host_that_drops_connection_requests_is_unreachable_within_the_connect_cap(
        monkeypatch):
    """Connecting is capped apart from the call's timeout (CONNECT_TIMEOUT, 10 s; 0.3 s
    here): with timeout=30 each attempt waited 30 s before, so the first call gave up after
    minutes; now it fails as a connection error and the client stops as unreachable."""
    import time

    from judgeaudit.llm.providers import openai as openai_module

    monkeypatch.setattr(openai_module, "CONNECT_TIMEOUT", 0.3)
    with dropping_port() as port:
        p = make_provider("openai", "m", {"base_url": f"http://127.0.0.1:{port}/v1",
                                          "api_key": "k", "timeout": "30"})
        client = Client(p, retry=RetryPolicy(max_retries=1, **FAST))
        t0 = time.monotonic()
        with pytest.raises(CallFailed) as err:
            await client.call(judge_request(0))
        assert time.monotonic() - t0 < 5
        assert err.value.kind == "connection"
        assert "no answer to connecting within 0.3s" in str(err.value)
        assert "could not be reached" in (client.stopped or "")
        await client.aclose()


async def test_many_calls_to_a_host_that_never_answers_stop_after_one_retry_window(
        monkeypatch):
    """50 calls, 8 at a time, to a host that drops connection requests (each attempt waits
    out the connect cap, 0.3 s here). The calls share the 8 slots, so the first to use up its
    own 7 attempts came after hundreds of attempts of the others (minutes at the real caps).
    Now the client stops once its attempts have failed, with nothing answered, for one
    call's retry window: two waves of attempts here, the other calls not sent."""
    from judgeaudit.llm.providers import openai as openai_module

    monkeypatch.setattr(openai_module, "CONNECT_TIMEOUT", 0.3)
    with dropping_port() as port:
        p = make_provider("openai", "m", {"base_url": f"http://127.0.0.1:{port}/v1",
                                          "api_key": "k"})
        client = Client(p, concurrency=8, retry=RetryPolicy(max_retries=6, **FAST))
        outs = await client.map(requests(50))
        await client.aclose()
    assert all(isinstance(o, CallFailed) for o in outs)
    s = client.stats
    attempts = sum(s.errors.values())
    assert attempts <= 4 * 8, s.errors  # a wave or two more at most, never 7 per call
    assert s.not_sent >= 50 - attempts and s.not_sent > 0
    assert "could not be reached" in (client.stopped or "")
