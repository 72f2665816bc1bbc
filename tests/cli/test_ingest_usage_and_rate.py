"""`judgeaudit ingest`'s bill, with a real loopback server as the executor: answers whose
`usage` is null or missing are counted and said (06ebb47 left them out of the token sums and
the cost while the line spoke of all the answers stored); the price used is named (list
prices are a live call's: a provider's batch API bills half, which the line says with its
amount; a batch=on spec is priced at the batch rate and says so); amounts under $0.01 have 3
significant digits (the spend cap's `_usd`), not "$0.0000"."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.llm.client import _usd
from tests.cli.test_cli import write_items
from tests.cli.test_plan_ingest import execute, invoke

pytestmark = pytest.mark.usefixtures("no_keys")

LIST = (0.15, 0.60)  # gpt-4o-mini's built-in list price (USD per million tokens)


def _plan_and_execute(tmp_path: Path, monkeypatch: Any, spec: str
                      ) -> tuple[Path, Path, list[dict[str, Any]]]:
    """(plan, output file, its lines) of a 4-item evaluate planned with `spec` and answered
    by the loopback server (a stand-in for vllm run-batch or a batch API)."""
    data = tmp_path / "items.jsonl"
    write_items(data, 4)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan, out = tmp_path / "plan.jsonl", tmp_path / "out.jsonl"
    with FakeLLMServer() as srv:
        invoke("--plan-only", plan, "evaluate", "--judge", spec, "--data", f"jsonl:{data}",
               "--limit", "4", "--out", tmp_path / "o")
        execute(plan, out, srv.url)
    return plan, out, [json.loads(x) for x in out.read_text().splitlines()]


def _cost(rows: list[dict[str, Any]], price: tuple[float, float]) -> float:
    return sum(r["response"]["body"]["usage"]["prompt_tokens"] * price[0]
               + r["response"]["body"]["usage"]["completion_tokens"] * price[1]
               for r in rows) / 1e6


def _text(res: Any) -> str:
    return " ".join(res.output.split())


def test_answers_with_no_usage_are_counted_and_left_out_of_the_bill(tmp_path, monkeypatch):
    spec = "openai:m?base_url=http://127.0.0.1:9/v1&price_in=2&price_out=10"
    plan, out, rows = _plan_and_execute(tmp_path, monkeypatch, spec)
    n = len(rows)
    rows[0]["response"]["body"]["usage"] = None
    del rows[1]["response"]["body"]["usage"]
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rest = rows[2:]
    pt = sum(r["response"]["body"]["usage"]["prompt_tokens"] for r in rest)
    ct = sum(r["response"]["body"]["usage"]["completion_tokens"] for r in rest)
    text = _text(invoke("ingest", out, "--plan", plan))
    assert (f"the {n} answers stored used {pt:,} prompt + {ct:,} completion tokens (their "
            f"usage; 2 of them gave no usage (null or missing): left out of the sums and the "
            f"bill, which covers the other {n - 2}), {_usd(_cost(rest, (2, 10)))} at the judge "
            "spec's prices: the provider's bill for these answers") in text


def test_list_prices_are_named_with_what_a_batch_api_bills(tmp_path, monkeypatch):
    plan, out, rows = _plan_and_execute(tmp_path, monkeypatch,
                                        "openai:gpt-4o-mini?api_key=sk-test-not-used")
    cost = _cost(rows, LIST)
    assert cost < 0.01  # said to 3 significant digits, not "$0.0001"
    text = _text(invoke("ingest", out, "--plan", plan))
    assert (f"{_usd(cost)} at list prices: the bill for these answers sent as live calls "
            "(the plan's estimate counted prompt tokens at characters / 4, which a tokenizer "
            "may pass: the bill can be above it); through a provider's batch API (OpenAI, "
            f"Anthropic) they bill half, {_usd(cost / 2)}") in text
    assert "sk-test-not-used" not in text


def test_a_batch_on_spec_is_priced_and_named_at_the_batch_rate(tmp_path, monkeypatch):
    plan, out, rows = _plan_and_execute(
        tmp_path, monkeypatch, "openai:gpt-4o-mini?api_key=sk-test-not-used&batch=on")
    half = _cost(rows, (LIST[0] / 2, LIST[1] / 2))
    text = _text(invoke("ingest", out, "--plan", plan))
    assert (f"{_usd(half)} at the batch rate (half the list price: the judge spec says "
            "batch=on): the provider's bill for these answers") in text
    assert "sent as live calls" not in text
