"""Score answers in the formats real judges write: labels as the verdict reader reads them
("Rating: [[4]]", MT-Bench's own judge format, read 20/20 unreadable live while replay read
it as 4), [[N]] brackets, "N out of M" / "N/M" where M is the scale's top; strict otherwise.
A live judge and replay read the same recorded text the same way. A number off the scale
says so, not "unparseable"."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import invalid_reason, parse_score, score_off_scale
from judgeaudit.llm import Response
from judgeaudit.llm.providers.replay import ReplayProvider

READ = [
    ("Rating: [[4]]", 4), ("[[4]]", 4), ("Rating: 4", 4), ("I'd give it a 4 out of 5", 4),
    ("I\u2019d give it a 4 out of 5", 4), ("**Final score:** 3", 3), ("Overall: 4/5", 4),
    ("Grade: 2", 2), ("Rating:\n5", 5), ("The score is 4.", 4), ("Verdict: 4", 4),
    ("I would rate this response 2/5.", 2), ("Rating: [[4]]\nThe response is clear.", 4),
    ("The response is correct but terse.\nRating: [[5]]", 5), ("Feedback ... [RESULT] 3", 3),
    ("Score: 4", 4), ("4/5", 4), ("4", 4), ("Final score: 3.5", 3.5), ("4 out of 5", 4),
]
REFUSED = [
    "I'd give it a 3 or a 4", "Between 3 and 4", "4\nRating: [[3]]", "[[3]] or [[4]]",
    "Score: 4 because it is good", "It is a 4 but could be a 5", "Rating: [[4]] [[5]]",
    "4 out of 10", "8/10", "N/A",
]


@pytest.mark.parametrize(("text", "want"), READ)
def test_labelled_and_bracketed_scores_read(text: str, want: float) -> None:
    assert parse_score(text) == want


@pytest.mark.parametrize("text", REFUSED)
def test_two_numbers_or_another_scale_stay_invalid(text: str) -> None:
    assert parse_score(text) is None


def test_the_top_named_must_be_the_scales() -> None:
    ten = tuple(str(k) for k in range(1, 11))
    assert parse_score("8 out of 10", ten) == 8 and parse_score("8/10", ten) == 8
    assert parse_score("Rating: [[8]]", ten) == 8 and parse_score("4 out of 5", ten) is None


ALIKE = [t for t, _ in READ] + REFUSED


@pytest.mark.parametrize("text", ALIKE)
def test_live_and_replay_read_a_recorded_answer_alike(text: str) -> None:
    """Replay turns a recorded answer into the text the judge then parses; the live judge
    parses the answer as it comes. Both give the same score (or both none)."""
    assert parse_score(ReplayProvider._score_text(text, {})) == parse_score(text)


def test_a_number_off_the_scale_says_so() -> None:
    assert score_off_scale("Score: 8.5") == "score 8.5 is not on the scale 1..5"
    assert score_off_scale("11") == "score 11 is not on the scale 1..5"
    assert score_off_scale("8/10") == "a score out of 10, not on the scale 1..5"
    assert score_off_scale("N/A") is None and score_off_scale("4") is None
    assert score_off_scale("3 or 4") is None
    why = score_off_scale("8.5")
    assert invalid_reason(Response(text="8.5"), False, why) == \
        "score 8.5 is not on the scale 1..5: '8.5'"
    assert invalid_reason(Response(text="N/A"), False, None) == "unparseable answer: 'N/A'"


def test_replay_with_letter_score_ids_leaves_a_disagreeing_answer_invalid() -> None:
    """With score ids other than 1..n, replay maps a benchmark's marker to the k-th id; an
    opening score that disagrees with the marker is not mapped (left for the judge to refuse)."""
    meta = {"score_ids": ["A", "B", "C", "D", "E"]}
    assert ReplayProvider._score_text("Rating: [[3]]", meta) == "C"
    assert ReplayProvider._score_text("4\nRating: [[3]]", meta) == "4\nRating: [[3]]"
    assert ReplayProvider._score_text("3\nRating: [[3]]", meta) == "C"
