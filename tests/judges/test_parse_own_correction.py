"""An opening score the judge corrects later is unread, not read (s44 review10 finding 2).

`parse_score('4\\nCorrection: 3')` read 4, as did '4\\nActually, 3.', 'Score: 4\\nHence, Final
answer: 2', 'Score: 4\\nThe final score should be 2.' and '4\\nOverall, I give it a score of
2.': the judge's own later score disagreed and the opening was read, silently wrong. Now such a
later score counts as a second reading (a revision or concluding lead before a bare score or a
final answer; a sentence of the judge's own score), so the answer is unread with the "scores
that disagree" reason. A number in quotes, in a fence, in a blockquote or line introduced as a
response's text, or in prose about the response, is no second score: those answers still read.
"""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_score, score_off_scale

CORRECTED = [
    ("4\nCorrection: 3", "4", "3"),
    ("4\nActually, 3.", "4", "3"),
    ("Score: 4\nHence, Final answer: 2", "4", "2"),
    ("Score: 4\nThe final score should be 2.", "4", "2"),
    ("4\nOverall, I give it a score of 2.", "4", "2"),
    ("4\n\nThe response misses the second step.\nCorrection: **3**", "4", "3"),
    ("Score: 4\nWait, on reflection, 2.", "4", "2"),
    ("4\nThe answer is short. Actually, 3.", "4", "3"),
    ("Score: 4\nTherefore, **Final Answer:** 2", "4", "2"),
    ("Score: 5\nGiven the factual errors, my rating should be 3.", "5", "3"),
    ("4\nIn conclusion, I would rate this response 2/5.", "4", "2"),
    ("4\nI'd give it a 2.", "4", "2"),
    ("4\n> Actually, 3.", "4", "3"),  # a blockquote nobody introduced is the judge's own
]


@pytest.mark.parametrize(("text", "first", "then"), CORRECTED)
def test_an_opening_score_the_judge_corrects_is_unread(text: str, first: str,
                                                       then: str) -> None:
    assert parse_score(text) is None
    assert score_off_scale(text) == (f"the answer gives scores that disagree ({first} first, "
                                     f"then {then}; neither is guessed)")


def test_a_correction_on_a_letter_scale_is_unread() -> None:
    letters = ("A", "B", "C", "D", "E")
    assert parse_score("B\nActually, D.", letters) is None
    assert "B first, then D" in (score_off_scale("B\nActually, D.", letters) or "")


READ = [
    ("4\nCorrection: 4", 4),  # the correction agrees
    ("4\nOverall, I give it a score of 4.", 4),
    ("4\nThe response's score of 2 on the test is low.", 4),  # prose about the response
    ("4\nThe response writes:\nActually, 3.", 4),  # a response's line, introduced
    ("4\nThe response writes:\n> Actually, 3.", 4),
    ("4\n```\nActually, 3.\n```", 4),  # fenced
    ('4\nIt says "I give it a score of 2."', 4),  # quoted
    ("4\nIt ends with `Actually, 3.`", 4),
    ("4\nIf it were shorter, the score would be 5.", 4),  # a condition, no verdict
    ("4\nActually, 3 of the claims are wrong.", 4),  # a count, not a score
    ("4\nHowever, the student would give it a 2.", 4),  # not the judge's own
    ("4\nOverall: .3", 4),  # a garbled label, not one mark before a bare number
]


@pytest.mark.parametrize(("text", "want"), READ)
def test_a_number_that_is_not_the_judges_own_score_still_reads(text: str, want: float) -> None:
    assert parse_score(text) == want


def test_stays_linear_on_a_long_line_of_leads() -> None:
    # a megabyte of revision leads and "the score" words: no backtracking blow-up (no timing
    # assert: the machine is shared; this would take minutes if quadratic)
    text = "4\n" + "Actually, " * 50_000 + "\n" + "the final score would be " * 20_000
    assert parse_score(text) == 4
