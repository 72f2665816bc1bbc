"""What a capped run says it spent and sent: calls shared by several probes whose one request
was never sent count as not sent (an audit read "217 made ... 823 failed (527 not sent)"
where the server got 217 requests, so 296 more were never sent); a spend that passed the
cap says so and why; money in the cap's message carries no float residue. Priced calls to
a real loopback server (its answers carry token counts)."""

from __future__ import annotations

import re

import fakeserver
import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallFailed, Client, SpendCap, make_provider
from judgeaudit.llm.client import RetryPolicy, _usd
from judgeaudit.llm.plan import body_ceiling, plan_body

pytestmark = pytest.mark.usefixtures("no_key_env")


def priced(url: str):
    return make_provider("openai", "fake", {"base_url": url, "api_key": "k",
                                            "price_in": "1", "price_out": "0"})


def ceiling_of(url: str) -> float:
    p = priced(url)
    return body_ceiling(plan_body(judge_request(0), p), p.price_per_mtok)[2]


async def one_call_cost(srv) -> float:
    """What one request of `judge_request` costs at the server (it counts words); the
    server's count of requests starts from 0 again after it."""
    c = Client(priced(srv.openai_url))
    await c.call(judge_request(999_999))
    await c.aclose()
    srv.reset()
    return c.stats.cost_usd


async def test_calls_sharing_a_request_never_sent_count_as_not_sent(fake_server):
    # 6 distinct requests, each asked by 3 probes at once; the cap lets 2 through
    srv = fake_server()
    cost, ceiling = await one_call_cost(srv), ceiling_of(srv.openai_url)
    client = Client(priced(srv.openai_url), concurrency=1)
    client.spend_cap = SpendCap(cost + ceiling + cost / 2)  # room for 2 calls, not 3
    reqs = [judge_request(i) for i in range(6) for _ in range(3)]
    outs = await client.map(reqs)
    await client.aclose()
    st = client.stats
    assert srv.count() == 2 and st.made == 2
    assert st.cached == 4 and st.shared == 4  # the 2 made, read by 2 more probes each
    assert st.failed == 12 and sum(isinstance(o, CallFailed) for o in outs) == 12
    # every failed call was never sent: 4 own requests and the 8 calls sharing them
    assert st.not_sent == 12, (
        f"expected all 12 failed calls counted not sent (the server got {srv.count()} "
        f"requests, all answered), got not_sent={st.not_sent}")


async def test_a_call_sent_and_failed_is_not_counted_not_sent_by_its_sharers(fake_server):
    # the server answers every request with a 500 and the client does not retry: each was
    # sent and failed, never "not sent"
    srv = fake_server(faults=["500"] * 3)  # one per request, in order
    client = Client(priced(srv.openai_url), concurrency=2,
                    retry=RetryPolicy(max_retries=0, stop_after=0))
    outs = await client.map([judge_request(i) for i in range(3) for _ in range(3)])
    await client.aclose()
    assert srv.count() == 3
    assert client.stats.failed == 9 and all(isinstance(o, CallFailed) for o in outs)
    assert client.stats.not_sent == 0


@pytest.mark.parametrize("concurrency, cap", [(1, 2.5), (2, 2.2)])
async def test_a_spend_past_the_cap_says_by_how_much_and_why(fake_server, monkeypatch,
                                                              concurrency, cap):
    # A server counting a token per 3 characters: each call costs a third more than the
    # ceiling it held (characters / 4). At concurrency 1 the spend is past the cap when
    # sending stops; at 2 the call still under way then takes it past afterwards.
    monkeypatch.setattr(fakeserver, "_ntokens", lambda text: -(-len(text) // 3))
    srv = fake_server()
    ceiling = ceiling_of(srv.openai_url)
    client = Client(priced(srv.openai_url), concurrency=concurrency)
    client.spend_cap = SpendCap(cap * ceiling)
    await client.map([judge_request(i) for i in range(8)])
    await client.aclose()
    spent, limit = client.spend_cap.spent, client.spend_cap.limit
    assert srv.count() == 2 and spent > limit
    why = client.stats.not_sent_why or ""
    assert f"it spent {_usd(spent)} in all, {_usd(spent - limit)} over the cap" in why, why
    assert "characters / 4" in why
    assert client.stats.cost_usd == pytest.approx(spent)


async def test_a_spend_within_the_cap_says_nothing_of_passing_it(fake_server):
    srv = fake_server()  # counts words: below the ceiling of characters / 4
    cost, ceiling = await one_call_cost(srv), ceiling_of(srv.openai_url)
    client = Client(priced(srv.openai_url), concurrency=2)
    client.spend_cap = SpendCap(cost + ceiling + cost / 2)
    await client.map([judge_request(i) for i in range(8)])
    await client.aclose()
    assert client.spend_cap.spent <= client.spend_cap.limit
    assert "over the cap:" not in (client.stats.not_sent_why or "")


def test_money_in_the_cap_message_has_no_float_residue():
    cap = SpendCap(0.5)
    for c in (0.1, 0.2, 0.05):
        assert cap.hold(c)
    for c in (0.1, 0.2, 0.05):
        cap.release(c)
    assert cap.held == 0.0  # was 2.7e-17 left "held"
    cap.held = 1.05e-15  # as the tester's run left it
    cap.spent = 0.3295
    cap.refuse(0.3)
    text = cap.why()
    assert not re.search(r"\$0\.0{6,}", text), text
    # each term named, the held residue left out (it read "$0.3295 + $0.0000 + $0.3000")
    assert "$0.3295 spent + $0.3000 for it is over the cap" in text
    assert _usd(1.05e-15) == "$0.0000" and _usd(-1e-16) == "$0.0000"
    assert _usd(0.0000128) == "$0.0000128" and _usd(50.008) == "$50.0080"
