"""A missing API key, for a provider that needs one (no base_url, no $OPENAI_BASE_URL), is
bad input, exit 2, found before any call is sent, as a malformed key is: it failed the
first call and with it the run (exit 3, "5 of the 6 calls not sent"). A fully cached run
and --plan-only still need no key, as the README promises."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer, judge_request
from typer.testing import CliRunner

from judgeaudit.llm import Client, make_provider

runner = CliRunner()
KEY = "sk-proj-MISSINGcanaryR8w3Nq5Vt"
NO_KEY = "no API key: set $OPENAI_API_KEY, or pass api_key=... in the judge spec"


def _cli(args: list[str]):
    from judgeaudit.cli.main import app

    return runner.invoke(app, args)


def test_a_missing_key_exits_2_before_sending_and_a_cached_run_or_plan_needs_none(
        tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    # no base_url in the spec: the answers are cached under the api.openai.com judge
    args = ["evaluate", "--data", "builtin:facts", "--json", "--judge", "openai:fake"]
    with FakeLLMServer() as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        first = _cli([*args, "--limit", "2", "--out", str(tmp_path / "o1")])
        assert first.exit_code == 0, first.output
        sent = srv.count()
        assert sent > 0
        monkeypatch.delenv("OPENAI_BASE_URL")
        monkeypatch.delenv("OPENAI_API_KEY")
        cached = _cli([*args, "--limit", "2", "--out", str(tmp_path / "o2")])
        assert cached.exit_code == 0, cached.output
        plan = _cli(["--plan-only", str(tmp_path / "plan.jsonl"), *args, "--limit", "3"])
        assert plan.exit_code == 0, plan.output
        assert json.loads(plan.stdout.strip().splitlines()[-1])["planned"] > 0
        live = _cli([*args, "--limit", "2", "--out", str(tmp_path / "o3"), "--no-cache"])
        assert live.exit_code == 2, live.output
        assert NO_KEY in live.output
        said = json.loads(live.stdout.strip().splitlines()[-1])
        assert said["exit_code"] == 2 and NO_KEY in said["reason"]
        assert srv.count() == sent  # nothing sent


async def test_a_missing_key_is_a_value_error_at_the_first_call_for_both_providers(
        monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY",
                "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    for name, want in (("openai", NO_KEY),
                       ("anthropic", "no API key: set $ANTHROPIC_API_KEY or pass api_key=...")):
        client = Client(make_provider(name, "m", {}))  # making the judge needs no key
        with pytest.raises(ValueError, match=want.replace("$", r"\$").replace(".", r"\.")):
            await client.call(judge_request(0))
        await client.aclose()


async def test_a_local_server_needs_no_key(monkeypatch, no_keys):
    with FakeLLMServer() as srv:
        client = Client(make_provider("openai", "fake", {"base_url": srv.openai_url}))
        out = await client.call(judge_request(0))
        await client.aclose()
    assert out.text and srv.count() == 1
