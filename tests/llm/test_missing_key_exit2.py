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


def _answer(plan, out, base: str) -> None:
    """Each plan line answered by the server at `base`, as batch output lines."""
    import httpx

    with httpx.Client(timeout=30) as http, open(out, "w") as w:
        for i, raw in enumerate(plan.read_text().splitlines()):
            line = json.loads(raw)
            r = http.post(base + line["url"], json=line["body"])
            w.write(json.dumps({"id": f"b{i}", "custom_id": line["custom_id"], "error": None,
                                "response": {"status_code": r.status_code,
                                             "body": r.json()}}) + "\n")


def test_a_missing_key_exits_2_before_sending_and_a_cached_run_or_plan_needs_none(
        tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    # no base_url in the spec: the answers are cached under the api.openai.com judge, planned
    # and ingested (a run through $OPENAI_BASE_URL is keyed by that server, not by OpenAI's)
    args = ["evaluate", "--data", "builtin:facts", "--json", "--judge", "openai:fake"]
    with FakeLLMServer() as srv:
        first = tmp_path / "first.jsonl"
        planned = _cli(["--plan-only", str(first), *args, "--limit", "2"])
        assert planned.exit_code == 0, planned.output
        _answer(first, tmp_path / "answers.jsonl", srv.url)
        ingested = _cli(["ingest", str(tmp_path / "answers.jsonl"), "--plan", str(first)])
        assert ingested.exit_code == 0, ingested.output
        sent = srv.count()
        assert sent > 0
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
