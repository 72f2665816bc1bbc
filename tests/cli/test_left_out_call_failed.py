"""Items whose calls were sent and failed are left out as "call_failed", not "not_sent"
("never sent"). A judge on a closed port: every attempt failed to connect, the breaker
stopped the client once one call's retries had waited (`RetryPolicy.window`), and the calls
waiting to retry then failed with the client's "not sent: ..." message, which read as never
sent: calls.failed 10, not_sent 0 beside `dropped: {"not_sent": 5}`. The audit now counts
them as failed calls when its clients sent every call (battery._sent_after_all). Real parts:
a loopback port with nothing listening, the real HTTP client."""

from __future__ import annotations

import socket

import pytest

import judgeaudit
from judgeaudit.llm import RetryPolicy

pytestmark = pytest.mark.usefixtures("isolated_cache")


def _closed_port() -> int:
    with socket.socket() as s:  # bound, then closed: nothing listens there
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_run_whose_calls_were_sent_and_failed_counts_its_items_call_failed():
    spec = f"openai:m?base_url=http://127.0.0.1:{_closed_port()}/v1&api_key=EMPTY"
    res = judgeaudit.audit(spec, "builtin:facts", probes="position", n=5, cache=False,
                           retry=RetryPolicy(max_retries=3, base_delay=0.05, max_delay=0.1))
    s = res.summary()
    assert not s["ok"]
    assert s["calls"]["failed"] == 10 and s["calls"]["not_sent"] == 0, s["calls"]
    assert res.data["dropped"] == {"call_failed": 5}, res.data["dropped"]
    assert res.data["probes"]["position"]["dropped"] == {"call_failed": 5}
