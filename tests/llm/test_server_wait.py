"""`wait=SECONDS` on an OpenAI-compatible judge: a server that is still starting (vLLM or TGI
loading a model refuse connections, llama.cpp answers 503 "Loading model") is waited for
before the first call, instead of the run failing with "could not be reached" when loading
takes longer than the retries wait (a script that starts `vllm serve` and then the audit).
Real servers on loopback: one that answers 503 while it "loads", and one that opens its port
late."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest
from fakeserver import FakeLLMServer, judge_request

from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
# Retries that give up within about a second: a model load takes longer than that here.
QUICK = RetryPolicy(max_retries=2, base_delay=0.05, max_delay=0.1)


def provider(url: str, **params: str):
    return make_provider("openai", "fake", {"base_url": url, "api_key": "k", **params})


def requests(n: int):
    return [judge_request(i, "AB"[i % 2]) for i in range(n)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_a_server_still_loading_is_waited_for(fake_server):
    srv = fake_server(loading_for=2.5)
    client = Client(provider(srv.openai_url, wait="30"), concurrency=4, retry=QUICK)
    t0 = time.monotonic()
    outs = await client.map(requests(12))
    assert not any(isinstance(o, CallFailed) for o in outs)
    assert 2.5 <= time.monotonic() - t0 < 15
    assert client.stats.made == 12 and client.stats.errors == {}
    assert srv.count() == 12  # no call was sent (and paid for) before it was up
    assert srv.gets >= 2  # asked until it answered
    await client.aclose()


async def test_without_wait_the_same_server_fails_the_calls(fake_server):
    srv = fake_server(loading_for=2.5)
    client = Client(provider(srv.openai_url), concurrency=4, retry=QUICK)
    outs = await client.map(requests(12))
    assert all(isinstance(o, CallFailed) for o in outs)
    assert client.stats.errors.get("server", 0) > 0
    # ... and says what would have helped
    assert "Loading model; if the server is still starting (loading its model), let the " \
        "judge wait for it: wait=SECONDS in its spec" in str(outs[0])


async def test_a_refused_connection_names_the_wait_too():
    client = Client(provider(f"http://127.0.0.1:{free_port()}/v1"), retry=QUICK)
    with pytest.raises(CallFailed, match="wait=SECONDS in its spec"):
        await client.call(judge_request(1))


async def test_a_port_that_opens_late_is_waited_for():
    port = free_port()
    srv = FakeLLMServer(port=port)
    timer = threading.Timer(2.0, srv.start)  # the port opens 2 s from now
    timer.start()
    try:
        client = Client(provider(f"http://127.0.0.1:{port}/v1", wait="30"), concurrency=4,
                        retry=QUICK)
        outs = await client.map(requests(8))
        assert not any(isinstance(o, CallFailed) for o in outs)
        assert client.stats.made == 8 and srv.count() == 8
        await client.aclose()
    finally:
        timer.join()
        srv.stop()


async def test_a_server_that_never_comes_up_fails_once_the_wait_is_over():
    port = free_port()  # nobody listens
    client = Client(provider(f"http://127.0.0.1:{port}/v1", wait="1.5"), concurrency=4,
                    retry=QUICK)
    t0 = time.monotonic()
    with pytest.raises(CallFailed) as err:  # fatal: the map stops
        await client.map(requests(8))
    took = time.monotonic() - t0
    msg = str(err.value)
    assert err.value.fatal and err.value.kind == "connection"
    assert msg.startswith("openai: the server did not come up within wait=1.5 s (last: "
                          "connection to http://127.0.0.1:")
    assert "wait=SECONDS" in msg
    assert 1.5 <= took < 10
    assert client.stats.retries == 0  # nothing retried: the wait was the retrying


async def test_a_server_that_is_up_costs_one_check_and_no_delay(fake_server):
    srv = fake_server()
    client = Client(provider(srv.openai_url, wait="600"), concurrency=4)
    t0 = time.monotonic()
    await client.map(requests(8))
    assert time.monotonic() - t0 < 5
    assert srv.gets == 1 and srv.count() == 8
    await asyncio.gather(client.call(judge_request(100)), client.call(judge_request(101)))
    assert srv.gets == 1  # checked once, not per call
    await client.aclose()


@pytest.mark.parametrize("bad", ["-1", "soon", "inf", "nan"])
def test_wait_must_be_a_number_of_seconds(bad):
    with pytest.raises(ValueError, match="wait"):
        provider("http://127.0.0.1:9/v1", wait=bad)


def test_wait_is_not_part_of_the_cache_key():
    plain = provider("http://127.0.0.1:9/v1")
    waiting = provider("http://127.0.0.1:9/v1", wait="120")
    assert plain.cache_identity() == waiting.cache_identity()
