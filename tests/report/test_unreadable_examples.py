"""What the judge said when it gave no verdict is shown, not only counted: at 10% unreadable
the terminal and report.html gave counts only, and evaluate's examples listed failed calls
(no answer at all) first, so twenty of them hid every unreadable answer. The audit keeps up
to 5 distinct unreadable answers (results.json `unreadable_examples`, cut to 200
characters), its report shows them escaped, and both commands quote one or two on the
terminal. A real OpenAI-shaped server on loopback."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, default_answer, write_pairs
from typer.testing import CliRunner

from judgeaudit.report import render_report

runner = CliRunner()
LONG = "x" * 400


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _answer(text: str) -> str:
    m = re.search(r"question item (\d+)\n", text)
    i = int(m.group(1)) if m else -1
    if i in (3, 4, 6, 7, 8, 9, 10):
        return f"I cannot decide on item {i} <b>both</b> &amp; more"
    if i == 2:
        return "Hmm. " + LONG
    return default_answer(text)


def _rule(rec, attempt: int) -> str | None:
    m = re.search(r"question item (\d+)\n", rec.prompt_text)
    return "too_long" if m and int(m.group(1)) >= 30 else None


def run(tmp_path, command: str, n: int, *extra: str, answer=_answer, rule=_rule):
    from judgeaudit.cli.main import app

    write_pairs(tmp_path / "pairs.jsonl", n)
    out = tmp_path / "out"
    with FakeLLMServer(answer=answer, rule=rule) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        args = [command, "--judge", spec, "--data", f"jsonl:{tmp_path / 'pairs.jsonl'}",
                "--concurrency", "1", "--out", str(out), *extra]
        res = runner.invoke(app, args)
    doc = json.loads((out / "results.json").read_text())
    return res, doc, render_report(doc)


def test_the_audit_keeps_and_shows_up_to_five_distinct_unreadable_answers(tmp_path):
    res, doc, html = run(tmp_path, "audit", 20, "--probes", "position", "--max-failed", "1")
    assert res.exit_code == 0, res.output
    ex = doc["unreadable_examples"]
    assert len(ex) == 5
    assert len({x["raw"] for x in ex}) == 5
    assert all(len(x["raw"]) <= 200 and x["why"] == "unparseable answer" for x in ex)
    three = [x for x in ex if x["item_id"] == "t:3"]
    assert three == [{"item_id": "t:3", "order": three[0]["order"],
                      "raw": "I cannot decide on item 3 <b>both</b> &amp; more",
                      "why": "unparseable answer"}]
    # the report shows them, escaped (judged text is never markup)
    assert 'id="unreadable"' in html
    assert "I cannot decide on item 3 &lt;b&gt;both&lt;/b&gt; &amp;amp; more" in html
    assert "<b>both</b>" not in html
    text = " ".join(res.output.split())
    assert "unreadable answers, e.g. t:2" in text and "I cannot decide on item 3" in text


def test_a_long_unreadable_answer_is_cut_to_200_characters(tmp_path):
    res, doc, html = run(tmp_path, "audit", 12, "--probes", "position", "--max-failed", "1")
    long = [x for x in doc["unreadable_examples"] if x["item_id"] == "t:2"]
    assert long and long[0]["raw"] == ("Hmm. " + LONG)[:200]
    assert LONG[:300] not in html


def test_an_audit_whose_answers_all_read_shows_no_examples(tmp_path):
    from judgeaudit.cli.main import app

    write_pairs(tmp_path / "pairs.jsonl", 3)
    with FakeLLMServer() as srv:
        res = runner.invoke(app, ["audit", "--judge",
                                  f"openai:m?base_url={srv.openai_url}&api_key=k", "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--probes", "position",
                                  "--out", str(tmp_path / "o")])
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["unreadable_examples"] == []
    assert 'id="unreadable"' not in (tmp_path / "o" / "report.html").read_text()
    assert "unreadable answers, e.g." not in res.output


def _item(text: str) -> int:
    m = re.search(r"question item (\d+)\n", text)
    return int(m.group(1)) if m else -1


def test_evaluate_shows_unreadable_answers_before_failed_calls(tmp_path):
    # items 0-11 fail (24 calls refused as too long), items 20-22 answer prose: the first
    # twenty invalid verdicts, in item order, were the failed calls' empty rows
    res, doc, html = run(
        tmp_path, "evaluate", 30, "--max-failed", "1",
        answer=lambda t: (f"I cannot decide on item {_item(t)} <b>both</b>"
                          if 20 <= _item(t) <= 22 else default_answer(t)),
        rule=lambda rec, attempt: "too_long" if _item(rec.prompt_text) < 12 else None)
    ex = doc["invalid_examples"]
    assert [x["item_id"] for x in ex[:6]] == ["t:20", "t:20", "t:21", "t:21", "t:22", "t:22"]
    assert all(x["failed"] is None for x in ex[:6])
    assert [x["failed"] for x in ex[6:]] == ["call_failed"] * 14
    assert "I cannot decide on item 20 &lt;b&gt;both&lt;/b&gt;" in html
    assert "unreadable answers, e.g. t:20" in " ".join(res.output.split())
