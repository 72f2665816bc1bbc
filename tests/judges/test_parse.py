import pytest

from judgeaudit.judges.parse import parse_choice, parse_score


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A", "A"), (" B", "B"), ("B.", "B"), ("**A**", "A"), ("[[B]]", "B"),
        ("Response A", "A"), ("Output (b)", "B"), ("A is better.", "A"),
        ("B\nBecause it is correct.", "B"), ("tie", "tie"), ("Tie.", "tie"),
    ],
)
def test_parse_choice_accepts_clear_verdicts(text, expected):
    assert parse_choice(text, allow_tie=True) == expected


@pytest.mark.parametrize(
    "text",
    ["", "   ", "C", "A or B", "A and B are both fine", "Both", "Neither", "a tie",
     "I cannot decide", "The answer is clear", "AB"],
)
def test_parse_choice_rejects_everything_else(text):
    assert parse_choice(text, allow_tie=True) is None


def test_tie_is_invalid_when_not_allowed():
    assert parse_choice("tie", allow_tie=False) is None


@pytest.mark.parametrize(
    ("text", "ids", "expected"),
    [
        ("4", ("1", "2", "3", "4", "5"), 4), ("Score: 2", ("1", "2", "3", "4", "5"), 2),
        ("**5**", ("1", "2", "3", "4", "5"), 5), ("3/5", ("1", "2", "3", "4", "5"), 3),
        ("B", ("E", "D", "C", "B", "A"), 4), ("iv", ("i", "ii", "iii", "iv", "v"), 4),
        ("IV", ("i", "ii", "iii", "iv", "v"), 4),
    ],
)
def test_parse_score_maps_ids_back_to_1_to_5(text, ids, expected):
    assert parse_score(text, ids) == expected


@pytest.mark.parametrize("text", ["", "6", "0", "four", "3 or 4", "5.5", "0.5", "Score: high",
                                  "3/10", "4.5/10"])
def test_parse_score_rejects_non_scores(text):
    assert parse_score(text) is None


@pytest.mark.parametrize(("text", "expected"), [("3.5", 3.5), ("Score: 4.5", 4.5),
                                                ("2.0", 2), ("1.25/5", 1.25)])
def test_parse_score_takes_decimals_within_a_numeric_scale(text, expected):
    assert parse_score(text) == expected


def test_decimals_need_numeric_ids():
    assert parse_score("3.5", ("i", "ii", "iii", "iv", "v")) is None
    assert parse_score("3.5", ("E", "D", "C", "B", "A")) is None
