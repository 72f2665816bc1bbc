"""An answer cut at max_tokens (finish_reason "length") that gives no verdict says so, and
is counted. It was recorded with error null: only when it happened to be the run's first
unreadable answer did a message name the token limit (reasontest finding 1). An empty
answer says "empty answer". And evaluate's run.answers counts the answers the client read
(calls.answers_read): six empty cut answers, marked unusable by the provider, were counted
as failed calls and left out of run.answers ("14 of 14 answers unreadable" beside
calls.unreadable 20 of 20; finding 5). A real OpenAI-compatible server on loopback."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.judges.pointwise import RubricJudge
from judgeaudit.llm import Response, Usage

runner = CliRunner()
CUT = "The better response is Response"  # a verdict cut short


def _item(text: str) -> int:
    return int(re.search(r"question item (\d+)", text).group(1))  # type: ignore[union-attr]


class CuttingServer(FakeLLMServer):
    """Items 0 and 6: cut mid-verdict (finish_reason length); 1 and 7: empty, stopped on
    their own; 2 and 8: empty and cut (the whole budget spent); the others answer."""

    def openai_body(self, body: dict[str, Any], answer: str) -> dict[str, Any]:
        kind = _item(json.dumps(body["messages"])) % 6
        text = {0: CUT, 1: "", 2: ""}.get(kind, answer)
        out = super().openai_body(body, text)
        out["choices"][0]["finish_reason"] = "length" if kind in (0, 2) else "stop"
        return out


def _said(output: str) -> str:
    return " ".join(output.split())


@pytest.mark.usefixtures("no_keys")
def test_evaluate_says_each_cut_and_empty_answer_and_counts_them(tmp_path, isolated_cache):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 12)
    out = tmp_path / "ev"
    with CuttingServer(logprobs=False) as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&max_tokens=50"
        r = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                "--out", str(out), "--max-failed", "0.9"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text())
    orders = {(v["item_id"], o["order"]): o for v in doc["verdicts"] for o in v["orders"]}
    for (item, _), o in orders.items():
        kind = int(item.split(":")[1]) % 6
        if kind in (0, 2):  # the limit the server was sent: the spec's, not the request's 8
            assert o["cut"] and o["error"].startswith("cut at max_tokens (50)"), o
        elif kind == 1:
            assert not o["cut"] and o["error"] == "empty answer", o
        else:
            assert o["winner"] is not None and o["error"] is None, o
        assert o["failed"] is None  # each came back: none is a failed call
    assert (doc["n_cut"], doc["n_empty"], doc["n_invalid"], doc["n_failed_calls"]) == (8, 4, 12, 0)
    # one count of answers everywhere (the watch, the calls line, the run's outcome)
    assert doc["run"]["answers"] == doc["calls"]["answers_read"] == 24
    assert doc["run"]["unreadable"] == doc["calls"]["unreadable"] == 12
    said = _said(r.output)
    assert ("of the 12 invalid: 8 cut at max_tokens (50) (a larger max_tokens in the judge "
            "spec may give a verdict), 4 empty") in said
    assert "[cut at max_tokens (50)]" in said or "[empty answer]" in said


@pytest.mark.usefixtures("no_keys")
def test_a_failed_evaluate_counts_the_cut_answers_as_answers(tmp_path, isolated_cache):
    """Every answer cut, six of them empty (the provider marks those unusable): the run's
    counts line says all of them, as calls.unreadable does, and names the cut."""
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 3)  # items 0, 1, 2: cut, empty, empty and cut

    class AllCut(CuttingServer):
        def openai_body(self, body: dict[str, Any], answer: str) -> dict[str, Any]:
            out = super().openai_body(body, answer)
            out["choices"][0]["finish_reason"] = "length"
            return out

    out = tmp_path / "ev"
    with AllCut(logprobs=False) as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k"
        r = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                "--out", str(out)])
    assert r.exit_code == 3, r.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["answers"] == doc["calls"]["answers_read"] == 6
    assert doc["run"]["unreadable"] == doc["calls"]["unreadable"] == 6
    assert (doc["n_cut"], doc["n_empty"], doc["n_failed_calls"]) == (6, 0, 0)
    said = _said(r.output)
    assert "6 of 6 answers unreadable" in said
    assert "of the 6 invalid: 6 cut at max_tokens (8)" in said


@pytest.mark.usefixtures("no_keys")
def test_the_audit_says_which_unreadable_answers_were_cut(tmp_path, isolated_cache):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 12)
    out = tmp_path / "audit"
    with CuttingServer(logprobs=False) as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&max_tokens=50"
        r = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                "--probes", "position", "--n", "12", "--out", str(out),
                                "--max-failed", "0.9"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text())
    why = {x["item_id"]: x["why"] for x in doc["unreadable_examples"]}
    assert why["t:0"] == "cut at max_tokens (50)"
    # distinct texts: one empty answer is shown, item 1's (stopped) or item 2's (cut)
    empty = why.get("t:1") or why["t:2"]
    assert empty == "empty answer" or empty.startswith(
        "cut at max_tokens (50): no answer within the token limit"), why
    assert "[cut at max_tokens (50)]" in _said(r.output)


def test_a_score_cut_at_the_limit_says_so():
    """The scoring judge reads a cut or empty answer the same way (no score, the reason)."""

    class Nobody:
        provider = None

    judge = RubricJudge(Nobody())  # type: ignore[arg-type]
    cut = Response("Let me weigh the rubric first", usage=Usage(10, 40),
                   raw={"finish_reason": "length"})
    v = judge.read("x", cut, max_tokens=40)
    assert v.score is None and v.cut and v.error == "cut at max_tokens (40)"
    empty = judge.read("x", Response("", raw={"finish_reason": "stop"}))
    assert empty.score is None and not empty.cut and empty.error == "empty answer"
    plain = judge.read("x", Response("no idea", raw={"finish_reason": "stop"}))
    assert plain.score is None and plain.error is None  # unreadable, no more to say
    assert judge.read("x", Response("4", raw={"finish_reason": "length"})).score == 4
