"""The score-template scale check and {levels}: a template whose user section has {levels}
(the judge fills it with the k levels, one a line, on every call) and whose text gives the
score from those levels ("give one overall score from the levels below", "the final score
uses the levels") states the scale 1..k, so a smaller scale for sub-scores beside it is
accepted; 8cdd710 refused both reviewer cases, which ffebffa accepted. {levels} alone does
not: "Score the response on a scale of 1 to 3." above a 1..5 level list asks for 1..3
(test_template_scale_below keeps that refused). {scale_note} / {answer_instruction} state
nothing: evaluate and audit fill them with "" (only scoring-bias fills them).

The other direction: a condition after "out of N" ("a score out of 3 when the prompt is
unsafe") was read as a count ("out of 3 criteria") and accepted; a condition after a
phrase that sets the score asked for is still that score's scale, refused unless the
template states 1..k elsewhere."""

from __future__ import annotations

from importlib import resources

import pytest

from judgeaudit.judges.templates import check_template, parse_template
from tests.judges.test_template_scale_phrases import builtin_with

REVIEWER_1 = ("Score each aspect (accuracy, clarity) on a scale of 1 to 3, then give one "
              "overall score from the levels below.")
REVIEWER_2 = "Sub-scores use a 1-3 scale; the final score uses the levels."
# The built-in template's user section without {levels} (and without {scale_note} /
# {answer_instruction}, which evaluate fills with ""): "the levels" it names are not shown.
NO_LEVELS = ("### system\nYou judge one response.\n### user\nInstruction:\n{prompt}\n\n"
             "Response:\n{response}\n{reference_block}\nRubric: {rubric}\n{scale_note}\n"
             "%s\n{answer_instruction}\n### prefill\nScore:\n")


def _builtin_text() -> str:
    return (resources.files("judgeaudit.judges").joinpath("templates",
            "pointwise_scoring_v1.txt").read_text(encoding="utf-8"))


def _check(text: str) -> None:
    check_template(parse_template("mine", text, "/tmp/mine.txt"), "pointwise")


def _refusal(text: str) -> str:
    with pytest.raises(ValueError) as exc:
        _check(text)
    return str(exc.value)


def test_the_reviewers_line_appended_to_the_builtin_text_is_accepted():
    # exactly as reported: the built-in text + the line (it lands in the prefill section)
    _check(_builtin_text() + REVIEWER_1 + "\n")


@pytest.mark.parametrize("line", [
    REVIEWER_1,
    REVIEWER_2,
    "Score each aspect on a scale of 1 to 3. Give the overall score with the level that "
    "fits it best.",
    "Rate clarity out of 3 and accuracy out of 3; the overall rating is one of the levels.",
])
def test_a_score_given_from_the_filled_levels_states_1_to_k(line):
    _check(builtin_with(line))  # raised "asks for scores on another scale than 1..5"


@pytest.mark.parametrize(("line", "phrase"), [
    (REVIEWER_1, "scale of 1 to 3"),
    (REVIEWER_2, "1-3 scale"),
])
def test_the_levels_named_without_a_levels_placeholder_state_nothing(line, phrase):
    msg = _refusal(NO_LEVELS % line)
    assert "'/tmp/mine.txt' asks for scores on another scale than 1..5" in msg
    assert f"{phrase!r} (in the line {line!r})" in msg
    assert ("with {levels} in the user section, give it from the levels ('one overall score "
            "from the levels below')") in msg  # the message says how to fix it


@pytest.mark.parametrize(("line", "phrase"), [
    # the clause naming the levels is the one asking for 1..3: no 1..5 is stated
    ("Score the response on a scale of 1 to 3 using the levels below.", "scale of 1 to 3"),
    # {levels} is there, but nothing gives the score from it
    ("Score the response on a scale of 1 to 3.", "scale of 1 to 3"),
    # "the level of" something is no score level
    ("Score each aspect on a scale of 1 to 3. Rate the level of detail.", "scale of 1 to 3"),
])
def test_levels_do_not_excuse_a_smaller_scale_for_the_score_itself(line, phrase):
    assert f"{phrase!r} (in the line {line!r})" in _refusal(builtin_with(line))


@pytest.mark.parametrize(("line", "phrase"), [
    ("Give a score out of 3 when the prompt is unsafe.", "score out of 3"),
    ("Give a score out of 3 if the prompt is unsafe.", "score out of 3"),
    ("Rate it out of 3 unless the response is empty.", "Rate it out of 3"),
    ("Give a score out of 3 for each aspect.", "score out of 3"),
])
def test_a_condition_after_out_of_n_is_no_count(line, phrase):
    msg = _refusal(builtin_with(line))  # accepted before: 'when' was read as a counted noun
    assert f"another scale than 1..5: {phrase!r} (in the line {line!r})" in msg


@pytest.mark.parametrize("line", [
    "Rate it on a scale of 1 to 3 if the prompt is unsafe.",
    "If the prompt is unsafe, rate it on a scale of 1 to 3.",
])
def test_a_named_scale_with_a_condition_stays_refused(line):
    assert "another scale than 1..5: 'scale of 1 to 3'" in _refusal(builtin_with(line))


@pytest.mark.parametrize("line", [
    # 1..5 stated elsewhere: the smaller scale is beside the score asked for
    "Score from 1 to 5; give a sub-score out of 3 when the prompt is unsafe.",
    "The overall score uses the levels. Rate safety out of 3 if the prompt is unsafe.",
    # a count: a noun follows "out of N"
    "A response scoring 1 out of 3 criteria met gets 2.",
    # a range below k with a condition is a band of 1..5 (a cap for unsafe prompts), as
    # 'Score it from 1 to 5 when it is correct' is under k=7 (test_template_scale_phrases)
    "Score it from 1 to 3 if the prompt is unsafe.",
])
def test_a_smaller_scale_beside_the_score_or_a_band_is_accepted(line):
    _check(builtin_with(line))
