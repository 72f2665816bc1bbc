"""The client's first unreadable reason names the token limit the server was sent (the
judge spec's max_tokens, not the request's default: a cut answer under max_tokens=4000 read
"of max_tokens=384"), kept whole (it was cut at 200 characters mid-sentence); and a
pointwise evaluate that fails on unreadable answers says they could not be read as a score,
not "as a verdict". A real OpenAI-compatible server on loopback."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from tests.cli.test_cut_answers_said import CuttingServer

runner = CliRunner()


@pytest.mark.usefixtures("no_keys")
def test_the_first_unreadable_reason_names_the_limit_sent(tmp_path, isolated_cache):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 12)
    out = tmp_path / "ev"
    with CuttingServer(logprobs=False) as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&max_tokens=4000"
        r = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                "--out", str(out), "--max-failed", "0.9"])
    assert r.exit_code == 0, r.output
    first = json.loads((out / "results.json").read_text())["calls"]["first_unreadable"]
    assert "4000" in first and "384" not in first, first


@pytest.mark.usefixtures("no_keys")
def test_pointwise_evaluate_says_answers_could_not_be_read_as_a_score(tmp_path,
                                                                       isolated_cache):
    data = tmp_path / "points.jsonl"
    rows = [{"id": f"p{i}", "prompt": f"question {i}", "response": f"answer {i}",
             "score": 1 + i % 5} for i in range(6)]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with FakeLLMServer(answer=lambda _text: "I would rather not say.") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        r = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                "--out", str(tmp_path / "pw")])
    assert r.exit_code == 3, r.output
    doc = json.loads((tmp_path / "pw" / "results.json").read_text())
    assert "could not be read as a score" in doc["run"]["message"], doc["run"]["message"]
