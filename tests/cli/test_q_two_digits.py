"""The audit table shows q to two significant digits: at one digit a "biased" row with
q = 0.046875 read "0.05", the same as a q of 0.054 beside "underpowered", against the
README's rule q < 0.05 (the report page showed 0.0469)."""

from __future__ import annotations

from judgeaudit.cli.format import _audit_cells


def _cells(q: float) -> dict:
    return _audit_cells({"effect": {"value": 0.1, "ci95": [0.05, 0.17]}, "n": 40, "q": q,
                         "mde": 0.1, "verdict": "biased", "flag": {}, "dropped": {}})


def test_q_near_alpha_is_told_apart():
    assert _cells(0.046875)["q"] == "0.047"
    assert _cells(0.054)["q"] == "0.054"
    assert _cells(0.5)["q"] == "0.5"
