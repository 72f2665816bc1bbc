"""The retries of a run by their cause (`CallStats.retried`, `outcome.retries_text`): a field
tester's calls line said "20 retries" without saying why. A real loopback server answers
scripted 429s and 5xxs before its answers."""

from __future__ import annotations

import json

import pytest
from fakeserver import judge_request

from judgeaudit.llm import CallStats, Client, RetryPolicy, make_provider
from judgeaudit.outcome import retries_text, sum_calls

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"base_delay": 0.005, "max_delay": 0.02}


async def test_retries_are_counted_by_the_error_they_came_after(fake_server):
    srv = fake_server(faults=["429", "429", "429", "503", "500", "429"], retry_after="0")
    client = Client(make_provider("openai", "fake", {"base_url": srv.openai_url,
                                                     "api_key": "k"}),
                    concurrency=1, retry=RetryPolicy(max_retries=6, **FAST))
    outs = [await client.call(judge_request(i)) for i in range(3)]
    assert all(o.text in ("A", "B") for o in outs)
    s = client.stats
    assert s.retries == 6 and s.retried == {"rate_limit": 4, "server": 2}
    doc = json.loads(json.dumps(s.as_dict()))
    assert doc["retried"] == {"rate_limit": 4, "server": 2}
    assert retries_text(doc) == "6 retries (4 HTTP 429, 2 HTTP 5xx)"
    # a judge and its panel add up
    assert retries_text(sum_calls([doc, doc])) == "12 retries (8 HTTP 429, 4 HTTP 5xx)"
    assert CallStats.merge([s, s]).retried == {"rate_limit": 8, "server": 4}
    await client.aclose()


def test_a_document_without_causes_says_the_count_alone():
    assert retries_text({"retries": 20}) == "20 retries"
    assert retries_text({"retries": 0, "retried": {}}) == ""
    assert retries_text({"retries": 3, "retried": {"timeout": 2, "connection": 1}}) == (
        "3 retries (2 timeouts, 1 connection failures)")
