"""'Final answer: "Score: 4"' -- a final answer whose whole value is the score's own line in
quotes, as a template words its request -- reads as "Score: 4" at the answer's opening (s44
item 3; it was unreadable). A closing one after reasoning stays unread like a closing
"Score: 4" (ef631f8): there an example of the required format would read as a score."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_score, score_off_scale

THINK = "Let me check the response. It is accurate and concise.\n\n"


@pytest.mark.parametrize(("text", "want"), [
    ('Final answer: "Score: 4"', 4),
    ('**Final Answer:** "Score: 2"', 2),
    ("Final answer: \u201cScore: 5\u201d", 5),
    ('Answer: "Rating: 3"', 3),
    ('Final answer: "Score: 4/5".', 4),
    ('Final answer: "Score: 4"\nIt is accurate and concise.', 4),
    ('Final answer: "Score: 4"\nReasons.\nScore: 4', 4),
])
def test_a_quoted_score_as_the_whole_final_answer_reads(text: str, want: float) -> None:
    assert parse_score(text) == want


@pytest.mark.parametrize("text", [
    'Final answer: "Score: 4"\nOn reflection it is weak.\nScore: 2',  # a later score disagrees
    'Final answer: "Score: 4"\n\\boxed{2}',
    'Final answer: "Score: 4" is what the response wrote',           # not the whole value
    'Final answer: "Score: 4 or 5"',
    "Final answer: \"Score: 4\u201d",                                # quotes that do not pair
    'Final answer: "The score is high"',
    THINK + 'Final answer: "Score: 4"',                               # a closing one
    "The response is weak and deserves a 2.\n\nExample of the required format:\n"
    'Final answer: "Score: 3"',
])
def test_anything_else_stays_unread(text: str) -> None:
    assert parse_score(text) is None


def test_off_the_scale_says_so() -> None:
    assert score_off_scale('Final answer: "Score: 9"') == "score 9 is not on the scale 1..5"
