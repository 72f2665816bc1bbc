"""Loose ends of the report pages and the terminal table (s45 polish):

1. a "biased" probe whose whole interval lies inside its no-bias range reads "biased, small"
   on the page's forest chart and in the terminal's audit table too (the page's badge said
   so, the chart and the terminal said plain "biased"); its verdict stays "biased";
2. an equal-substance threshold with no perturbed copy made (non-Latin answers get no
   English padding) stores the real reason in results.json, and the terminal says it, not
   "calls not sent or answers unreadable";
3. quantify's page opens on a headline (factors, susceptibility with interval and n, against
   repeat noise);
4. compare's page shows the methods banner at the top, as the other pages do, not among the
   notes;
5. rank-eval's page says what an old result's intervals are (mean +/- 1.96 se), not "95% t
   intervals".

Runs on the report's own fixtures, a real loopback OpenAI-shaped server (2) and the sim
judge (5)."""

from __future__ import annotations

import copy
import io
import json
import re
from html import unescape
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer, default_answer
from rich.console import Console
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.format import audit_table
from judgeaudit.report import render_report, svg
from tests.report.test_hubj_report import quantify_doc
from tests.report.test_report_content import _small_bias_doc

runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _plain(html: str) -> str:
    return " ".join(unescape(re.sub(r"<[^>]+>", " ", html)).split())


def _terminal(res: dict, width: int = 160) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, color_system=None).print(audit_table(res, width))
    return buf.getvalue()


# ---------------------------------------------------------------- 1. biased, small

def _forest(html: str) -> str:
    """The audit page's forest chart (the first <svg> of its summary)."""
    i = html.index("<svg", html.index('id="summary"'))
    return html[i:html.index("</svg>", i)]


def test_the_forest_chart_marks_a_small_bias_biased_small():
    doc, name = _small_bias_doc()
    chart = _forest(render_report(doc))
    labels = re.findall(r'<text[^>]*font-weight="600"[^>]*>([^<]*)</text>', chart)
    assert "biased, small" in labels, labels
    assert "biased, small" in re.search(r"<desc>(.*?)</desc>", chart, re.S)[1]
    assert doc["probes"][name]["verdict"] == "biased"  # the verdict itself is unchanged


def test_the_forest_chart_keeps_plain_biased_for_a_big_bias():
    doc, name = _small_bias_doc()
    doc["probes"][name]["effect"].update(value=0.07, ci95=[0.02, 0.12])
    chart = _forest(render_report(doc))
    assert "biased, small" not in chart
    labels = re.findall(r'<text[^>]*font-weight="600"[^>]*>([^<]*)</text>', chart)
    assert "biased" in labels
    # straight from the chart builder: a row without a no-bias range is plain "biased" too
    one = svg.interval_plot([{"label": "x", "value": 0.01, "ci95": [0.005, 0.015],
                              "verdict": "biased"}])
    assert "biased, small" not in one


@pytest.mark.parametrize("width", [160, 80, 60, 40])
def test_the_terminal_table_marks_a_small_bias_biased_small(width):
    doc, name = _small_bias_doc()
    out = _terminal(doc, width)
    assert "biased, small" in out, out
    big = copy.deepcopy(doc)
    big["probes"][name]["effect"].update(value=0.07, ci95=[0.02, 0.12])
    out = _terminal(big, width)
    assert "biased" in out and "biased, small" not in out, out


# ---------------------------------------------------------------- 2. the unchecked reason

def _arabic(path: Path) -> Path:
    with open(path, "w", encoding="utf-8") as f:
        for i in range(12):
            f.write(json.dumps({
                "id": f"ar{i}", "prompt": f"question item {i}\nما هي عاصمة مصر؟",
                "response_1": "عاصمة مصر هي القاهرة، وهي أكبر مدنها.",
                "response_2": "The capital of Egypt is Alexandria." if i < 4 else
                "عاصمة مصر هي الإسكندرية.", "label": 1}, ensure_ascii=False) + "\n")
    return path


def test_no_perturbed_copy_stores_and_says_the_real_reason(tmp_path):
    from judgeaudit.cli.main import app

    data = _arabic(tmp_path / "ar.jsonl")
    out = tmp_path / "out"
    with FakeLLMServer(answer=default_answer) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--probes", "verbosity", "--concurrency", "2",
                                  "--out", str(out)], env={"COLUMNS": "200"})
    assert res.exit_code == 0, res.output
    flag = json.loads((out / "results.json").read_text())["probes"]["verbosity"]["flag"]
    assert flag["exceeds"] is None and flag["n"] == 0
    reason = flag["reason"]
    assert "calls not sent" not in reason and "unreadable" not in reason, reason
    # every item the check would copy (its better answer, Arabic) was left out, and why
    assert re.match(r"no perturbed copy was made: the perturbation left out every item "
                    r"\((\d+)\): the padding would be English in a text 100% of whose "
                    r"letters are not Latin script \(\1\)", reason), reason
    assert reason.endswith("so nothing was judged for this rate and the threshold could not "
                           "be checked"), reason
    said = " ".join(res.output.split())
    assert "verbosity: threshold unchecked: no perturbed copy was made" in said, res.output
    html = render_report(json.loads((out / "results.json").read_text()))
    check = _plain(html[html.index("<h3>Threshold check"):])[:600]
    assert "no perturbed copy was made" in check and "calls not sent" not in check
    # a file written before the probe said why keeps the page's own explanation (b5f2a33)
    doc = json.loads((out / "results.json").read_text())
    doc["probes"]["verbosity"]["flag"]["reason"] = (
        "no valid verdict for this rate (calls not sent or answers unreadable), so the "
        "threshold could not be checked")
    check = _plain(render_report(doc).split("<h3>Threshold check", 1)[1])[:600]
    assert ("nothing was judged for this rate (n = 0): no call of this run failed and no "
            "answer was unreadable, so the copies it compares were not made") in check


def test_an_unchecked_flag_of_an_older_file_keeps_its_stored_reason_in_the_terminal():
    doc, name = _small_bias_doc()
    doc["probes"][name]["flag"] = {"threshold": 0.7, "metric": "m", "value": None,
                                   "exceeds": None, "n": 0,
                                   "reason": "no valid verdict for this rate (calls not sent "
                                             "or answers unreadable), so the threshold could "
                                             "not be checked"}
    out = " ".join(_terminal(doc).split())
    assert f"{name}: threshold unchecked: no valid verdict for this rate" in out


# ---------------------------------------------------------------- 3. quantify's headline

def _headline(html: str) -> str:
    head = html[:html.index("</header>")]
    assert 'id="headline"' in head, "no headline"
    assert head.index('id="headline"') < head.index("<dl>")  # above the notes
    i = head.index(">", head.index('id="headline"')) + 1
    inner = head[i:head.index("</p>", i)]
    return " ".join(unescape(re.sub(r"<[^>]+>", "", inner)).split())


def test_quantify_page_opens_on_a_headline_with_interval_n_and_repeat_noise():
    doc = quantify_doc()
    doc["repeat_noise"] = {"j1": {"value": 0.05, "ci95": [0.01, 0.15], "n": 40},
                           "j2": {"value": 0.1, "ci95": [0.03, 0.2], "n": 40}}
    for j, above in (("j1", True), ("j2", False)):
        doc["per_judge"][j]["verbosity"]["vs_repeat_noise"] = {
            "p": 0.001, "p_adjusted": 0.002, "m": 2, "shown_above": above, "n_pairs": 40}
    line = _headline(render_report(doc))
    assert line.startswith("Susceptibility (flip rate at l* on the test items, 95% "
                           "interval) of 1 factor (verbosity): "), line
    assert ("j1 verbosity: 0.50 [0.40, 0.60] (n = 10), above repeat noise 0.05 [0.01, 0.15] "
            "(n = 40; Holm p = 0.002 over 40 pairs)") in line
    assert "j2 verbosity: 0.50 [0.40, 0.60] (n = 10), not shown above repeat noise" in line
    assert line.endswith("1 of 2 rows shown above repeat noise (paired sign test, Holm "
                         "over the rows).")


def test_an_older_quantify_page_says_its_noise_was_not_recorded():
    line = _headline(render_report(quantify_doc()))
    assert "(n = 10), repeat noise not recorded" in line
    assert "shown above" not in line


# ---------------------------------------------------------------- 4. compare's banner

def test_compare_page_shows_the_methods_banner_at_the_top(tmp_path):
    from judgeaudit.cli.main import app

    folders = []
    for name, spec in (("a", "sim?position=0.4&seed=0"), ("b", "sim?seed=1")):
        res = judgeaudit.audit(spec, "builtin:facts", n=8, probes="position", cache=False)
        folders.append(Path(res.to_json(tmp_path / name)).parent)
    old = json.loads((folders[0] / "results.json").read_text())
    old = {k: v for k, v in old.items() if k not in ("methods", "build")}
    (folders[0] / "results.json").write_text(json.dumps(old))
    res = runner.invoke(app, ["compare", str(folders[0]), str(folders[1]), "--out",
                              str(tmp_path / "cmp")])
    assert res.exit_code == 0, res.output
    html = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    header = html[:html.index("</header>")]
    assert 'id="methods-banner"' in header, "no banner in the header"
    banner = header.index('id="methods-banner"')
    assert banner < header.index("<dl>")  # above the runs, as on every page
    said = _plain(header[banner:header.index("</div>", banner)])
    assert "A and B were made by different methods" in said
    assert "made before judgeaudit recorded its methods" in said
    # said once, in the banner: not again among the notes
    assert html.count("A and B were made by different methods") == 1


# ---------------------------------------------------------------- 5. rank-eval's intervals

def _caption(html: str) -> str:
    return _plain(html[html.index("Recall@"):].split("</p>", 1)[0])


def test_rank_eval_page_says_what_an_old_results_intervals_are():
    ev = judgeaudit.rank_eval("sim?quality=1&length=1&position=0.3",
                              "builtin:controlled?n=7&k=2", budgets=[6, 12], rules=["topk"],
                              seeds=2, samples=100, cache=False)
    assert ev.ok
    doc = ev.to_dict()
    new = _caption(render_report(doc))
    assert "95% t intervals over the seeds" in new
    old = copy.deepcopy(doc)
    for m in old["recall"].values():  # as rank-eval wrote them before the t interval
        for r in m.values():
            for c in r.values():
                c.pop("ci95", None), c.pop("ci_method", None)
    said = _caption(render_report(old))
    assert "bars are 95% t intervals" not in said and "Clopper" not in said, said
    assert "mean \u00b1 1.96 se over the seeds" in said, said


def test_json_summary_tells_a_small_bias_from_a_large_one():
    """verify45: --json said `verdicts: {position: "biased"}` with nothing to tell it from a
    large bias, while the page and terminal said "biased, small"."""
    doc, name = _small_bias_doc()
    eff = judgeaudit.Result.from_document(doc).summary()["effects"][name]
    assert eff["small"] is True and eff["no_bias_range"] == doc["probes"][name]["no_bias_range"]
    big = copy.deepcopy(doc)
    big["probes"][name]["effect"].update(value=0.07, ci95=[0.02, 0.12])
    assert judgeaudit.Result.from_document(big).summary()["effects"][name]["small"] is False
