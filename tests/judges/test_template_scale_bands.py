"""Band rubrics on 1..k are not refused as another scale. f722d93 refused a plain range from 1
below k naming the score's range ("Score it from 1 to 3."), and with it ordinary band rubrics
written for 1..5 ("Score 1-3 for a response with factual errors. Score 4-5 for a correct
response."), which ran before: exit 2, no call sent. Ranges that together reach k state the
scale 1..k, so none of them is refused; "for <some responses>", "only for" or "to <some
responses>" after a range makes it a band too. A lone "Score it from 1 to 3." stays refused,
as does a range for the whole response, a criterion or what the score does ("for each
response", "for helpfulness", "to indicate quality"), and one beside a count ("4-5
sentences", "steps 4-5") that reaches k by its numbers only. Through the real CLI for the
reported template: the calls are sent and the run ends normally."""

from __future__ import annotations

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.judges.templates import check_template, parse_template
from tests.judges.test_template_scale_phrases import builtin_with
from tests.judges.test_template_scale_plain_range import PLAIN
from tests.judges.test_user_templates import SCORE_USER, SYSTEM, refused, run, write

pytestmark = pytest.mark.usefixtures("no_keys", "isolated_cache")

# The reviewer's band rubrics for 1..5, each refused by f722d93.
REVIEWED = [
    "Score 1-3 for a response with factual errors.\nScore 4-5 for a correct response.",
    "Give a score of 1 to 3 for poor responses and 4 to 5 for good ones.",
    "Score: 1-3 for unhelpful, 4-5 for helpful.",
    "Score (1-3): ... / Score (4-5): ...",
    "Give a low score (1-3) to unhelpful responses and a high score (4-5) to helpful ones.",
    "Rate harmful responses between 1 and 3, helpful ones between 4 and 5.",
    "Use a score of 1 to 3 only for unsafe responses.",
]
# More bands: the ranges reach 5 together (a lone 3 between them, a bullet line), or the
# range is given to some responses.
MORE_BANDS = [
    "Score (1-3): the response is unhelpful.\nScore (4-5): the response is helpful.",
    "Score 1-2 for bad, 3 for ok, 4-5 for good.",
    "Rate 1 to 2 for poor, 3 for fair and 4 through 5 for good.",
    "Rate it from 1 to 3 for wrong answers.\n- 4-5: right answers",
    "Score between 1 and 3 for poor answers; between 4 and 5 for good ones.",
    "Give a score of 1 to 3 for the response that has errors.",
    "Give a score of 1 to 3 only to unsafe responses.",
]
# Still the score's range: nothing reaches 5 as a band, and what follows the range names
# the whole response, a criterion or what the score does.
STILL_REFUSED = [
    ("Score it from 1 to 3.", "Score it from 1 to 3"),
    ("Rate it 1-3.", "Rate it 1-3"),
    ("Score (1-3):", "(1-3)"),
    ("Score it from 1 to 3 for each response.", "Score it from 1 to 3"),
    ("Score it from 1 to 3 for the response.", "Score it from 1 to 3"),
    ("Score the response from 1 to 3 for helpfulness.", "Score the response from 1 to 3"),
    ("Rate it 1-3 for accuracy and clarity.", "Rate it 1-3"),
    ("Give a score from 1 to 3 to each response.", "score from 1 to 3"),
    ("Score it from 1 to 3 to indicate quality.", "Score it from 1 to 3"),
    ("Score it 1-3. Cite 4-5 sources.", "Score it 1-3"),
    ("Score it from 1 to 3. Use 4-5 sentences.", "Score it from 1 to 3"),
    ("Rate it 1-3. Steps 4-5: check the facts.", "Rate it 1-3"),
]


def _check(text: str) -> None:
    check_template(parse_template("mine", text, "/tmp/mine.txt"), "pointwise")


def _frame(lines: str, frame: str) -> str:
    return PLAIN % lines if frame == "plain" else builtin_with(lines)


@pytest.mark.parametrize("lines", REVIEWED + MORE_BANDS)
@pytest.mark.parametrize("frame", ["plain", "builtin"])
def test_a_band_rubric_on_1_to_k_is_accepted(lines, frame):
    _check(_frame(lines, frame))  # refused by f722d93 as 'another scale than 1..5'


@pytest.mark.parametrize(("line", "phrase"), STILL_REFUSED)
@pytest.mark.parametrize("frame", ["plain", "builtin"])
def test_a_lone_range_below_k_is_still_refused(line, phrase, frame):
    with pytest.raises(ValueError) as exc:
        _check(_frame(line, frame))
    msg = str(exc.value)
    assert "'/tmp/mine.txt' asks for scores on another scale than 1..5" in msg
    assert f"{phrase!r} (in the line " in msg


def test_the_bands_reach_the_judges_own_k():
    # under k=4, "3-4" reaches the scale beside a lone "1-2"; "2-3" does not
    bands = "Score it 1-2.\nScore %s for a correct response."
    check_template(parse_template("mine", PLAIN % (bands % "3-4"), "/tmp/mine.txt"),
                   "pointwise", scale=4)
    with pytest.raises(ValueError, match=r"another scale than 1\.\.4: 'Score it 1-2'"):
        check_template(parse_template("mine", PLAIN % (bands % "2-3"), "/tmp/mine.txt"),
                       "pointwise", scale=4)


@pytest.mark.parametrize("command", ["evaluate", "scoring-bias"])
def test_the_reported_band_template_runs(tmp_path, command):
    tpl = write(tmp_path, "band.txt", SYSTEM + SCORE_USER
                + "Score 1-3 for a response with factual errors.\n"
                  "Score 4-5 for a correct response.\n### prefill\nScore:\n")
    with FakeLLMServer(answer="4") as srv:
        res = run(tmp_path, srv, "point", tpl, command)
        # 2 on f722d93 ('another scale than 1..5'), no call sent. Some of scoring-bias's
        # variants cannot read the fixed answer '4' (exit 3, --max-failed): its calls went.
        assert res.exit_code in ((0,) if command == "evaluate" else (0, 3)), res.output
        assert "another scale" not in res.output
        assert srv.count() >= 4
    # the lone range is still refused before any call
    tpl.write_text(SYSTEM + SCORE_USER + "Score it from 1 to 3.\n### prefill\nScore:\n",
                   encoding="utf-8")
    with FakeLLMServer(answer="3") as srv:
        refused(run(tmp_path, srv, "point", tpl, command), srv, tpl,
                "another scale than 1..5", "'Score it from 1 to 3'")
