"""What a run says it spent, where a script reads it: the --json summary carries the prompt and
completion tokens the terminal's calls line and results.json show (a paying tester found
them missing). A real OpenAI-shaped server on loopback whose answers carry token counts; the
price is given in the judge spec; a real SQLite cache."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
SRC = Path(__file__).resolve().parents[2] / "src"


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
    # at the spec's price_in/price_out, named so (it said "at list prices": review9 item 1)
    estimate = float(re.search(r"about \$([0-9.]+) at the judge spec's prices",
                               planned).group(1))
    assert "an estimate, not a bound" in planned and "characters / 4" in planned, planned
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    bill = sum(r["response"]["body"]["usage"]["prompt_tokens"] for r in rows) * 100 / 1e6
    assert bill > estimate  # the case the old wording denied
    said = " ".join(invoke("ingest", out, "--plan", plan).output.split())
    assert "upper bound" not in said, said
    assert ("(the plan's estimate counted prompt tokens at characters / 4, which a tokenizer "
            "may pass: the bill can be above it)") in said, said


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_during_a_batch_says_it_is_open_billed_and_collected_by_a_rerun(tmp_path):
    # A batch the fake Batch API answers only after many status checks: the child submits it,
    # then gets a real SIGINT while it waits. The calls line said "0 made ... 40 cancelled by
    # the interruption" and nothing of the batch still open (and billed) at the provider.
    from fakebatch import FakeBatchServer

    from tests.cli.test_cli import write_items
    from tests.cli.test_interrupt import _sigint_as_at_a_terminal

    data = tmp_path / "items.jsonl"
    write_items(data, 6)
    cache = tmp_path / "cache.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(SRC)
    with FakeBatchServer(polls_to_finish=10_000, logprobs=False) as srv:
        args = [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
                f"openai:m?base_url={srv.openai_url}&api_key=k&batch=on&batch_wait=0.05"
                "&poll=0.05&price_in=100&price_out=400", "--data", f"jsonl:{data}",
                "--cache", str(cache)]
        child = subprocess.Popen([*args, "--out", str(tmp_path / "a"), "--json"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=_sigint_as_at_a_terminal)
        deadline = time.monotonic() + 60
        while not srv.batches and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.batches, "the child never submitted its batch"
        time.sleep(0.3)  # a few status checks
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=30)
        assert child.returncode == 130, err
        (batch_id,) = srv.batches
        lines = sum(srv.submitted.values())
        text = " ".join(err.split())
        assert f"{lines} cancelled by the interruption" in text, text
        assert (f"batch {batch_id} ({lines} requests) is still open at the provider, which "
                "answers and bills it: running the same command again collects the answers "
                "(nothing is submitted again)") in text, text
        calls = json.loads((tmp_path / "a" / "results.json").read_text())["calls"]
        assert calls["open_batches"] == {batch_id: lines}
        assert json.loads(out)["calls"]["open_batches"] == {batch_id: lines}
        # the re-run collects it: no upload, no new batch, every line asked once
        srv.polls_to_finish = 1
        uploads = sum(1 for method, path in srv.api_log
                      if method == "POST" and path.rstrip("/").endswith("/files"))
        assert uploads == 1
        rerun = subprocess.run([*args, "--out", str(tmp_path / "b")], env=env,
                               capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        assert list(srv.batches) == [batch_id] and set(srv.submitted.values()) == {1}
        assert sum(1 for method, path in srv.api_log
                   if method == "POST" and path.rstrip("/").endswith("/files")) == uploads
        assert "still open at the provider" not in " ".join(rerun.stderr.split())


def test_a_batch_run_names_the_rate_its_cost_is_at(tmp_path, monkeypatch):
    # batch=on halves a built-in price and takes a spec's price_in/price_out as given; the
    # calls line said "at list prices" either way
    from fakebatch import FakeBatchServer

    from judgeaudit.cli.format import usage_text
    from judgeaudit.llm import make_provider
    from judgeaudit.llm.client import price_rate

    write_pairs(tmp_path / "pairs.jsonl", 4)
    with FakeBatchServer(polls_to_finish=1) as srv:
        spec = (f"openai:m?base_url={srv.openai_url}&api_key=k&batch=on&batch_wait=0.05"
                "&poll=0.05&price_in=100&price_out=400")
        res = runner.invoke(app, ["evaluate", "--judge", spec, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--json",
                                  "--out", str(tmp_path / "ev")])
    assert res.exit_code == 0, res.output
    calls = json.loads((tmp_path / "ev" / "results.json").read_text())["calls"]
    assert calls["price_rate"] == "spec_batch"
    text = " ".join(res.output.split())
    assert ("at the judge spec's prices, as given (batch=on halves only a built-in price: "
            "price_in/price_out are the rate billed)") in text, text
    assert calls["cost_usd"] == pytest.approx(
        (calls["prompt_tokens"] * 100 + calls["completion_tokens"] * 400) / 1e6)
    builtin = make_provider("openai", "gpt-4o-mini", {"api_key": "sk-x", "batch": "on"})
    assert price_rate(builtin) == "batch"
    assert price_rate(make_provider("openai", "gpt-4o-mini", {"api_key": "sk-x"})) == "list"
    said = usage_text({"prompt_tokens": 10, "completion_tokens": 1, "cost_usd": 0.5,
                       "price_rate": "batch"})
    assert said.endswith("$0.5000 at the batch rate (half the list price: batch=on)")
    # a document written before the rate was kept reads as before
    assert usage_text({"prompt_tokens": 10, "completion_tokens": 1,
                       "cost_usd": 0.5}).endswith("$0.5000 at list prices")
