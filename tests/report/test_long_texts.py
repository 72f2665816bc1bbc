"""A judged text is shown in the report up to `MAX_TEXT` characters, then cut with a visible
note (how many more characters; the whole text stays in results.json). A 1 MB response
appeared ten times in one audit report (before and after of each probe's example): 11 MB."""

from __future__ import annotations

import json
import re

import judgeaudit
from judgeaudit.data import load
from judgeaudit.report.html import MAX_TEXT, render_report
from tests.report.test_hubj_report import EVIL, quantify_doc

BIG = "lorem ipsum " * 90_000  # 1,080,000 characters


def _cut_notes(html: str) -> list[int]:
    """The 'N more characters' of every cut note on the page."""
    return [int(n.replace(",", "")) for n in
            re.findall(r"\u2026 \(([\d,]+) more characters; full text in results\.json\)",
                       html)]


def test_an_audit_with_a_1mb_response_gives_a_small_report_that_says_it_cut(tmp_path):
    items = load("builtin:facts")[:8]
    items = [it.model_copy(update={"response_1": BIG + EVIL}) if i == 0 else it
             for i, it in enumerate(items)]
    res = judgeaudit.audit("sim?seed=0", items, n=8, probes=["position", "verbosity"],
                           panel=["sim?seed=1&position=2", "sim?seed=2&position=-2"])
    html = res.report(tmp_path / "r.html").read_text()
    assert len(html) < 300_000, len(html)  # was > 4 MB: the response shown whole each time
    notes = _cut_notes(html)
    assert notes and all(n >= len(BIG) - MAX_TEXT for n in notes), notes
    # what is shown is the text's beginning, escaped; the tail (with EVIL) is left out
    assert ("lorem ipsum " * 100) in html
    assert "<script>alert" not in html
    # results.json keeps the whole response
    assert BIG in json.dumps(res.to_dict())


def test_cut_text_stays_escaped_and_short_text_is_whole():
    evil_long = (EVIL + " ") * 500  # ~30,000 characters of markup
    doc = {"command": "evaluate", "judge": "j", "invalid_examples": [
        {"item_id": "a", "order": "ab", "raw": evil_long, "error": "no verdict"},
        {"item_id": "b", "order": "ab", "raw": "short " + EVIL, "error": "no verdict"}]}
    html = render_report(doc)
    assert "<script>alert" not in html and 'onerror="alert' not in html
    assert html.count("&lt;script&gt;alert(1)&lt;/script&gt;") < 100  # cut, not 500 times
    assert _cut_notes(html) == [len(evil_long) - MAX_TEXT]
    assert "short &lt;script&gt;" in html  # a short text is shown whole, no note


def test_quantify_rewrite_example_is_cut_on_each_side():
    doc = quantify_doc()
    doc["rewrite_examples"][0].update(original=BIG, rewritten=BIG + " more")
    html = render_report(doc)
    assert len(html) < 100_000, len(html)
    assert _cut_notes(html) == [len(BIG) - MAX_TEXT, len(BIG) + 5 - MAX_TEXT]


def test_discover_json_stats_raw_answer_is_cut():
    from tests.report.test_hubj_report import discover_doc
    doc = discover_doc()
    doc["json_stats"]["G_score"]["examples"][0]["raw"] = "x" * (MAX_TEXT + 7)
    html = render_report(doc)
    assert _cut_notes(html) == [7]
