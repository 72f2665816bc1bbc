"""`judgeaudit audit --adaptive`: options, results, report and the gate."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def test_adaptive_fail_on_biased_exits_1(tmp_path):
    out = tmp_path / "a"
    r = runner.invoke(app, ["audit", "--judge", "sim?position=4", "--probes", "position",
                            "--adaptive", "--max-n", "100", "--out", str(out),
                            "--fail-on", "biased", "--no-cache"])
    assert r.exit_code == 1, r.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["probes"]["position"]["verdict"] == "biased"
    assert doc["adaptive"]["rounds"] >= 1
    html = (out / "report.html").read_text()
    assert "Adaptive audit" in html and "<svg" in html
    # its header states the rule the adaptive verdicts follow (e-BH), not the q-value one
    assert "biased when e-BH across the probes rejects" in html
    assert "biased when q &lt;" not in html
    # so do the summary's legend and the verdict key (they described the bootstrap and q)
    assert "a bootstrap over items" not in html and "Benjamini&ndash;Hochberg q-value" not in html
    assert "anytime-valid confidence sequence at the probe's stop" in html
    assert "include the baseline verdicts every probe shares" in html
    # the table shows each probe's item count (not the dict's .items method's repr)
    items = doc["probes"]["position"]["adaptive"]["items"]
    assert "built-in method" not in html and f"<td>{int(items)}</td>" in html


def test_adaptive_unbiased_passes(tmp_path):
    r = runner.invoke(app, ["audit", "--judge", "sim", "--probes", "position", "--adaptive",
                            "--max-n", "60", "--out", str(tmp_path / "b"), "--fail-on",
                            "biased", "--no-cache"])
    assert r.exit_code == 0, r.output


def test_adaptive_refuses_n_and_budget_without_adaptive(tmp_path):
    r = runner.invoke(app, ["audit", "--judge", "sim", "--adaptive", "--n", "10",
                            "--out", str(tmp_path / "c")])
    assert r.exit_code == 2
    r = runner.invoke(app, ["audit", "--judge", "sim", "--max-calls", "10",
                            "--out", str(tmp_path / "d")])
    assert r.exit_code == 2


def test_a_later_round_the_budget_cuts_is_not_a_failure_and_a_rerun_agrees(tmp_path,
                                                                           isolated_cache):
    """--max-calls 300 cut round 2: its unsent calls counted as failed calls, so the warm
    re-run (which gets further, and cuts more) failed (exit 3, 280 of 1040 calls failed)
    where the first run passed. Now both pass; the cut is said in a note."""
    args = ["audit", "--judge", "sim?position=3&seed=1", "--adaptive", "--max-calls", "300",
            "--json"]
    first = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
    again = runner.invoke(app, [*args, "--out", str(tmp_path / "b")])
    assert first.exit_code == 0 and again.exit_code == 0, again.output
    # a cut first round within --max-failed passed without a word: now a note says it
    notes = json.loads((tmp_path / "a" / "results.json").read_text())["notes"]
    assert any("cut round 1" in n and "within --max-failed" in n for n in notes), notes
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    assert doc["run"]["status"] == "ok" and doc["calls"]["not_sent"] > 0
    assert doc["adaptive"]["stopped_by"] == "max_calls"
    assert any(n.startswith("the budget (max_calls) cut round") for n in doc["notes"])
    assert "note: the budget (max_calls) cut round" in " ".join(again.output.split())


def _said(output: str) -> str:
    return " ".join(output.split())  # the console wraps long lines


def test_the_summary_says_calls_sent_and_shared_not_from_cache_under_no_cache(tmp_path):
    """With --max-calls 1000 the line said "1040 judge calls" though 720 were sent, and the
    calls line "320 from cache" under --no-cache: the 320 are the same requests asked again
    by other probes in this run (the shift probes' consistency repeats), answered once."""
    out = tmp_path / "a"
    r = runner.invoke(app, ["audit", "--adaptive", "--judge", "sim?position=1.5&seed=0",
                            "--data", "builtin:facts", "--max-calls", "1000", "--no-cache",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    said = _said(r.output)
    doc = json.loads((out / "results.json").read_text())
    ad, calls = doc["adaptive"], doc["calls"]
    src = ad["calls_by_source"]
    assert src["sent"] + src["shared"] + src["from_cache"] + src["failed"] == ad["calls"]
    assert src["from_cache"] == 0 and src["shared"] == calls["cached"] > 0  # no cache here
    assert src["sent"] == calls["made"] <= 1000
    assert (f"{ad['calls']} judge calls vs about {ad['fixed_n_calls']} for the fixed-n audit "
            f"at max-n 500: {src['sent']} sent, {src['shared']} shared between probes") in said
    assert "from the cache of earlier runs" not in said
    assert calls["shared"] == src["shared"]  # the client's count (CallStats.shared)
    assert (f"calls: {calls['made']} made, 0 from cache, {src['shared']} shared within the "
            "run (asked again, answered once)") in said
    # the overall stop is the budget's, with what was sent; each probe's stop is said
    assert (f"stop: the --max-calls budget of 1000 calls stopped the run after "
            f"{ad['rounds']} rounds ({src['sent']} sent)") in said
    assert "(all probes stopped)" not in said and "(max_calls)" not in said
    for name, p in doc["probes"].items():
        e = p["adaptive"]["evalue"]
        assert (f"{name}: stopped by the budget undecided at round {ad['rounds']} after "
                f"{p['adaptive']['items']} items, e-value {e:.3g}") in said


def test_the_summary_says_why_every_probe_stopped_and_one_round(tmp_path, isolated_cache):
    """"(all probes stopped)" when 5 of 6 ran out of usable items; "1 rounds"."""
    out = tmp_path / "b"
    args = ["audit", "--adaptive", "--judge", "sim?position=1.5&seed=0", "--data",
            "builtin:facts?limit=30", "--round-size", "40", "--out", str(out)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    said = _said(r.output)
    doc = json.loads((out / "results.json").read_text())
    assert doc["adaptive"]["rounds"] == 1 and doc["adaptive"]["stopped_by"] == (
        "all probes stopped")
    assert "adaptive: 1 round of 40 items;" in said and "1 rounds" not in said
    assert "stop: every probe stopped within 1 round:" in said
    assert "ran out of usable items undecided" in said
    assert doc["adaptive"]["stop"] in said
    # the report says the same (it said "The run stopped: all probes stopped.")
    html = " ".join((out / "report.html").read_text(encoding="utf-8").split())
    assert f"The run stopped: {doc['adaptive']['stop']}" in html
    # a second run answers from the cache of the first: said as such
    r = runner.invoke(app, args)
    src = json.loads((out / "results.json").read_text())["adaptive"]["calls_by_source"]
    assert src["sent"] == 0 and src["from_cache"] > 0
    assert f"0 sent, {src['shared']} shared between probes" in _said(r.output)
    assert f"{src['from_cache']} from the cache of earlier runs" in _said(r.output)
