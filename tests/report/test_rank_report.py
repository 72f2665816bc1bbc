"""Report pages of `rank` and `rank-eval`, rendered from real runs with the sim judge: the
ranking with intervals, P(top-k), the estimated biases with intervals, recall-vs-budget
curves per rule; judged text (item ids, prompts, raw outputs) escaped; old rank documents
still render; `judgeaudit report` builds them."""

from __future__ import annotations

import copy
import json
import re
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.report import render_report, write_results
from judgeaudit.result import Result

PAYLOAD = "<script>alert('x')</script>"
JUDGE = "sim?quality=1&length=1&position=0.3&seed=4"


@pytest.fixture(scope="module")
def hostile_pool(tmp_path_factory) -> str:
    """A pool whose ids and prompt carry markup: it must reach the page as text."""
    path = tmp_path_factory.mktemp("pool") / "pool.jsonl"
    rows = [{"id": f"{PAYLOAD}{i}", "prompt": "Which? <img src=x onerror=alert(1)>",
             "response": "word " * (3 + 2 * i) + ("**bold**" if i % 2 else ""),
             "quality": float(i)} for i in range(7)]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return f"jsonl:{path}"


@pytest.fixture(scope="module")
def rank_doc(hostile_pool) -> dict:
    res = judgeaudit.rank(JUDGE, hostile_pool, k=2, budget=20, samples=200, cache=False)
    assert res.ok
    return res.to_dict()


@pytest.fixture(scope="module")
def eval_doc() -> dict:
    res = judgeaudit.rank_eval("sim?quality=1&length=1&position=0.3",
                               "builtin:controlled?n=7&k=2", budgets=[6, 12, 18],
                               rules=["topk", "random"], seeds=2, samples=100, cache=False)
    assert res.ok
    return res.to_dict()


def _svgs(html: str) -> list[ET.Element]:
    return [ET.fromstring(s) for s in re.findall(r"<svg.*?</svg>", html, re.S)]


def test_rank_page_shows_ranking_topk_and_biases_with_intervals(rank_doc):
    html = render_report(rank_doc)
    for heading in ("Ranking", "Top-2 and membership probabilities", "Estimated judge biases",
                    "Comparisons", "Settings"):
        assert f">{heading}</h2>" in html, heading
    # every item in the table with its interval and P(top-k); the top set starred
    rows = re.findall(r"<tr( class=\"in-topk\")?>\s*<td class=\"num\">(\d+)", html)
    assert len(rows) == 7 and sum(bool(r[0]) for r in rows) == 2
    first = rank_doc["ranking"][0]
    assert f"{first['theta']:+.2f}" in html and f"[{first['lo']:+.2f}, {first['hi']:+.2f}]" in html
    # biases: c[length] and kappa with intervals and the planted values
    c = rank_doc["models"]["bias_aware"]["c"]["length"]
    assert "<code>c[length]</code>" in html and "<code>kappa</code>" in html
    assert f"[{c['lo']:+.3f}, {c['hi']:+.3f}]" in html and ">+1.000</td>" in html
    # three plots (theta, P(top-k), biases), well-formed SVG
    svgs = _svgs(html)
    assert len(svgs) == 3
    assert "recall@2" in html.lower() or "Recall@2" in html
    # each recall with its n: how many of the 2 true top items the ranking found
    for m, v in rank_doc["recall"].items():
        assert f"{v:.2f}</strong> <span class=\"muted\">({round(v * 2)} of 2 true top " \
            "items)" in html, m
    assert ">20</div>" in html  # comparisons card
    assert "Model calls" in html and "20 made" in " ".join(html.split())


def test_rank_page_escapes_judged_text(rank_doc):
    doc = copy.deepcopy(rank_doc)
    doc["comparisons"][0].update(invalid=True, choice=None, raw=PAYLOAD + " <b>A</b>",
                                 error="unparseable <i>x</i>")
    doc["n_invalid"] = 1
    html = render_report(doc)
    assert "<script>" not in html and "<img src=x" not in html and "<b>A</b>" not in html
    assert "&lt;script&gt;alert(" in html  # the ids, shown as text
    assert "Invalid verdicts" in html and "unparseable &lt;i&gt;x&lt;/i&gt;" in html
    for svg in _svgs(html):  # labels escaped inside the plots too
        assert all("script" not in el.tag for el in svg.iter())


def test_rank_eval_page_shows_recall_curves_with_intervals_per_rule(eval_doc):
    html = render_report(eval_doc)
    assert ">Recall against budget</h2>" in html and ">Paired tests between rules</h2>" in html
    svgs = _svgs(html)
    curves = [s for s in svgs if s.find(".//{http://www.w3.org/2000/svg}polyline") is not None]
    assert len(curves) == 2  # one plot per model
    for svg in curves:
        polylines = svg.findall(".//{http://www.w3.org/2000/svg}polyline")
        assert len(polylines) == 2  # one curve per rule, 3 budgets each
        assert all(len(p.get("points").split()) == 3 for p in polylines)
        assert svg.findall(".//{http://www.w3.org/2000/svg}polygon")  # interval bands
    assert "<code>topk vs random</code>" in html
    cell = eval_doc["recall"]["bias_aware"]["topk"]["18"]
    assert f"{cell['mean']:.3f}" in html
    assert "<code>c[length]</code>" in html and "Coverage" in html
    assert "builtin:controlled?n=7&amp;k=2&amp;seed=0" in html  # the matrices, escaped
    # the header names the judge's template (it was empty: rank-eval recorded none)
    assert f"<code>{eval_doc['template']['name']}</code>" in html


def test_old_rank_documents_load_and_render_the_same_way(rank_doc, eval_doc, tmp_path):
    for doc, schema in ((rank_doc, "judgeaudit.rank/1"), (eval_doc, "judgeaudit.rank_eval/2")):
        old = {k: v for k, v in doc.items() if k != "version"}
        old["schema"] = schema
        write_results(tmp_path / "old" / "results.json", {
            k: v for k, v in old.items() if k != "schema_version"})
        res = Result.load(tmp_path / "old")
        assert res.command == doc["command"] and res.ok and res["schema"] == schema
        assert "Estimated judge biases" in res.html()
        bad = {**old, "schema": schema.replace("/", "/9")}
        with pytest.raises(ValueError, match="re-run the command with this judgeaudit"):
            Result.from_document(bad)


def test_judgeaudit_report_builds_rank_pages(rank_doc, eval_doc, tmp_path):
    from judgeaudit.cli.main import app

    for name, doc in (("rank", rank_doc), ("rank-eval", eval_doc)):
        write_results(tmp_path / name / "results.json",
                      {k: v for k, v in doc.items() if k != "schema_version"})
        res = CliRunner().invoke(app, ["report", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
        html = (tmp_path / name / "report.html").read_text()
        assert html == Result.load(tmp_path / name).html()


def test_a_failed_rank_page_says_why(rank_doc):
    doc = {**rank_doc, "run": {**rank_doc["run"], "status": "failed",
                               "message": "run failed: 20 of 20 calls failed"}}
    html = render_report(doc)
    assert "Run failed" in html and "20 of 20 calls failed" in html
    assert ">Ranking</h2>" not in html


def test_recall_over_seeds_that_all_agree_has_no_interval_in_page_or_terminal():
    """Every seed gave 0.8: the page showed [0.80, 0.80] where --json gives no interval, and
    the terminal gave mean +- se where every other number has its 95% interval. The interval
    over seeds is Student's t (with 4 seeds the normal one was about 40% too narrow), and
    the page, the terminal and --json show the one rank-eval recorded."""
    import numpy as np
    from scipy import stats

    from judgeaudit.cli.rank_cmd import _mean_se
    from judgeaudit.rank.evaluate import _summary
    from judgeaudit.report.rank_html import _cell
    from judgeaudit.result import _over_seeds

    same = _summary([0.8] * 4)
    assert same["ci95"] is None and (_cell(same)["lo"], _cell(same)["hi"]) == (None, None)
    assert _mean_se(same) == "0.800 (every seed)"
    assert np.isnan(_over_seeds(same).ci95[0])
    spread = _summary([0.6, 0.4, 0.8, 0.6])
    half = stats.t.ppf(0.975, 3) * np.std([0.6, 0.4, 0.8, 0.6], ddof=1) / 2
    assert spread["ci95"] == pytest.approx([0.6 - half, 0.6 + half])
    assert (_cell(spread)["lo"], _cell(spread)["hi"]) == tuple(spread["ci95"])
    assert _over_seeds(spread).ci95 == pytest.approx(tuple(spread["ci95"]))
    assert _mean_se(spread) == f"0.600 [{0.6 - half:.2f}, {0.6 + half:.2f}]"
    assert _mean_se(_summary([0.5])) == "0.500 (1 seed)"
    # a document from before the interval was recorded: the normal one it was shown with
    old = _cell({"mean": 0.9, "se": 0.06, "n": 4})
    assert old["lo"] == pytest.approx(0.9 - 1.959964 * 0.06, abs=1e-4) and old["hi"] == 1.0


def test_rank_eval_page_names_the_t_interval_and_says_why_a_cell_has_none(eval_doc):
    """The page said "mean ± 1.96 standard errors" while its intervals are t(n-1) ones (a
    recall 0.833 with se 0.167 over 2 seeds shows [0.00, 1.00]); a cell where every seed
    agreed showed a bare number with no n (tester t-api)."""
    html = render_report(eval_doc)
    assert "1.96 standard errors over seeds" not in html
    assert "t interval over the n seeds" in html
    doc = copy.deepcopy(eval_doc)
    doc["recall"]["naive"]["topk"]["6"] = {"mean": 0.5, "se": 0.0, "n": 2, "ci95": None}
    assert "n = 2 seeds, all equal: no interval" in render_report(doc)
    doc["recall"]["naive"]["topk"]["6"] = {"mean": 0.5, "se": None, "n": 1, "ci95": None}
    assert "one seed: no interval" in render_report(doc)


def test_a_long_invalid_answer_is_cut_in_the_rank_page(rank_doc):
    """Invalid answers were shown whole (a 1 MB answer made a 1 MB page); the page now shows
    the first 2,000 characters, escaped, and says how many more are in results.json."""
    doc = copy.deepcopy(rank_doc)
    c = doc["comparisons"][0]
    c.update(invalid=True, raw="<b>" + "x" * 100_000, error=None)
    html = render_report(doc)
    assert "more characters; full text in results.json" in html
    assert "x" * 2_100 not in html and "&lt;b&gt;" in html and "<b>xxx" not in html


def test_older_rank_eval_documents_say_their_invalid_verdicts_were_ties_and_json_says_how(
        eval_doc):
    """An old rank-eval page said only "N invalid verdicts in all" (rank's said "counted as
    ties"); --json's recall cells did not say which interval they carry (t-regress)."""
    from judgeaudit.result import _rank_eval_summary

    doc = copy.deepcopy(eval_doc)
    doc["config"].pop("invalid", None)
    doc["n_invalid"] = 4
    assert "counted as ties (written before invalid verdicts were left out" in \
        render_report(doc)
    cells = [c for rules in _rank_eval_summary(eval_doc)["recall"].values()
             for bs in rules.values() for c in bs.values()]
    methods = ("t over seeds", "exact (Clopper-Pearson) over pooled item hits")
    assert cells and all(c["method"] in methods for c in cells)
    assert all(("hits" in c) == c["method"].startswith("exact") for c in cells)


def test_an_older_rank_document_gives_recall_its_n_from_the_true_top_k(rank_doc):
    from judgeaudit.result import _rank_summary

    doc = copy.deepcopy(rank_doc)
    doc.pop("recall_hits", None)
    k = len(doc["true_topk"])
    assert _rank_summary(doc)["recall"]
    for cell in _rank_summary(doc)["recall"].values():
        assert cell["n"] == k and cell["hits"] == round(cell["value"] * k)
