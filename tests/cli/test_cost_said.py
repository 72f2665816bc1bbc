"""What a run says it spent, where a script reads it: the --json summary carries the prompt and
completion tokens the terminal's calls line and results.json show (a paying tester found
them missing). A real OpenAI-shaped server on loopback whose answers carry token counts; the
price is given in the judge spec; a real SQLite cache."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def test_json_summary_has_the_tokens_the_terminal_shows(tmp_path):
    write_pairs(tmp_path / "pairs.jsonl", 6)
    out = tmp_path / "ev"
    with FakeLLMServer() as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k&price_in=100&price_out=400"
        res = runner.invoke(app, ["evaluate", "--judge", spec, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--json",
                                  "--out", str(out)])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)["calls"]
    doc = json.loads((out / "results.json").read_text())["calls"]
    assert doc["prompt_tokens"] > 0 and doc["completion_tokens"] > 0
    assert summary["prompt_tokens"] == doc["prompt_tokens"], summary
    assert summary["completion_tokens"] == doc["completion_tokens"], summary
    assert summary["cost_usd"] == pytest.approx(
        (doc["prompt_tokens"] * 100 + doc["completion_tokens"] * 400) / 1e6)


def test_the_plan_estimate_is_said_as_an_estimate_and_a_bill_above_it_is_not_a_surprise(
        tmp_path, monkeypatch, no_keys):
    # A server counting a token per 3 characters (a tokenizer denser than characters / 4:
    # code, other languages) and completions free: the bill passes the plan's estimate, which
    # ingest called "an upper bound".
    import fakeserver

    from tests.cli.test_cli import write_items
    from tests.cli.test_plan_ingest import execute, invoke

    monkeypatch.setattr(fakeserver, "_ntokens", lambda text: -(-len(text) // 3))
    data = tmp_path / "items.jsonl"
    write_items(data, 6)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan, out = tmp_path / "plan.jsonl", tmp_path / "out.jsonl"
    spec = "openai:m?base_url=http://127.0.0.1:9/v1&api_key=k&price_in=100&price_out=0"
    planned = " ".join(invoke("--plan-only", plan, "evaluate", "--judge", spec, "--data",
                              f"jsonl:{data}", "--limit", "6", "--out", tmp_path / "o")
                       .output.split())
    with FakeLLMServer() as srv:
        execute(plan, out, srv.url)
    estimate = float(re.search(r"about \$([0-9.]+) at list prices", planned).group(1))
    assert "an estimate, not a bound" in planned and "characters / 4" in planned, planned
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    bill = sum(r["response"]["body"]["usage"]["prompt_tokens"] for r in rows) * 100 / 1e6
    assert bill > estimate  # the case the old wording denied
    said = " ".join(invoke("ingest", out, "--plan", plan).output.split())
    assert "upper bound" not in said, said
    assert ("(the plan's estimate counted prompt tokens at characters / 4, which a tokenizer "
            "may pass: the bill can be above it)") in said, said
