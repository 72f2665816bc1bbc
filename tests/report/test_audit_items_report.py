"""The audit report shows what the results say about items and power: the inverted-labels
warning, items left out by reason (overall and per probe), how each MDE was computed, and the
--by breakdown; a results file without these sections still renders."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

from judgeaudit.report import render_report

FIXTURE = Path(__file__).parent / "fixtures" / "audit_results.json"


def doc() -> dict:
    d = json.loads(FIXTURE.read_text(encoding="utf-8"))
    d["warnings"] = ["labels may be inverted (A/B or 1/2 swapped?): accuracy 20.0% with its "
                     "95% interval below 50%"]
    d["items"] = {"given": 150, "pairwise": 150, "used": 150,
                  "selection": {"kind": "all", "n": 150, "of": 150}}
    d["dropped"] = {"no_label": 33, "tie_label": 12, "invalid_verdict": 3}
    d["drop_reasons"] = {"no_label": "no label: the probe needs to know the better response",
                         "tie_label": "tie label: needs <b>label</b> 1 or 2",
                         "invalid_verdict": "a verdict it needs was unparseable"}
    d["baseline"] = {"accuracy": {"value": 0.2, "ci95": [0.12, 0.3], "n": 105},
                     "decisive_accuracy": {"value": 0.2, "ci95": [0.15, 0.26], "n": 210}}
    d["by"] = "source"
    p = d["probes"]["verbosity"]
    p["dropped"] = {"no_label": 33, "tie_label": 12, "perturbation_not_applicable": 4}
    p["n_items"] = 105
    p["mde_detail"] = {"method": "exact two-sided sign test", "n": 100, "discordance": 0.35,
                       "mean_change": 0.6, "se": 0.031, "alpha": 0.05, "power": 0.8,
                       "normal_approx": 0.087}
    p["breakdown"] = {"by": "source", "rows": [
        {"value": "<i>web</i>", "n": 60, "n_items": 62, "p": 0.03,
         "effect": {"value": 0.12, "ci95": [0.02, 0.22]}},
        {"value": "books", "n": 40, "n_items": 43, "p": 0.5,
         "effect": {"value": -0.01, "ci95": [-0.1, 0.08]}}]}
    return d


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_warning_items_and_reasons_are_shown():
    html = render_report(doc())
    text = text_of(html)
    assert "Warning: labels may be inverted" in text
    assert "150 pairs judged of 150 given" in text
    table = html.split('id="dropped-table"')[1].split("</table>")[0]
    assert re.findall(r"<td>([a-z ]+)</td><td class=\"num\">(\d+)</td>", table) == [
        ("no label", "33"), ("tie label", "12"), ("invalid verdict", "3")]
    assert "needs &lt;b&gt;label&lt;/b&gt; 1 or 2" in table  # escaped like all results text
    assert "accuracy (invalid = wrong) 0.200" in text  # labelled as evaluate labels it


def test_probe_section_has_left_out_mde_method_and_breakdown():
    html = render_report(doc())
    sec = html.split('id="probe-verbosity"')[1].split("</section>")[0]
    text = text_of(sec)
    assert "Left out no label 33, tie label 12, perturbation not applicable 4" in text
    assert "Items given 105" in text
    assert ("exact two-sided sign test; n = 100; 35% of items moved (mean change 0.600); "
            "SE 0.031; \u03b1 0.05, power 0.8") in text
    assert "Effect by source" in text
    rows = re.findall(r"<tr><td>(.*?)</td><td class=\"num\">(.*?)</td>", sec.split(
        'class="breakdown"')[1])
    assert rows == [("&lt;i&gt;web&lt;/i&gt;", "+0.120"), ("books", "-0.010")]


def test_results_without_the_new_sections_render_as_before():
    old = json.loads(FIXTURE.read_text(encoding="utf-8"))
    html = render_report(copy.deepcopy(old))
    assert 'id="dropped-table"' not in html and 'id="warnings"' not in html
    assert "Effect by" not in html


def test_items_sentence_and_selection_sentence_are_apart():
    d = doc()
    d["items"]["selection"] = {"kind": "first", "n": 30, "of": 150}
    text = text_of(render_report(d))  # the template's line break was trimmed: "given.Each"
    assert "150 pairs judged of 150 given. Each probe takes the first 30 pairs" in text
