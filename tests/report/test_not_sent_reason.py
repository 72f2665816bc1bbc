"""Why calls went unsent is said from what the failed attempts were. A server that answered
every call at once with HTTP 500 was described as one that "could not be reached, never
answered in time or stopped answering" (a CI tester's audit against a 500-only server), in
the error line, `run.message`, the HUB-J commands' reason and the report header alike."""

from __future__ import annotations

import re

from judgeaudit.outcome import assess, not_sent_reason
from judgeaudit.report.html import render_report

CALLS = {"made": 0, "cached": 0, "failed": 780, "not_sent": 720,
         "first_error": "openai: HTTP 500 from http://127.0.0.1:1/v1: The server had an error",
         "errors": {"server": 316}}


def test_a_server_answering_only_500s_is_said_to_answer_server_errors():
    run = assess(n_valid=0, n_planned=30, calls=CALLS)
    assert ("720 of them not sent: the server kept failing (failed attempts: 316 server "
            "errors (HTTP 5xx))") in run["message"]
    assert "could not be reached" not in run["message"]


def test_each_kind_of_failure_is_named_and_a_mix_names_each():
    assert "(failed attempts: 3 connection failures) (run again" in not_sent_reason(
        {"errors": {"connection": 3}})
    # the counts say what failed, most first, not that nothing else came back: retried
    # attempts that later succeeded are among them (a reviewer's 2 429s among 40 refusals
    # read "could not be reached or answered only 429s")
    assert not_sent_reason({"errors": {"rate_limit": 2, "connection": 40}}, hint=False) == (
        "the server kept failing (failed attempts: 40 connection failures, 2 rate limits "
        "(HTTP 429))")
    # a kind it has no words for, or no kinds at all: the old general words
    for errors in ({"auth": 1, "server": 2}, {}, None):
        assert not_sent_reason({"errors": errors}, hint=False) == (
            "the server could not be reached, never answered in time or stopped answering")
    # the client's own reason comes first
    assert not_sent_reason({"not_sent_why": "the spend cap", "errors": {"server": 1}}) \
        == "the spend cap"


def test_the_report_header_says_the_same():
    doc = {"command": "evaluate", "judge": "openai:m", "data": "jsonl:x", "calls": CALLS,
           "run": assess(n_valid=0, n_planned=30, calls=CALLS)}
    page = " ".join(re.sub(r"<[^>]+>", " ", render_report(doc)).split())
    assert "720 not sent: the server kept failing (failed attempts: 316 server errors" in page
