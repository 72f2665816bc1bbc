"""Scoring-bias MAD and shift: where fewer than 5 items' scores moved, their interval is the
exact one over the scale's span (`stats.movers_ci`), as the audit's; before, a template that
moved no score on 20 items showed shift +0.00 [+0.00, +0.00] and MAD 0 [0, 0]."""

from __future__ import annotations

import numpy as np
import pytest

from judgeaudit.scoring import metrics as M
from judgeaudit.scoring.run import SPAN
from judgeaudit.stats import movers_ci


def test_the_span_is_that_of_a_1_to_5_scale():
    assert SPAN == 4.0


def test_no_score_moved_is_not_a_zero_width_interval():
    a = [3.0] * 20
    shift = M.shift(a, a, span=SPAN)
    lo, hi = movers_ci(np.zeros(20), SPAN)
    assert shift["method"] == "clopper-pearson-movers"
    assert shift["value"] == 0 and shift["ci95"] == pytest.approx([lo, hi])
    mad = M.mad(a, a, span=SPAN)
    assert mad["value"] == 0 and mad["ci95"] == pytest.approx([0.0, hi])  # MAD is >= 0
    # without the span (the old rule): the bootstrap's point
    assert M.shift(a, a)["ci95"] == [0.0, 0.0]


def test_few_moves_are_exact_and_five_take_the_t_interval():
    a = [3.0] * 30
    b = [3.0] * 28 + [5.0, 4.0]  # two items moved, by 2 and by 1
    d = np.array(a) - np.array(b)
    shift = M.shift(a, b, span=SPAN)
    assert shift["value"] == pytest.approx(d.mean())
    assert shift["ci95"] == pytest.approx(list(movers_ci(d, SPAN)))
    assert shift["ci95"][0] < d.mean() < shift["ci95"][1]
    five = [3.0] * 25 + [4.0] * 5
    assert M.shift(a, five, span=SPAN)["method"] == "t|bootstrap-t"
    # a missing score on either side leaves the item out, as before
    assert M.mad([None, *a[1:]], b, span=SPAN)["n"] == 29


def test_one_item_has_a_shift_but_no_interval():
    """One scored pair gave the point interval [d, d] for the shift and the MAD, which reads
    as certainty; like every paired estimate, one item now has none."""
    for est in (M.shift([4], [2]), M.mad([4], [2])):
        assert est["value"] == 2.0 and est["ci95"] == [None, None] and est["n"] == 1
