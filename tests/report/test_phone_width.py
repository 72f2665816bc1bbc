"""Report pages at phone width (500 px, headless Chromium's smallest --dump-dom window): no
page scrolls sideways. Rank (737 px), the adaptive audit (756), quantify (695), rank-eval
(614), mitigate and discover (574) did: their wide tables (rank's bias terms, judge agreement,
G-module calls, the adaptive table) sat outside a `.scroll` box. Every table now scrolls in
its own box, with its first (name) column on screen.

Also: the unreadable-answers table's order column ('12' / '21') says what the order means."""

from __future__ import annotations

import asyncio
import copy
import json
import re
from pathlib import Path

import pytest

import judgeaudit
from judgeaudit.audit.adaptive import run_adaptive
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.report.html import render_report
from tests.report.test_browser import CHROMIUM, FIXTURES, chromium
from tests.report.test_hubj_report import discover_doc, mitigate_doc, quantify_doc

needs_browser = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless browser test needs /usr/bin/chromium "
           "(Debian: apt-get update && apt-get install -y chromium)",
)

# a judge spec as long as a real run's: it names rows of the agreement tables
LONG_JUDGE = "simhubj?factor_verbosity=0,0.5,3,1,0&factor_authority=0,0.2,1,0.5,0"
SIM = "sim?length=1.0&position=0.3"

# every table's box and its first column's cells, read back from the DOM (the report runs
# no scripts: its CSP forbids them, so the copy measured here drops the CSP)
MEASURE = """<script>
const r = (e) => e.getBoundingClientRect();
const out = {page: document.documentElement.scrollWidth, view: window.innerWidth, tables: []};
for (const t of document.querySelectorAll('table')) {
  const box = t.closest('.scroll') || t;
  const first = Array.from(t.querySelectorAll(':scope > * > tr > :first-child'))
    .map((c) => [Math.round(r(c).left), Math.round(r(c).right)]);
  out.tables.push({id: t.id || t.className || t.rows[0].textContent.trim().slice(0, 30),
    scroll: !!t.closest('.scroll'), box: [Math.round(r(box).left), Math.round(r(box).right)],
    first: first});
}
document.body.setAttribute('data-measured', JSON.stringify(out));
</script>"""


def rank_page() -> str:
    """A real rank run on the sim judge with planted biases: the bias table has every column
    (estimate, per SD, se, from the data, planted, covered)."""
    res = judgeaudit.rank(SIM, "builtin:controlled?n=12&k=3", k=3, budget=24, samples=200,
                          cache=False)
    assert res.ok
    return render_report(res.to_dict())


def rank_eval_page() -> str:
    res = judgeaudit.rank_eval(SIM, "builtin:controlled?n=7&k=2", budgets=[6, 12],
                               rules=["topk", "random"], seeds=2, samples=100, cache=False)
    assert res.ok
    return render_report(res.to_dict())


def adaptive_page() -> str:
    """A real adaptive audit (sim judge, three probes): its table has nine columns."""
    doc = asyncio.run(run_adaptive(make_judge("sim?position=1"), load("builtin:facts"),
                                   ["verbosity", "authority", "position"], max_n=40,
                                   round_size=20))
    assert doc["adaptive"]
    return render_report(doc)


def _long_judges(doc: dict) -> dict:
    """The HUB-J page with a real run's long judge spec naming its agreement row."""
    doc = copy.deepcopy(doc)
    splits = doc.get("splits")
    if splits:
        splits["per_judge"] = {LONG_JUDGE: next(iter(splits["per_judge"].values()))}
    return doc


def quantify_page() -> str:
    doc = quantify_doc()
    doc["splits"] = {"n_items": 24, "per_judge": {LONG_JUDGE: {
        "agree": 5, "disagree": 2, "neutral": 17, "invalid": 0, "missing": 0}},
        "consensus_agree": 5, "consensus_disagree": 2}
    return render_report(doc)


PAGES = {
    "rank": rank_page,
    "rank-eval": rank_eval_page,
    "adaptive audit": adaptive_page,
    "quantify": quantify_page,
    "mitigate": lambda: render_report(mitigate_doc()),
    "discover": lambda: render_report(_long_judges(discover_doc())),
}


def measure(tmp_path: Path, html: str, width: int) -> dict:
    """Lay the page out in a window `width` px wide; the measuring script's numbers."""
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    page = tmp_path / f"phone-{width}.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    r = chromium(tmp_path, f"--window-size={width},3000", "--dump-dom", page.resolve().as_uri())
    m = re.search(r'data-measured="([^"]*)"', r.stdout)
    assert m, f"the measuring script wrote nothing: {r.stderr[-1500:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@needs_browser
@pytest.mark.parametrize("kind", list(PAGES))
def test_at_500px_no_page_scrolls_sideways_and_tables_keep_their_first_column_on_screen(
        tmp_path, kind):
    m = measure(tmp_path, PAGES[kind](), 500)
    assert m["view"] <= 800 and m["tables"], m  # a phone's layout, and tables to measure
    wide = [t["id"] for t in m["tables"] if t["box"][1] > m["view"] or t["box"][0] < 0]
    assert not wide, f"{kind}: tables wider than the {m['view']} px window: {wide}"
    assert m["page"] <= m["view"], f"{kind}: page {m['page']} px wide in a {m['view']} px window"
    for t in m["tables"]:
        assert t["scroll"], f"{kind}: table {t['id']!r} is not in a .scroll box"
        for left, right in t["first"]:  # the name column stays in view as the numbers scroll
            assert left >= 0 and right <= m["view"], (kind, t)


def test_the_unreadable_answers_order_column_says_which_response_came_first():
    doc = json.loads((FIXTURES / "audit_results.json").read_text(encoding="utf-8"))
    doc["items"] = {"given": 20, "pairwise": 20, "used": 20}
    doc["unreadable_examples"] = [
        {"item_id": "a1", "order": "21", "raw": "I cannot decide", "why": "no verdict"},
        {"item_id": "a2", "order": 12, "raw": "Both are fine", "why": "no verdict"}]
    html = render_report(doc)
    table = html.split('id="unreadable"')[1].split("</table>")[0]
    assert "<th" in table and "Order shown" in table, table
    rows = table.split("<tbody>")[1].split("</tr>")
    assert "21 <span" in rows[0] and "(response 2 first)" in rows[0], rows[0]
    assert "12 <span" in rows[1] and "(response 1 first)" in rows[1], rows[1]


def test_evaluates_unreadable_answers_order_column_says_which_response_came_first():
    """The same label in evaluate's table of unreadable answers (it showed a bare 21)."""
    doc = {"command": "evaluate", "judge": "j", "invalid_examples": [
        {"item_id": "a", "order": "21", "raw": "I cannot decide", "error": "no verdict"},
        {"item_id": "b", "order": "12", "raw": "Both", "error": "no verdict"}]}
    html = render_report(doc)
    assert "Order shown" in html
    assert "21 <span" in html and "(response 2 first)" in html and "(response 1 first)" in html
