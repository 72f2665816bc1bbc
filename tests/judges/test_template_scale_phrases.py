"""The score-template scale check refuses only phrases that state the scale the judge must
score on ("on a scale of 1 to 10", "out of 10", "a 10-point scale") with a top above the
judge's k or a bottom of 0. It refused ordinary 1..5 rubrics (review6 finding 2): a banded
scoring guide ("1-2 = poor, 4-5 = good"), a count ("3/4 of the sub-questions", "0-1
errors", "a 10-point plan"), "24/7": a user could not run such a template at all. Each case
sits in a copy of the built-in pointwise_scoring_v1 user section; one runs through the CLI."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.judges.templates import check_template, load_template

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")

BANDED = "Scoring guide: 1-2 = poor, 3 = adequate, 4-5 = good."
# The reviewer's false refusals: each an ordinary line of a 1..5 rubric.
ORDINARY = [
    BANDED,
    "A 1-point difference in your score should reflect a real difference in quality.",
    "If the response answers 3/4 of the sub-questions, rate it 3.",
    "Mark the score between 1 and 2 if the response is off topic.",
    "The ratings 1 through 3 mean a factual error; a rating of 1 through 3 is no pass.",
    "If the response promises 24/7 service without saying how, lower its rating.",
    "0-1 errors is a score of 5.",
    "If the response is a 10-point plan, score whether each point is sound.",
]
# Phrases that state another scale than 1..5 (the old check refused these too).
OTHER_SCALE = [
    ("Score the response on a scale of 1 to 10.", "scale of 1 to 10"),
    ("Use a 1-10 scale.", "1-10 scale"),
    ("Score it from 1 to 10.", "Score it from 1 to 10"),
    ("Give a score out of 10.", "score out of 10"),
    ("Give it a score like 7/10.", "score like 7/10"),
    ("Rate it on a 10-point scale.", "10-point scale"),
    ("Give a score between 1 and 10.", "score between 1 and 10"),
    ("Score from 0 to 5.", "Score from 0 to 5"),
]


def builtin_with(line: str) -> str:
    """The built-in pointwise_scoring_v1 with `line` added to its user section."""
    text = (resources.files("judgeaudit.judges").joinpath("templates",
            "pointwise_scoring_v1.txt").read_text(encoding="utf-8"))
    assert text.count("{answer_instruction}") == 1
    return text.replace("{answer_instruction}", line + "\n{answer_instruction}")


def write(tmp_path: Path, line: str) -> Path:
    p = tmp_path / "mine.txt"
    p.write_text(builtin_with(line), encoding="utf-8")
    return p


@pytest.mark.parametrize("line", ORDINARY)
def test_an_ordinary_line_of_a_1_to_5_rubric_is_not_another_scale(tmp_path, line):
    tpl = load_template(str(write(tmp_path, line)))
    check_template(tpl, "pointwise")  # raised "asks for scores on another scale" before


@pytest.mark.parametrize(("line", "phrase"), OTHER_SCALE)
def test_a_phrase_stating_another_scale_is_refused_and_named(tmp_path, line, phrase):
    tpl = load_template(str(write(tmp_path, line)))
    with pytest.raises(ValueError) as exc:
        check_template(tpl, "pointwise")
    msg = str(exc.value)
    assert "another scale than 1..5" in msg and str(tmp_path / "mine.txt") in msg
    assert f"{phrase!r} (in the line {line!r})" in msg
    assert "If that phrase does not set the scale the judge answers on, reword it" in msg


@pytest.mark.parametrize("k", [5, 7])
def test_a_range_whose_top_is_at_most_k_is_a_band_never_another_scale(tmp_path, k):
    tpl = load_template(str(write(tmp_path, "Score it from 1 to 5 when it is correct; "
                                             "rate it on a 5-point scale.")))
    check_template(tpl, "pointwise", scale=k)


def test_the_testers_ten_point_template_is_still_refused():
    path = Path("/tmp/texttest/tpl/score10.txt")
    text = path.read_text(encoding="utf-8") if path.exists() else (
        "### system\nYou are a careful judge. You score one response on a scale from 1 to "
        "10.\n### user\nInstruction:\n{prompt}\n\nResponse:\n{response}\n{reference_block}\n"
        "Rubric: {rubric}\n{levels}\n\nScore the response from 1 to 10. Answer with a single "
        "number.\n### prefill\nScore:\n")
    from judgeaudit.judges.templates import parse_template

    with pytest.raises(ValueError, match=r"another scale than 1\.\.5: 'scale from 1 to 10'"):
        check_template(parse_template("score10", text, str(path)), "pointwise")


def test_a_banded_rubric_runs_through_scoring_bias(tmp_path):
    tpl = write(tmp_path, BANDED)
    res = CliRunner().invoke(app, ["scoring-bias", "--judge", "sim?seed=0", "--data",
                                   "builtin:graded", "--limit", "5", "--template", str(tpl),
                                   "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    assert "another scale" not in res.output


# review7 finding 2: a bare range A..B (A 0 or 1, B above k) on a line with a score word
# states the scale even without "scale" / "from" beside it: 151c258 accepted these, and a
# judge answering 6..10 was refused as off the scale while 1..5 was read as if on 1..5.
BARE_RANGE = [
    ("Score (1-10):", "(1-10)"),
    ("Score (1 to 10)", "(1 to 10)"),
    ("Give a number between 1 and 10 as your score.", "between 1 and 10"),
    ("Output a score in 1..10", "score in 1..10"),
    ("Give it a 1 to 10 rating.", "1 to 10"),
    ("Your rating (0\u20137) goes on the last line.", "(0\u20137)"),
    ("The grade is a whole number in the range 1\u20137.", "1\u20137"),
]
# A range on a line with a score word that is no scale: a count ("=" / ":" or a count word
# after it), a band within 1..k, or a line with no score word.
BARE_NOT_SCALE = [
    "Deduct from the score when 1-10 errors remain.",
    "Score each answer; 1-10 = too short to judge.",
    "Rate the answer: 0-1: none of the steps are shown.",
    "Use 1-10 examples of your own when you rate it.",
    "The answer lists 1 to 10 reasons; judge whether each is sound.",
]


def test_the_reviewers_ten_point_template_is_refused():
    path = Path("/tmp/review7/t10b.txt")
    text = path.read_text(encoding="utf-8") if path.exists() else (
        "### system\nYou are a judge.\n### user\nInstruction:\n{prompt}\n\nResponse:\n"
        "{response}\n\nRate the response for helpfulness.\nScore (1-10):\n")
    from judgeaudit.judges.templates import parse_template

    with pytest.raises(ValueError, match=r"another scale than 1\.\.5: '\(1-10\)'"):
        check_template(parse_template("t10b", text, str(path)), "pointwise")


@pytest.mark.parametrize(("line", "phrase"), BARE_RANGE)
def test_a_bare_range_on_a_line_with_a_score_word_is_refused(tmp_path, line, phrase):
    tpl = load_template(str(write(tmp_path, line)))
    with pytest.raises(ValueError) as exc:
        check_template(tpl, "pointwise")
    assert f"another scale than 1..5: {phrase!r} (in the line {line!r})" in str(exc.value)


@pytest.mark.parametrize("line", BARE_NOT_SCALE)
def test_a_bare_range_that_counts_or_has_no_score_word_is_no_scale(tmp_path, line):
    check_template(load_template(str(write(tmp_path, line))), "pointwise")


def test_a_bare_range_within_k_is_a_band(tmp_path):
    tpl = load_template(str(write(tmp_path, "Score (1-10):")))
    check_template(tpl, "pointwise", scale=10)
