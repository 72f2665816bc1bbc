"""A line in another script after the verdict or score read can contradict it (parsefix8).

dee15f5 read full-width forms as ASCII, so 'Ａ\\n\\n但是回答Ｂ更好。' ("but response B is
better"), unread before, read A: the readers do not read the Chinese sentence, and a verdict
it gives for the other label went unseen. A wrong reading is silent, an unread one is counted
and shown: such an answer is now unread. A line in another script that names the same label,
or names it only inside a quote or a fence, still reads.
"""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice, parse_score, score_off_scale


@pytest.mark.parametrize("text", [
    "Ａ\n\n但是回答Ｂ更好。",
    "［［A］］\n但是，回答B更好。",
    "A\n\nОднако, Response B лучше.",
    "A\n\n但是回答B更好。",
    "Verdict: A\n\n不过，回答B的解释更完整，所以B更好。",
    "A\n\n回答A更好，但回答B更准确。",  # names both: which one it prefers is not read
])
def test_a_later_line_in_another_script_naming_the_other_label_leaves_the_answer_unread(
        text: str) -> None:
    assert parse_choice(text) is None, f"{text!r}: expected unread (None), not the opening"


@pytest.mark.parametrize("text, want", [
    ("A\n\n回答A更好。", "A"),  # restates the verdict
    ("Ａ\n\n回答Ａ更好。", "A"),
    ("B\n\nОтвет B лучше.", "B"),
    ("A\n\n「回答B」的说法有误。", "A"),  # the other label only in a quote
    ("A\n\n> 回答B更好。", "A"),  # a blockquote of a response's text
    ("A\n```\n回答B\n```", "A"),  # a fenced block
    ("A\n\nResponse B is wrong about the date.", "A"),  # a Latin line: read as before
    ("A\n\n回答更好。", "A"),  # another script, no label
])
def test_a_later_line_that_agrees_or_is_not_the_judges_own_still_reads(
        text: str, want: str) -> None:
    assert parse_choice(text) == want, f"{text!r}: expected {want!r}"


def test_a_tie_label_in_another_script_after_a_winner_leaves_the_answer_unread() -> None:
    text = "[[A]]\n\n我认为C。"
    assert parse_choice(text, ("A", "B"), True, ("C",)) is None


@pytest.mark.parametrize("text, other", [
    ("Ｓｃｏｒｅ：４\n\n最终评分：２", "2"),
    ("Score: 4\n\n最终评分：2", "2"),
    ("Score: 4\nОценка: 2", "2"),
    ("4\n\nالدرجة: ٣", "3"),
    ("Score: 4\n\nस्कोर: ५", "5"),
    ("Score: 4\n\nスコア：3", "3"),
])
def test_a_score_word_in_another_script_with_another_number_leaves_the_score_unread(
        text: str, other: str) -> None:
    assert parse_score(text) is None, f"{text!r}: expected unread, not 4"
    why = score_off_scale(text) or ""
    assert "disagree" in why and f"then {other}" in why, f"{text!r}: reason was {why!r}"


@pytest.mark.parametrize("text", [
    "Score: 4\n\nFinal answer: ५",
    "Score: 4\n\\boxed{५}",
    "Score: 4\n\n**Final Answer:** ٢",
])
def test_a_later_final_answer_in_another_scripts_digit_leaves_the_score_unread(
        text: str) -> None:
    assert parse_score(text) is None, f"{text!r}: expected unread, not 4"
    why = score_off_scale(text) or ""
    assert "not an ASCII digit" in why, f"{text!r}: reason was {why!r}"


@pytest.mark.parametrize("text", [
    "Score: 4\n\n最终评分：4",
    "Score: 4\n\n最终评分：४",  # the same number in Devanagari digits agrees
    "4\n\nОценка — 4 балла",
    "Score: 4\n\n评分标准共有5级。",  # a number not given to a score word
    "Score: 4\n\n回答有2个错误。",
    "Score: 4\n```\n评分：2\n```",  # fenced: a response's text
    "Score: 4\n\n> 评分：2",  # a blockquote
])
def test_a_later_line_in_another_script_that_gives_no_other_score_still_reads(
        text: str) -> None:
    assert parse_score(text) == 4, f"{text!r}: expected 4"
