"""A later line in another script that names both labels and plainly prefers the opening's
reads (s45 parse9).

e94f440 left 'A\\n\\n但是回答B更好。' unread (a line the readers cannot read names the other
label), and with it 'A\\n\\n回答A比回答B更好。' ("response A is better than response B"),
which restates the verdict. A line whose every clause naming the other label is a comparison
preferring the opening's label (Chinese 比/优于/不如, Russian 'лучше, чем', Japanese より)
now agrees; one that prefers the other label, negates, asks, or says anything else of it
stays unread.
"""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice


@pytest.mark.parametrize("text, want", [
    ("A\n\n回答A比回答B更好。", "A"),
    ("Ａ\n\n回答Ａ比回答Ｂ更好。", "A"),
    ("A\n\n所以，回答A比回答B更好。", "A"),
    ("[[A]]\n\n我认为回答A比回答B更好。", "A"),
    ("A\n\n回答A比回答B好得多。", "A"),
    ("A\n\n回答A优于回答B。", "A"),
    ("A\n\n回答B不如回答A。", "A"),
    ("A\n\n回答B比回答A更差。", "A"),
    ("B\n\n回答B比回答A更好。", "B"),
    ("A\n\nОтвет A лучше, чем ответ B.", "A"),
    ("B\n\nПоэтому ответ B лучше ответа A.", "B"),
    ("A\n\n回答Aの方が回答Bより良い。", "A"),
    ("A\n\n「回答B比回答A更好」这种说法不对，回答A比回答B更好。", "A"),
])
def test_a_line_in_another_script_preferring_the_opening_label_reads(
        text: str, want: str) -> None:
    assert parse_choice(text) == want, f"{text!r}: expected {want!r}"


@pytest.mark.parametrize("text", [
    "A\n\n回答B比回答A更好。",  # prefers the other label
    "B\n\n回答A比回答B更好。",
    "A\n\n回答A不如回答B。",
    "A\n\n回答A比回答B更差。",
    "A\n\nОтвет B лучше, чем ответ A.",
    "A\n\n回答A并不比回答B更好。",  # negated
    "A\n\nОтвет A не лучше, чем ответ B.",
    "A\n\n回答A比回答B更好吗？",  # a question
    "A\n\n回答A比回答B更好，但回答B更准确。",  # another clause on B
    "A\n\n回答A比回答B更好，因为回答B有错误。",
    "A\n\n回答A和回答B都不好。",
    "A\n\n回答A比回答B更好。\n\n但是回答B更好。",  # a second line disagrees
])
def test_a_line_in_another_script_that_disagrees_or_is_unclear_stays_unread(text: str) -> None:
    assert parse_choice(text) is None, f"{text!r}: expected unread (None)"


def test_a_comparison_with_the_tie_label_agrees_but_naming_it_alone_does_not() -> None:
    assert parse_choice("[[A]]\n\n回答A比回答C更好。", ("A", "B"), True, ("C",)) == "A"
    assert parse_choice("[[A]]\n\n我认为C。", ("A", "B"), True, ("C",)) is None
