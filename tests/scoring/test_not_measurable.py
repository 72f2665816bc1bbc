"""A scoring template that cannot show what a perturbation changes (no {levels}: the rubric
order; none of {levels}, {scale_note}, {answer_instruction}: the score ids; no
{reference_block}: the labelled reference) renders that perturbation as the baseline prompt.
scoring-bias reported those rows as measured, near 0 shift: "no bias" the judge was never
asked about. Now they are not run (no calls), counted under `not_measurable` with why, and
said in a warning; a run where no asked perturbation can be measured is refused before any
call (exit 2). Through the real CLI against a loopback server that counts requests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.judges.templates import parse_template
from judgeaudit.scoring.perturbations import resolve

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")

# A template stating its own fixed levels: no {levels}, {scale_note}, {answer_instruction}
# or {reference_block}.
FIXED = ("### system\nYou are a judge.\n### user\nInstruction:\n{prompt}\n\nResponse:\n"
         "{response}\n\nRubric: {rubric}\n1: wrong\n2: mostly wrong\n3: partly right\n"
         "4: right, some gaps\n5: right\n\nScore the response from 1 to 5.\n"
         "### prefill\nScore:\n")


def write_points(path: Path, n: int = 4) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"s{i}", "prompt": f"question {i}",
                                "response": f"answer {i}", "score": 1 + i % 5,
                                "reference": f"model answer {i}"}) + "\n")
    return path


def answer(prompt: str) -> str:
    """A score in the ids the prompt asks for (its answer sentence names them)."""
    return "B" if "letter grade" in prompt else "iv" if "Roman numeral" in prompt else "4"


def run(tmp_path: Path, srv: FakeLLMServer, template: str, *extra: str) -> Any:
    tpl = tmp_path / "mine.txt"
    tpl.write_text(template, encoding="utf-8")
    return CliRunner().invoke(app, [
        "scoring-bias", "--judge", f"openai:m?base_url={srv.openai_url}&api_key=k",
        "--data", f"jsonl:{write_points(tmp_path / 'p.jsonl')}", "--template", str(tpl),
        "--repeats", "1", "--out", str(tmp_path / "out"), *extra])


def test_which_perturbations_a_template_cannot_show():
    from judgeaudit.scoring.run import not_measurable

    perts = resolve(None)
    fixed = parse_template("mine", FIXED, "/tmp/mine.txt")
    skip = not_measurable(fixed, perts)
    assert sorted(skip) == sorted(p.name for p in perts if p.name != "baseline")
    assert ("has no {levels}, so the prompt never shows the rubric order it changes"
            in skip["order_desc"])
    assert ("has no {levels} or {scale_note} or {answer_instruction}, so the prompt never "
            "shows the score ids it changes") in skip["ids_roman"]
    assert "has no {reference_block}" in skip["ref_5"]
    # the ids shown by the answer sentence alone are measured; the order still is not
    ids_only = parse_template("ids", FIXED.replace("Score the response from 1 to 5.",
                                                   "{answer_instruction}"), "/tmp/ids.txt")
    assert sorted(not_measurable(ids_only, perts)) == [
        "order_desc", "order_random", "ref_1", "ref_2", "ref_3", "ref_4", "ref_5"]
    every = FIXED.replace("1: wrong", "{levels}{scale_note}{answer_instruction}"
                          "{reference_block}\n1: wrong")
    assert not_measurable(parse_template("every", every, "/tmp/every.txt"), perts) == {}


def test_unmeasurable_rows_are_not_run_but_counted_and_said(tmp_path):
    with FakeLLMServer(answer=answer) as srv:
        res = run(tmp_path, srv, FIXED.replace("Score the response from 1 to 5.",
                                               "{answer_instruction}"))
        n_sent = srv.count()
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert list(doc["perturbations"]) == ["baseline", "ids_letters", "ids_roman"]
    nm = doc["not_measurable"]
    assert nm["n"] == 7 and set(nm["perturbations"]) == {
        "order_desc", "order_random", "ref_1", "ref_2", "ref_3", "ref_4", "ref_5"}
    assert n_sent == 4 * 3 == doc["n_calls_planned"]
    out = " ".join(res.output.split())
    assert "7 perturbation(s) not measurable, not run (no calls, no row)" in out
    assert "order_desc (template" in out and "never shows the rubric order it changes" in out


def test_a_run_with_nothing_measurable_is_refused_before_any_call(tmp_path):
    with FakeLLMServer(answer="4") as srv:
        res = run(tmp_path, srv, FIXED, "--perturbations", "order_desc,ids_letters")
        assert srv.count() == 0
    out = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert "--template: none of the perturbations asked can be measured" in out
    assert str(tmp_path / "mine.txt") in out and "a bug" not in out
    assert "order_desc: template" in out and "ids_letters: template" in out
