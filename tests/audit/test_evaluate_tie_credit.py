"""The mean pair rule on two-way accuracy counts a tie verdict half (as LLMBar's Rating counts
equal scores: one order right, one wrong), and says so; on three-way accuracy (tie labels
kept) a tie verdict on a decisive label stays wrong."""

from __future__ import annotations

import pytest

from judgeaudit.audit.evaluate import pair_credit, summarize
from judgeaudit.data import PairwiseItem
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict


def _tie(order: str) -> OrderVerdict:
    return OrderVerdict(order, "tie", "tie", 0)


def _case(labels: list[int]) -> tuple[list[PairwiseItem], list[PairwiseVerdict]]:
    items = [PairwiseItem(id=f"i{k}", prompt="p", response_1="a", response_2="b", label=lab)
             for k, lab in enumerate(labels)]
    verdicts = [PairwiseVerdict(it.id, [_tie("12"), _tie("21")]) for it in items]
    return items, verdicts


def test_a_tie_on_two_way_labels_gets_half_credit():
    items, verdicts = _case([1, 2, 1, 2])
    res = summarize(items, verdicts, kappa_boot=0)
    assert res["accuracy"]["value"] == pytest.approx(0.5)
    assert res["accuracy_by_rule"]["mean"]["value"] == pytest.approx(0.5)
    assert res["accuracy_by_rule"]["both"]["value"] == 0.0  # not right in every order
    assert res["accuracy_by_rule"]["sum"]["value"] == 0.0   # a tie scores 0 points
    assert "a tie verdict counts half" in res["conventions"]["description"]
    assert pair_credit(1, verdicts[0].orders, "mean") == 0.5


def test_a_tie_on_a_decisive_label_is_wrong_in_three_way_accuracy():
    items, verdicts = _case([1, 2, 0, 0])
    res = summarize(items, verdicts, kappa_boot=0)  # ties keep: three-way
    assert res["accuracy"]["value"] == pytest.approx(2 / 4)  # the two tie labels only
    desc = res["conventions"]["description"]
    assert "a tie verdict on a decisive label is wrong" in desc
    assert "counts half (as" not in desc
    dropped = summarize(items, verdicts, ties="drop", kappa_boot=0)  # two-way again
    assert dropped["accuracy"]["value"] == pytest.approx(0.5)
    assert dropped["accuracy"]["n"] == 2
    assert pair_credit(1, verdicts[0].orders, "mean", three_way=True) == 0.0
