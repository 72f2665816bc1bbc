"""A pairwise template can declare tie labels under '### ties' (e.g. 'C, tie'): the pairwise
judge passes them to the readers (`parse_choice` / `parse_final` tie_labels), and an answer
naming one is a tie verdict (winner 0), counted as a built-in tie is ("a tie verdict").
Before, a template could not declare one: every "C" answer was unreadable. Tie labels the
reader cannot take apart from the verdict labels, or that the template never names, are
refused at load, before any call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.judges import PairwiseJudge
from judgeaudit.judges.templates import check_template, parse_template
from judgeaudit.llm import Response
from tests.cli.test_cli import write_items

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")

BODY = ("### system\nYou are a judge.\n### user\nInstruction:\n{prompt}\n\nResponse A:\n"
        "{response_a}\n\nResponse B:\n{response_b}\n\n")
ASK_TIE = "Which response is better? Answer A or B, or C for a tie.\n"
COT = ("### final\nThe better response is Response ([ABC])\\W*$\n")


def tie_template(ties: str = "C, tie", ask: str = ASK_TIE, extra: str = "") -> str:
    return BODY + ask + extra + f"### ties\n{ties}\n"


def test_ties_section_is_read_and_checked():
    t = parse_template("mine", tie_template(), "/tmp/mine.txt")
    assert t.ties == ("C", "tie") and t.labels == ("A", "B")
    assert "C, tie" not in t.user  # a section of its own, not text sent to the judge
    check_template(t, "pairwise")


@pytest.mark.parametrize(("ties", "named"), [
    ("a", "'a' is also a verdict label"),
    ("C, c", "are not distinct"),
    ("no winner", "'no winner' is not one word the reader can take"),
    ("[C]", "'[C]' is not one word"),
    ("", "lists no label"),
])
def test_tie_labels_the_reader_cannot_take_are_refused(ties, named):
    with pytest.raises(ValueError) as exc:
        parse_template("mine", tie_template(ties), "/tmp/mine.txt")
    msg = str(exc.value)
    assert "'/tmp/mine.txt': '### ties'" in msg and named in msg and "'C, tie'" in msg


def test_a_tie_label_the_template_never_names_is_refused():
    t = parse_template("mine", tie_template("C", ask="Answer A or B.\n"), "/tmp/mine.txt")
    with pytest.raises(ValueError, match=r"declares the tie label\(s\) C under '### ties' "
                                         r"but never names one"):
        check_template(t, "pairwise")


def test_a_score_template_with_ties_is_refused():
    text = ("### system\nJudge.\n### user\n{prompt}\n{response}\nScore 1 to 5.\n"
            "### ties\nC\n")
    with pytest.raises(ValueError, match="a pointwise judge reads no tie"):
        check_template(parse_template("s", text, "/tmp/s.txt"), "pointwise")


@pytest.mark.parametrize(("text", "choice"), [
    ("C", "tie"), ("[[C]]", "tie"), ("Final verdict: tie", "tie"), ("A", "A"), ("B", "B"),
    ("D", None),
])
def test_the_judge_reads_a_tie_label_as_a_tie(text, choice):
    j = PairwiseJudge(None, parse_template("mine", tie_template(), "/tmp/mine.txt"))
    v = j.read("12", Response(text=text), j.template.labels, ties=j.template.ties)
    assert v.choice == choice
    assert v.winner == {"tie": 0, "A": 1, "B": 2, None: None}[choice]


def test_a_reasoning_template_reads_its_tie_label():
    text = BODY + ("Think step by step, then end with 'The better response is Response A' "
                   "(or B, or C for a tie).\n" + COT + "### ties\nC\n")
    j = PairwiseJudge(None, parse_template("cot", text, "/tmp/cot.txt"))
    v = j.read("21", Response(text="Both are fine.\nThe better response is Response C"),
               j.template.labels, j.template.final_pattern, ties=j.template.ties)
    assert (v.choice, v.winner) == ("tie", 0)


def test_a_tie_label_with_probabilities_is_a_tie_not_the_likelier_letter():
    """The probabilities cover the verdict labels only: a text tie is the verdict."""
    j = PairwiseJudge(None, parse_template("mine", tie_template(), "/tmp/mine.txt"))
    v = j.read("12", Response(text="C", probs={"A": 0.2, "B": 0.1}), j.template.labels,
               ties=j.template.ties)
    assert (v.choice, v.winner, v.p_first) == ("tie", 0, None)


def test_tie_answers_are_counted_as_tie_verdicts_through_the_cli(tmp_path: Path):
    data = tmp_path / "pairs.jsonl"
    write_items(data, 4)
    tpl = tmp_path / "tie.txt"
    tpl.write_text(tie_template(), encoding="utf-8")
    with FakeLLMServer(answer="C") as srv:  # logprobs on: A and B get the rest
        res = CliRunner().invoke(app, [
            "evaluate", "--data", f"jsonl:{data}", "--out", str(tmp_path / "out"),
            "--judge", f"openai:m?base_url={srv.openai_url}&api_key=k&template={tpl}"])
        assert srv.count() == 8
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert doc["n_invalid"] == 0
    assert [v["winner"] for v in doc["verdicts"]] == [0, 0, 0, 0]
    assert "4 pairs left out: 4 a tie verdict" in " ".join(res.output.split())
