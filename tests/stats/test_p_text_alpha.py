"""A p or q that two digits round onto 0.05 is shown with the digits that say which side of
the usual alpha it is on: 0.0496 and 0.0504 both read "0.05" beside "biased" and
"underpowered" (a planted-truth tester's find)."""

from __future__ import annotations

from judgeaudit.stats.tests import p_text


def test_values_rounding_onto_alpha_keep_their_side():
    assert p_text(0.0496) == "0.0496"
    assert p_text(0.0504) == "0.0504"
    assert p_text(0.04996) == "0.04996"
    assert p_text(0.05) == "0.05"
    assert p_text(0.046875) == "0.047" and p_text(0.5) == "0.5"
