"""An answer whose opening verdict or score and a later labelled one disagree is unreadable,
counted and shown with its reason, never read as its opening (s44 item 1).

parse_score read 'B\\nReasoning ...\\nGrade: D' on the scale A..E as B (2): a later labelled
score was compared only when it was a number, so a letter or roman grade, a "Final answer: 2",
a line that is "\\boxed{2}" or "I'll revise my score to 2" after an opening "4" were silent.
parse_final (a reasoning template) read the last marked verdict whatever the answer opened
with ("A\\n...\\nVerdict: B" read B); parse_choice already refused it."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice, parse_final, parse_score, score_off_scale
from judgeaudit.judges.templates import load_template

LETTERS = ("A", "B", "C", "D", "E")
ROMAN = ("I", "II", "III", "IV", "V")
WHY = "Reasoning: the response is accurate but misses one requirement.\n"


@pytest.mark.parametrize(("text", "ids"), [
    ("B\n" + WHY + "Grade: D", LETTERS),
    ("B\n" + WHY + "**Final grade:** D", LETTERS),
    ("B\n" + WHY + "Verdict: d", LETTERS),
    ("B\n" + WHY + "Grade - D", LETTERS),
    ("B\n" + WHY + "Grade: F", LETTERS),           # a grade off the scale is still a grade
    ("B\n" + WHY + "Final answer: D", LETTERS),
    ("IV\n" + WHY + "Score: II", ROMAN),
    ("4\n" + WHY + "Final answer: 2", None),
    ("4\n" + WHY + "**Final Answer:** [[2]]", None),
    ("Score: 4\nHmm, no - it never cites the source.\nFinal answer: 2", None),
    ("4\n" + WHY + "\\boxed{2}", None),
    ("4\n" + WHY + "$\\boxed{2}$", None),
    ("4\n" + WHY + "On reflection I'll revise my score to 2.", None),
    ("4\n" + WHY + "Overall: 2", None),
    ("4\n" + WHY + "Score: 2", None),                # numbers: refused before too
])
def test_an_opening_score_and_a_later_one_that_disagree_give_no_score(
        text: str, ids: tuple[str, ...] | None) -> None:
    got = parse_score(text, ids) if ids else parse_score(text)
    assert got is None, f"{text!r} read as {got}: a withdrawn score must not be guessed"


def test_the_caller_can_show_why() -> None:
    why = score_off_scale("B\n" + WHY + "Grade: D", LETTERS)
    assert why == "the answer gives scores that disagree (B first, then D; neither is guessed)"
    why = score_off_scale("4\n" + WHY + "Final answer: 2")
    assert why is not None and "4 first, then 2" in why
    assert score_off_scale("4\n" + WHY + "Score: 2.5") is not None
    assert score_off_scale("4\n" + WHY + "Score: 7") is None  # off the scale: no one message


@pytest.mark.parametrize(("text", "ids", "want"), [
    ("B\n" + WHY + "Grade: B", LETTERS, 2),
    ("B\n" + WHY + "The grade is B", LETTERS, 2),    # a sentence agreeing in either case
    ("IV\n" + WHY + "Score: iv", ROMAN, 4),
    ("4\n" + WHY + "Final answer: 4", None, 4),
    ("4\n" + WHY + "\\boxed{4}", None, 4),
    ("4\n" + WHY + "I revise my score to 4.", None, 4),
    ("4\nVerdict: good", None, 4),                    # a word is no second score
    ("B\nVerdict: good", LETTERS, 2),
    ("4\nThe response computes \\boxed{2} correctly.", None, 4),  # about the math, not a score
    ("4\nThe correct answer is 2.", None, 4),
    ("4\nThe response's grade level is 7th.", None, 4),
])
def test_an_agreeing_or_unlabelled_later_value_leaves_the_score(
        text: str, ids: tuple[str, ...] | None, want: float) -> None:
    assert (parse_score(text, ids) if ids else parse_score(text)) == want


COT = load_template("pairwise_cot_v1")
PAT = COT.final_pattern or ""


@pytest.mark.parametrize("text", [
    "A\n" + WHY + "The better response is Response B",
    "**B**\n" + WHY + "Verdict: A",
    "A.\n" + WHY + "Final verdict: [[B]]",
    "[[A]]\n" + WHY + "The better response is Response B",
    "Verdict: A\n" + WHY + "Final verdict: B",
    "The better response is Response B\n" + WHY + "Final verdict: [[A]]",
])
def test_a_reasoning_answers_opening_verdict_that_the_end_contradicts_is_unread(
        text: str) -> None:
    assert parse_final(text, PAT, COT.labels) is None
    assert parse_choice(text) is None  # as the bare-label reader already refused it


@pytest.mark.parametrize(("text", "want"), [
    ("A\n" + WHY + "The better response is Response A", "A"),
    ("Response A:\nIt is fine.\nResponse B:\nIt rambles.\nThe better response is Response B",
     "B"),                                     # a heading naming a response is no verdict
    ("**Response A**\nIt is fine.\nThe better response is Response B", "B"),
    ("A:\nIt is fine.\nThe better response is Response B", "B"),
    ("Some reasoning here.\nThe better response is Response B\nFinal verdict: [[A]]", "A"),
    # a marked line later on the first line reports what a response says: no opening
    ("Response B restates: The better response is Response B\n" + WHY + "Final verdict: [[A]]",
     "A"),
])
def test_an_opening_that_agrees_or_is_a_heading_still_reads(text: str, want: str) -> None:
    assert parse_final(text, PAT, COT.labels) == want


def test_a_tie_label_opening_compares_as_a_tie() -> None:
    tie = ("C",)
    assert parse_final("C\n" + WHY + "Final verdict: [[C]]", PAT, COT.labels,
                       tie_labels=tie) == "tie"
    assert parse_final("C\n" + WHY + "Final verdict: [[A]]", PAT, COT.labels,
                       tie_labels=tie) is None
