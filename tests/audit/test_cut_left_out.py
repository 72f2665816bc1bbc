"""The audit's left-out breakdown names items whose verdict was cut at max_tokens ("cut"),
apart from plain unreadable answers ("unparseable"): the count the evaluate command gives
as n_cut (tests/cli/test_cut_answers_said.py), for the audit."""

from __future__ import annotations

from judgeaudit.audit.metrics import INVALID_REASONS, why_invalid
from judgeaudit.audit.probe import DROP_REASONS
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict


def test_a_cut_order_leaves_its_item_out_as_cut():
    cut = OrderVerdict("12", "The better response is", None, None,
                       error="cut at max_tokens (8)", cut=True)
    prose = OrderVerdict("21", "Both fine", None, None)
    ok = OrderVerdict("21", "A", "A", 2)
    assert why_invalid(PairwiseVerdict("x", [cut, ok])) == "cut"
    assert why_invalid(PairwiseVerdict("x", [prose, ok])) == "unparseable"
    failed = OrderVerdict("21", "", None, None, error="timeout", failed="call_failed")
    assert why_invalid(PairwiseVerdict("x", [cut, failed])) == "call_failed"  # upstream first
    assert "cut" in INVALID_REASONS and "max_tokens" in DROP_REASONS["cut"]
