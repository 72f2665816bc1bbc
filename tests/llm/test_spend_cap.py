"""The spend cap (`SpendCap`, `Session(max_cost=...)`, `--max-cost`): once a session's calls
(all its commands') have cost the cap at list prices, no more are sent. Priced calls to a
real server on loopback (its answers carry token counts, as OpenAI's do); the price is given
in the spec."""

from __future__ import annotations

import asyncio

import pytest
from fakeserver import judge_request

from judgeaudit.cli.format import usage_text
from judgeaudit.llm import CallFailed, Client, SpendCap, make_provider
from judgeaudit.llm.base import CHARS_PER_TOKEN
from judgeaudit.llm.plan import body_ceiling, plan_body
from judgeaudit.outcome import assess
from judgeaudit.session import Session

pytestmark = pytest.mark.usefixtures("no_key_env")


def priced(url: str, price_in: float = 1.0):
    return make_provider("openai", "fake", {"base_url": url, "api_key": "k",
                                            "price_in": str(price_in), "price_out": "0"})


def requests(n: int, start: int = 0):
    return [judge_request(i, "AB"[i % 2]) for i in range(start, start + n)]


async def one_call_cost(url: str) -> float:
    """What one request of `requests` costs (they all have the same number of words)."""
    c = Client(priced(url))
    await c.call(judge_request(999_999))
    await c.aclose()
    assert c.stats.cost_usd and c.stats.cost_usd > 0
    return c.stats.cost_usd


def ceiling_of(url: str) -> float:
    """What one request of `requests` holds on the cap while under way: its prompt at
    characters / 4 (the fake server counts words, so this is above what it costs)."""
    p = priced(url)
    return body_ceiling(plan_body(judge_request(999_999), p), p.price_per_mtok)[2]


def cap_for(calls: int, cost: float, ceiling: float) -> float:
    """A cap that lets exactly `calls` calls through one at a time: after calls - 1 of them
    the next one's ceiling still fits, after `calls` it does not."""
    return (calls - 1) * cost + ceiling + cost / 2


async def test_a_call_that_could_pass_the_cap_is_not_sent(fake_server):
    srv = fake_server()
    cost, ceiling = await one_call_cost(srv.openai_url), ceiling_of(srv.openai_url)
    assert cost < ceiling < 2 * cost
    srv.reset()
    client = Client(priced(srv.openai_url), concurrency=1)
    client.spend_cap = SpendCap(cap_for(4, cost, ceiling))
    outs = await client.map(requests(20))
    assert srv.count() == 4 and client.stats.made == 4
    assert client.stats.not_sent == 16 and client.stats.failed == 16
    assert all(not isinstance(o, CallFailed) for o in outs[:4])
    rest = outs[4:]
    assert all(isinstance(o, CallFailed) and o.kind == "spend_cap" and not o.fatal
               for o in rest)
    assert "spend cap is reached" in str(rest[0]) and "max_cost" in str(rest[0])
    assert "the next call could cost up to" in str(rest[0])
    assert client.spend_cap.spent == pytest.approx(4 * cost)
    assert client.spend_cap.spent <= client.spend_cap.limit
    assert client.spend_cap.held == 0
    await client.aclose()


async def test_calls_under_way_hold_their_ceiling_so_the_spend_stays_under_the_cap(
        fake_server):
    # Before, calls under way were not counted until they finished: at concurrency 4 the
    # spend passed the cap by up to 3 calls.
    srv = fake_server(latency=0.05)
    cost, ceiling = await one_call_cost(srv.openai_url), ceiling_of(srv.openai_url)
    srv.reset()
    limit = 5 * cost
    client = Client(priced(srv.openai_url), concurrency=4)
    client.spend_cap = SpendCap(limit)
    await client.map(requests(40))
    assert client.stats.cost_usd <= limit and client.spend_cap.spent <= limit
    # Sending stopped only when the calls under way could have taken the spend to the cap.
    assert srv.count() == client.stats.made >= limit / ceiling - 1
    assert client.stats.made + client.stats.not_sent == 40
    assert client.spend_cap.held == 0
    await client.aclose()


@pytest.mark.parametrize("calls", [3, 10, 17])
async def test_concurrent_calls_spend_the_cap_as_far_as_one_at_a_time(fake_server, calls):
    """A call that would fit once the calls under way have settled waits for them: at
    concurrency 4 the run sends exactly as many calls as it would one at a time. Before, it
    stopped at the first call whose ceiling did not fit beside the ceilings under way, and
    left up to three calls' worth of the cap unspent."""
    srv = fake_server(latency=0.05)
    cost, ceiling = await one_call_cost(srv.openai_url), ceiling_of(srv.openai_url)
    srv.reset()
    client = Client(priced(srv.openai_url), concurrency=4)
    client.spend_cap = SpendCap(cap_for(calls, cost, ceiling))
    outs = await client.map(requests(40))
    assert srv.count() == client.stats.made == calls
    assert client.stats.not_sent == 40 - calls
    assert client.spend_cap.spent <= client.spend_cap.limit and client.spend_cap.held == 0
    failed = [o for o in outs if isinstance(o, CallFailed)]
    assert len(failed) == 40 - calls and all(o.kind == "spend_cap" for o in failed)
    assert "the next call could cost up to" in str(failed[0])
    await client.aclose()


async def test_a_first_call_over_the_cap_is_never_sent(fake_server):
    srv = fake_server()
    client = Client(priced(srv.openai_url))
    client.spend_cap = SpendCap(ceiling_of(srv.openai_url) / 2)
    outs = await client.map(requests(3))
    assert srv.count() == 0 and all(o.kind == "spend_cap" for o in outs)
    assert "$0.0000 spent" in str(outs[0]) and "could cost up to" in str(outs[0])
    await client.aclose()


async def test_the_cap_is_shared_by_a_judge_and_its_panel(fake_server):
    srv = fake_server()
    cost, ceiling = await one_call_cost(srv.openai_url), ceiling_of(srv.openai_url)
    srv.reset()
    async with Session(cache=False, max_cost=cap_for(6, cost, ceiling), concurrency=1) as s:
        with s.command():
            a = s.judge(f"openai:a?base_url={srv.openai_url}&api_key=k&price_in=1&price_out=0")
            b = s.judge(f"openai:b?base_url={srv.openai_url}&api_key=k&price_in=1&price_out=0")
            await a.client.map(requests(4))
            await b.client.map(requests(4, start=10))
    assert srv.count() == 6  # 4 by the judge, 2 by the panel judge, then the cap
    assert a.client.stats.made == 4 and b.client.stats.not_sent == 2


async def test_a_session_s_cap_counts_every_command(fake_server):
    """The cap is the session's: a later command starts with what the earlier ones left (it
    was each command's, so a session of two commands could spend twice the cap)."""
    srv = fake_server()
    cost, ceiling = await one_call_cost(srv.openai_url), ceiling_of(srv.openai_url)
    srv.reset()
    spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&price_in=1&price_out=0"
    async with Session(cache=False, max_cost=cap_for(4, cost, ceiling), concurrency=1) as s:
        with s.command():
            await s.judge(spec).client.map(requests(2))
        with s.command():
            j = s.judge(spec)
            outs = await j.client.map(requests(5, start=100))
            assert j.client.stats.made == 2 and j.client.stats.not_sent == 3
        assert "of it by earlier commands of the session" in str(outs[-1])
        with s.command():  # nothing left: not one call
            outs = await s.judge(spec).client.map(requests(2, start=200))
            assert all(isinstance(o, CallFailed) and o.kind == "spend_cap" for o in outs)
        assert s.calls()["made"] == 4 and s.spend_cap.spent <= s.spend_cap.limit
    assert srv.count() == 4


async def test_a_cached_answer_costs_nothing(fake_server, tmp_path):
    srv = fake_server()
    cost, ceiling = await one_call_cost(srv.openai_url), ceiling_of(srv.openai_url)
    srv.reset()
    spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&price_in=1&price_out=0"
    async with Session(cache=tmp_path / "c.sqlite", max_cost=cap_for(6, cost, ceiling),
                       concurrency=1) as s:
        with s.command():
            await s.judge(spec).client.map(requests(3))
        with s.command():  # the same 3 from the cache, then 3 new ones up to the cap
            j = s.judge(spec)
            await j.client.map(requests(8))
            assert j.client.stats.cached == 3 and j.client.stats.made == 3
            assert j.client.stats.not_sent == 2
    assert srv.count() == 6


def test_a_judge_that_may_bill_at_an_unknown_price_is_refused_before_any_call():
    s = Session(cache=False, max_cost=1.0)
    for spec in ("openai:gpt-9?api_key=k",  # hosted, not in the price table
                 "openai:m?base_url=http://10.0.0.7:8000/v1&api_key=k"):  # a remote server
        with pytest.raises(ValueError, match="price_in=USD&price_out=USD") as err:
            s.judge(spec)
        assert "max_cost cannot cap" in str(err.value)
    # A price in the spec, the built-in table, this machine's own server, a free judge: fine.
    for spec in ("openai:gpt-9?api_key=k&price_in=1&price_out=2",
                 "openai:gpt-4o-mini?api_key=k",
                 "openai:m?base_url=http://127.0.0.1:9/v1",
                 "sim?position=1"):
        assert s.judge(spec).client.spend_cap is s.spend_cap
    asyncio.run(s.aclose())


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), True, "5"])
def test_the_cap_must_be_a_positive_number(bad):
    with pytest.raises(ValueError, match="max_cost: expected a positive number of USD"):
        SpendCap(bad)


def test_the_outcome_says_the_calls_were_not_sent_because_of_the_cap():
    cap = SpendCap(0.5)
    cap.spent = 0.51
    out = assess(n_valid=3, n_planned=10, calls={
        "made": 3, "cached": 0, "failed": 7, "not_sent": 7, "not_sent_why": cap.why()})
    assert out["status"] == "failed"
    assert "7 of them not sent: the spend cap is reached ($0.5100 spent of max_cost $0.5" \
        in out["message"]
    assert "could not be reached" not in out["message"]


async def test_a_server_that_sends_no_usage_is_still_stopped_by_the_cap(fake_server):
    # Some OpenAI-compatible proxies omit `usage`: counted as free, their calls would never
    # reach the cap. Their tokens are estimated from characters instead, and flagged.
    srv = fake_server(usage=False)
    chars = body_ceiling(plan_body(judge_request(0), priced(srv.openai_url)), None)[0]
    one = -(-chars // CHARS_PER_TOKEN) / 1e6  # price_in 1 USD/Mtok, price_out 0
    client = Client(priced(srv.openai_url), concurrency=1)
    client.spend_cap = SpendCap(cap_for(3, one, one))
    await client.map(requests(10))
    assert srv.count() == 3 and client.stats.made == 3 and client.stats.not_sent == 7
    assert client.spend_cap.spent <= client.spend_cap.limit
    assert client.stats.usage_estimated == 3
    assert client.stats.prompt_tokens == pytest.approx(3 * one * 1e6, rel=0.05)
    assert client.stats.cost_usd == pytest.approx(3 * one, rel=0.05)
    line = usage_text(client.stats.as_dict())
    assert "3 of the calls' tokens estimated from characters" in line
    await client.aclose()


async def test_counted_usage_is_never_replaced_by_an_estimate(fake_server):
    srv = fake_server()
    client = Client(priced(srv.openai_url))
    await client.map(requests(3))
    assert client.stats.usage_estimated == 0
    assert "estimated" not in usage_text(client.stats.as_dict())
    await client.aclose()
