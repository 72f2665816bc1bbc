"""The calls line tells the calls sent to a model server from those a simulated provider
answered (`calls.simulated`): mitigate with a `simhubj` scorer said "114 made" where the
server got 54 requests, quantify with a `simhubj` generator "216 made" against 136. In the
terminal, --json and results.json, against a real loopback server counting its requests."""

from __future__ import annotations

import json

import pytest
from fakeserver import GOOD, FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.result import Result

runner = CliRunner()
LONG = " ".join(["word"] * 60)


@pytest.fixture(autouse=True)
def _env(isolated_cache, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _items(path, n: int = 12) -> str:
    """n items; the loopback judge picks the human-preferred response (it holds `GOOD`)."""
    rows = [{"id": f"i{i}", "prompt": f"q {i}",
             "response_1": f"ok {i}" + " x" * (i % 4) + (f" {GOOD}" if i % 2 == 0 else ""),
             "response_2": f"{LONG} {i}" + (f" {GOOD}" if i % 2 else ""), "label": 1 + i % 2}
            for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def _check(res, out, srv) -> None:
    sent = srv.count("/v1/chat/completions")
    doc = json.loads((out / "results.json").read_text())
    c = doc["calls"]
    assert sent > 0 and c["simulated"] > 0, c
    # `made` keeps its meaning (every answered call); what reached the server is the rest
    assert c["made"] - c["simulated"] == sent, (c, sent)
    assert c["simulated_by"] == {"simhubj": c["simulated"]}
    text = " ".join(res.output.split())
    assert (f"calls: {c['made']} made ({sent} sent to a model, {c['simulated']} simulated by "
            "simhubj: free, no request sent), ") in text, text
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["calls"]["simulated"] == c["simulated"]
    assert summary["calls"]["made"] == c["made"]
    assert Result.load(out).summary()["calls"]["simulated"] == c["simulated"]


def test_mitigate_with_a_simulated_scorer_counts_its_calls_apart(tmp_path):
    with FakeLLMServer() as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, ["mitigate", "--judges", judge, "--scorer",
                                  "simhubj?score_from=length", "--data",
                                  _items(tmp_path / "d.jsonl"), "--factor", "length",
                                  "--json", "--out", str(tmp_path / "o")])
        _check(res, tmp_path / "o", srv)


def test_quantify_with_a_simulated_generator_counts_its_calls_apart(tmp_path):
    with FakeLLMServer() as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, ["quantify", "--judges", judge, "--generator", "simhubj",
                                  "--data", _items(tmp_path / "d.jsonl"), "--factors",
                                  "verbosity", "--pool", "12", "--limit", "6", "--json",
                                  "--out", str(tmp_path / "o")])
        _check(res, tmp_path / "o", srv)


def test_a_run_without_a_simulated_provider_says_made_as_before(tmp_path):
    with FakeLLMServer() as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        scorer = f"openai:s?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, ["mitigate", "--judges", judge, "--scorer", scorer,
                                  "--data", _items(tmp_path / "d.jsonl"), "--factor",
                                  "length", "--json", "--out", str(tmp_path / "o")])
        doc = json.loads((tmp_path / "o" / "results.json").read_text())
        assert doc["calls"]["simulated"] == 0 and "simulated_by" not in doc["calls"]
        assert f"calls: {doc['calls']['made']} made, " in " ".join(res.output.split())
