"""A G-module answer that cannot be read is one unreadable answer, however often the run reads
it: `call_json` told the client's watch (`Client.note_verdict`) without the request, so each
reading counted, where a judge's verdicts count each answer once (`judges.parse
.mark_if_invalid`). Two readings of one cached garbage answer said "2 unreadable" and stopped a
client with stop_after=2 for "the first 2 answers" after one answer. Against a real loopback
server and a real SQLite cache."""

from __future__ import annotations

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.hubj.llmjson import JSONStats, call_json
from judgeaudit.llm import Cache, Client, Message, Request, RetryPolicy, make_provider

GARBAGE = "It is rather strong, I would say."


@pytest.fixture(autouse=True)
def _no_key_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _score(obj: dict) -> int:
    s = obj["score"]
    if not isinstance(s, int) or not 1 <= s <= 5:
        raise ValueError(f"bad score {s!r}")
    return s


def _req(i: int) -> Request:
    return Request(messages=(Message("user", f"rate item {i}"),), max_tokens=8,
                   prefill='{"score": ', meta={"module": "G_score", "item_id": f"i{i}"})


async def test_a_g_module_answer_read_twice_is_one_unreadable_answer(tmp_path):
    with FakeLLMServer(answer=GARBAGE, logprobs=False) as srv:
        provider = make_provider("openai", "fake", {"base_url": srv.openai_url,
                                                    "api_key": "k", "logprobs": "off"})
        cache = Cache(tmp_path / "c.sqlite")
        client = Client(provider, cache, retry=RetryPolicy(max_retries=0, stop_after=2))
        stats = JSONStats()
        for _ in range(2):  # the same G_score request read twice in the run
            got = await call_json(client, _req(0), _score, stats, close="}", max_retries=0)
            assert got is None
        st = client.stats
        assert (st.made, st.cached, st.shared) == (1, 1, 1) and srv.served() == 1
        # one answer, one unreadable answer, of one answer read
        assert (st.unreadable, st.answers_read) == (1, 1)
        assert client.stopped is None, client.stopped  # one answer is not "the first 2"
        # a second garbage answer makes two: the watch stops the client, naming 2 answers
        assert await call_json(client, _req(1), _score, stats, close="}", max_retries=0) is None
        assert (client.stats.unreadable, client.stats.answers_read) == (2, 2)
        assert client.stopped is not None
        assert "the first 2 answers could not be read as G_score JSON objects" in client.stopped
        # the G-module's own counts are per request asked, as before
        assert (stats.calls, stats.failed) == (3, 3)
        await client.aclose()
        cache.close()


async def test_a_json_retry_is_its_own_answer_and_counts_once_when_read_again(tmp_path):
    """The retry asks a new request (the bad answer quoted): two answers per reading of the
    item; read again from the cache, still two."""
    with FakeLLMServer(answer=GARBAGE, logprobs=False) as srv:
        provider = make_provider("openai", "fake", {"base_url": srv.openai_url,
                                                    "api_key": "k", "logprobs": "off"})
        cache = Cache(tmp_path / "c.sqlite")
        client = Client(provider, cache, retry=RetryPolicy(max_retries=0, stop_after=0))
        stats = JSONStats()
        for _ in range(2):
            assert await call_json(client, _req(0), _score, stats, close="}",
                                   max_retries=1) is None
        st = client.stats
        assert (st.made, st.cached, st.shared, srv.served()) == (2, 2, 2, 2)
        assert (st.unreadable, st.answers_read) == (2, 2)
        await client.aclose()
        cache.close()
