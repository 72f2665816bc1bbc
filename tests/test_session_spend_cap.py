"""`Session(max_cost=...)` caps the session, not each command: the README shows `max_cost=5`
right after "share ... call totals", yet two `aevaluate` commands in one session could each
spend the whole cap. A later command now starts with what the earlier ones left, and the
reason it stopped says the earlier commands spent part of it. Priced calls to a real
OpenAI-shaped server on loopback (its answers carry token counts)."""

from __future__ import annotations

import pytest
from fakeserver import FakeLLMServer

import judgeaudit

pytestmark = pytest.mark.usefixtures("isolated_cache")


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def items(tag: str, n: int = 6) -> list[dict]:
    return [{"id": f"{tag}{i}", "prompt": f"session cap {tag} {i} " + "word " * 40,
             "response_1": "a", "response_2": "b", "label": 1} for i in range(n)]


async def test_two_commands_share_one_cap():
    with FakeLLMServer() as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k&price_in=100&price_out=0"
        one = (await judgeaudit.aevaluate(spec, items("m"), cache=False)).calls["cost_usd"]
        cap = 1.5 * one  # the whole first command, about half of the second
        async with judgeaudit.Session(cache=False, max_cost=cap, concurrency=1) as s:
            a = await judgeaudit.aevaluate(spec, items("a"), session=s)
            b = await judgeaudit.aevaluate(spec, items("b"), session=s)
            total = s.calls()
        assert a.calls["not_sent"] == 0 and a.calls["cost_usd"] == pytest.approx(one)
        assert b.calls["not_sent"] > 0 and 0 < b.calls["made"] < a.calls["made"]
        assert "of it by earlier commands of the session" in b.calls["not_sent_why"]
        # and it says the cap is the session's, not "this run's calls only"
        assert "the cap counts this session's commands together" in b.calls["not_sent_why"]
        assert "this run's calls only" not in b.calls["not_sent_why"]
        assert total["cost_usd"] <= cap
        assert total["made"] == a.calls["made"] + b.calls["made"]


async def test_a_call_without_a_session_has_a_cap_of_its_own():
    """Each API call without `session=` is one command in a session of its own: the cap
    is whole for each (as `--max-cost` is for each CLI run)."""
    with FakeLLMServer() as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k&price_in=100&price_out=0"
        one = (await judgeaudit.aevaluate(spec, items("m"), cache=False)).calls["cost_usd"]
        for tag in ("x", "y"):
            res = await judgeaudit.aevaluate(spec, items(tag), cache=False, max_cost=1.5 * one)
            assert res.ok and res.calls["not_sent"] == 0
