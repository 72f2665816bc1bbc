"""A p- or q-value that underflowed (stored as the floor 1e-300) or an older results file's
0 is shown as "< 1e-300" in compare's table and the report pages, and compare's unpaired
(Wald) p never underflows to 0: past |z| ~ 38 erfc gave 0.0, shown as "0"."""

from __future__ import annotations

from judgeaudit.audit.compare import unpaired_change
from judgeaudit.report.html import fmt_p


def test_the_report_shows_an_underflowed_p_as_a_bound():
    assert fmt_p(0.0) == "< 1e-300"
    assert fmt_p(1e-300) == "< 1e-300"
    assert fmt_p(2e-5) == "2.0e-05"
    assert fmt_p(0.04) == "0.04"


def test_an_unpaired_change_far_beyond_its_interval_keeps_a_positive_p():
    # effects 0.0 [-0.01, 0.01] and 0.9 [0.89, 0.91]: z ~ 127
    out = unpaired_change((0.0, -0.01, 0.01), (0.9, 0.89, 0.91))
    assert 0 < out["p"] <= 1e-300
    near = unpaired_change((0.0, -0.1, 0.1), (0.1, 0.0, 0.2))
    assert 0.1 < near["p"] < 0.9  # an ordinary p is unchanged
