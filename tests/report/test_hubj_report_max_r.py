"""discover's report shows each novelty figure as the terminal does: the r with the largest
|r|, its Fisher interval, n and the factor it is with (the page showed a bare max |r|,
without n or interval, though results.json holds them); an older document without the r
tables shows its bare |r|, named as such."""

from __future__ import annotations

import re

from judgeaudit.report.html import render_report
from tests.report.test_hubj_report import discover_doc


def _text(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_novelty_columns_give_r_interval_n_and_partner():
    d = discover_doc()
    found = d["validation"]["sets"]["found"]
    name = found["factors"][0]["factor"]
    found["r_vs_pre_discovered"] = {name: {
        "beauty": {"value": -0.4, "r": -0.4, "ci95": [-0.8, 0.2], "n": 12},
        "length": {"value": 0.1, "r": 0.1, "ci95": [-0.5, 0.6], "n": 12}}}
    found["r_within"] = {name: {name: {"value": 1.0, "r": 1.0, "ci95": [1.0, 1.0], "n": 12}}}
    text = _text(render_report(d))
    assert "-0.400 [-0.80, +0.20] n=12 (beauty)" in text
    assert "-0.400 [-0.80, +0.20] n=12 (length)" not in text  # the largest |r| only


def test_an_older_document_shows_its_bare_max_abs_r():
    text = _text(render_report(discover_doc()))
    assert "|r| 0.40" in text
