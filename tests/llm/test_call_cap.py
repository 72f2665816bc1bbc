"""The call cap (`CallCap`, an adaptive audit's `--max-calls` held call by call): once a run
has sent its limit, no more calls are sent; cached answers are free and a retry is the same
call. A real OpenAI-shaped server on loopback and a real SQLite cache."""

from __future__ import annotations

import pytest
from fakeserver import judge_request

from judgeaudit.llm import Cache, CallCap, CallFailed, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"base_delay": 0.005, "max_delay": 0.02}


def provider(url: str):
    return make_provider("openai", "fake", {"base_url": url, "api_key": "k"})


def requests(n: int, start: int = 0):
    return [judge_request(i, "AB"[i % 2]) for i in range(start, start + n)]


@pytest.mark.parametrize("limit", [0, -1, 2.5, True, "3"])
def test_a_cap_must_be_a_positive_whole_number(limit):
    with pytest.raises(ValueError, match="max_calls"):
        CallCap(limit)  # type: ignore[arg-type]


async def test_no_call_past_the_cap_is_sent_even_with_calls_in_flight(fake_server):
    srv = fake_server(latency=0.02)
    client = Client(provider(srv.openai_url), concurrency=4)
    client.call_cap = CallCap(5)
    outs = await client.map(requests(20))
    assert srv.count() == 5 and client.stats.made == 5
    assert client.stats.not_sent == 15 and client.call_cap.refused == 15
    assert client.stopped is None  # not stopped: a call already sent may still retry
    failed = [o for o in outs if isinstance(o, CallFailed)]
    assert len(failed) == 15 and all(o.kind == "call_cap" and not o.fatal for o in failed)
    assert "the call cap is reached (5 calls sent of max_calls 5" in str(failed[0])
    assert "the call cap is reached" in (client.stats.not_sent_why or "")
    await client.aclose()


async def test_cached_answers_and_retries_do_not_count(fake_server, tmp_path):
    srv = fake_server(faults=["500"])  # the first call is answered on its retry
    cache = Cache(tmp_path / "calls.sqlite")
    warm = Client(provider(srv.openai_url), cache=cache, concurrency=1,
                  retry=RetryPolicy(max_retries=2, **FAST))
    await warm.map(requests(3))
    await warm.aclose()
    srv.reset()
    client = Client(provider(srv.openai_url), cache=cache, concurrency=1,
                    retry=RetryPolicy(max_retries=2, **FAST))
    client.call_cap = CallCap(2)
    srv.push_faults("500")
    # 3 cached, then 3 new of which 2 fit; the first new one fails once, and its retry is
    # sent though the cap is reached by then (concurrency 1: the next call went during its
    # back-off)
    outs = await client.map(requests(6))
    assert client.stats.cached == 3 and client.stats.made == 2 and client.stats.retries == 1
    assert srv.count() == 3  # 2 calls, one of them sent twice
    assert [isinstance(o, CallFailed) for o in outs] == [False] * 5 + [True]
    await client.aclose()
