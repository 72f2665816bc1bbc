"""The scoring-bias report page: built from results.json alone, judged text escaped, the
other layouts untouched."""

from __future__ import annotations

import asyncio

import pytest

from judgeaudit.data import load
from judgeaudit.judges.pointwise import RubricJudge
from judgeaudit.llm import Client, make_provider
from judgeaudit.report.html import render_report
from judgeaudit.scoring.perturbations import resolve
from judgeaudit.scoring.run import run_scoring_bias


@pytest.fixture(scope="module")
def results() -> dict:
    judge = RubricJudge(Client(make_provider("sim", "default", {"invalid": "0.1",
                                                                "quality": "5"})),
                        "pointwise_scoring_v1")
    items = load("builtin:graded")[:50]
    return asyncio.run(run_scoring_bias(judge, items, resolve(["order_desc", "ids_roman"]),
                                        repeats=3, judge_spec="sim<b>", data_spec="graded",
                                        n_boot=200))


def test_page_has_table_heatmap_recommendation_and_mitigation(results: dict) -> None:
    html = render_report(results)
    for anchor in ('id="scoring-table"', 'id="distribution"', 'id="recommended"',
                   'id="mitigation"', 'id="invalid"'):
        assert anchor in html
    assert html.count("<svg") == 2  # heatmap + correlation-difference plot
    assert "repeat_mean" in html and "template_mean" in html
    assert "sim&lt;b&gt;" in html and "sim<b>" not in html


def test_judged_text_is_escaped(results: dict) -> None:
    doc = dict(results)
    doc["invalid_examples"] = [{"template": "baseline", "item_id": "x",
                                "raw": "<script>alert(1)</script>", "error": None}]
    html = render_report(doc)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)" in html


def test_unknown_command_still_refused(results: dict) -> None:
    with pytest.raises(ValueError, match="scoring-bias"):
        render_report({**results, "command": "nonsense"})
