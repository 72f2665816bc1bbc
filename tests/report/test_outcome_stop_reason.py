"""A run that failed because the server asked to wait for hours (a daily quota, Retry-After
3600) says so in its reason: the error line, `run.message` and the report said only "rate
limited ... Rate limit reached" when every call was already under way as the client stopped
sending (none was left unsent, so the "N of them not sent: why" part was never added); the
explanation was in a warning at the top of stderr and in `calls.not_sent_why` only. A real
OpenAI-compatible server on loopback answers every call 429 with Retry-After 3600."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.outcome import assess

WHY = ("the server asks to wait 1.0 h before the next call (a daily or hourly quota?); run "
       "again then: finished calls are cached")


def test_the_reason_names_why_the_client_stopped_sending_when_no_call_was_left_unsent():
    calls = {"made": 0, "cached": 0, "failed": 4, "not_sent": 0, "not_sent_why": WHY,
             "first_error": "openai: rate limited (HTTP 429): Rate limit reached",
             "errors": {"rate_limit": 4}}
    run = assess(n_valid=0, n_planned=2, calls=calls, what="items")
    assert run["status"] == "failed"
    assert run["message"] == (
        "run failed: 4 of 4 calls failed; only 0 of 2 items have a valid verdict, fewer than "
        "--min-valid 1 (first error: openai: rate limited (HTTP 429): Rate limit reached); "
        + WHY)
    # with calls left unsent it is said once, as before
    run = assess(n_valid=0, n_planned=2, calls={**calls, "failed": 10, "not_sent": 6})
    assert run["message"].count(WHY) == 1 and f"6 of them not sent: {WHY}" in run["message"]
    # no reason recorded: nothing added
    run = assess(n_valid=0, n_planned=2, calls={**calls, "not_sent_why": None})
    assert run["message"].endswith("Rate limit reached)")


@pytest.mark.usefixtures("no_keys")
def test_an_audit_stopped_by_a_daily_quota_says_so_in_its_error_record_and_report(
        tmp_path, isolated_cache):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 4)
    out = tmp_path / "audit"
    with FakeLLMServer(rule=lambda rec, attempt: "429", retry_after="3600",
                       rate_limit_message="Rate limit reached") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k"
        # 2 pairs, 2 orders: all 4 calls under way at once, so none is left unsent
        r = CliRunner().invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                     "--probes", "position", "--n", "2", "--out", str(out),
                                     "--concurrency", "8"])
        assert srv.count() == 4
    assert r.exit_code == 3, r.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["calls"]["not_sent"] == 0 and doc["calls"]["not_sent_why"] == WHY
    assert doc["run"]["message"].endswith(WHY)
    error = [ln for ln in r.output.splitlines() if ln.startswith("error:")]
    assert error and "asks to wait 1.0 h" in " ".join(
        r.output[r.output.index("error:"):].split())
    page = " ".join(re.sub(r"<[^>]+>", " ", (out / "report.html").read_text()).split())
    assert f"4 failed ({WHY})" in page  # the header's calls line
    assert page.count("asks to wait 1.0 h") == 2  # and the run's reason


def test_a_not_sent_reason_already_given_as_the_first_error_is_not_repeated():
    """A batch refused on a read-only cache: the first error and the not-sent reason are one
    paragraph, which the message gave twice."""
    why = "batch mode (batch=on) needs a cache it can write ... Nothing was submitted."
    calls = {"made": 0, "cached": 8, "failed": 8, "not_sent": 8, "not_sent_why": why,
             "first_error": f"openai: {why}"}
    run = assess(n_valid=0, n_planned=8, calls=calls, what="items")
    assert run["message"].count(why) == 1
    assert run["message"].endswith("; 8 of them not sent, for that reason")
