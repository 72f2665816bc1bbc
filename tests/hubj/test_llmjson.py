"""Strict JSON from model output: strict, repaired, retried and failed answers are each
counted, and a failed answer is None (never a default value)."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.hubj.llmjson import JSONFormatError, JSONStats, call_json, parse_object
from judgeaudit.llm import Client, Message, Request, Response, make_provider
from judgeaudit.llm.base import Provider
from judgeaudit.llm.registry import register


@pytest.mark.parametrize(("text", "repaired"), [
    ('{"score": 3}', False),
    ('```json\n{"score": 3}\n```', True),
    ('Sure! Here it is: {"score": 3} Hope that helps.', True),
    ('{"score": 3,}', True),
    ('{"features": [{"name": "x", "reason": "y"', True),      # stopped before closing
    ('{"a": "line one\nline two"}', True),                   # raw newline in a string
])
def test_parse_object_strict_and_each_repair(text, repaired):
    obj, rep = parse_object(text)
    assert rep is repaired
    assert isinstance(obj, dict) and obj


@pytest.mark.parametrize("text", ["", "no json here", "[1, 2]", '{"a": '])
def test_parse_object_refuses_what_is_not_an_object(text):
    with pytest.raises(JSONFormatError):
        parse_object(text)


@register
class QueueProvider(Provider):
    """Answers from a per-test queue of texts (scripted: the point is the parser's counts)."""

    name: ClassVar[str] = "test-json-queue"
    queue: ClassVar[list[str]] = []

    async def generate(self, request: Request) -> Response:
        return Response(text=self.queue.pop(0))


def _score(obj: dict[str, Any]) -> int:
    s = obj["score"]
    if not isinstance(s, int) or not 1 <= s <= 5:
        raise ValueError(f"bad score {s!r}")
    return s


def _req(i: int = 0) -> Request:
    return Request(messages=(Message("user", f"rate item {i}"),), max_tokens=8,
                   prefill='{"score": ', meta={"module": "G_score", "item_id": f"i{i}"})


async def _call(answers: list[str], i: int = 0) -> tuple[Any, JSONStats]:
    QueueProvider.queue[:] = answers
    client = Client(make_provider("test-json-queue", "x"))
    stats = JSONStats()
    got = await call_json(client, _req(i), _score, stats, close="}", max_retries=1)
    return got, stats


async def test_strict_answer_is_counted_strict():
    got, st = await _call(["4}"])
    assert got == 4 and (st.calls, st.strict, st.repaired, st.failed) == (1, 1, 0, 0)


async def test_repaired_answer_is_counted_repaired():
    got, st = await _call(["4} and that is my rating"])
    assert got == 4 and (st.strict, st.repaired) == (0, 1)


async def test_invalid_then_valid_answer_is_recovered_by_one_retry():
    got, st = await _call(["9}", "2}"], i=1)
    assert got == 2
    assert (st.retried, st.recovered, st.failed) == (1, 1, 0)


async def test_failure_after_retries_is_none_and_keeps_the_raw_text():
    got, st = await _call(["nonsense", "still nonsense"], i=2)
    assert got is None
    assert (st.failed, st.retried) == (1, 1)
    assert st.examples[0]["item_id"] == "i2" and "nonsense" in st.examples[0]["raw"]


async def test_a_server_that_answers_the_whole_object_is_read_too(monkeypatch):
    """An OpenAI-compatible server in the default "instruct" prefill mode cannot continue the
    prefilled '{"score": ' and answers with the whole object; that answer must parse."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeLLMServer(answer=lambda _prompt: '{"score": 5}') as srv:
        provider = make_provider("openai", "fake", {"base_url": srv.openai_url,
                                                    "api_key": "k", "logprobs": "off"})
        client = Client(provider)
        stats = JSONStats()
        got = await call_json(client, _req(3), _score, stats, close="}")
        await client.aclose()
    assert got == 5 and stats.failed == 0


async def test_a_reasoning_models_thinking_is_not_read_as_its_answer():
    """A reasoning model thinks aloud before the object, drafts included: the object after
    its thinking is the answer (the first {...} in the text was a draft, score 2)."""
    got, st = await _call(['<think>Maybe {"score": 2}? No, it has no errors.</think>\n'
                           '{"score": 5}'], i=4)
    assert got == 5 and st.failed == 0
    # only the close of the block (the chat template opened it in the prompt)
    got, st = await _call(['a draft: {"score": 1}\n</think>\n\n3}'], i=5)
    assert got == 3 and st.failed == 0


@pytest.mark.parametrize("answer", [
    '```json\n{"score": 3}\n```',
    'Sure! Here is the JSON:\n```json\n{"score": 3}\n```\nHope it helps.',
    'My rating is {"score": 3} for this one.',
])
async def test_a_whole_object_in_a_fence_or_prose_is_repaired_after_the_prefill(answer):
    """The default prefill=instruct mode: a chat model answers the whole object, wrapped in
    a code fence or prose; prefill + answer never parses ('{"score": ```json...'), the answer
    alone does after the repair (it was read only when it started with '{': failed, and
    retried with the same wrapping)."""
    got, st = await _call([answer, answer], i=6)
    assert got == 3
    assert (st.repaired, st.retried, st.failed) == (1, 0, 0)
