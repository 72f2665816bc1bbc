"""evaluate's line under the table accounts for every invalid verdict: with 4 plain
unreadable answers beside cut and empty ones it read "of the 16 invalid: 8 cut ..., 4 empty"
and left 4 unexplained (review7)."""

from __future__ import annotations

from judgeaudit.cli.format import cut_text


def test_the_cut_line_names_the_rest():
    line = cut_text({"n_cut": 8, "n_empty": 4, "n_invalid": 16, "invalid_examples": []})
    assert line.startswith("of the 16 invalid: 8 cut at max_tokens")
    assert line.endswith("4 empty, 4 other (unreadable answers or failed calls)")
    assert "other" not in cut_text({"n_cut": 6, "n_empty": 0, "n_invalid": 6})
