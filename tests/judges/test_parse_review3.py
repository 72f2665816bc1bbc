"""Verdict and score reader faults a reviewer found (review 3): a label word before a
lower-case choice ("Output (b)") counts when checking that a line names both choices;
choices that differ only in case (AlpacaEval's "m"/"M") match as written."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice

# ---- 1. a line naming both choices by their labelled forms is no verdict ------------------

@pytest.mark.parametrize("text", [
    "Output (a) is fine. On the other hand, Output (b) is better.",
    "Output (a) and Output (b) both follow the instruction.",
    "Response a is longer than response B.",
    "Assistant A is polite, Assistant b is accurate.",
    "A is fine but Output (b) is better.",
])
def test_a_line_naming_both_labelled_choices_is_invalid(text: str) -> None:
    # LLMBar's GPT-4 chain-of-thought answers: 260 of 924 open this way; read as 'A' before
    assert parse_choice(text) is None


@pytest.mark.parametrize(("text", "want"), [
    ("Output (a)", "A"), ("Output (b)", "B"), ("Response b", "B"), ("Assistant A", "A"),
    ("Output (b) is better.", "B"),
])
def test_one_labelled_choice_still_reads(text: str, want: str) -> None:
    assert parse_choice(text) == want


# ---- 2. choices that differ only in case match as written ------------------------------------

MM = ("m", "M")


@pytest.mark.parametrize(("text", "want"), [
    ("I choose m", "m"), ("The better response is m", "m"), ("Verdict: m", "m"),
    ("Verdict: M", "M"), ("m", "m"), ("M", "M"), ("**m**", "m"), ("The better response is M", "M"),
])
def test_choices_differing_only_in_case_match_as_written(text: str, want: str) -> None:
    assert parse_choice(text, MM) == want


def test_choices_differing_only_in_case_are_not_both_named_by_one() -> None:
    assert parse_choice("m or M", MM) is None
    assert parse_choice("Output (m) is better than Output (M)", MM) is None
