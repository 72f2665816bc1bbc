"""Several OpenAI-compatible servers behind one spec (`base_url=URL1|URL2|...`): calls spread
by fewest in flight, at most `per_server` at a time on each; a server that dies (connection
refused, or reset on every call) is left out for `down_for` seconds and its calls go to the
others at once; it is used again once it is back."""

from __future__ import annotations

import asyncio
import time

import pytest
from fakeserver import judge_request

from judgeaudit.llm import Cache, CallFailed, Client, make_provider
from judgeaudit.llm.base import request_key

pytestmark = pytest.mark.usefixtures("no_key_env")


def spread(servers, **params: str):
    urls = "|".join(s.openai_url for s in servers)
    return make_provider("openai", "fake", {"base_url": urls, "api_key": "k", **params})


def requests(n: int, start: int = 0):
    return [judge_request(i, "AB"[i % 2]) for i in range(start, start + n)]


async def test_calls_spread_over_servers_within_per_server(fake_server):
    servers = [fake_server(latency=0.03) for _ in range(3)]
    p = spread(servers, per_server="2")
    client = Client(p, concurrency=12)
    outs = await client.map(requests(90))
    await client.aclose()
    assert [o.text for o in outs] == ["AB"[i % 2] for i in range(90)]
    counts = [s.count() for s in servers]
    assert sum(counts) == 90 and min(counts) >= 25  # spread about evenly
    assert all(s.max_inflight <= 2 for s in servers)
    assert max(s.max_inflight for s in servers) == 2
    assert [srv.calls for srv in p.servers] == counts


async def test_fewest_in_flight_first(fake_server):
    slow, fast = fake_server(latency=0.3), fake_server(latency=0.005)
    client = Client(spread([slow, fast]), concurrency=4)
    await client.map(requests(40))
    await client.aclose()
    # The slow server holds its calls longer, so the fast one is freer and takes most.
    assert fast.count() > 3 * slow.count()


async def test_a_dead_server_is_left_out_and_its_calls_go_elsewhere(fake_server):
    a, b, c = (fake_server(latency=0.01) for _ in range(3))
    p = spread([a, b, c], down_for="0.6")
    client = Client(p, concurrency=6)
    port = b.port
    b.stop()  # connection refused from now on
    outs = await client.map(requests(60))
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert client.stats.failed == 0 and client.stats.retries == 0  # failed over inside
    assert a.count() + c.count() == 60
    dead = p.servers[1]
    assert dead.fails >= 2 and dead.down_until > time.monotonic() - 1
    # Back up on the same port: used again once down_for has passed.
    b2 = fake_server(latency=0.01, port=port)
    await asyncio.sleep(0.7)
    outs = await client.map(requests(30, start=100))
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert b2.count() >= 5
    await client.aclose()


async def test_a_server_resetting_every_connection_is_left_out(fake_server):
    good = fake_server(latency=0.01)
    bad = fake_server(rule=lambda rec, attempt: "drop")
    p = spread([good, bad], down_for="30")
    client = Client(p, concurrency=4)
    outs = await client.map(requests(40))
    await client.aclose()
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert good.count() == 40
    assert bad.count() <= 4  # two resets in a row (per call in flight) and it is left out
    assert p.servers[1].down_until > time.monotonic()


async def test_all_servers_down_fails_the_call_as_a_connection_error(fake_server):
    a, b = fake_server(), fake_server()
    p = spread([a, b])
    a.stop()
    b.stop()
    from judgeaudit.llm import RetryPolicy

    client = Client(p, retry=RetryPolicy(max_retries=1, base_delay=0.01))
    with pytest.raises(CallFailed) as err:
        await client.call(judge_request(1))
    assert err.value.kind == "connection" and not err.value.fatal
    await client.aclose()


def test_the_list_is_checked_and_keys_follow_the_spec(tmp_path):
    with pytest.raises(ValueError, match="empty entry"):
        make_provider("openai", "m", {"base_url": "http://a:1/v1||http://b:2/v1"})
    with pytest.raises(ValueError, match="expected http"):
        make_provider("openai", "m", {"base_url": "http://a:1/v1|localhost:8000"})
    two = make_provider("openai", "m", {"base_url": "http://a:1/v1|http://b:2/v1",
                                        "per_server": "4", "down_for": "5"})
    same = make_provider("openai", "m", {"base_url": "http://a:1/v1|http://b:2/v1"})
    # per_server and down_for change how calls are made, not what comes back
    assert request_key(two, judge_request(1)) == request_key(same, judge_request(1))
    assert "2 servers" in two.where
    Cache(tmp_path / "c.sqlite").close()
