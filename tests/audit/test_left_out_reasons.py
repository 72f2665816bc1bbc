"""Items an audit leaves out for an invalid verdict are told apart by why: the call was never
sent (spend cap, the client stopped sending, --plan-only), it was sent and failed, or it
answered with no readable verdict. Before, all three were "invalid_verdict" ("unparseable
or its call failed"): an audit stopped by --max-cost reported probes with n = 0 as if the
judge had answered garbage. A real OpenAI-shaped server on loopback: prompts of item 3 and 4
get prose with no verdict, item 5's prompt is refused as too long (a call that fails at
once, without retries)."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, default_answer, write_pairs
from typer.testing import CliRunner

from judgeaudit.audit.metrics import why_invalid
from judgeaudit.audit.probe import DROP_REASONS
from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.judges.parse import call_failure
from judgeaudit.llm import CallFailed, Response

runner = CliRunner()
PRICE = "price_in=100&price_out=0"  # a call of ~100 prompt tokens costs about $0.01


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _answer(text: str) -> str:
    if re.search(r"question item [34]\n", text):
        return "I cannot decide between them."
    return default_answer(text)


def _rule(rec, attempt: int) -> str | None:
    return "too_long" if "question item 5\n" in rec.prompt_text else None


def audit(tmp_path, *extra: str) -> tuple[object, dict]:
    from judgeaudit.cli.main import app

    write_pairs(tmp_path / "pairs.jsonl", 20)
    out = tmp_path / "out"
    with FakeLLMServer(answer=_answer, rule=_rule) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k&{PRICE}"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--probes",
                                  "position,verbosity", "--concurrency", "1", "--out", str(out),
                                  *extra])
    return res, json.loads((out / "results.json").read_text())


def test_a_failed_call_and_an_unreadable_answer_are_left_out_under_their_own_reasons(tmp_path):
    res, doc = audit(tmp_path)
    assert res.exit_code == 0, res.output
    for name in ("position", "verbosity"):
        p = doc["probes"][name]
        assert p["dropped"] == {"call_failed": 1, "unparseable": 2}, name
        assert p["n"] + sum(p["dropped"].values()) == p["n_items"] == 20
    assert doc["dropped"] == {"call_failed": 1, "unparseable": 2}
    assert "invalid_verdict" not in doc["drop_reasons"]
    assert doc["drop_reasons"]["call_failed"] == DROP_REASONS["call_failed"]
    text = " ".join(res.output.split())
    assert ("left out (distinct items, by reason; an item left out by two probes for two "
            "reasons counts under each): call_failed 1, unparseable 2") in text
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "call failed" in html and "unparseable" in html
    assert DROP_REASONS["unparseable"] in html


def test_calls_a_spend_cap_kept_from_being_sent_are_not_sent_not_invalid(tmp_path):
    # 160 calls of about $0.01: the cap stops sending about a third of the way in
    res, doc = audit(tmp_path, "--max-cost", "0.5")
    assert res.exit_code == 3, res.output
    verb = doc["probes"]["verbosity"]
    assert verb["dropped"].get("not_sent", 0) >= 10, verb["dropped"]
    assert verb["n"] + sum(verb["dropped"].values()) == verb["n_items"]
    assert doc["dropped"]["not_sent"] == verb["dropped"]["not_sent"]
    assert doc["calls"]["not_sent"] > 0
    assert "not_sent" in " ".join(res.output.split())


# ---- the reading of one failed call ---------------------------------------------------------

@pytest.mark.parametrize(("exc", "reason"), [
    (CallFailed("openai: planned, not sent (--plan-only)", fatal=False, kind="planned"),
     "not_sent"),
    (CallFailed("openai: not sent: the spend cap is reached", fatal=False, kind="spend_cap"),
     "not_sent"),
    (CallFailed("openai: not sent: the run's call cap is reached", fatal=False,
                kind="call_cap"), "not_sent"),
    (CallFailed("openai: not sent: the server stopped answering; last error: HTTP 503",
                fatal=False, kind="server"), "not_sent"),
    (CallFailed("openai: the first 8 answers could not be used as verdicts, so no more calls "
                "were sent: empty answer", fatal=True, kind="other"), "not_sent"),
    (CallFailed("openai: gave up after 7 attempts: HTTP 500", fatal=False, kind="server"),
     "call_failed"),
    (CallFailed("openai: HTTP 401: bad key", fatal=True, kind="auth"), "call_failed"),
])
def test_a_failed_call_reads_as_not_sent_or_failed(exc, reason):
    assert call_failure(exc) == reason
    verdict = PairwiseJudge.read("12", exc)
    assert verdict.failed == reason and not verdict.valid


def test_a_sent_flag_on_the_failure_decides():
    exc = CallFailed("openai: HTTP 401: bad key", fatal=True, kind="auth")
    exc.sent = False  # type: ignore[attr-defined]
    assert call_failure(exc) == "not_sent"


def test_an_item_takes_its_most_upstream_reason():
    sent_bad = PairwiseJudge.read("12", CallFailed("x: HTTP 500", fatal=False, kind="server"))
    unsent = PairwiseJudge.read("21", CallFailed("x: not sent: cap", fatal=False,
                                                 kind="spend_cap"))
    prose = PairwiseJudge.read("21", Response(text="Both are fine."))
    good = PairwiseJudge.read("12", Response(text="A"))
    from judgeaudit.judges.pairwise import PairwiseVerdict

    def v(*orders):
        return PairwiseVerdict("i", list(orders))

    assert why_invalid(v(good, prose)) == "unparseable"
    assert why_invalid(v(sent_bad, prose)) == "call_failed"
    assert why_invalid(v(sent_bad, unsent)) == "not_sent"
    assert why_invalid(v(good, good), v(prose, good)) == "unparseable"


def test_results_from_before_the_split_keep_their_reason_and_its_meaning():
    assert "invalid_verdict" in DROP_REASONS  # a results file written before still reads


def test_chain_of_thought_counts_only_answers_without_a_verdict_line(tmp_path):
    """Its note said every invalid reasoning verdict "had no final verdict line", failed
    calls included: here 4 calls fail (item 5's prompts, too long) and 2 answers (item 3)
    are prose with no verdict line."""
    from judgeaudit.cli.main import app

    def answer(text: str) -> str:
        if "question item 3\n" in text:
            return "I cannot decide between them."
        if "think step by step" in text:
            return "Both are fine.\nThe better response is Response " + default_answer(text)
        return default_answer(text)

    write_pairs(tmp_path / "pairs.jsonl", 10)
    out = tmp_path / "out"
    with FakeLLMServer(answer=answer, rule=_rule) as srv:
        res = runner.invoke(app, ["audit", "--judge", f"openai:m?base_url={srv.openai_url}"
                                  "&api_key=k", "--data", f"jsonl:{tmp_path / 'pairs.jsonl'}",
                                  "--probes", "cot", "--max-failed", "1",
                                  "--out", str(out)])
    assert (out / "results.json").exists(), res.output
    doc = json.loads((out / "results.json").read_text())
    cot = doc["probes"]["cot"]
    assert cot["dropped"] == {"call_failed": 1, "unparseable": 1}, (res.output, cot)
    assert "2 reasoning outputs had no final verdict line" in cot["notes"]
