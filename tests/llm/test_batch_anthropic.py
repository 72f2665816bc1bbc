"""Batch mode through Anthropic's Message Batches API (`anthropic:MODEL?batch=on`), against a
loopback server that implements batch create/retrieve/cancel and results as JSON Lines
(tests/llm/fakebatch.py): live-call answers with no live call; expired, errored and
cancelled requests; a model refusing prefill answered through the fallback."""

from __future__ import annotations

import asyncio

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request

from judgeaudit.llm import Cache, CallFailed, Client, make_provider
from judgeaudit.llm.base import request_key

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"poll": "0.02", "batch_wait": "0.05"}


def provider(srv: FakeBatchServer, **params: str):
    return make_provider("anthropic", "claude-fake", {"base_url": srv.anthropic_url,
                                                      "api_key": "k", **params})


def requests(n: int):
    return [judge_request(i, "AB"[i % 3 == 0]) for i in range(n)]


async def test_batches_answer_as_live_calls_with_no_live_call(tmp_path):
    with FakeBatchServer() as srv:
        reqs = requests(300)
        live = Client(provider(srv), Cache(tmp_path / "live.sqlite"), concurrency=16)
        want = await live.map(reqs)
        await live.aclose()
        assert srv.count() == 300
        srv.reset()
        cache = Cache(tmp_path / "batch.sqlite")
        client = Client(provider(srv, batch="on", batch_size="120", **FAST), cache)
        got = await client.map(reqs)
        await client.aclose()
        assert srv.count() == 0 and srv.batch_count() == 3
        assert [(g.text, g.usage, g.raw) for g in got] == [(w.text, w.usage, w.raw)
                                                           for w in want]
        assert [g.text for g in got] == [" " + "AB"[i % 3 == 0] for i in range(300)]
        assert (client.stats.made, client.stats.failed) == (300, 0)
        assert cache.stats().entries == 300 and cache.open_batches() == []
        # custom_id is the cache key, within the API's 64 characters
        assert set(srv.submitted) == {request_key(client.provider, r) for r in reqs}


async def test_expired_errored_and_retried_results(tmp_path):
    keys: dict[str, int] = {}

    def rule(cid, body, attempt):
        i = keys[cid]
        if i == 0:
            return "400"
        if i in (1, 2) and attempt == 0:
            return "500" if i == 1 else "429"
        return None

    with FakeBatchServer(expire_batches=1, line_rule=rule) as srv:
        p = provider(srv, batch="on", **FAST)
        reqs = requests(12)
        keys.update({request_key(p, r): i for i, r in enumerate(reqs)})
        client = Client(p, Cache(tmp_path / "c.sqlite"))
        outs = await client.map(reqs)
        await client.aclose()
        assert isinstance(outs[0], CallFailed) and outs[0].kind == "bad_request"
        assert "invalid_request_error" in str(outs[0]) and not outs[0].fatal
        assert all(not isinstance(o, CallFailed) for o in outs[1:])
        s = client.stats
        # 6 expired (second half of batch 1) + the 500 and the 429 went again
        assert s.errors == {"bad_request": 1, "rate_limit": 1, "server": 1, "timeout": 6}
        assert (s.made, s.failed, s.retries) == (11, 1, 8)
        assert srv.count() == 0 and srv.batch_count() == 2


async def test_a_model_refusing_prefill_in_batch_is_asked_with_an_answer_line(tmp_path):
    with FakeBatchServer(reject_prefill=True) as srv:
        client = Client(provider(srv, batch="on", **FAST), Cache(tmp_path / "c.sqlite"))
        outs = await client.map(requests(4))
        await client.aclose()
        assert [o.text for o in outs] == ["B", "A", "A", "B"]
        assert srv.batch_count() == 2
        second = [b for b in srv.batches.values()][1]
        last = second["lines"][0]["params"]["messages"][-1]
        assert last["role"] == "user" and "Answer with a single letter." in last["content"]


async def test_a_cancelled_batch_keeps_its_answers_and_fails_the_rest(tmp_path):
    cache_path = tmp_path / "c.sqlite"
    with FakeBatchServer(finish_after=30.0, polls_to_finish=1) as srv:
        p = provider(srv, batch="on", **FAST)
        client = Client(p, Cache(cache_path))
        task = asyncio.ensure_future(client.map(requests(8)))
        while srv.polls() < 1:
            await asyncio.sleep(0.01)
        st = await p.batch_backend().cancel(client._batcher.submitted[0])
        assert st.status == "canceling" and not st.ended
        outs = await task
        await client.aclose()
        assert sum(isinstance(o, CallFailed) for o in outs) == 4
        assert {o.kind for o in outs if isinstance(o, CallFailed)} == {"other"}
        assert client.stats.made == 4
        assert [b["status"] for b in Cache(cache_path).batches()] == ["cancelled"]


def test_batch_parameters_and_price():
    p = make_provider("anthropic", "claude-3-5-haiku", {"batch": "on"})
    assert p.price_per_mtok == pytest.approx((0.40, 2.00))
    assert make_provider("anthropic", "claude-3-5-haiku", {}).price_per_mtok == (0.80, 4.00)
    with pytest.raises(ValueError, match="at most 100000"):
        make_provider("anthropic", "m", {"batch": "on", "batch_size": "200000"})
    with pytest.raises(ValueError, match="expected 'on' or 'off'"):
        make_provider("anthropic", "m", {"batch": "maybe"})
