"""What the report pages say, as a browser-rendered review of every kind found it wanting:

1. a run failed on unreadable answers showed only a "Run failed" box, whose one row said
   "Failed calls 0 of 780 asked" beside a headline blaming 190 unreadable answers; the box
   now counts unreadable answers and failed calls apart, each with its n and the limit, and
   the page shows what results.json holds under it (the probes' numbers, the left-out
   counts and the unreadable answers themselves);
2. a "biased" probe whose whole 95% interval lies inside its no-bias range (a big n finds
   a tiny effect) read as alarming as a big bias; it is marked "biased, small";
3. on non-Latin data the page blamed the answer-preservation check and "calls not sent or
   answers unreadable" for what the rule against adding English to a non-Latin answer did;
4. mitigate, discover, rank and rank-eval opened on 30-40 lines of notes: each has a
   headline with n and an interval above them.

Runs against a real OpenAI-shaped loopback server (1, 3), the sim judge (4: rank) or the
report's own document fixtures (2, 4: discover, mitigate)."""

from __future__ import annotations

import copy
import json
import re
from html import unescape
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer, default_answer, write_pairs
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.report import render_report
from tests.report.test_hubj_report import discover_doc, mitigate_doc

runner = CliRunner()
FIXTURE = Path(__file__).parent / "fixtures" / "audit_results.json"


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _text(html: str, start: str, end: str | None = None) -> str:
    """The visible text of the page after the tag holding `start` (to `end`), spaces
    collapsed."""
    i = html.index(">", html.index(start)) + 1  # after the start tag
    j = html.index(end, i) if end else len(html)
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html[i:j])).split())


def _audit(tmp_path, answer, *extra: str, data: Path | None = None):
    from judgeaudit.cli.main import app

    if data is None:
        data = tmp_path / "pairs.jsonl"
        write_pairs(data, 20)
    out = tmp_path / "out"
    with FakeLLMServer(answer=answer) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--concurrency", "2", "--out", str(out), *extra])
    doc = json.loads((out / "results.json").read_text())
    return res, doc, render_report(doc)


# ---------------------------------------------------------------- 1. a failed run's page

def _mostly_unreadable(text: str) -> str:
    m = re.search(r"question item (\d+)\n", text)
    if m and int(m.group(1)) % 2:
        return f"<b>no idea</b> about item {m.group(1)}"
    return default_answer(text)


def test_a_run_failed_on_unreadable_answers_counts_them_and_shows_what_it_measured(tmp_path):
    res, doc, html = _audit(tmp_path, _mostly_unreadable, "--probes", "position,verbosity")
    assert res.exit_code == 3, res.output
    run = doc["run"]
    assert run["status"] == "failed" and run["calls_failed"] == 0 and run["unreadable"] > 0
    # the box counts what failed: the unreadable answers, over the limit, apart from the
    # calls, none of which failed
    unread = _text(html, 'id="failed-unreadable"', "</dd>")
    share = 100 * run["unreadable"] / run["answers"]
    assert unread == (f"{run['unreadable']} of {run['answers']} answers ({share:.1f}%; at most "
                      "20.0% allowed) over the limit")
    calls = _text(html, 'id="failed-calls"', "</dd>")
    assert calls == f"0 of {run['calls_asked']:,} asked (0.0%; at most 20.0% allowed)"
    # under the box: each probe's numbers (no verdict), the left-out counts and the
    # unreadable answers themselves, escaped
    table = _text(html, 'id="failed-table"', "</table>")
    for name, p in doc["probes"].items():
        assert name in table
        assert f"unparseable {p['dropped']['unparseable']}" in table
    assert "biased" not in table and "underpowered" not in table
    assert 'id="dropped-table"' in html
    assert 'id="unreadable"' in html
    assert "&lt;b&gt;no idea&lt;/b&gt; about item" in html and "<b>no idea" not in html
    assert _text(html, 'id="unreadable"', "</h4>").startswith("Answers with no readable")


def test_a_run_failed_on_failed_calls_marks_the_calls_row_not_the_answers(tmp_path):
    """The other way round: calls that failed are over the limit, answers are not."""
    from judgeaudit.cli.main import app

    write_pairs(tmp_path / "pairs.jsonl", 10)
    out = tmp_path / "out"
    with FakeLLMServer(answer=default_answer,
                       rule=lambda rec, attempt: "400"
                       if re.search(r"question item [0-6]\n", rec.prompt_text) else None) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--probes", "position",
                                  "--concurrency", "2", "--out", str(out)])
    assert res.exit_code == 3, res.output
    html = render_report(json.loads((out / "results.json").read_text()))
    assert _text(html, 'id="failed-calls"', "</dd>").endswith("over the limit")
    assert 'id="failed-unreadable"' not in html or "over the limit" not in _text(
        html, 'id="failed-unreadable"', "</dd>")


# ---------------------------------------------------------------- 2. biased, but small

def _small_bias_doc() -> dict:
    """The fixture audit with one probe biased by the rule at a large n, its whole interval
    inside the no-bias range (authority +0.018 [+0.008, +0.028] vs +/-0.050 at n = 2,500)."""
    doc = json.loads(FIXTURE.read_text())
    name = next(iter(doc["probes"]))
    p = doc["probes"][name]
    p.update(verdict="biased", n=2500, p=1e-4, q=1e-3, no_bias_range=[-0.05, 0.05],
             effect={**p["effect"], "value": 0.018, "ci95": [0.008, 0.028]})
    return doc, name


def test_a_biased_probe_inside_its_no_bias_range_is_marked_biased_small():
    doc, name = _small_bias_doc()
    html = render_report(doc)
    section = html[html.index('<section class="probe"'):]
    head = _text(section, "<h2>", "</h2>")
    assert "biased, small" in head
    summary = _text(html, 'id="summary-table"', "</table>")
    assert "biased, small" in summary
    reason = _text(section, 'class="reason', "</div>")
    assert "inside the no-bias range \u00b10.050: a real effect, but small" in reason
    legend = _text(html, 'id="legend-small"', "</li>")
    assert "the whole 95% interval lies inside the probe's no-bias range" in legend
    assert "--fail-on biased" in legend
    assert 'class="badge v-biased-small"' in html


def test_a_big_bias_keeps_the_plain_badge_and_no_small_legend():
    doc, name = _small_bias_doc()
    big = copy.deepcopy(doc)
    big["probes"][name]["effect"]["ci95"] = [0.02, 0.12]
    big["probes"][name]["effect"]["value"] = 0.07
    html = render_report(big)
    assert "biased, small" not in html and 'id="legend-small"' not in html
    assert "v-biased-small" not in html.split("</style>", 1)[1]


# ---------------------------------------------------------------- 3. non-Latin data

def test_non_latin_data_gives_the_real_reason_for_dropped_perturbations_and_no_check(tmp_path):
    data = tmp_path / "ar.jsonl"
    with open(data, "w", encoding="utf-8") as f:
        for i in range(12):
            f.write(json.dumps({
                "id": f"ar{i}", "prompt": f"question item {i}\nما هي عاصمة مصر؟",
                "response_1": "عاصمة مصر هي القاهرة، وهي أكبر مدنها.",
                # the worse answer of four items is in English: the probe pads those; the
                # better answers, all Arabic, get no English padding, so the copies its
                # threshold check compares are never made
                "response_2": "The capital of Egypt is Alexandria." if i < 4 else
                "عاصمة مصر هي الإسكندرية.", "label": 1},
                ensure_ascii=False) + "\n")
    res, doc, html = _audit(tmp_path, default_answer, "--probes", "verbosity", data=data)
    assert res.exit_code == 0, res.output
    p = doc["probes"]["verbosity"]
    assert p["flag"]["exceeds"] is None and p["flag"]["n"] == 0 and p["n_dropped"] > 0
    section = html[html.index('id="probe-verbosity"'):]
    numbers = _text(section, "<dt>Dropped perturbations", "</dd>")
    assert "answer-preservation" not in numbers
    assert "not perturbed: the padding would be English in a text" in numbers
    check = _text(section, "<h3>Threshold check", "</p>")
    assert "calls not sent or answers unreadable" not in check
    # the probe stores the real reason now (s45 polish), which the page shows as it is
    assert ("no perturbed copy was made: the perturbation left out every item (4): the "
            "padding would be English in a text") in check
    assert "so nothing was judged for this rate" in check
    cell = _text(html, 'id="summary-table"', "</table>")
    assert "unchecked (n = 0; threshold 0.700)" in cell
    assert "no data vs" not in cell and "\u2014 vs 0.700" not in cell


# ---------------------------------------------------------------- 4. headlines

def _headline(html: str) -> str:
    head = html[:html.index("</header>")]
    assert head.index('id="headline"') < head.index("<dl>")  # above the notes
    return _text(head, 'id="headline"', "</p>")


def test_mitigate_and_discover_pages_open_on_a_headline_with_n_and_interval():
    line = _headline(render_report(mitigate_doc()))
    assert line == ("Bias share of the win rate explained by verbosity (win - BC, 95% "
                    "interval): j1 +0.050 [-0.050, +0.150] (n = 10). Its interval includes 0.")
    two = mitigate_doc()
    two["per_judge"]["j2"] = {**two["per_judge"]["j1"], "bias_share": {
        "value": 0.2, "ci95": [0.1, 0.3], "n": 40}}
    assert _headline(render_report(two)).endswith(
        "j2 +0.200 [+0.100, +0.300] (n = 40). 1 of 2 judges' intervals exclude 0.")
    d = discover_doc()
    d["validation"]["multiplicity"] = {"alpha": 0.05, "m": 2, "significant": []}
    line = _headline(render_report(d))
    assert line.startswith("1 factor found (")
    assert "0 of 2 factors tested significant" in line
    assert "mean \u0394:" in line and "+0.50 [+0.10, +0.90] (n = 12)" in line
    html = render_report(d)
    assert "<script>alert(1)" not in html[:html.index("</header>")]


def test_rank_and_rank_eval_pages_open_on_a_headline_with_n_and_interval():
    res = judgeaudit.rank("sim?quality=1&length=1&position=0.3&seed=4",
                          "builtin:controlled?n=7&k=2", k=2, budget=20, samples=200,
                          cache=False)
    assert res.ok
    doc = res.to_dict()
    line = _headline(render_report(doc))
    top = [x for x in doc["ranking"] if x["in_topk"]]
    assert line.startswith(f"Top-2 by the {doc['reported_model']} model from "
                           f"{doc['n_comparisons']} comparisons")
    assert re.search(rf"{re.escape(top[0]['id'])} \(P \d\.\d\d, \u03b8 [+-]\d+\.\d\d "
                     r"\[[+-]\d+\.\d\d, [+-]\d+\.\d\d\], \d+ comparisons\)", line), line
    ev = judgeaudit.rank_eval("sim?quality=1&length=1&position=0.3",
                              "builtin:controlled?n=7&k=2", budgets=[6, 12, 18],
                              rules=["topk", "random"], seeds=2, samples=100, cache=False)
    assert ev.ok
    line = _headline(render_report(ev.to_dict()))
    assert line.startswith("At the largest budget, B = 18 (n = 2 seeds), recall@2: ")
    assert re.search(r"naive model: (topk|random) \d\.\d\d (\[\d\.\d\d, \d\.\d\d\]|\(none\)), "
                     r"the best of 2 rules", line), line


def test_rank_headline_escapes_a_damaged_k():
    """A results.json whose config.k is a string (a damaged or hostile file) must not put
    markup into the page: review12 found `Markup(f"Top-{kk} ...")` left it raw."""
    res = judgeaudit.rank("sim?quality=1&seed=4", "builtin:controlled?n=7&k=2", k=2,
                          budget=12, samples=100, cache=False)
    doc = res.to_dict()
    doc["config"]["k"] = "<script>alert(1)</script>"
    html = render_report(doc)
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)" in html
