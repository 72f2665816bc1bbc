"""A later score counts against the opening one only when it is the judge's own (s44 review8
finding 2 on 0a060ce).

0a060ce made an opening score unreadable when a later line gives another one, and read as
such a line a '\\boxed{3}' or 'Final answer: 3' the judge quotes from the response, a
'> Final answer: 12' blockquote, 'raised the score to 2-1' and 'update the rating to 5 stars'
in prose: answers that read at ffebffa became unreadable, and score_off_scale told the user
the judge gave 'scores that disagree'. The judge's own later score still makes the answer
unreadable: a labelled line at the line's start, a last 'Final answer: N' or '\\boxed{N}' line
not introduced as the response's, 'I'll revise my score to N'."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_score, score_off_scale

LETTERS = ("A", "B", "C", "D", "E")
WHY = "Reasoning: the response is accurate but misses one requirement.\n"


@pytest.mark.parametrize(("text", "want"), [
    # a value the response gives, quoted by the judge, not its last line
    ("5\nThe response solves the equation step by step and arrives at\n\\boxed{3}\n"
     "which matches the reference.", 5),
    ("5\nThe response's last line is:\nFinal answer: 3\nThis matches the reference answer.", 5),
    # ... or its last line, introduced as the response's
    ("5\nThe response solves the equation step by step and arrives at\n\\boxed{3}", 5),
    ("5\nThe response quotes its solution:\n```\nx = 3\nFinal answer: 3\n```\nCorrect.", 5),
    ("5\nThe response's last line is:\nFinal answer: 3", 5),
    ("5\nThe response ends with:\n**Final Answer:** 3", 5),
    # a blockquote of the response
    ("4\nThe response writes\n> Final answer: 12\nand shows its work.", 4),
    ("4\nThe response writes, correctly:\n> Final answer: 12", 4),
    # prose about a score or a rating that is not the judge's own
    ("4\nThe response correctly states that the 80th-minute goal raised the score to 2-1.", 4),
    ("4\nThe response correctly explains how to update the rating to 5 stars in the app "
     "settings.", 4),
    ("4\nIt says the teacher will change the grade to 3 after the appeal.", 4),
    ("4\nThe response notes that the user's overall rating: 2 stars, is low.", 4),
    ("B\nThe response explains how a student's grade: D can be raised.", 2),
])
def test_a_score_the_judge_reports_is_no_second_score(text: str, want: float) -> None:
    got = parse_score(text, LETTERS) if want == 2 and text.startswith("B") \
        else parse_score(text)
    assert got == want, f"{text!r} read as {got}, not {want}: a reported value is no score"


@pytest.mark.parametrize("text", [
    "5\nThe response's last line is:\nFinal answer: 3\nThis matches the reference answer.",
    "4\nThe response correctly states that the 80th-minute goal raised the score to 2-1.",
])
def test_no_disagreement_is_reported_for_them(text: str) -> None:
    assert score_off_scale(text) is None


@pytest.mark.parametrize(("text", "ids"), [
    # the judge's own later score still disagrees: unreadable, as 0a060ce meant
    ("4\n" + WHY + "Final answer: 2", None),
    ("4\n" + WHY + "\\boxed{2}", None),
    ("4\n" + WHY + "Final answer:\n\\boxed{2}", None),
    ("4\nThe response is wrong.\nFinal answer: 2", None),
    ("4\n" + WHY + "On reflection I'll revise my score to 2.", None),
    ("4\n" + WHY + "Lowering my rating to 2.", None),
    ("4\n" + WHY + "Overall: 2", None),
    ("4\n" + WHY + "- Overall score: 2", None),
    ("B\n" + WHY + "**Final grade:** D", LETTERS),
    ("B\n" + WHY + "Revised grade: D", LETTERS),
    ("B\n" + WHY + "1. Grade: D", LETTERS),
])
def test_the_judges_own_later_score_still_disagrees(text: str,
                                                    ids: tuple[str, ...] | None) -> None:
    got = parse_score(text, ids) if ids else parse_score(text)
    assert got is None, f"{text!r} read as {got}: the judge's own later score disagrees"
    why = score_off_scale(text, ids) if ids else score_off_scale(text)
    assert why is not None and "disagree" in why


def test_a_final_answer_the_judge_gives_before_its_last_line_still_disagrees() -> None:
    """Not only on the last line: '4 ... Final answer: 2' and then a closing remark is the
    judge's own final answer too, and a guess between 4 and 2 would be silent."""
    assert parse_score("4\n" + WHY + "Final answer: 2\nHope this helps.") is None
    assert parse_score("4\n" + WHY + "\\boxed{2}\n\nThat is my grade.") is None
