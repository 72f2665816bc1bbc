"""Money said and written alike (review9 items 1-4): a plan, its ingest, the calls line and the
report name the rate a cost is at in the same words (a plan at a spec's price_in/price_out
said "at list prices"); the spend cap's sum names its terms and leaves out a zero one ("$0.8910
+ $0.0000 + $0.1497 is over the cap"); costs in results.json and --json carry no float residue
(0.8909999999999999); $JUDGEAUDIT_INTERRUPT_GRACE=1_0 is refused, not read as 10 s."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.cli.format import RATE_SAID
from judgeaudit.config import MAX_COST_HELP
from judgeaudit.llm.client import CallStats, SpendCap
from judgeaudit.llm.plan import RATE_WORDS, cost_at
from judgeaudit.result import Result
from judgeaudit.results_file import read_results, write_results
from tests.cli.test_cli import write_items
from tests.cli.test_plan_ingest import execute, invoke

SPEC = "openai:m?base_url=http://127.0.0.1:9/v1&api_key=k&price_in=1&price_out=2"


def _plan(tmp_path: Path, judge: str, name: str = "p") -> tuple[str, dict, Path]:
    """The plan message (spaces collapsed) and its --json line of an evaluate of 6 items."""
    data = tmp_path / "items.jsonl"
    if not data.exists():
        write_items(data, 6)
    plan = tmp_path / f"{name}.jsonl"
    args = ("--plan-only", plan, "evaluate", "--judge", judge, "--data", f"jsonl:{data}",
            "--limit", "6", "--out", tmp_path / f"o_{name}")
    text = " ".join(invoke(*args).output.split())
    line = json.loads(invoke(args[0], tmp_path / f"{name}_j.jsonl", *args[2:], "--json")
                      .stdout.strip().splitlines()[-1])
    return text, line, plan


def test_a_plan_at_the_spec_s_prices_says_so_as_its_ingest_and_the_calls_line_do(
        tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    text, line, plan = _plan(tmp_path, SPEC)
    assert re.search(r"about \$[0-9.]+ at the judge spec's prices \(completions", text), text
    assert "list prices" not in text, text
    assert line["cost_usd_by_rate"].keys() == {"spec"}, line
    out = tmp_path / "out.jsonl"
    with FakeLLMServer() as srv:
        execute(plan, out, srv.url)
    said = " ".join(invoke("ingest", out, "--plan", plan).output.split())
    assert f"at {RATE_SAID['spec']}: the provider's bill" in said, said
    # batch=on with a spec's price: used as given, said as the calls line says it (a fresh
    # cache: the answers just ingested would leave nothing to plan)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c2.sqlite"))
    text, line, _ = _plan(tmp_path, SPEC + "&batch=on", "pb")
    assert f"at {RATE_SAID['spec_batch']} (completions" in text, text
    assert line["cost_usd_by_rate"].keys() == {"spec_batch"}, line


def test_the_plan_and_the_calls_line_share_their_words_for_a_rate():
    """One table: the calls line's words are the plan's (the batch rate said shorter)."""
    assert RATE_SAID.keys() == RATE_WORDS.keys() == {"list", "batch", "spec", "spec_batch",
                                                     "mixed"}
    assert {k: v for k, v in RATE_SAID.items() if k != "batch"} == {
        k: v for k, v in RATE_WORDS.items() if k != "batch"}
    usd = "${:.4f}".format
    assert cost_at(1.5, {"spec": 1.5}, usd) == "$1.5000 at the judge spec's prices"
    assert cost_at(1.5, {"list": 1.0, "spec": 0.5}, usd) == (
        "$1.5000 ($1.0000 at list prices, $0.5000 at the judge spec's prices)")


def test_the_report_header_and_max_cost_help_name_the_rate():
    from judgeaudit.report import render_report
    from tests.report.test_html import load, parse

    assert "at list prices" not in MAX_COST_HELP and "price_in/price_out" in MAX_COST_HELP
    doc = load("evaluate_results.json")
    doc["calls"].update(prompt_tokens=900, completion_tokens=10, cost_usd=0.05,
                        price_rate="spec")
    text = " ".join(" ".join(parse(render_report(doc)).text).split())
    assert "$0.0500 at the judge spec's prices" in text and "list prices" not in text, text
    header = (Path(__file__).parents[2] / "src/judgeaudit/report/templates/_header.html")
    table = re.search(r"{% set rate_said = ({.*?}) %}", header.read_text("utf-8")).group(1)
    assert json.loads(table) == RATE_SAID  # the template's copy of the calls line's words
    for rate, words in RATE_SAID.items():
        doc["calls"]["price_rate"] = rate
        text = " ".join(" ".join(parse(render_report(doc)).text).split())
        assert f"$0.0500 at {words}" in text, (rate, text)
    # a judge that costs nothing (the embedded model, plan.FREE) is not said at list prices
    doc["calls"].update(price_rate="free", cost_usd=0.0)
    text = " ".join(" ".join(parse(render_report(doc)).text).split())
    assert "$0.0000 (no charge: the judge costs nothing)" in text, text
    assert "list prices" not in text, text


def test_the_cap_sum_names_its_terms_and_leaves_out_a_zero_one():
    cap = SpendCap(1.0)
    cap.spent = 0.891
    cap.refuse(0.1497)
    why = cap.why()
    assert "and $0.8910 spent + $0.1497 for it is over the cap" in why, why
    assert "$0.0000" not in why, why
    cap = SpendCap(1.0)
    cap.spent, cap.held = 0.5, 0.4
    cap.refuse(0.2)
    assert ("and $0.5000 spent + $0.4000 held by calls under way + $0.2000 for it is over "
            "the cap") in cap.why()
    cap = SpendCap(0.1)
    cap.refuse(0.2)  # the first call alone passes the cap
    assert "could cost up to $0.2000, and $0.2000 for it is over the cap" in cap.why()


def test_costs_in_machine_output_carry_no_float_residue(tmp_path):
    st = CallStats()
    for c in (0.1, 0.2):
        st.cost_usd = (st.cost_usd or 0.0) + c
    assert st.cost_usd != 0.3  # the residue is real: 0.30000000000000004
    assert st.as_dict()["cost_usd"] == 0.3
    path = write_results(tmp_path / "results.json", {
        "command": "evaluate", "calls": {"cost_usd": 3.940000000000001, "made": 3},
        "repeat_calls": {"cost_usd_estimate": 0.011384400000000005},
        "by_judge": [{"cost_usd": 1e-12 + 0.3}]})
    doc = read_results(path)
    assert doc["calls"] == {"cost_usd": 3.94, "made": 3}
    assert doc["repeat_calls"]["cost_usd_estimate"] == 0.0113844
    assert doc["by_judge"][0]["cost_usd"] == 0.3
    assert "00000000" not in path.read_text() and "99999999" not in path.read_text()
    # a document written before: --json rounds what it reads
    old = {"command": "evaluate", "ok": True, "calls": {"cost_usd": 0.8909999999999999}}
    assert Result.from_document(old).summary()["calls"]["cost_usd"] == 0.891


def test_the_plan_json_estimate_carries_no_float_residue(tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    _, line, _ = _plan(tmp_path, SPEC)
    est = line["cost_usd_estimate"]
    assert est == round(est, 10) and len(repr(est).split(".")[1]) <= 10, est
    assert line["cost_usd_by_rate"] == {"spec": est}


@pytest.mark.parametrize("value", ["1_0", "1e1", "\u0661\u0660", "inf", "1.5.0"])
def test_a_grace_float_reads_but_a_person_would_not_write_is_refused(monkeypatch, value):
    import typer

    from judgeaudit.cli.progress import LAST_ERROR
    from judgeaudit.cli.runner import interrupt_grace

    monkeypatch.setenv("JUDGEAUDIT_INTERRUPT_GRACE", value)
    with pytest.raises(typer.Exit) as err:
        interrupt_grace()
    assert err.value.exit_code == 2
    assert LAST_ERROR["msg"].startswith(f"JUDGEAUDIT_INTERRUPT_GRACE={value!r}: expected "
                                        "seconds from 0 to 30")


@pytest.mark.parametrize(("value", "seconds"), [("10", 10.0), (" 2.5 ", 2.5), (".5", 0.5),
                                                ("3.", 3.0)])
def test_a_plain_decimal_grace_is_read(monkeypatch, value, seconds):
    from judgeaudit.cli.runner import interrupt_grace

    monkeypatch.setenv("JUDGEAUDIT_INTERRUPT_GRACE", value)
    assert interrupt_grace() == seconds
