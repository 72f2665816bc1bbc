"""Scores are read in ASCII digits, as the scale's ids are written: a digit of another script
("५", "٣") gives no score, whole or in a decimal, and the reason names it. parse_score
read "४.५" (Devanagari 4.5) as 4.5 through a \\d in its decimal token while "५" gave None.
Full-width ASCII ("５") is read as ASCII (dee15f5, tests/judges/test_parse_fullwidth.py)."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_score, score_off_scale


@pytest.mark.parametrize("text", ["५", "४.५", "Score: ४.५", "3.५", "[[५]]", "[RESULT] ५",
                                  "٣.٥", "4.5\n[[४.५]]", "4\nScore: ٤", "4\n[[٤]]"])
def test_a_digit_of_another_script_gives_no_score(text: str) -> None:
    assert parse_score(text) is None


@pytest.mark.parametrize(("text", "digit"), [("५", "devanagari digit five"),
                                             ("Score: ४.५", "devanagari digit four"),
                                             ("**٣**", "arabic-indic digit three"),
                                             ("4\nScore: ٤", "arabic-indic digit four")])
def test_the_reason_names_the_digit(text: str, digit: str) -> None:
    why = score_off_scale(text)
    assert why is not None and digit in why and "not an ASCII digit" in why


def test_ascii_scores_and_prose_with_other_digits_are_as_before() -> None:
    assert parse_score("4.5") == 4.5 and parse_score("Score: 4") == 4
    assert parse_score("[RESULT] 3") == 3 and parse_score("Rating: [[2]]") == 2
    assert score_off_scale("२०२३ में भारत") is None  # prose, not named a score
