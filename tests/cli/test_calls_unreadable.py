"""The calls line, the --json summary and the report header say how many of the judge's answers
could not be read and how many attempts were retries. Both were in results.json only: an audit
of a judge answering "I cannot decide" one time in ten printed "calls: 240 made, 0 from cache,
0 failed", and one against a server answering 429s printed "4 made, 0 from cache, 0 failed"
while its report said "16 retries". Real runs: the simulated judge (planted unreadable
answers) and a real OpenAI-compatible server on loopback (planted 429s)."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.format import calls_text
from judgeaudit.cli.main import app
from judgeaudit.result import Result

runner = CliRunner()


def _said(output: str) -> str:
    return " ".join(output.split())


def _page_text(path) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")).split())


def test_the_calls_line_says_retries_and_unreadable_answers_with_their_share():
    calls = {"made": 240, "cached": 0, "shared": 0, "retries": 16, "failed": 0,
             "unreadable": 24}
    assert calls_text({"calls": calls, "seconds": 1.0}) == (
        "calls: 240 made, 0 from cache, 16 retries, 0 failed; 24 unreadable answers of 240 "
        "(10.0%); 1.0 s")
    # answers from the cache are answers too (the count covers them: `Client.note_verdict`)
    assert "; 3 unreadable answers of 12 (25.0%)" in calls_text(
        {"calls": {"made": 4, "cached": 8, "shared": 0, "unreadable": 3}})
    # a document from before re-reads were told apart (no `shared`): its counts are of
    # readings, and the line says so (tests/cli/test_unreadable_units.py)
    assert "; 3 unreadable of 12 answers read, each reading counted (25.0%)" in calls_text(
        {"calls": {"made": 4, "cached": 8, "unreadable": 3}})
    # none of either: the line is as before
    assert calls_text({"calls": {"made": 5, "cached": 0, "retries": 0, "failed": 0,
                                 "unreadable": 0}}) == "calls: 5 made, 0 from cache, 0 failed"
    # a document written before the count existed says nothing of it (not "0 unreadable")
    assert "unreadable" not in calls_text({"calls": {"made": 5, "cached": 0, "failed": 0}})


def test_an_audit_shows_its_unreadable_answers_in_the_terminal_json_and_report(
        tmp_path, isolated_cache):
    out = tmp_path / "audit"
    args = ["audit", "--judge", "sim?invalid=0.1&seed=0", "--data", "builtin:facts",
            "--probes", "position,verbosity", "--n", "30", "--out", str(out)]
    r = runner.invoke(app, args)
    assert r.exit_code == 0, r.output
    calls = json.loads((out / "results.json").read_text())["calls"]
    bad, answers = calls["unreadable"], calls["made"] + calls["cached"]
    assert 0 < bad < answers  # the planted 10% came back unreadable
    share = f"{100 * bad / answers:.1f}%"
    assert f"; {bad} unreadable answers of {answers} ({share})" in _said(r.output)
    assert f"{bad} unreadable answers of {answers} ({share})" in _page_text(out / "report.html")

    j = runner.invoke(app, [*args, "--json"])  # again, from the cache: the same answers
    assert j.exit_code == 0, j.output
    s = json.loads(j.stdout)
    assert s["calls"]["unreadable"] == bad and s["calls"]["retries"] == 0
    rep = runner.invoke(app, ["report", str(out), "--out", str(tmp_path / "r.html"), "--json"])
    assert rep.exit_code == 0, rep.output
    assert json.loads(rep.stdout)["calls"] == s["calls"] == Result.load(out).summary()["calls"]


@pytest.mark.usefixtures("no_keys")
def test_an_audit_against_a_server_answering_429s_says_its_retries(tmp_path, isolated_cache):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 4)
    out = tmp_path / "audit"
    with FakeLLMServer(faults=["429"] * 5, retry_after="0") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k"
        r = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                "--probes", "position", "--n", "4", "--out", str(out),
                                "--concurrency", "2", "--json"])
        sent = srv.count()
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["calls"]["retries"] == 5 and sent == doc["calls"]["made"] + 5
    assert (f"calls: {doc['calls']['made']} made, 0 from cache, 5 retries (5 HTTP 429), 0 "
            "failed") in _said(r.output)  # with their cause, on purpose
    assert json.loads(r.stdout)["calls"]["retries"] == 5
    assert "5 retries" in _page_text(out / "report.html")
