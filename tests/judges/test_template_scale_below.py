"""The score-template scale check refuses a phrase naming a scale whose top is below the
judge's k ("on a scale of 1 to 3", "a score out of 3"): the judge answers 1..3 and the reader
takes those as 1..5 scores, silently compressed. It accepts a percentage after a range
("Score 1-10% lower") and a date on a score line ("Score (as of 2024-10-05):"), which it
refused as the scale 1..10 / 2024..10. Each case sits in the built-in pointwise_scoring_v1."""

from __future__ import annotations

import pytest

from judgeaudit.judges.templates import check_template, parse_template
from tests.judges.test_template_scale_phrases import builtin_with

BELOW = [
    ("Score the response on a scale of 1 to 3.", "scale of 1 to 3"),
    ("Use a 1-3 scale.", "1-3 scale"),
    ("Give a score out of 3.", "score out of 3"),
    ("Rate it on a scale from 1 to 4.", "scale from 1 to 4"),
]
ACCEPTED = [
    "Score 1-10% lower when the response is verbose.",
    "Score (as of 2024-10-05):",
    "Score (as of 2024-10-15):",
    "Rate the response 1-10 percent lower if it rambles.",
    "Scale: 1-2 = poor, 3 = adequate, 4-5 = good.",
    "Score the response on a scale of 1 to 5.",
    "Give a score out of 5.",
]


def _tpl(line: str):
    return parse_template("mine", builtin_with(line), "/tmp/mine.txt")


@pytest.mark.parametrize(("line", "phrase"), BELOW)
def test_a_stated_scale_with_a_top_below_k_is_refused(line, phrase):
    with pytest.raises(ValueError) as exc:
        check_template(_tpl(line), "pointwise")
    msg = str(exc.value)
    assert "'/tmp/mine.txt' asks for scores on another scale than 1..5" in msg
    assert f"{phrase!r} (in the line {line!r})" in msg


@pytest.mark.parametrize("line", ACCEPTED)
def test_a_percentage_a_date_or_a_band_is_no_other_scale(line):
    check_template(_tpl(line), "pointwise")


# Ordinary wording the below-k rule of f4bb337 refused (reviewer's cases): a template that
# states 1..5 somewhere asks for 1..5, whatever smaller scale it mentions besides.
WITH_1_TO_5 = [
    "Score each aspect (accuracy, style, safety) on a scale of 1 to 3, then give an overall "
    "score from 1 to 5.",
    "Give a score from 1 to 5. A response scoring 1 out of 3 criteria met gets 2.",
    "Use the 1-5 scale. A 1-2 scale difference is large.",
    "Rate from 1 to 5. On a scale of 1 to 2 how confident are you? Don't answer that.",
    "Score from 1 to 5. If the user asked for a 1-3 scale rating of a movie, the response "
    "should use it.",
    "Score 1 to 5. Scale of 1 to 4 stars used by the user is irrelevant.",
]
# Without 1..5 stated: a count or a conditional clause is about something else than the score.
NOT_THE_SCORE = [
    "A response scoring 1 out of 3 criteria met gets 2.",
    "If the user asked for a 1-3 scale rating of a movie, the response should use it.",
]


@pytest.mark.parametrize("line", WITH_1_TO_5 + NOT_THE_SCORE)
def test_a_smaller_scale_beside_the_score_asked_for_is_accepted(line):
    check_template(_tpl(line), "pointwise")


@pytest.mark.parametrize(("line", "phrase"), [
    ("Score each aspect (accuracy, style, safety) on a scale of 1 to 3.", "scale of 1 to 3"),
    ("If unsure, use a scale of 1 to 3.", "scale of 1 to 3"),
    ("Give a score out of 3 points.", "score out of 3"),
])
def test_a_smaller_scale_stays_refused_where_no_1_to_5_is_stated(line, phrase):
    with pytest.raises(ValueError) as exc:
        check_template(_tpl(line), "pointwise")
    assert f"{phrase!r} (in the line {line!r})" in str(exc.value)
