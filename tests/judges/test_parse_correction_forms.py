"""Corrections of an opening score the reader missed (s45 parse9), and their guards.

At 3f345a0 the score reader read the opening score of '[[4]]. Actually, 3.' (a marker's score
with the judge's correction after it on the same line), '4\\nScore: 4 -- no, 3' (a turn inside
a sentence), '4\\nFor this reason the score should be 2' (a reason lead with no comma) and
'4\\nActually, it deserves a 3.' (a 'deserves' sentence): silently wrong. They are unread now,
with the 'scores that disagree' reason. One-line corrections ('4. Actually, 3.', '4 -- no, 3')
were unread already; they now say why instead of 'unparseable'. The guards are lines that are
no score of the judge's own (a count, a response's text, a condition, a numbered rubric) and
must keep the opening score.
"""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_score, score_off_scale


@pytest.mark.parametrize("text, then", [
    ("[[4]]. Actually, 3.", "3"),
    ("Rating: [[4]]. Actually, 3.", "3"),
    ("[[4]] -- no, 3", "3"),
    ("Rating: [[4]]; actually, 3", "3"),
    ("4\nScore: 4 -- no, 3", "3"),
    ("4\n4 -- no, 3", "3"),
    ("4\nMy score: 4 \u2014 no, 3", "3"),
    ("4\n4... make that 3.", "3"),
    ("4\nScore: 4. Actually, it deserves a 3.", "3"),
    ("4\nActually, it deserves a 3.", "3"),
    ("4\nIt deserves a score of 3.", "3"),
    ("4\nThe response deserves a 3 out of 5.", "3"),
    ("4\nI think it deserves a 3.", "3"),
    ("4\nFor this reason the score should be 2", "2"),
    ("4\nFor these reasons I give it a 2.", "2"),
    ("4\nThis means the score should be 2.", "2"),
    ("Score: 4\nBased on the above, I'd give it a 2.", "2"),
    ("4\nIn my view, 2.", "2"),
    ("4\nFor this reason, 2.", "2"),
])
def test_a_correction_the_reader_missed_leaves_the_score_unread(text: str, then: str) -> None:
    assert parse_score(text) is None, f"{text!r}: expected unread (None), not the opening 4"
    why = score_off_scale(text) or ""
    assert "disagree" in why and f"then {then}" in why, f"{text!r}: reason was {why!r}"


@pytest.mark.parametrize("text, first, then", [
    ("4. Actually, 3.", "4", "3"),
    ("1. Actually, 3.", "1", "3"),
    ("4 -- no, 3", "4", "3"),
    ("Score: 4. Actually, it deserves a 3.", "4", "3"),
    ("Score: 4; actually, 3", "4", "3"),
])
def test_a_correction_on_the_opening_line_is_unread_and_says_the_scores_disagree(
        text: str, first: str, then: str) -> None:
    assert parse_score(text) is None, f"{text!r}: expected unread (None)"
    why = score_off_scale(text) or ""
    assert f"({first} first, then {then}" in why, f"{text!r}: reason was {why!r}"


@pytest.mark.parametrize("text", [
    "4\n\n1. Accuracy: 4\n2. Clarity: 3",  # a numbered rubric
    "4\n1. The response is accurate. 2. It cites 3 sources.",
    "4\nThe response raised the score to 2-1",
    "4\nThe response ends with \\boxed{3}",
    "4\nA mistake that deserves a 3.",
    "4\nIf it were wrong, it deserves a 2.",
    "4\nThe response claims it deserves a 5.",
    '4\nThe student writes: "it deserves a 2"',
    "4\nScore: 4 - no issues, 3 sources",
    "4\nI think 3 of the claims are wrong.",
    "4\nBecause of this, 3 points are lost.",
    "4\nThis means 3 errors remain.",
    "4\nIt earns 3 points for style.",
    "4\nWait -- no, 3 is too harsh.",
    "4\nFor this reason the score should be 4",  # agrees
    "4\nIt deserves a 4.",
    "[[4]]. Actually, 4.",
    "The response is clear and correct; I would rate it 4.\nRating: [[4]]",
    "4\n```\nFor this reason the score should be 2.\n```",
    "4\nThe response's last line is:\nIt deserves a 2.",
])
def test_lines_that_are_no_correction_keep_the_opening_score(text: str) -> None:
    assert parse_score(text) == 4, f"{text!r}: expected 4"
