"""Full-width forms read as their ASCII letters and digits (s44 review8 item 5): a judge
answering Chinese or Japanese data types "Ａ", "［［A］］" or "Ｓｃｏｒｅ: ４" with its input
method, and every such answer was unreadable. The readers match on a copy with U+FF01..U+FF5E
and the ideographic space as NFKC maps them (one character each); NFKC's other mappings are
not applied ("4²" is no 42), and labels written in full-width themselves are matched as
written."""

from __future__ import annotations

import pytest

from judgeaudit.judges.parse import parse_choice, parse_final, parse_score, score_off_scale
from judgeaudit.judges.templates import load_template

COT = load_template("pairwise_cot_v1")
PAT = COT.final_pattern or ""


@pytest.mark.parametrize(("text", "want"), [
    ("Ａ", "A"), ("［［Ｂ］］", "B"), ("［［A］］", "A"), ("Ｖｅｒｄｉｃｔ：　Ｂ", "B"),
    ("我选择 Response A。\n最终裁决：[[Ｂ]]", None),   # two verdicts still disagree
])
def test_a_full_width_choice_reads(text: str, want: str | None) -> None:
    assert parse_choice(text) == want


@pytest.mark.parametrize(("text", "want"), [
    ("４", 4), ("Ｓｃｏｒｅ: ４", 4), ("Ｓｃｏｒｅ：４", 4), ("评分：［［３］］", 3),
    ("Rating: [[４]]", 4), ("３．５", 3.5),
])
def test_a_full_width_score_reads(text: str, want: float) -> None:
    assert parse_score(text) == want


def test_a_full_width_final_line_reads() -> None:
    text = "两个回答都正确，但 B 更完整。\nThe better response is Ｒｅｓｐｏｎｓｅ Ｂ"
    assert parse_final(text, PAT, COT.labels) == "B"


def test_other_nfkc_forms_are_not_read_as_digits() -> None:
    assert parse_score("4²") is None          # NFKC would make it 42
    assert parse_score("Score: ½") is None
    assert parse_score("५") is None          # other scripts' digits stay unread (2665942)


def test_full_width_labels_match_as_written() -> None:
    assert parse_choice("Ａ", ("Ａ", "Ｂ")) == "Ａ"
    assert parse_choice("A", ("Ａ", "Ｂ")) is None


def test_off_scale_full_width_says_why() -> None:
    assert score_off_scale("Ｓｃｏｒｅ: ８") == "score 8 is not on the scale 1..5"
