"""What a run says it spent, where a script reads it: the --json summary carries the prompt and
completion tokens the terminal's calls line and results.json show (a paying tester found
them missing). A real OpenAI-shaped server on loopback whose answers carry token counts; the
price is given in the judge spec; a real SQLite cache."""

from __future__ import annotations

import json

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
