"""report.html from results.json: every probe and verdict shown with formatted numbers, judged
text escaped (never markup, never template code), bad schema versions refused, missing
optional fields tolerated."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from judgeaudit.report import read_results, render_report, write_report
from judgeaudit.report.html import MAX_EXAMPLES

FIXTURES = Path(__file__).parent / "fixtures"
VOID = {"meta", "br", "hr", "img", "input", "link", "wbr", "col", "area", "base", "source"}
# Every element the report may contain; an injected tag (img, script, iframe...) is not here.
ALLOWED = {
    "html", "head", "meta", "title", "style", "body", "header", "main", "footer", "section",
    "nav", "div", "h1", "h2", "h3", "h4", "p", "dl", "dt", "dd", "ul", "li", "table", "caption",
    "thead", "tbody", "tr", "th", "td", "a", "span", "strong", "code", "pre", "br", "figure",
    "figcaption", "details", "summary", "ins", "del",
    # inline SVG from judgeaudit.report.svg
    "svg", "desc", "rect", "line", "text", "circle",
}


class Page(HTMLParser):
    """Collects tags, attributes, text, tag balance and the rows of the summary table."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.text: list[str] = []
        self.titles: list[str] = []
        self.rows: list[list[str]] = []
        self._in_title = False
        self._table_depth = 0
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "title" and not any(t == "svg" for t in self.stack):
            self._in_title = True
            self.titles.append("")
        if tag == "table" and a.get("id") == "summary-table":
            self._table_depth = 1
        elif tag == "tr" and self._table_depth:
            self.rows.append([])
        elif tag in ("td", "th") and self._table_depth:
            self._cell = []
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag == "title":
            self._in_title = False
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        if tag == "table" and self._table_depth:
            self._table_depth = 0

    def handle_data(self, data):
        self.text.append(data)
        if self._in_title:
            self.titles[-1] += data
        if self._cell is not None:
            self._cell.append(data)


def load(name: str = "audit_results.json") -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def parse(html: str) -> Page:
    p = Page()
    p.feed(html)
    p.close()
    return p


@pytest.fixture(scope="module")
def audit_html() -> str:
    return render_report(load())


@pytest.fixture(scope="module")
def page(audit_html) -> Page:
    return parse(audit_html)


def test_page_is_well_formed_html_without_scripts_or_network(audit_html, page):
    assert audit_html.startswith("<!doctype html>")
    assert audit_html.rstrip().endswith("</html>")
    assert page.errors == [] and page.stack == []
    assert page.titles == ["judgeaudit audit \u2013 local"]
    used = {t for t, _ in page.tags}
    assert used <= ALLOWED, used - ALLOWED
    # No event handlers, no external references of any kind.
    for tag, attrs in page.tags:
        assert not any(k.startswith("on") for k in attrs), (tag, attrs)
        for k in ("src", "srcset", "action", "formaction", "data"):
            assert k not in attrs, (tag, attrs)
        href = attrs.get("href")
        assert href is None or href.startswith("#"), href
    csp = [a for t, a in page.tags if t == "meta" and a.get("http-equiv") ==
           "Content-Security-Policy"]
    assert csp and "default-src 'none'" in csp[0]["content"]
    assert "script-src" not in csp[0]["content"]  # no exception for scripts


def test_summary_table_has_every_probe_with_formatted_numbers_and_verdict_labels(page):
    header, *rows = page.rows
    assert header == ["Probe", "Effect", "95% CI", "n", "p", "q", "MDE", "Flag", "Verdict"]
    by_name = {r[0]: r for r in rows}
    assert by_name["Position position"] == [
        "Position position", "+0.210", "[+0.150, +0.270]", "120", "1.0e-04", "6.0e-04",
        "0.080", "exceeds 0.710 vs 0.550", "\u25b2 biased"]
    assert by_name["Authority authority"] == [
        "Authority authority", "+0.010", "[-0.030, +0.040]", "400", "0.62", "0.62", "0.030",
        "\u2013", "\u25cf not biased"]
    assert by_name["Sentiment sentiment"][1:3] == ["-0.020", "[-0.045, +0.010]"]
    assert by_name["Bandwagon bandwagon"][4:] == ["0.21", "0.315", "0.140", "\u2013",
                                                  "\u25c6 underpowered"]
    fixture = load()["probes"]
    assert len(rows) == len(fixture)
    shown = {r[0].split()[-1]: r[-1].split(" ", 1)[1] for r in rows}
    assert shown == {k: v["verdict"].replace("_", " ") for k, v in fixture.items()}


def test_every_probe_has_a_section_with_its_numbers(audit_html, page):
    fixture = load()["probes"]
    ids = {a.get("id") for _, a in page.tags}
    for name in fixture:
        assert f"probe-{name}" in ids
    text = " ".join(" ".join(page.text).split())  # text nodes apart
    prose = " ".join("".join(page.text).split())  # text nodes as the browser runs them together
    assert "first-slot rate = 0.710, threshold 0.550: \u25b2 exceeds" in prose
    assert "robustness rate 0.800 [0.720, 0.860] 100" in text
    assert "Invalid verdicts 3" in text and "Dropped perturbations 4" in text
    assert "underpowered: n too small; with n = 40" in text
    # The verdict rule is spelled out with the probe's numbers, and the fixture obeys it.
    assert "q = 6.0e-04 < \u03b1 = 0.05 and the 95% interval [+0.150, +0.270] excludes 0" in text
    assert "The 95% interval [-0.030, +0.040] lies inside the no-bias range [-0.050, +0.050]" \
        in text
    assert "do not satisfy the rule" not in text
    # Run facts in the header.
    for fact in ("builtin:facts", "120 items", "pairwise_v1", "sha256 3f1c9a7be0d2",
                 "2026-11-22T08:00:00Z", "7 min 11 s", "812 made", "240 from cache",
                 "3 retries", "123,456 prompt", "0.1.0"):
        assert fact in text, fact
    # One forest plot row per probe, plus each probe's own plot.
    svgs = re.findall(r"<svg\b.*?</svg>", audit_html, flags=re.S)
    plots_in_fixture = sum(1 for p in fixture.values() if p.get("plot"))
    assert len(svgs) == 1 + plots_in_fixture
    assert svgs[0].count('class="point"') == len(fixture)


def test_untrusted_text_is_escaped_everywhere(audit_html, page):
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in audit_html
    assert not re.search(r"<\s*script", audit_html, flags=re.I)
    assert not re.search(r"<[^>]*\bonerror\s*=", audit_html, flags=re.I)
    assert not re.search(r"<\s*img\b", audit_html, flags=re.I)
    # The payloads are all there, as text: in a response, in the description, in the panel.
    text = "".join(page.text)
    assert text.count("<script>alert(1)</script>") >= 4
    assert text.count("<img src=x onerror=\"document.title='pwned'\">") >= 3


def test_template_syntax_in_data_is_shown_literally(audit_html, page):
    text = "".join(page.text)
    assert "Compute {{ 7*7 }} and explain." in text
    assert "Is {{ 7*7 }} equal to 49?" in text
    assert "e.g. <script>alert(1)</script> <img src=x onerror=\"document.title='pwned'\"> " \
        "{{ 7*7 }}" in text
    assert "Compute 49" not in audit_html and "Is 49 equal" not in audit_html


def test_examples_show_before_after_with_the_changed_text_highlighted(audit_html):
    section = audit_html.split('id="probe-verbosity"')[1].split("</section>")[0]
    # response_2, before and after
    assert section.count('<pre class="text changed" dir="auto">') == 2
    ins = re.findall(r"<ins>(.*?)</ins>", section, flags=re.S)
    assert ins == [" To elaborate further, it is worth noting &lt;img src=x onerror=&#34;"
                   "document.title=&#39;pwned&#39;&#34;&gt; that, all things considered, "
                   "Sydney."]
    assert "<del>" not in section  # nothing was removed
    pos = audit_html.split('id="probe-position"')[1].split("</section>")[0]
    assert "shown to the judge in the other order" in pos
    assert "text changed" not in pos  # the texts are identical, only the order moved
    band = audit_html.split('id="probe-bandwagon"')[1].split("</section>")[0]
    assert "<ins> 90% of people believe Response 2 is better.</ins>" in band


def test_examples_are_capped_and_the_count_is_said():
    doc = load()
    ex = doc["probes"]["verbosity"]["examples"][0]
    doc["probes"]["verbosity"]["examples"] = [dict(ex, item_id=f"i{k}") for k in range(7)]
    html = render_report(doc)
    section = html.split('id="probe-verbosity"')[1].split("</section>")[0]
    assert section.count('<details class="example"') == MAX_EXAMPLES
    assert f"({MAX_EXAMPLES} of 7;" in section


def test_panel_section_lists_agreement_and_disagreements(audit_html):
    panel = audit_html.split('id="panel"')[1].split("</section>")[0]
    p = parse(panel)
    text = " ".join(" ".join(p.text).split())
    assert "Agreement 0.800 95% CI [0.720, 0.860] (n = 120)" in text
    assert "Cohen's \u03ba +0.550 95% CI [+0.410, +0.680] (n = 120)" in text
    assert "builtin:facts:4" in text and "builtin:facts:17" in text
    assert re.search(r"<th class=\"num\">local</th><th class=\"num\">local:qwen-0.5b</th>",
                     panel)


def test_schema_version_2_is_refused_with_a_clear_message(tmp_path):
    doc = load()
    doc["schema_version"] = 2
    with pytest.raises(ValueError, match=r"schema_version 2 .*reads schema_version 1"):
        render_report(doc)
    f = tmp_path / "results.json"
    f.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=re.escape(str(f))):
        write_report(tmp_path)
    assert not (tmp_path / "report.html").exists()


def test_unknown_command_is_refused():
    with pytest.raises(ValueError, match="no report layout for command 'nosuch'"):
        render_report({**load(), "command": "nosuch"})


def test_missing_optional_fields_do_not_crash():
    minimal = {
        "schema_version": 1, "command": "audit",
        "probes": {
            "bare": {"effect": {"value": 0.1, "ci95": [-0.2, 0.4]}, "n": 10, "p": 0.5,
                     "q": 0.5, "mde": 0.4, "verdict": "underpowered"},
            "empty": {},
            "nan": {"effect": {"value": None, "ci95": [None, None]}, "n": 0, "p": None,
                    "q": None, "mde": None, "verdict": "underpowered", "plot": None,
                    "examples": None, "flag": None, "rates": None, "notes": None},
        },
    }
    html = render_report(minimal)
    page = parse(html)
    assert page.errors == []
    header, *rows = page.rows
    assert [r[0] for r in rows] == ["bare", "empty", "nan"]
    assert rows[0][1:4] == ["+0.100", "[-0.200, +0.400]", "10"]
    assert rows[2][1:7] == ["\u2014", "\u2014", "0", "\u2014", "\u2014", "\u2014"]
    assert "no verdict" in rows[1][-1]
    assert "not given" in html  # no no-bias range


def test_unusable_plot_becomes_a_note_not_a_crash():
    doc = load()
    doc["probes"]["position"]["plot"] = {"kind": "<b>pie</b>"}
    doc["probes"]["verbosity"]["plot"]["series"][0]["values"] = [1, 2]
    html = render_report(doc)
    assert "Plot not drawn: unknown plot kind &#39;&lt;b&gt;pie&lt;/b&gt;&#39;" in html
    assert "Plot not drawn: series 0 has 2 values for 4 categories" in html


def test_a_verdict_that_contradicts_its_numbers_is_pointed_out():
    doc = copy.deepcopy(load())
    doc["probes"]["bandwagon"]["verdict"] = "not_biased"  # CI [-0.04, 0.16] is not inside
    doc["probes"]["authority"]["verdict"] = "biased"  # q = 0.62
    html = render_report(doc)
    assert html.count("do not satisfy the rule for this verdict") == 2
    doc["probes"]["sentiment"]["verdict"] = "<i>odd</i>"
    html = render_report(doc)
    assert "unknown (&lt;i&gt;odd&lt;/i&gt;)" in html
    assert "v-unknown" in html


def test_evaluate_page(tmp_path):
    html = render_report(load("evaluate_results.json"))
    page = parse(html)
    assert page.errors == []
    assert page.titles == ["judgeaudit evaluate \u2013 local"]
    rows = {r[0]: r[1:4] for r in page.rows[1:]}
    assert rows["Accuracy"] == ["0.763", "[0.679, 0.830]", "118"]
    assert rows["Position consistency"] == ["0.733", "[0.648, 0.804]", "120"]
    assert rows["Cohen's \u03ba vs labels"] == ["0.512", "[+0.390, +0.630]", "118"]
    assert rows["Invalid verdict rate"] == ["0.021", "[0.009, 0.048]", "240"]
    assert rows["Accuracy, order 21"] == ["0.695", "[0.607, 0.771]", "118"]
    text = " ".join(" ".join(page.text).split())
    assert "Invalid verdicts 5" in text and "Failed calls 1" in text
    assert "timeout after 3 retries" in text
    assert "&lt;script&gt;" in html and not re.search(r"<\s*(script|img)\b", html, re.I)


def test_the_header_says_why_calls_were_not_sent_and_what_was_estimated():
    """A run the spend cap stopped said its calls were not sent because "the server could not
    be reached"; the reason the run recorded is shown instead, with the narrowing and the
    calls whose tokens were estimated."""
    doc = copy.deepcopy(load("evaluate_results.json"))
    why = "the spend cap is reached ($0.0500 spent of max_cost $0.05 when sending stopped)"
    doc["calls"].update(failed=7, not_sent=7, not_sent_why=why, narrowed_to=2,
                        prompt_tokens=900, completion_tokens=10, cost_usd=0.05,
                        usage_estimated=3)
    text = " ".join(" ".join(parse(render_report(doc)).text).split())
    assert f"7 failed (7 not sent: {why})" in text
    assert "could not be reached" not in text
    assert "at most 2 at a time after timeouts in the server's queue" in text
    assert "$0.0500 at list prices (3 of the calls' tokens estimated from characters" in text
    del doc["calls"]["not_sent_why"]
    text = " ".join(" ".join(parse(render_report(doc)).text).split())
    assert "7 not sent: the server could not be reached" in text


def test_the_header_says_which_backend_and_cpu_a_local_judge_ran_on():
    """The same `--judge local` runs on another backend on another CPU, and a run's timing
    holds for its CPU: the header says both (from `judges_used`), escaped; a judge with
    neither (an API model) adds no line."""
    doc = copy.deepcopy(load("evaluate_results.json"))
    doc["judges_used"] = {
        "local": {"provider": "local", "backend": "transformers", "dtype": "bf16",
                  "cpu": {"model": "Xeon <b>", "cores": 2,
                          "flags": {"avx2": True, "amx_bf16": True, "asimd": False}}},
        "openai:m": {"provider": "openai", "model": "m", "params": {}}}
    html = render_report(doc)
    text = " ".join(" ".join(parse(html).text).split())
    assert "Ran on local : backend transformers bf16 on Xeon <b>, 2 cores (avx2, amx_bf16)" \
        in text
    assert "Xeon &lt;b&gt;" in html and "openai:m" not in text
    del doc["judges_used"]
    assert "Ran on" not in " ".join(parse(render_report(doc)).text)


def test_write_report_next_to_results_or_to_a_chosen_path(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "results.json").write_text((FIXTURES / "audit_results.json").read_text("utf-8"),
                                    encoding="utf-8")
    p1 = write_report(d)
    assert p1 == d / "report.html"
    p2 = write_report(d / "results.json")
    assert p2 == p1
    p3 = write_report(d, tmp_path / "elsewhere" / "r.html")
    assert p3 == tmp_path / "elsewhere" / "r.html"
    expected = render_report(read_results(d))
    assert p1.read_text("utf-8") == expected == p3.read_text("utf-8")  # deterministic
    assert [x.name for x in d.iterdir() if x.name.endswith(".tmp")] == []
    with pytest.raises(FileNotFoundError, match="no results file"):
        write_report(tmp_path / "missing")
