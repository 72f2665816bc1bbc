"""Recorded scores and verdicts, and a table's gold scores, are numbers in ASCII digits, as a
live judge's answer is read (`parse_score`): float() read "५" (Devanagari 5) as 5.0, so a
replayed "५" became the score id "5" where the same answer live is unreadable, and a CSV gold
score "५" loaded as 5 where a JSONL file's is refused."""

from __future__ import annotations

import pytest

from judgeaudit.data import DataError, load
from judgeaudit.llm.providers.replay import ReplayProvider, _number
from judgeaudit.llm.providers.replay_formats import long_verdict


@pytest.mark.parametrize("recorded", ["५", "٣", "５", "[RESULT] ३", "Rating: [[४]]"])
def test_a_recorded_score_in_another_script_is_passed_on_unread(recorded: str) -> None:
    assert ReplayProvider._score_text(recorded, {}) == recorded


def test_recorded_ascii_scores_are_as_before() -> None:
    assert [ReplayProvider._score_text(s, {}) for s in ("5", "3.5", "[RESULT] 4", " 2 ")] == [
        "5", "3.5", "4", "2"]
    assert _number("7.5") == 7.5 and _number("५") is None and _number("٣.٥") is None
    assert long_verdict("f.csv", 1, "2") == "2" and long_verdict("f.csv", 1, "२") == "२"


def test_a_csv_gold_score_in_another_script_is_refused_like_jsonl(tmp_path) -> None:
    t = tmp_path / "t.csv"
    t.write_text("id,prompt,response,score\na,q,r,4\nb,q,r,५\n", encoding="utf-8")
    with pytest.raises(DataError, match="ASCII digits"):
        load(f"hf:{t}")
