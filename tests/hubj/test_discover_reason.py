"""The reason a discover run failed states every count with its unit and its total, each
matching the run's counts: it said "20 of 20 answers could not be read as a verdict" (the
G-module LLM's answers, re-asks included, or the judges': it did not say which), then "only 0
of 126 G-module answers have a valid verdict" (requests, 120 of them never sent: no answers),
then "120 of them not sent" (of the calls, not of those)."""

from __future__ import annotations

import json
import math
from typing import ClassVar

import pytest
from fakeserver import GOOD, FakeLLMServer, default_answer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.base import Provider, Request, Response
from judgeaudit.llm.registry import register

runner = CliRunner()


@pytest.fixture(autouse=True)
def _stub_embedder(stub_embedder, isolated_cache):
    """Every test here: MiniLM stood in for, the cache its own."""


@register
class _ReasonScript(Provider):
    """G modules answering JSON by rule, so that only the judge answers garbage."""

    name: ClassVar[str] = "test-hubj-reason-script"
    deterministic: ClassVar[bool] = True

    async def generate(self, request: Request) -> Response:
        mod = request.meta["module"]
        if mod == "G_extract":
            return Response(text='{"name": "longer answer", "reason": "more words", '
                                 '"definition": "The response uses many more words."}]}')
        if mod == "G_construct":
            return Response(text='{"name": "wordiness", "definition": "The response is long '
                                 'and uses many words."}]}')
        if mod == "G_crit":
            return Response(text='few words", "2": "some", "3": "many", "4": "more", '
                                 '"5": "most"}')
        return Response(text="1}", probs={c: float(c == "1") for c in request.choices})


def _limit_text(max_failed: float, total: int) -> str:
    return f"(--max-failed {max_failed:g} allows {math.floor(max_failed * total + 1e-9)}"


def test_g_module_garbage_names_calls_g_module_answers_and_requests(shared_data, tmp_path):
    """Recorded judges only: the unreadable answers are the G-module LLM's, so said; the
    calls and the requests are counted apart, and the calls never sent are of the calls.
    One call at a time: the client stops after its first 8 answers (all unreadable) within
    G_extract, the step the run stops after (it went on to G_score, where the stop fired)."""
    with FakeLLMServer() as srv:  # answers 'A' or 'B', never a JSON object
        res = runner.invoke(app, ["discover", "--recorded", "pandalm", "--llm",
                                  f"openai:m?base_url={srv.openai_url}&api_key=k", "--data",
                                  f"pandalm:{shared_data / 'pandalm_testset'}", "--limit", "6",
                                  "--holdout-limit", "6", "--concurrency", "1", "--out",
                                  str(tmp_path)])
        served = srv.count()
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    run, calls = doc["run"], doc["calls"]
    msg = run["message"]
    asked = calls["made"] + calls["cached"] + calls["failed"]
    answers = calls["made"] + calls["cached"]
    requests = sum(st["calls"] for st in doc["json_stats"].values())
    usable = sum(st["calls"] - st["failed"] for st in doc["json_stats"].values())
    assert answers == served and run["calls_asked"] == asked and requests != answers
    assert (f"{calls['failed']} of {asked} calls to the G-module LLM failed "
            f"{_limit_text(0.2, asked)})") in msg, msg
    assert (f"; {calls['not_sent']} of these {calls['failed']} failed calls were never "
            "sent: ") in msg, msg
    assert (f"; {calls['unreadable']} of {answers} G-module LLM answers could not be read "
            f"{_limit_text(0.2, answers)}; the first: ") in msg, msg
    assert (f"; only {usable} of {requests} G-module requests got a usable answer, fewer "
            "than --min-valid 1") in msg, msg
    assert "as a verdict" not in msg and "G-module answers" not in msg
    assert f"{calls['failed']} of {asked} calls to the G-module LLM failed" in " ".join(
        res.output.split())  # the CLI's reason line


def _pairs(path, n: int) -> str:
    """Pairwise items whose human label prefers the response the judge does not (both orders
    alike), so every readable verdict is a disagreement."""
    rows = [{"id": f"i{i}", "prompt": f"question {i}" + (" GARBLE" if i % 3 == 0 else ""),
             "response_1": f"{GOOD} a long answer {i}", "response_2": f"short {i}", "label": 2}
            for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def test_judge_garbage_names_judge_answers_with_their_total(tmp_path):
    """A live judge: the unreadable answers are the judge's (both orders of every item), and
    the calls count the G-module LLM's and the judge's together, so said."""
    garbled = {"n": 0}

    def judge(prompt: str) -> str:
        if "GARBLE" in prompt:
            garbled["n"] += 1
            return "I think it's fine."
        return default_answer(prompt)

    data = _pairs(tmp_path / "pairs.jsonl", 12)
    with FakeLLMServer(answer=judge, logprobs=False) as srv:
        res = runner.invoke(app, ["discover", "--judges",
                                  f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off",
                                  "--llm", "test-hubj-reason-script:x", "--data", data,
                                  "--limit", "4", "--holdout-limit", "4", "--iterations", "1",
                                  "--max-failed", "0.1", "--out", str(tmp_path / "o")])
        served = srv.count()
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    run, calls = doc["run"], doc["calls"]
    msg = run["message"]
    assert run["answers"] == served == 24 and run["unreadable"] == garbled["n"] == 8, run
    assert msg == (f"run failed: {garbled['n']} of {served} judge answers could not be read as "
                   f"a verdict {_limit_text(0.1, served)}; the first: unparseable answer: "
                   "\"I think it's fine.\")"), msg
    assert run["calls_asked"] == calls["made"] + calls["cached"] + calls["failed"]
    assert run["calls_asked"] == served + sum(st["calls"] for st in doc["json_stats"].values())


def test_no_consensus_disagreement_follows_its_cause_and_the_counts_have_their_units():
    """Nothing to discover from because the judge answered garbage: the reason said only the
    first, not the judge answers behind it; failed calls under the limit are said as such.
    The unreadable judge answers, the cause, now come first and the missing disagreement
    follows ("so no consensus ..."): it led, and the real cause came last (T4, H15)."""
    from types import SimpleNamespace

    from judgeaudit.hubj.run import _discover_outcome

    judge = SimpleNamespace(stats=SimpleNamespace(made=30, cached=10, unreadable=12,
                                                  first_unreadable="unparseable answer: 'x'"))
    calls = {"made": 30, "cached": 10, "failed": 2, "unreadable": 12,
             "first_error": "HTTP 500", "errors": {"server": 2}}
    run = _discover_outcome(n_valid=0, n_planned=0, calls=calls, judge_clients=[judge],
                            min_valid=1, max_failed=0.2, callers="judges",
                            lead="no consensus disagreement with the humans on the 20 items")
    assert run["status"] == "failed"
    assert run["message"] == (
        "run failed: 12 of 40 judge answers could not be read as a verdict (--max-failed 0.2 "
        "allows 8; the first: unparseable answer: 'x'); so no consensus disagreement with the "
        "humans on the 20 items; besides, 2 of 42 calls to the judges failed (first error: "
        "HTTP 500)")
    assert "G-module requests" not in run["message"]  # none were planned: no "0 of 0"
