"""`judgeaudit.llm.Client` + the openai provider against a real loopback server that injects
faults: retries (and their count), Retry-After, give-up, fatal errors, the concurrency
bound and in-flight de-duplication."""

from __future__ import annotations

import asyncio
import time

import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallFailed, Client, Response, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = RetryPolicy(max_retries=5, base_delay=0.01, max_delay=0.05)


def openai(srv, **params):
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "client-key",
                                            **params})


async def test_run_with_every_kind_of_fault_finishes_with_correct_results(fake_server):
    faults = ["429", "500", "hang", "drop", "non_json", "503", "no_choices", "drop", "500", "429"]
    srv = fake_server(latency=0.01, faults=faults, retry_after="1", hang_seconds=10)
    client = Client(openai(srv, timeout="0.5"), concurrency=8, retry=FAST)
    goods = ["AB"[(i * 7) % 3 == 0] for i in range(40)]
    t0 = time.monotonic()
    outs = await client.map([judge_request(i, g) for i, g in enumerate(goods)])
    elapsed = time.monotonic() - t0

    assert all(isinstance(o, Response) for o in outs)
    assert [o.text for o in outs] == goods
    assert [max(o.probs, key=o.probs.get) for o in outs] == goods
    # Each scripted fault costs exactly one failed attempt and one retry; nothing else.
    s = client.stats
    assert (s.made, s.cached, s.retries, s.failed) == (40, 0, len(faults), 0)
    assert srv.count() == 40 + len(faults)
    assert sorted(r.fault for r in srv.requests if r.fault) == sorted(faults)
    assert s.completion_tokens == 40 and s.prompt_tokens > 0
    # Retry-After: 1 was honoured: the same body came back >= ~1 s after the 429 was sent.
    recs = srv.snapshot()
    for i, r in enumerate(recs):
        if r.fault == "429":
            nxt = next(x for x in recs[i + 1:] if x.body_key() == r.body_key())
            assert nxt.t_start - r.t_end >= 0.95
    assert elapsed < 10
    await client.aclose()


async def test_a_call_that_keeps_failing_gives_up_after_max_retries(fake_server):
    srv = fake_server(rule=lambda rec, attempt: "500" if "item 3\n" in rec.prompt_text else None)
    client = Client(openai(srv), concurrency=4,
                    retry=RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.02))
    outs = await client.map([judge_request(i, "A") for i in range(6)])
    failed = outs[3]
    assert isinstance(failed, CallFailed) and not failed.fatal
    assert "gave up after 4 attempts" in str(failed) and "HTTP 500" in str(failed)
    assert all(isinstance(o, Response) and o.text == "A" for i, o in enumerate(outs) if i != 3)
    doomed = [r for r in srv.requests if "item 3\n" in r.prompt_text]
    assert len(doomed) == 4  # 1 + max_retries
    s = client.stats
    assert (s.made, s.retries, s.failed) == (5, 3, 1)
    await client.aclose()


async def test_unauthorised_fails_at_once_without_retries_or_the_key(fake_server):
    srv = fake_server(api_keys={"the-right-key"})
    p = make_provider("openai", "fake", {"base_url": srv.openai_url,
                                         "api_key": "wrong-key-5f3a9c"})
    client = Client(p, concurrency=1, retry=FAST)
    with pytest.raises(CallFailed) as ei:
        await client.call(judge_request(0))
    err = ei.value
    assert err.fatal
    assert "401" in str(err) and "authentication failed" in str(err)
    assert "OPENAI_API_KEY" in str(err) and "wrong-key-5f3a9c" not in str(err)
    assert srv.count() == 1 and client.stats.retries == 0 and client.stats.failed == 1
    # A fatal error aborts a whole map instead of failing every item one by one.
    with pytest.raises(CallFailed):
        await client.map([judge_request(i) for i in range(1, 5)])
    assert client.stats.retries == 0
    assert srv.count() == 1  # the known-bad key is not sent again
    await client.aclose()


@pytest.mark.parametrize("concurrency", [1, 3, 6])
async def test_concurrency_bound_is_respected(fake_server, concurrency):
    srv = fake_server(latency=0.08)
    client = Client(openai(srv), concurrency=concurrency, retry=FAST)
    await client.map([judge_request(i) for i in range(4 * concurrency)])
    assert srv.count() == 4 * concurrency
    # Never above the bound, and the bound is actually used (the calls did overlap).
    assert srv.max_inflight == concurrency
    await client.aclose()


async def test_identical_concurrent_requests_are_deduplicated(fake_server):
    srv = fake_server(latency=0.1)
    client = Client(openai(srv), concurrency=4, retry=FAST)
    outs = await asyncio.gather(*(client.call(judge_request(7, "B")) for _ in range(5)))
    assert srv.count() == 1
    assert [o.text for o in outs] == ["B"] * 5
    assert (client.stats.made, client.stats.cached) == (1, 4)
    await client.aclose()


async def test_random_fault_rate_still_finishes(fake_server):
    """A sustained 25% fault rate (seeded) with no scripted order: every call ends correct,
    and the retry count equals the faults the server actually injected."""
    srv = fake_server(fault_rate=0.25, rate_faults=("500", "503", "drop", "non_json"), seed=3)
    client = Client(openai(srv), concurrency=6,
                    retry=RetryPolicy(max_retries=8, base_delay=0.005, max_delay=0.02))
    goods = ["AB"[i % 2] for i in range(30)]
    outs = await client.map([judge_request(i, g) for i, g in enumerate(goods)])
    assert [o.text for o in outs] == goods
    injected = sum(1 for r in srv.requests if r.fault)
    assert injected > 0 and client.stats.retries == injected
    assert srv.count() == 30 + injected and client.stats.failed == 0
    await client.aclose()


async def test_observers_see_every_answered_call_fresh_deduplicated_or_cached(fake_server,
                                                                             tmp_path):
    from judgeaudit.llm import Cache

    seen: list[str] = []
    client = Client(openai(fake_server(latency=0.05)), Cache(tmp_path / "c.sqlite"),
                    retry=FAST)
    client.observers.append(lambda req: seen.append(req.messages[-1].content[:30]))
    reqs = [judge_request(i) for i in (1, 2, 2)]  # the third is an in-flight duplicate
    await asyncio.gather(*(client.call(r) for r in reqs))
    await client.call(judge_request(1))           # from the cache
    await client.aclose()
    assert len(seen) == 4
    assert (client.stats.made, client.stats.cached) == (2, 2)
