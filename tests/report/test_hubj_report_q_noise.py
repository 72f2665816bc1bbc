"""The HUB-J report shows what results.json gained: discover's q-values (Benjamini-Hochberg
over the factors tested in one run) and which factors are significant, quantify's repeat
noise per judge, and the estimator of the fit a mitigate-apply run applied. On real sim runs
and on older documents without these keys (a dash, or "not recorded": never a guess)."""

from __future__ import annotations

import html as html_lib
import json
import re

import pytest

import judgeaudit
from judgeaudit.audit.length_control import pad
from judgeaudit.data import load
from judgeaudit.report.html import render_report
from tests.hubj.conftest import stub_embedder  # noqa: F401 (a fixture, used by name)
from tests.hubj.test_discover_multiplicity import _pairs, runner
from tests.report.test_hubj_report import discover_doc, mitigate_doc, quantify_doc


def _rows(html: str, table_class: str) -> list[str]:
    """The body rows of every table of a class."""
    bodies = re.findall(rf'<table class="{table_class}">.*?<tbody>(.*?)</tbody>', html, re.S)
    return [r for b in bodies for r in re.findall(r"<tr>(.*?)</tr>", b, re.S)]


def _cells(row: str) -> list[str]:
    return [re.sub(r"<[^>]+>", " ", c).split() for c in re.findall(r"<td.*?</td>", row, re.S)]


# ---- discover ------------------------------------------------------------------------------

@pytest.mark.usefixtures("stub_embedder", "isolated_cache")
def test_discover_report_shows_q_and_marks_significant_factors(tmp_path):
    from judgeaudit.cli.main import app
    res = runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm",
                              "test-hubj-bh:s1", "--data", _pairs(tmp_path / "p.jsonl", 60),
                              "--iterations", "1", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    html = (tmp_path / "o" / "report.html").read_text()
    head = re.search(r'<table class="validation">\s*<thead>(.*?)</thead>', html, re.S)[1]
    heads = [re.sub(r"<[^>]+>", "", h).replace("&Delta;", "D")
             for h in re.findall(r"<th.*?</th>", head)]
    assert heads[4:8] == ["p (t)", "q (t)", "p (Wilcoxon)", "q (Wilcoxon)"], heads
    rows = {r["factor"]: r for s in doc["validation"]["sets"].values() for r in s["factors"]}
    shown = _rows(html, "validation")
    assert len(shown) == len(rows) == 11
    fmt = judgeaudit.report.html.fmt_p
    for row in shown:
        name = re.search(r"<code>(.*?)</code>", row)[1]
        r = rows[name]
        cells = _cells(row)
        assert cells[4][0] == fmt(r["p_t"]) and cells[5][0] == fmt(r["q_t"])
        assert cells[6][0] == fmt(r["p_wilcoxon"]) and cells[7][0] == fmt(r["q_wilcoxon"])
        assert ("significant" in row) == r["significant"], (name, row)
    mult = doc["validation"]["multiplicity"]
    assert set(mult["significant"]) >= {"longer response", "length", "verbosity"}
    text = html_lib.unescape(" ".join(re.sub(r"<[^>]+>", " ", html).split()))
    assert ("Significant: q (Wilcoxon) \u2264 0.05, Benjamini-Hochberg over the 11 factors "
            "tested in this run.") in text


def test_an_older_discover_document_without_q_renders_with_dashes():
    doc = discover_doc()  # written before discover recorded q (no q_t, q_wilcoxon, significant)
    html = render_report(doc)
    for row in _rows(html, "validation"):
        cells = _cells(row)
        assert cells[5] == ["\u2014"] and cells[7] == ["\u2014"], cells  # q (t), q (Wilcoxon)
        assert "significant" not in row
    assert "Significant: q (Wilcoxon)" not in html
    assert "no q-values" in html  # says why there are none


# ---- quantify ------------------------------------------------------------------------------

def test_quantify_report_shows_each_judges_repeat_noise(tmp_path, isolated_cache):
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    flat = "simhubj?seed=4"
    q = judgeaudit.quantify([judge, flat], "builtin:facts", factors="verbosity,authority",
                            pool=40, limit=10, levels=(1, 3, 5))
    assert q.ok
    html = q.html()
    assert "Repeat noise (test)" in html
    for j in (judge, flat):
        e = q["repeat_noise"][j]
        lo, hi = e["ci95"]
        # the judge's own table: from its heading to the table's end
        table = html.split(f"<h3><code>{j.replace('&', '&amp;')}</code></h3>", 1)[1]
        rows = _rows(table.split("</table>", 1)[0] + "</table>", "quantify")
        assert len(rows) == 2  # one per factor, the judge's noise in each
        for row, (f, x) in zip(rows, q["per_judge"][j].items(), strict=True):
            assert f"<code>{f}</code>" in row
            # marked when the paired test on the same items does not put it above the noise
            t = x["vs_repeat_noise"]
            assert ("not shown above repeat noise" in row) == (not t["shown_above"])
            assert "susceptibility not above repeat noise" not in row  # the old comparison
            last = " ".join(_cells(row)[-1])
            assert f"{e['value']:.3f}" in last and f"[{lo:.2f}, {hi:.2f}]" in last
            assert f"n={e['n']}" in last
    text = " ".join(re.sub(r"<[^>]+>", " ", html).split())
    assert "a susceptibility inside its interval is no evidence that the factor moved the " \
           "judge" in text


def test_an_older_quantify_document_without_repeat_noise_renders_without_the_column():
    html = render_report(quantify_doc())
    assert "Repeat noise" not in html and "Flip rate by level" in html


# ---- mitigate: the estimator of the fit applied --------------------------------------------

def _data() -> list:
    """builtin:facts with responses padded by 0-160 words, so the scorer sees several
    levels (as tests/test_api.py builds them)."""
    return [it.model_copy(update={"response_1": pad(it.response_1, 40 * (i % 5), i)})
            for i, it in enumerate(load("builtin:facts")[:40])]


def _sub(html: str) -> str:
    return re.search(r'<p class="sub">(.*?)</p>', html, re.S)[1]


def test_mitigate_apply_report_names_the_estimator_of_the_fit_it_applied(tmp_path,
                                                                         isolated_cache):
    data = _data()
    m = judgeaudit.mitigate(["sim?length=2&seed=1", "sim:unbiased?seed=2"], data,
                            scorer="simhubj?score_from=length", factor="length", limit=40)
    assert m.ok and m["estimator"] == "marginal"
    a = judgeaudit.mitigate("sim?length=2&seed=1", data, apply=m,
                            scorer="simhubj?score_from=length", limit=40)
    assert a.ok and a["estimator"] == "marginal"  # the fit's, recorded
    assert "marginal fit" in _sub(m.html())
    assert "marginal fit" in _sub(a.html()) and "two-stage" not in _sub(a.html())
    two = judgeaudit.mitigate(["sim?length=2&seed=1", "sim:unbiased?seed=2"], data,
                              scorer="simhubj?score_from=length", factor="length", limit=40,
                              estimator="two_stage")
    a2 = judgeaudit.mitigate("sim?length=2&seed=1", data, apply=two,
                             scorer="simhubj?score_from=length", limit=40)
    assert a2["estimator"] == "two_stage" and "two-stage fit" in _sub(a2.html())


def test_an_older_mitigate_document_says_its_estimator_was_not_recorded():
    for doc in (mitigate_doc(), {**mitigate_doc(), "command": "mitigate-apply",
                                 "applied": {"judge": "j1", "n": 40, "note": "x",
                                             "n_new_queries": 0}}):
        assert "estimator" not in doc
        sub = _sub(render_report(doc))
        assert "estimator not recorded" in sub and "two-stage" not in sub, sub


def test_an_older_quantify_document_without_the_paired_test_keeps_the_comparison_label():
    """A document written before `vs_repeat_noise` is shown by what it holds: the value
    against the noise's interval, said to be a comparison, not a test."""
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    q = judgeaudit.quantify([judge], "builtin:facts", factors="verbosity,authority", pool=40,
                            limit=10, levels=(1, 3, 5))
    doc = json.loads(json.dumps(q.to_dict()))
    for x in doc["per_judge"][judge].values():
        del x["vs_repeat_noise"]
    page = render_report(doc)
    hi = doc["repeat_noise"][judge]["ci95"][1]
    low = [f for f, x in doc["per_judge"][judge].items() if x["susceptibility"]["value"] <= hi]
    assert low and page.count("susceptibility not above repeat noise") == len(low)
    assert "not shown above repeat noise" not in page
    assert "(a comparison, not a test)" in " ".join(re.sub(r"<[^>]+>", " ", page).split())
