"""A user's score template whose only scale is a plain range from 1 below the judge's k
("Score it from 1 to 3.", "a score between 1 and 3", "Rate it 1-3.", "Score (1-3):") is
refused as "on a scale of 1 to 3" is: the judge answers 1..3 and the reader takes those as
scores on 1..5, silently compressed. Before, only a phrase with "scale" or "out of" below k
was refused, and "Score it from 1 to 3." ran. A plain range stays a band of 1..k where a
condition or a word about it says so ("Score it from 1 to 3 if the prompt is unsafe",
"Scores 1-3 indicate poor quality") or where the template states 1..k (or gives the score
from {levels}) beside it. Through the real CLI for the reported template: no request sent."""

from __future__ import annotations

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.judges.templates import check_template, parse_template
from tests.judges.test_template_scale_phrases import builtin_with
from tests.judges.test_user_templates import SCORE_USER, SYSTEM, refused, run, write

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")

# A user section without {levels}: nothing but the line states the scale.
PLAIN = ("### system\nYou judge one response.\n### user\nInstruction:\n{prompt}\n\n"
         "Response:\n{response}\n%s\n### prefill\nScore:\n")

PLAIN_RANGES = [
    ("Score it from 1 to 3.", "Score it from 1 to 3"),
    ("Give a score between 1 and 3.", "score between 1 and 3"),
    ("Score it between 1 and 3.", "Score it between 1 and 3"),
    ("Rate the response 1-3.", "Rate the response 1-3"),
    ("Score: 1-3", "Score: 1-3"),
    ("Score (1-3):", "(1-3)"),
    ("Rating (1 to 4)", "(1 to 4)"),
    ("Score the response from 1 to 3 points.", "Score the response from 1 to 3"),
    ("Score it from 1 to 3, where 1 is poor and 3 is good.", "Score it from 1 to 3"),
    ("Rate it from 1 to 3 based on accuracy.", "Rate it from 1 to 3"),
    ("Score each aspect from 1 to 3.", "Score each aspect from 1 to 3"),
]
# A band of 1..5 or a count: a condition in its sentence, a word saying something of the
# range, or 1..5 (or the filled levels) named as the score asked for.
BANDS = [
    "Score it from 1 to 3 if the prompt is unsafe.",
    "If the prompt is unsafe, score it 1-3.",
    "Mark the score between 1 and 2 if the response is off topic.",
    "Scores 1-3 indicate poor quality.",
    "The ratings 1 through 3 mean a factual error; a rating of 1 through 3 is no pass.",
    "Scoring guide: 1-2 = poor, 3 = adequate, 4-5 = good.",
    "Explain in 1-2 sentences, then score it.",
    "Score from 2 to 4.",
    "Score each aspect from 1 to 3, then give an overall score from 1 to 5.",
]
# With {levels} in the user section (the built-in frame), the filled levels state 1..5.
FROM_LEVELS = "Score each aspect from 1 to 3, then give one overall score from the levels below."


def _check(text: str) -> None:
    check_template(parse_template("mine", text, "/tmp/mine.txt"), "pointwise")


@pytest.mark.parametrize(("line", "phrase"), PLAIN_RANGES)
@pytest.mark.parametrize("frame", ["plain", "builtin"])
def test_a_plain_range_below_k_naming_the_score_is_refused(line, phrase, frame):
    text = PLAIN % line if frame == "plain" else builtin_with(line)
    with pytest.raises(ValueError) as exc:
        _check(text)  # accepted before: only 'scale' / 'out of' below k was read
    msg = str(exc.value)
    assert "'/tmp/mine.txt' asks for scores on another scale than 1..5" in msg
    assert f"{phrase!r} (in the line {line!r})" in msg
    assert "Rewrite the template for the scale 1..5" in msg


@pytest.mark.parametrize("line", BANDS)
@pytest.mark.parametrize("frame", ["plain", "builtin"])
def test_a_band_a_count_or_a_sub_score_is_accepted(line, frame):
    _check(PLAIN % line if frame == "plain" else builtin_with(line))


def test_a_sub_score_beside_the_score_from_the_levels_is_accepted():
    _check(builtin_with(FROM_LEVELS))


@pytest.mark.parametrize(("line", "k"), [("Score it from 1 to 3.", 3), ("Rate it 1-4.", 4)])
def test_a_range_up_to_k_is_the_judges_own_scale(line, k):
    check_template(parse_template("mine", PLAIN % line, "/tmp/mine.txt"), "pointwise", scale=k)


@pytest.mark.parametrize("command", ["evaluate", "scoring-bias"])
def test_the_reported_template_is_refused_before_any_call(tmp_path, command):
    tpl = write(tmp_path, "three.txt",
                SYSTEM + SCORE_USER + "Score it from 1 to 3.\n### prefill\nScore:\n")
    with FakeLLMServer(answer="3") as srv:
        refused(run(tmp_path, srv, "point", tpl, command), srv, tpl,
                "another scale than 1..5", "'Score it from 1 to 3'", "Rewrite the template")
