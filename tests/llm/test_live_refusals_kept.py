"""A live too-long refusal is kept in the cache, so a re-run does not send it again.

`judgeaudit ingest` kept a plan's too-long refusals (`Cache.put_refusals`); a live evaluate
or audit did not, so each re-run sent every prompt over the model's context again and got
the same 400 (2 requests, then 4). Now the client keeps it; the re-run fails the call as the
live call failed (kind too_long, counted as a refusal from the cache), and `cache forget
--invalid` or `cache clear` (for the provider too) asks it again. A real OpenAI-shaped server
on loopback counting the requests; item 5's prompt is over its context."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.cache import Cache
from tests.llm.test_refusal_kept_only_when_stable import via_proxy  # noqa: F401 - a fixture

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _rule(rec, attempt: int) -> str | None:
    return "too_long" if "question item 5\n" in rec.prompt_text else None


def _long_sent(srv) -> int:
    return sum("question item 5\n" in r.prompt_text for r in srv.snapshot())


@pytest.mark.parametrize("command", ["evaluate", "audit"])
def test_a_rerun_does_not_send_a_refused_prompt_again(tmp_path, isolated_cache, command,
                                                      via_proxy):  # noqa: F811
    """Kept only from a hosted API (review7 finding 6): the loopback server is reached as
    api.openai.com through a loopback HTTP proxy."""
    write_pairs(tmp_path / "pairs.jsonl", 8)
    extra = ["--probes", "position"] if command == "audit" else []
    with FakeLLMServer(rule=_rule) as srv:
        via_proxy(srv)
        spec = "openai:m?base_url=http://api.openai.com/v1&api_key=k"

        def run(tag: str):
            out = tmp_path / tag
            res = runner.invoke(app, [command, "--judge", spec, "--data",
                                      f"jsonl:{tmp_path / 'pairs.jsonl'}", "--max-failed",
                                      "0.5", "--out", str(out), *extra])
            assert res.exit_code == 0, res.output
            return res, json.loads((out / "results.json").read_text())

        run("first")
        first = _long_sent(srv)
        assert first == 2  # both orders of item 5, no retry
        srv.reset()
        res, doc = run("again")
        assert _long_sent(srv) == 0 and srv.count() == 0  # the rest from the cache too
        calls = doc["calls"]
        assert calls["errors"] == {"too_long": 2}
        assert (calls["failed"], calls["refused_cached"], calls["made"]) == (2, 2, 0)
        text = " ".join(res.output.split())
        assert ("2 too long for the model's context, a refusal kept in the cache and not sent "
                "again") in text
        # forgetting the refusals asks them again
        forgot = runner.invoke(app, ["cache", "forget", "--invalid", "--provider", "openai"])
        assert forgot.exit_code == 0, forgot.output
        srv.reset()
        run("third")
        assert _long_sent(srv) == 2


def test_cache_clear_for_the_provider_drops_a_live_refusal(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    cache.put_refusals([("k1", "too_long", "over the context")], provider="openai", model="m")
    cache.put_refusals([("k2", "too_long", "over the context")], provider="other", model="m")
    assert cache.refusal("k1") and cache.refusal("k2")
    cache.clear("openai")
    assert cache.refusal("k1") is None and cache.refusal("k2") is not None
