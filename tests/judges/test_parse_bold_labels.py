"""A verdict sentence with its label in bold reads as the same sentence without bold (s44
item 2, review6 finding 7): "The better response is **Response A**" and "**Verdict:** The
better response is **Response A**" were unreadable by parse_choice (a bare-label template),
and the latter by parse_final too, though a careful reader reads them unambiguously. Quotes
and echoes of that line stay unread. An odd number of ``` lines no longer hides the final line
(310bc0a): kept here as a guard."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice, parse_final
from judgeaudit.judges.templates import load_template

COT = load_template("pairwise_cot_v1")
PAT = COT.final_pattern or ""
WHY = "Response A answers the question; Response B drifts off topic.\n"


@pytest.mark.parametrize(("text", "want"), [
    ("The better response is **Response A**", "A"),
    (WHY + "The better response is **Response A**", "A"),
    (WHY + "The better response is **Response B**.", "B"),
    (WHY + "The better response is __Response B__", "B"),
    (WHY + "**Verdict:** The better response is **Response A**", "A"),
    (WHY + "**Verdict:**\nThe better response is **Response B**", "B"),
    ("I choose **Response B**", "B"),
    (WHY + "Therefore, the better response is **Response A**.", "A"),
])
def test_a_bold_label_reads_as_without_bold(text: str, want: str) -> None:
    assert parse_choice(text) == want
    assert parse_choice(text, allow_tie=True) == want
    assert parse_choice(text.replace("**", "").replace("__", "")) == want  # same reading


@pytest.mark.parametrize(("text", "want"), [
    (WHY + "**Verdict:** The better response is **Response A**", "A"),
    (WHY + "**Final verdict:** The better response is **Response B**", "B"),
])
def test_the_reasoning_reader_reads_a_labelled_bold_line(text: str, want: str) -> None:
    assert parse_final(text, PAT, COT.labels) == want


@pytest.mark.parametrize("text", [
    WHY + 'Response B says "The better response is **Response B**"',
    WHY + "The better response is **Response A**, but **Response B** is shorter.",
    WHY + "The better response is **Response A** or **Response B**",
    WHY + "I would not choose **Response A**",
])
def test_quoted_hedged_or_double_bold_lines_stay_unread(text: str) -> None:
    assert parse_choice(text) is None
    assert parse_final(text, PAT, COT.labels) is None


def test_a_quote_after_a_marked_verdict_is_still_no_verdict() -> None:
    text = '[[A]]\nNote: Response B ends with "The better response is **Response B**".'
    assert parse_final(text, PAT, COT.labels) == "A"
    assert parse_final(WHY + "> The better response is **Response B**", PAT, COT.labels) is None


FENCE = "```"


@pytest.mark.parametrize("text", [
    WHY + FENCE + "\nprint(1)\nThe better response is Response A",
    WHY + FENCE + "python\nx = 1\n" + FENCE + "\nMore.\n" + FENCE + "\nThe better response is "
    "Response A",
    WHY + FENCE + "\ncode\nFinal verdict: [[A]]",
])
def test_an_odd_number_of_fence_lines_hides_no_final_verdict(text: str) -> None:
    assert parse_final(text, PAT, COT.labels) == "A"
    assert parse_choice(text) == "A"
