"""Exact agreement is counted on integer gold scores only, as prometheus-eval reports it: a
gold score that is the mean of several ratings (3.67) no integer answer can equal, so
counting it capped the rate (Prometheus mt_bench: 45.3% over 320 items, 51% of them
non-integer); the terminal and the results say how many were left out."""

from __future__ import annotations

import pytest
from rich.console import Console

from judgeaudit.audit.evaluate import summarize_pointwise
from judgeaudit.cli.format import evaluate_table
from judgeaudit.data import PointwiseItem
from judgeaudit.judges.pointwise import ScoreVerdict


def _run(gold: list[float], said: list[float]) -> dict:
    items = [PointwiseItem(id=f"p{k}", prompt="q", response="r", score=g)
             for k, g in enumerate(gold)]
    verdicts = [ScoreVerdict(f"p{k}", str(s), s) for k, s in enumerate(said)]
    return summarize_pointwise(items, verdicts, n_boot=200)


def test_non_integer_gold_scores_are_left_out_of_exact_agreement():
    # p0 p1 equal; p2 p3 have gold means no integer score can match; p4 differs
    res = _run([4, 2, 3.67, 4.33, 5], [4, 2, 4, 4, 3])
    exact = res["exact_agreement"]
    assert exact["n"] == 3 and exact["value"] == pytest.approx(2 / 3)
    assert exact["n_gold_non_integer"] == 2
    assert res["mae"]["n"] == 5  # the other statistics keep every item
    assert "over items whose gold score is an integer" in res["conventions"]["description"]


def test_the_terminal_names_the_rule_and_the_left_out_count():
    res = _run([4, 2, 3.67, 4.33, 5], [4, 2, 4, 4, 3])
    res.update(judge="j", data="d")
    con = Console(width=200, record=True)
    con.print(evaluate_table(res))
    out = con.export_text()
    assert "exact agreement (integer gold scores)" in out
    assert "exact agreement: 2 items whose gold score is not an integer" in out


def test_all_integer_gold_scores_count_every_item():
    res = _run([1, 2, 3], [1, 2, 2])
    assert res["exact_agreement"]["n"] == 3
    assert res["exact_agreement"]["n_gold_non_integer"] == 0
