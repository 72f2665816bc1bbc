"""`judgeaudit ingest` after a plan, with a real loopback server as the executor: a malformed
answer line gives way to a later answer of its custom_id (as an error line does); the stored
answers' tokens and cost at the judge spec's prices are said (the provider's bill for them);
answers cut at max_tokens or empty are counted; a cut-off last line is named; an empty file
or a file answering nothing planned in this cache exits 2 naming the likely cause."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.llm import Cache
from judgeaudit.llm.client import _usd
from tests.cli.test_cli import write_items
from tests.cli.test_plan_ingest import execute, invoke

pytestmark = pytest.mark.usefixtures("no_keys")


@pytest.fixture
def planned(tmp_path, monkeypatch):
    """(plan, output executed by the server, cache path, server) of a 4-item evaluate."""
    data = tmp_path / "items.jsonl"
    write_items(data, 4)
    cache_path = tmp_path / "c.sqlite"
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(cache_path))
    with FakeLLMServer() as srv:
        spec = f"openai:fake-model?base_url={srv.openai_url}&price_in=2&price_out=10"
        plan = tmp_path / "plan.jsonl"
        invoke("--plan-only", plan, "evaluate", "--judge", spec, "--data", f"jsonl:{data}",
               "--limit", "4", "--out", tmp_path / "o")
        out = tmp_path / "out.jsonl"
        execute(plan, out, srv.url)
        yield plan, out, cache_path, srv


def _lines(path):
    return [json.loads(x) for x in path.read_text().splitlines()]


def _text(res) -> str:
    return " ".join(res.output.split())


def test_a_malformed_line_gives_way_to_a_later_answer(planned, tmp_path):
    plan, out, cache_path, _ = planned
    rows = _lines(out)
    bad = json.loads(json.dumps(rows[0]))
    bad["response"]["body"] = {"foo": "bar"}
    mixed = tmp_path / "mixed.jsonl"
    mixed.write_text("".join(json.dumps(r) + "\n" for r in [bad, *rows]))
    res = invoke("ingest", mixed, "--plan", plan)
    text = _text(res)
    assert f"ingested {len(rows)} answers of {len(rows) + 1} lines" in text
    assert "repeated custom_id" not in text and "have no answer" not in text
    assert "1 error line answered by a later line of the same custom_id" in text
    c = Cache(cache_path)
    assert c.get(rows[0]["custom_id"]) is not None
    c.close()


def test_ingest_says_the_answers_tokens_and_cost(planned):
    plan, out, _, _ = planned
    rows = _lines(out)
    pt = sum(r["response"]["body"]["usage"]["prompt_tokens"] for r in rows)
    ct = sum(r["response"]["body"]["usage"]["completion_tokens"] for r in rows)
    assert pt > 0 and ct > 0
    text = _text(invoke("ingest", out, "--plan", plan))
    assert f"ingesting: {len(rows)}/{len(rows)} (" in text  # the progress bar's last line
    cost = (pt * 2 + ct * 10) / 1e6
    assert (f"the {len(rows)} answers stored used {pt:,} prompt + {ct:,} completion tokens "
            f"(their usage), {_usd(cost)} at the judge spec's prices: the provider's bill "
            "for these answers") in text


def test_answers_cut_at_max_tokens_or_empty_are_counted(planned, tmp_path):
    plan, out, _, _ = planned
    rows = _lines(out)
    rows[0]["response"]["body"]["choices"][0]["finish_reason"] = "length"
    rows[1]["response"]["body"]["choices"][0]["message"]["content"] = ""
    odd = tmp_path / "odd.jsonl"
    odd.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = _text(invoke("ingest", odd, "--plan", plan))
    assert (f"1 empty and 1 cut off at max_tokens (finish_reason length) of {len(rows)} "
            "answers") in text


def test_a_cut_off_last_line_is_named(planned, tmp_path):
    plan, out, _, _ = planned
    raw = out.read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(raw[:-40])  # the executor stopped mid-line
    n = raw.count("\n")
    text = _text(invoke("ingest", cut, "--plan", plan))
    assert f"the last line ({n}) is cut off in {cut}: was the executor stopped" in text
    assert "unreadable" not in text


def test_an_empty_file_or_a_wrong_cache_exits_2(planned, tmp_path, monkeypatch):
    plan, out, _, _ = planned
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    res = invoke("ingest", empty, "--plan", plan, ok=False)
    assert res.exit_code == 2 and "empty file" in _text(res)
    other = tmp_path / "other.sqlite"
    Cache(other).close()
    res = invoke("ingest", out, "--cache", other, ok=False)
    text = _text(res)
    assert res.exit_code == 2, text
    assert "wrong --cache?" in text and str(other) in text
