"""The LLM rewriter end to end: openai provider -> real loopback HTTP server
(tests/llm/fakeserver.py) -> client with a SQLite cache. The server's answer function is a
deterministic stand-in for a model: it rewrites the text it is sent, wraps it the way chat
models do ("Here is the rewritten text:"), and on one item changes the answer, which the
preservation check must catch."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "llm"))
from fakeserver import FakeLLMServer  # noqa: E402

from judgeaudit.llm import Cache, Client, make_provider  # noqa: E402
from judgeaudit.perturb import PerturbError  # noqa: E402
from judgeaudit.perturb.rewrite import (  # noqa: E402
    CRITERIA,
    LLMRewriter,
    estimate_tokens,
    strip_wrapper,
)


def fake_model(prompt: str) -> str:
    """Stand-in for a model: reads the instruction and the text from the rewrite prompt."""
    text = re.search(r"<text>\n(.*)\n</text>", prompt, re.S).group(1)
    if "48 - 19" in text:  # a misbehaving model: it changes the answer
        return "Sure! Here is the rewritten text:\n\n" + text.replace("31", "30")
    if "confident" in prompt:
        return f"Here's the rewritten version:\n\nI am certain. {text}\n\nNote: I kept all " \
               "numbers unchanged."
    return f"<rewritten>{text} In other words, as stated above.</rewritten>"


@pytest.fixture
def server(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    srv = FakeLLMServer(answer=fake_model).start()
    yield srv
    srv.stop()


def client(srv: FakeLLMServer, cache: Cache | None = None) -> Client:
    prov = make_provider("openai", "fake-model", {"base_url": srv.openai_url, "api_key": "k"})
    return Client(prov, cache, concurrency=4)


async def test_rewrite_sends_a_generation_request_and_strips_the_wrapper(server):
    c = client(server)
    text = "The capital of Australia is Canberra."
    out = await LLMRewriter(c).rewrite(text, "Make it sound confident.", level=4,
                                       criteria="confidence")
    await c.aclose()
    assert out == f"I am certain. {text}"
    (rec,) = server.snapshot()
    body = rec.body
    assert body["temperature"] == 0
    assert body["max_tokens"] == max(64, math.ceil(2 * estimate_tokens(text)))
    assert not body.get("logprobs")
    user = body["messages"][-1]["content"]
    assert "Make it sound confident." in user and text in user
    assert CRITERIA["confidence"][4] in user and "level 4 of 5" in user


async def test_request_meta_and_budget():
    rw = LLMRewriter(client=None)  # type: ignore[arg-type]  # request() makes no call
    long = "word " * 400
    req = rw.request(long, "Pad it.", level=5, criteria="verbosity")
    assert req.choices == () and req.temperature == 0.0
    assert req.meta["task"] == "generate" and req.meta["level"] == 5
    assert req.max_tokens >= 4 * estimate_tokens(long)  # level 5 asks for ~4x the length
    with pytest.raises(PerturbError, match="1..5"):
        rw.request("x", "y", level=7)


async def test_perturb_checks_preservation_and_uses_the_cache(server, items, tmp_path):
    cache = Cache(tmp_path / "cache.sqlite")
    c = client(server, cache)
    rw = LLMRewriter(c)
    rs = await rw.perturb(items, "confidence", level=3, seed=0)
    assert len(rs) == len(items)
    by_id = {r.original.id: r for r in rs}
    bad = by_id["arith:1"]  # the stand-in model changed 31 to 30 on this one
    assert not bad.preserved and "30" in bad.reason
    good = [r for r in rs if r.original.id != "arith:1"]
    assert all(r.preserved for r in good), [(r.original.id, r.reason) for r in good]
    for r in good:
        assert getattr(r.item, r.changed) == "I am certain. " + getattr(r.original, r.changed)
        assert r.item.id == f"{r.original.id}~rewrite:confidence:level=3"
        assert r.item.metadata["perturbation"]["options"] == {"bias": "confidence", "level": 3}
    n = server.count()
    assert n == len(items)
    again = await rw.perturb(items, "confidence", level=3, seed=0)
    assert server.count() == n  # served from the cache
    assert [r.item for r in again] == [r.item for r in rs]
    await c.aclose()
    cache.close()


async def test_perturb_unknown_bias_needs_an_instruction(server, items):
    c = client(server)
    with pytest.raises(PerturbError, match="pass instruction"):
        await LLMRewriter(c).perturb(items, "whimsy")
    rs = await LLMRewriter(c).perturb([items[0], items[6]], "whimsy", instruction="Rephrase.")
    assert all(r.preserved for r in rs)  # the <rewritten> tags are stripped
    assert rs[0].item.response_2.endswith("In other words, as stated above.")
    await c.aclose()


@pytest.mark.parametrize("raw,want", [
    ("Sure! Here is the rewritten text:\n\nHello there.", "Hello there."),
    ("Here's a more confident version of the response:\n\nHello.", "Hello."),
    ("Rewritten text:\nHello.", "Hello."),
    ("**Revised version:**\n\nHello.", "Hello."),
    ('"Hello."', "Hello."),
    ("```\nHello.\n```", "Hello."),
    ("<rewritten>\nHello.\n</rewritten>\nI hope this helps!", "Hello."),
    ("Hello.\n\nNote: I have kept the final answer unchanged.", "Hello."),
    ("Hello. Here is why it matters: it does.", "Hello. Here is why it matters: it does."),
])
def test_strip_wrapper(raw, want):
    assert strip_wrapper(raw, "Hi.") == want


def test_strip_wrapper_keeps_what_the_original_had():
    assert strip_wrapper('"Quoted."', '"Quote."') == '"Quoted."'
    assert strip_wrapper("```\ncode\n```", "```\nx\n```") == "```\ncode\n```"
