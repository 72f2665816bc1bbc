"""A pair whose calls gave no verdict is counted and shown, never folded into a number.

A pair refused as too long for the judge's context read as a silent disagreement ("85.7%
(n = 7; 0 pairs left out)"). The mtbench rule (MT-Bench's agreement without tie) still
counts a pair with no verdict in any order as a disagreement, as FastChat's "error" vote
does (its judge call gave up, or its answer did not parse), and the mean, sum and both rules
keep such a pair in n with no credit for that order; every rule now says how many such
pairs it counted and whether the call failed or the answer was unreadable. A real
OpenAI-shaped server on loopback: item 5's prompt is refused as too long, items 3 and 4 get
prose with no verdict in one order."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, default_answer, write_pairs
from typer.testing import CliRunner

from judgeaudit.audit.evaluate import summarize
from judgeaudit.data import PairwiseItem
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _answer(text: str) -> str:
    # items 3 and 4: prose in the order that shows the GOOD answer first
    if re.search(r"question item [34]\n", text) and re.search(r"Response A:\n[^\n]*GOOD", text):
        return "I cannot decide between them."
    return default_answer(text)


def _rule(rec, attempt: int) -> str | None:
    return "too_long" if "question item 5\n" in rec.prompt_text else None


def _evaluate(tmp_path, rule: str) -> tuple[object, dict, int]:
    from judgeaudit.cli.main import app

    write_pairs(tmp_path / "pairs.jsonl", 8)
    out = tmp_path / f"out_{rule}"
    with FakeLLMServer(answer=_answer, rule=_rule) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["evaluate", "--judge", spec, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--pair-rule", rule,
                                  "--concurrency", "1", "--max-failed", "0.5",
                                  "--out", str(out)])
        sent = srv.count()
    return res, json.loads((out / "results.json").read_text()), sent


def test_mtbench_counts_a_refused_pair_as_fastchat_and_says_so(tmp_path):
    res, doc, sent = _evaluate(tmp_path, "mtbench")
    assert res.exit_code == 0, res.output
    assert sent == 16  # 8 pairs, both orders, each sent once (too long: no retry)
    acc = doc["accuracy"]
    # 5 pairs both orders right; 3, 4: one order unreadable (left out); 5: refused in both
    # orders (FastChat's "error" vote: a disagreement, counted)
    assert (acc["n"], acc["n_left_out"]) == (6, 2)
    assert acc["value"] == pytest.approx(5 / 6)
    assert acc["left_out"] == {"one_order_without_verdict": 2}
    assert (acc["n_no_verdict_failed"], acc["n_no_verdict_unreadable"]) == (1, 0)
    text = " ".join(res.output.split())
    assert "2 pairs left out: 2 one order without a verdict (orders differ)" in text
    assert ("accuracy (mtbench rule) counts 1 of 6 pairs with no verdict in any order, as a "
            "disagreement (FastChat's 'error' vote): 1 with a failed or refused call") in text


@pytest.mark.parametrize("rule", ["mean", "sum", "both"])
def test_other_rules_count_the_pairs_without_a_verdict_they_score(tmp_path, rule):
    res, doc, _ = _evaluate(tmp_path, rule)
    assert res.exit_code == 0, res.output
    acc = doc["accuracy"]
    assert acc["n"] == 8
    assert (acc["n_no_verdict_failed"], acc["n_no_verdict_unreadable"]) == (1, 2)
    text = " ".join(res.output.split())
    # sum scores such an order 0 (a right order beside it still makes the pair right)
    how = ("that order scoring 0 (neither right nor wrong)" if rule == "sum"
           else "that order as wrong")
    assert (f"accuracy ({rule} rule) counts 3 of 8 pairs with an order without a verdict, "
            f"{how}: 1 with a failed or refused call and 2 with an unreadable "
            "answer") in text


def test_no_verdict_failed_and_unreadable_are_told_apart():
    failed = OrderVerdict("12", "boom", None, None, error="too long", failed="call_failed")
    unread = OrderVerdict("21", "prose", None, None)
    items = [PairwiseItem(id=str(i), prompt="p", response_1="a", response_2="b", label=1)
             for i in range(2)]
    verdicts = [PairwiseVerdict("0", [failed, failed]), PairwiseVerdict("1", [unread, unread])]
    res = summarize(items, verdicts, pair_rule="mtbench", kappa_boot=0)
    assert (res["accuracy"]["n"], res["accuracy"]["value"]) == (2, 0.0)
    assert res["accuracy"]["left_out"] == {}
    for rule in ("mtbench", "mean", "sum", "both"):
        acc = res["accuracy_by_rule"][rule]
        assert (acc["n"], acc["value"]) == (2, 0.0)
        assert (acc["n_no_verdict_failed"], acc["n_no_verdict_unreadable"]) == (1, 1)
