"""The reports laid out by a real browser (headless Chromium): at 1400 px the page does not
scroll sideways and mitigate's table shows every column; at 390 px (a phone) the audit
summary's verdicts stay on screen and a chart's text is not shrunk to dust; printed to PDF,
every column of mitigate's table reaches paper.

The layout is measured by a copy of the page with a measuring script added (the report itself
runs no scripts: its CSP forbids them); the copy's script writes its numbers into the DOM,
read back with --dump-dom."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from judgeaudit.report.html import render_report
from tests.report.test_browser import CHROMIUM, FIXTURES, chromium
from tests.report.test_hubj_report import mitigate_doc

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="headless browser test needs /usr/bin/chromium "
           "(Debian: apt-get update && apt-get install -y chromium)",
)

JUDGES = ["sim?quality=1&length=2&seed=1", "sim?quality=1&seed=2"]
# the 19 probe titles of a full audit: the nav that made a 1400 px page scroll sideways
TITLES = ["Verbosity", "Authority (fake citation)", "Bandwagon", "Beauty / format (markdown)",
          "Prompt injection", "Distraction", "Diversity (author identity)",
          "Compassion-fade (model names)", "Fallacy oversight",
          "Sycophancy (confident but wrong)", "Sentiment (cheerful)", "Sentiment (angry)",
          "Sentiment (fearful)", "Chain of thought", "Judge-prompt format sensitivity",
          "Position", "Refinement-aware (pointwise)", "Self-preference / self-enhancement",
          "Sycophancy (PASS on confident wrong answers)"]

MEASURE = """<script>
const q = (s) => Array.from(document.querySelectorAll(s));
const r = (e) => e.getBoundingClientRect();
const out = {page: document.documentElement.scrollWidth, view: window.innerWidth, tables: {},
  last: q('#summary-table tbody tr > :last-child').map((e) => [r(e).left, r(e).right]),
  svg: q('figure svg.chart').map((e) => r(e).width / e.width.baseVal.value)};
for (const t of q('table[id]')) {
  const box = t.closest('.scroll') || t.parentElement;
  out.tables[t.id] = {width: t.scrollWidth, room: box.clientWidth};
}
document.body.setAttribute('data-measured', JSON.stringify(out));
</script>"""


def mitigate_page() -> str:
    """mitigate's page for two judges with the long names of a real run, LC and all."""
    doc = mitigate_doc()
    fit = doc["per_judge"]["j1"]
    doc["judges"] = JUDGES
    doc["per_judge"] = {j: copy.deepcopy(fit) for j in JUDGES}
    doc["per_judge"][JUDGES[1]]["psi"] = {"value": -0.7345, "se": 0.2678}
    doc["not_fitted"] = {}
    doc["other_controls"] = {"length": {j: {"bc": {"value": 0.2931, "ci95": [0.2333, 0.3544],
                                                   "n": 200}} for j in JUDGES}}
    return render_report(doc)


def audit_page() -> str:
    """The fixture audit with the 19 probes of a full audit."""
    doc = json.loads((FIXTURES / "audit_results.json").read_text(encoding="utf-8"))
    base = doc["probes"]["position"]
    doc["probes"] = {f"p{i}": {**copy.deepcopy(base), "title": t} for i, t in enumerate(TITLES)}
    return render_report(doc)


def measure(tmp_path: Path, html: str, width: int) -> dict:
    """Lay the page out in a window `width` px wide; the measuring script's numbers."""
    html = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", html)
    page = tmp_path / f"measure-{width}.html"
    page.write_text(html.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    r = chromium(tmp_path, f"--window-size={width},3000", "--dump-dom", page.resolve().as_uri())
    m = re.search(r'data-measured="([^"]*)"', r.stdout)
    assert m, f"the measuring script wrote nothing: {r.stderr[-1500:]}"
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def test_at_1400px_the_page_does_not_scroll_sideways_and_mitigate_shows_every_column(
        tmp_path):
    audit = measure(tmp_path, audit_page(), 1400)
    assert audit["page"] <= audit["view"], audit  # the 19-link probe nav wraps
    mit = measure(tmp_path, mitigate_page(), 1400)
    table = mit["tables"]["mitigate-table"]
    assert table["width"] <= table["room"], mit  # LC, theta, phi, psi and n in view


def test_on_a_phone_verdicts_stay_on_screen_and_chart_text_stays_readable(tmp_path):
    m = measure(tmp_path, audit_page(), 390)
    # headless Chromium's --dump-dom window is 500 px at least: still a phone's layout
    assert m["view"] <= 800 and m["last"], m
    for left, right in m["last"]:
        assert left >= 0 and right <= m["view"], m  # every row's verdict is on screen
    assert m["svg"] and min(m["svg"]) >= 0.79, m  # 12 px labels drawn at 9.5 px at least


@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="needs pdftotext (poppler-utils)")
def test_printed_mitigate_table_keeps_every_column(tmp_path):
    page = tmp_path / "mitigate.html"
    page.write_text(mitigate_page(), encoding="utf-8")
    pdf = tmp_path / "mitigate.pdf"
    r = chromium(tmp_path, f"--print-to-pdf={pdf}", "--no-pdf-header-footer",
                 page.resolve().as_uri())
    assert pdf.exists(), r.stderr[-1500:]
    text = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True,
                          text=True, check=True, timeout=60).stdout
    flat = re.sub(r"\s+", " ", text)
    # a cell may wrap onto two lines on paper ('-1.00 +-' over '0.20'): its parts must print
    for needle in ("LC", "\u03b8 \u00b1 se", "\u03c6 \u00b1 se", "\u03c8 \u00b1 se", "0.293",
                   "-1.00 \u00b1", "+1.20 \u00b1", "+0.90 \u00b1", "-0.73 \u00b1", "0.27"):
        assert needle in flat, (needle, text[:3000])
    assert flat.count("n=200") >= 2  # LC's interval and n, for both judges
