"""A request asked again in one run is answered once and counted as shared: under no cache it
was sent again (a default audit under --no-cache paid 1040 calls for 720 distinct requests),
and with a cache a first run read "320 from cache" for answers no earlier run had stored."""

from __future__ import annotations

import pytest
from fakeserver import judge_request

from judgeaudit.llm import Cache, Client, Response, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02)


def _client(srv, cache=None):
    return Client(make_provider("openai", "fake", {"base_url": srv.openai_url,
                                                   "api_key": "k"}),
                  cache=cache, concurrency=2, retry=FAST)


async def test_without_a_cache_a_request_asked_again_is_not_sent_again(fake_server):
    srv = fake_server()
    client = _client(srv)
    first = await client.map([judge_request(i, "A") for i in range(3)])
    again = await client.map([judge_request(i, "A") for i in (0, 1, 5)])
    assert all(isinstance(o, Response) for o in first + again)
    assert [o.text for o in again] == [first[0].text, first[1].text, "A"]
    s = client.stats
    assert (s.made, s.cached, s.shared) == (4, 2, 2)
    assert srv.count() == 4  # was 6: the two repeats sent again
    await client.aclose()
    assert client._memo.get(client.key(judge_request(0, "A"))) is None  # dropped on close


async def test_with_a_cache_earlier_runs_answers_are_not_counted_as_shared(fake_server,
                                                                            tmp_path):
    srv = fake_server()
    cache = Cache(tmp_path / "c.sqlite")
    earlier = _client(srv, cache)
    await earlier.map([judge_request(i, "A") for i in range(2)])
    await earlier.aclose()
    run = _client(srv, cache)  # a new run: 2 stored answers, 1 new, then all 3 again
    await run.map([judge_request(i, "A") for i in range(3)])
    await run.map([judge_request(i, "A") for i in range(3)])
    s = run.stats
    assert (s.made, s.cached, s.shared) == (1, 5, 3)
    assert srv.count() == 3
    await run.aclose()
    cache.close()


def test_the_run_memo_keeps_answers_up_to_its_size_then_no_more():
    from judgeaudit.llm.client import RunMemo

    one = Response(text="A" * 50)
    memo = RunMemo(max_chars=2 * len(one.to_json()))
    for key in "abc":
        memo.put(key, one)
    assert memo.get("a").text == memo.get("b").text == "A" * 50
    assert memo.get("c") is None  # past its size: a re-ask is sent, not a wrong answer
    assert memo.get("a") is not memo.get("a") and memo.get("a").cached  # fresh, as a cache's
