"""An opening verdict the judge then takes back is unread; label headings are no opening
verdict (s44 review8 findings 1 and 3).

Finding 1: once a bold label read (d6222e8), 'I choose **Response A**\\nOn reflection, I
choose **Response B**' read A (None at ffebffa: the bold opening did not read); the plain
text form read A already at ffebffa, and so did 'A\\n\\nHowever, Response B is better.'. A
verdict sentence after a revision lead ("On reflection,", "Correction:", "Actually,",
"However,", "Wait,") that names another choice now leaves the answer unread, in parse_choice
and parse_final.

Finding 3: 0a060ce made a reasoning answer whose first line is a label alone and whose last
line names the other one unread under pairwise_cot_v1; label headings ('**A**\\n- ...\\n**B**
\\n- ...') read at ffebffa and are no opening verdict. A self-correction in so many words
('...\\nWait, re-reading: ...\\nThe better response is Response B') read as the last line
under parse_final at 1e34cc8; s44 review10 finding 2 showed that rule reading bullets, fenced
and quoted lines and 'Actually, both have issues.' as a retraction, so it is dropped: an
opening verdict and a different last one stay unread there too, as in parse_choice."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice, parse_final
from judgeaudit.judges.templates import load_template

COT = load_template("pairwise_cot_v1")
PAT = COT.final_pattern or ""


@pytest.mark.parametrize("text", [
    "I choose **Response A**\nOn reflection, I choose **Response B**",
    "The better response is **Response A**\nCorrection: The better response is **Response B**",
    "I choose Response A\nOn reflection, I choose Response B",
    "The better response is Response A\nCorrection: The better response is Response B",
    "A\n\nHowever, Response B is better.",
    "A\n\nActually, Response B is better.",
    "A\nWait, B is better.",
    "**A**\nResponse A is accurate. On second thought, Response B is better.",
    "[[A]]\nHmm, no: I choose Response B.",
])
def test_an_opening_verdict_taken_back_gives_none(text: str) -> None:
    got = parse_choice(text)
    assert got is None, f"{text!r} read as {got}: the judge took its opening verdict back"


@pytest.mark.parametrize(("text", "want"), [
    ("A\nHowever, Response B is better formatted.", "A"),       # a criterion, not a verdict
    ("A\nResponse B is longer. However, Response A is better.", "A"),  # agrees
    ("I choose **Response A**\nActually, I choose **Response A**.", "A"),
    ("B\nResponse A is clear, but Response B is better.", "B"),
])
def test_an_agreeing_or_partial_later_sentence_leaves_the_verdict(text: str, want: str) -> None:
    assert parse_choice(text) == want


def test_the_reasoning_template_leaves_a_taken_back_verdict_unread() -> None:
    text = ("**Verdict:** The better response is **Response A**\n"
            "Correction: The better response is **Response B**")
    assert parse_final(text, PAT, COT.labels) is None


@pytest.mark.parametrize(("text", "want"), [
    ("**A**\n- Gives the wrong year.\n\n**B**\n- Correct year.\n\nThe better response is "
     "Response B", "B"),
    ("A\n- Gives the wrong year.\nB\n- Correct year.\nThe better response is Response B", "B"),
    ("A.\nIt gives the wrong year.\nB.\nIt gives the right one.\nThe better response is "
     "Response B", "B"),
    ("B\n- Correct year.\nA\n- Wrong year.\nThe better response is Response A", "A"),
])
def test_label_headings_are_no_opening_verdict(text: str, want: str) -> None:
    assert parse_final(text, PAT, COT.labels) == want


@pytest.mark.parametrize("text", [
    "A\nReasoning: it is accurate.\nThe better response is Response B",   # no heading for B
    "**A**\n- Gives the wrong year.\n\nThe better response is Response B",
    # a label alone under a verdict label is the verdict, not a heading
    "**A**\nIt is fine.\nFinal verdict: [[B]]\nVerdict:\nB",
    "A\nIt is fine.\n## Final Verdict\nB\nThe better response is Response B",
])
def test_a_label_alone_without_a_second_heading_is_still_an_opening(text: str) -> None:
    assert parse_final(text, PAT, COT.labels) is None


SELF = ("The better response is Response A\n\nWait, re-reading: Response A has a factual "
        "error.\n\nThe better response is Response B")


def test_a_self_correction_stays_unread_under_the_reasoning_template() -> None:
    """Changed on purpose (s44 review10 finding 2): read "B" at 1e34cc8."""
    assert parse_final(SELF, PAT, COT.labels) is None
    assert parse_final("A\nActually, re-reading them: A misstates the year.\nThe better "
                       "response is Response B", PAT, COT.labels) is None


@pytest.mark.parametrize("text", [
    # no self-correction: "Wait" opens an ordinary sentence
    "The better response is Response A\nWait times are shorter in B's plan.\n"
    "The better response is Response B",
    # after the correction, a sentence still naming the first choice
    "The better response is Response A\nWait, re-reading.\nResponse A is better.\n"
    "The better response is Response B",
    # the correction comes after the last line's verdict
    "A\nThe better response is Response B\nActually, that is all.",
])
def test_no_self_correction_or_a_disagreeing_one_stays_unread(text: str) -> None:
    assert parse_final(text, PAT, COT.labels) is None


def test_the_bare_label_reader_leaves_a_self_correction_unread() -> None:
    assert parse_choice(SELF) is None
