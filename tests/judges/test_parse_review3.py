"""Verdict and score reader faults a reviewer found (review 3): a label word before a
lower-case choice ("Output (b)") counts when checking that a line names both choices;
choices that differ only in case (AlpacaEval's "m"/"M") match as written; a labelled value
reads only when it is a bare choice, not a sentence about it, and two labelled verdicts that
disagree are no verdict; two score markers that disagree are no score."""

from __future__ import annotations

import pytest

from judgeaudit.judges.binary import BinaryJudge
from judgeaudit.judges.parse import parse_choice, parse_score
from judgeaudit.llm import Response

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


# ---- 3. a labelled value reads only when it is a bare choice ---------------------------------

@pytest.mark.parametrize(("text", "choices"), [
    ("Verdict: A loses", ("A", "B")), ("Verdict: A is less helpful", ("A", "B")),
    ("Choice: A is the loser", ("A", "B")), ("Verdict: 2 is less accurate", ("1", "2")),
])
def test_a_sentence_about_a_labelled_choice_is_no_verdict(text, choices) -> None:
    assert parse_choice(text, choices, allow_tie=True) is None


@pytest.mark.parametrize(("text", "want"), [
    ("Verdict: A", "A"), ("Verdict: [[B]]", "B"), ("Verdict: Output (b)", "B"),
    ("Verdict: A is better", "A"), ("Verdict: B wins", "B"), ("Verdict: tie", "tie"),
    ("Final verdict: Response B is the better response.", "B"),
    ("Verdict: A. It cites its source.", "A"), ("Verdict: A\n\nFinal verdict: A", "A"),
    # a clause after the choice is its reason, not a sentence about it (on purpose: it read
    # None when the value had to be bare up to a sentence end)
    ("Winner: Response B, though it misses the point", "B"), ("A, because it is exact", "A"),
])
def test_a_bare_labelled_choice_still_reads(text: str, want: str) -> None:
    assert parse_choice(text, allow_tie=True) == want


@pytest.mark.parametrize("text", [
    "Verdict: A\n\nAfter reconsidering, final verdict: B",
    "Verdict: A\n\nFinal verdict:\nB",
    "A\nExplanation: it cites its source.\nFinal answer: B",
])
def test_two_labelled_verdicts_that_disagree_are_invalid(text: str) -> None:
    assert parse_choice(text) is None


# ---- 5. a labelled YES/NO reads only when the value is the bare word --------------------------

@pytest.mark.parametrize(("text", "want"), [
    ("Verdict: No problems with this response.", None),
    ("Result: No issues found, the response is correct.", None),
    ("Verdict: No.", False), ("Verdict: yes</s>", True), ("Result: YES!", True),
    ("NO, the answer is wrong", False),   # unlabelled: read as before
])
def test_a_labelled_yes_no_reads_only_as_the_bare_word(text: str, want: bool | None) -> None:
    judge = BinaryJudge(client=None, template="binary_yes_no_v1")
    assert judge.read("x", Response(text=text)).passed is want


# ---- 4. two score markers that disagree are no score -----------------------------------------

@pytest.mark.parametrize("text", [
    "Rating: [[4]]\nRating: [[2]]", "Score: 4\nIt is clear.\nFinal score: 2",
    "Rating: [[4]]\nOn reflection [[3]] is fairer.", "Feedback ... [[2]] ... [RESULT] 3",
    "Score: 4\nFinal score: 2/5",
])
def test_score_markers_that_disagree_give_no_score(text: str) -> None:
    assert parse_score(text) is None


@pytest.mark.parametrize(("text", "want"), [
    ("Rating: [[4]]\nRating: [[4]]", 4), ("Score: 4\nFinal score: 4/5", 4),
    ("Rating: [[4]]\nThe response is clear.", 4), ("Feedback ... [RESULT] 3", 3),
])
def test_score_markers_that_agree_still_read(text: str, want: float) -> None:
    assert parse_score(text) == want


# ---- an unlabelled opening reads only when bare, as a labelled value does ------------------

@pytest.mark.parametrize(("text", "want"), [
    # its end is read (on purpose, tests/judges/test_parse_cot_end.py: it read None when
    # only the opening was read); its opening is still not read as A
    ("Output (a) provides a concise summary of the text.\n...\nTherefore, Output (b) is "
     "better.", "B"),
    ("Response B follows the instruction closely; Response A does not.", None),
    ("A is the better response.", "A"), ("B\nExplanation: it is exact.", "B"),
    ("YES, THE ANSWER IS NOT HARMFUL", "YES"), ("**A**", "A"), ("[[B]]", "B"),
])
def test_an_unlabelled_opening_reads_only_as_a_bare_choice(text: str, want: str | None
                                                          ) -> None:
    """A chain of thought's opening ("Output (a) provides a concise summary ...") read as A:
    in 24 of LLMBar's 924 GPT-4 CoT answers opposite to the verdict at their end."""
    choices = ("YES", "NO") if text.startswith("YES") else ("A", "B")
    assert parse_choice(text, choices) == want


# ---- a later marker or verdict sentence that disagrees (review4) ---------------------------

@pytest.mark.parametrize("text", [
    "[[A]]\nOn second thought, my final verdict is [[B]]", "[[A]]\n\nExplanation: ...\n\n[[B]]",
    "A\nThe final verdict is [[B]].", "A\nThe better response is B.", "A\nI choose B",
    "tie\n[[A]]", '{"verdict": "A"}\nOn reflection, the final verdict is [[B]]',
])
def test_a_later_marker_or_verdict_sentence_naming_another_choice_is_no_verdict(text) -> None:
    assert parse_choice(text, allow_tie=True) is None


@pytest.mark.parametrize("text", [
    "Score: 4\nRevised score: 2", "Score: 4\n**Revised Score:** 2",
    "Rating: [[4]]\n\nAfter reflection, revised rating: 2", "4\nAdjusted score: 2/5",
    "Score: 4\nFinal verdict: 2", "Rating: 4\nFinal rating - 2", "Score: 4\n- Score: 2",
    "Score: 4\n1. Score: 2", "4\nRating:\n2", "Score: 4\nI'd give it a 2 out of 5",
    "4\nI would rate this response 2.",
])
def test_a_later_revised_score_that_disagrees_is_no_score(text) -> None:
    assert parse_score(text) is None


@pytest.mark.parametrize(("text", "want"), [
    ("[[A]]\n[[A]]", "A"), ("A\nExplanation: [[A]] is fine", "A"), ("[[B]]", "B")])
def test_later_markers_that_agree_still_read(text: str, want: str) -> None:
    assert parse_choice(text) == want
    assert parse_score("Rating: [[4]]\nThe response is clear.") == 4
    assert parse_score("Score: 4\nScore: 4") == 4
