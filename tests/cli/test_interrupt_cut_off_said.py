"""The stop line says how many calls in flight a stop cut off whenever any was, not only
after a grace (field finding, s44): with $JUDGEAUDIT_INTERRUPT_GRACE=0 (and --no-cache, which
has no grace) the line said nothing of them and only --json's `given_up_in_flight` counted
them. A child process stopped by a real SIGTERM against a real loopback server whose answers
take 10 s (helpers of tests/cli/test_interrupt_grace.py)."""

from __future__ import annotations

import json
import signal
import sys

import pytest
from fakeserver import FakeLLMServer

from .test_cli import write_items
from .test_interrupt_grace import AT_ONCE, N, _start
from .test_interrupt_signals import _env, _stop_lines

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_a_grace_of_0_says_the_calls_in_flight_it_cut_off(tmp_path):
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    env = {**_env(), "JUDGEAUDIT_INTERRUPT_GRACE": "0"}
    with FakeLLMServer(latency=10.0, logprobs=False) as srv:
        child = _start(srv, data, tmp_path / "a", "--cache", str(tmp_path / "c.sqlite"),
                       env=env)
        child.send_signal(signal.SIGTERM)
        stdout, err = child.communicate(timeout=60)
    assert child.returncode == 143, err
    calls = json.loads(stdout)["calls"]
    assert calls["given_up_in_flight"] == AT_ONCE, calls
    lines = _stop_lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith("terminated (SIGTERM): finished calls are in the cache"), err
    assert lines[0].endswith(f"; {AT_ONCE} calls in flight were cut off (a re-run asks them "
                             "again)"), err
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    assert f"{AT_ONCE} calls in flight were cut off" in doc["run"]["message"], doc["run"]
