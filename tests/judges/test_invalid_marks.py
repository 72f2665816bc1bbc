"""Answers a judge cannot use (an unparseable label, null or empty content, a response over
the size cap) stay invalid verdicts, counted as before, and are marked invalid in the cache so
`forget_invalid` lets a later run ask them again. Against the loopback server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.data import PairwiseItem, PointwiseItem
from judgeaudit.judges import PairwiseJudge, RubricJudge
from judgeaudit.judges.binary import BinaryJudge
from judgeaudit.judges.parse import invalid_reason
from judgeaudit.llm import Cache, Client, Response, RetryPolicy, make_provider

FAST = RetryPolicy(max_retries=1, base_delay=0.01)
PAIRS = [PairwiseItem(id=f"p{i}", prompt=f"question {i}", response_1=f"one {i}",
                      response_2=f"two {i}") for i in range(3)]
POINTS = [PointwiseItem(id=f"s{i}", prompt=f"question {i}", response=f"answer {i}")
          for i in range(3)]


@pytest.fixture
def server() -> Iterator[list[FakeLLMServer]]:
    started: list[FakeLLMServer] = []
    yield started
    for s in started:
        s.stop()


def start(started: list[FakeLLMServer], **kw) -> FakeLLMServer:
    srv = FakeLLMServer(**kw).start()
    started.append(srv)
    return srv


def client(srv: FakeLLMServer, cache: Cache | None, **kw) -> Client:
    p = make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k",
                                         "logprobs": "off"})
    return Client(p, cache, retry=FAST, **kw)


async def test_unparseable_pairwise_answers_are_marked_and_can_be_asked_again(server,
                                                                             tmp_path):
    answers = {"label": "C"}
    srv = start(server, answer=lambda text: answers["label"])
    cache = Cache(tmp_path / "c.sqlite")
    judge = PairwiseJudge(client(srv, cache))
    verdicts = await judge.judge(PAIRS)
    assert all(v.winner is None for v in verdicts)  # invalid, counted, never coerced
    assert sum(not o.valid for v in verdicts for o in v.orders) == 6
    assert cache.count_invalid() == 6
    assert cache.invalid_reason(judge.client.key(judge.request(PAIRS[0], "12"))) == \
        "unparseable answer: 'C'"
    # A re-run reads the same invalid answers from the cache (nothing asked) ...
    again = await PairwiseJudge(client(srv, cache)).judge(PAIRS)
    assert srv.count() == 6 and all(v.winner is None for v in again)
    # ... until they are forgotten: then they are asked again.
    assert cache.forget_invalid() == 6 and cache.count_invalid() == 0
    answers["label"] = "A"
    fresh = await PairwiseJudge(client(srv, cache)).judge(PAIRS)
    assert srv.count() == 12 and all(v.winner == 0 for v in fresh)  # A in both orders: a tie
    assert cache.count_invalid() == 0
    cache.close()


async def test_valid_answers_are_not_marked(server, tmp_path):
    srv = start(server)
    cache = Cache(tmp_path / "c.sqlite")
    verdicts = await PairwiseJudge(client(srv, cache)).judge(PAIRS)
    assert all(o.valid for v in verdicts for o in v.orders)
    assert cache.count_invalid() == 0
    cache.close()


async def test_null_content_and_unparseable_scores_are_marked(server, tmp_path):
    srv = start(server, answer="banana", faults=["null_content"])
    cache = Cache(tmp_path / "c.sqlite")
    judge = RubricJudge(client(srv, cache, concurrency=1))
    scores = await judge.score(POINTS)
    assert [s.score for s in scores] == [None, None, None]
    assert sorted(cache.invalid_reason(judge.client.key(judge.request(it))) for it in POINTS) \
        == ["empty answer", "unparseable answer: 'banana'", "unparseable answer: 'banana'"]
    cache.close()


async def test_binary_judge_marks_what_it_cannot_read(server, tmp_path):
    srv = start(server, answer="It depends")
    cache = Cache(tmp_path / "c.sqlite")
    verdicts = await BinaryJudge(client(srv, cache)).judge(POINTS)
    assert all(v.passed is None for v in verdicts) and cache.count_invalid() == 3
    cache.close()


async def test_an_over_cap_response_is_an_invalid_verdict_with_its_reason(server, tmp_path):
    srv = start(server, faults=["huge"], huge_chars=300)
    cache = Cache(tmp_path / "c.sqlite")
    judge = PairwiseJudge(client(srv, cache, max_response_chars=100, concurrency=1),
                          both_orders=False)
    [v] = await judge.judge(PAIRS[:1])
    [o] = v.orders
    assert not o.valid and o.error == "response of 300 chars exceeds the cap of 100"
    assert len(o.raw) == 100
    assert cache.count_invalid() == 1
    # Also when the text starts with a label, or when probabilities came with it.
    capped = Response(text="A" * 100, probs={"A": 0.9, "B": 0.1},
                      invalid="response of 300 chars exceeds the cap of 100")
    assert PairwiseJudge.read("12", capped).winner is None
    assert RubricJudge(None).read("x", capped).score is None
    assert BinaryJudge(None).read("x", capped).passed is None
    cache.close()


def test_invalid_reason():
    assert invalid_reason(Response(text="A"), True) is None
    assert invalid_reason(Response(text="  "), False) == "empty answer"
    assert invalid_reason(Response(text="C\nbecause"), False) == "unparseable answer: 'C\\nbecause'"
    assert invalid_reason(Response(text="A", invalid="too long"), True) == "too long"


async def test_failed_calls_are_not_marked(server, tmp_path):
    srv = start(server, rule=lambda rec, attempt: "500")
    cache = Cache(tmp_path / "c.sqlite")
    verdicts = await PairwiseJudge(client(srv, cache)).judge(PAIRS[:1])
    assert all(o.error and not o.valid for o in verdicts[0].orders)
    assert cache.count_invalid() == 0 and cache.stats().entries == 0
    cache.close()
