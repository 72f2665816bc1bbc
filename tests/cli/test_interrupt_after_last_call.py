"""A signal that comes after a run's last call was sent, whose calls in flight all answer
within the interrupt grace, leaves nothing undone: nothing was left unsent, nothing was cut
off, every answer came back. Such a run read as interrupted (exit 130, no metrics, the
folder saying "did not finish") though its re-run was free; a CI job gating on the exit code
failed a complete run. It now finishes as it would have (results, report, metrics, exit 0),
with one line saying the signal came after the last call was sent and the calls in flight
all finished, and `run.signal_after_last_call` in results.json. A run with anything left
unsent or cut off still stops with 130 / 143 (tests/cli/test_interrupt_grace.py).

The CLI runs in a child process (real signals to a real process) against a real loopback
server in this process that answers each request after a fixed delay and counts them; the
tests wait for that count (every call sent), not for a fixed time."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer

from .test_cli import write_items
from .test_interrupt import _cached, _sigint_as_at_a_terminal
from .test_interrupt_signals import _env, _stop_lines

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
N = 3  # items: 2 * N calls (both orders), all sent at once (--concurrency 2 * N)
CALLS = 2 * N


def _start_all_sent(srv: FakeLLMServer, data: Path, out: Path, cache: Path,
                    env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """evaluate in a child process, every one of its calls sent (and not answered yet)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
         f"openai:m?base_url={srv.openai_url}&api_key=k", "--data", f"jsonl:{data}",
         "--concurrency", str(CALLS), "--out", str(out), "--cache", str(cache), "--json"],
        env=env or _env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_as_at_a_terminal)
    deadline = time.monotonic() + 60
    while srv.count() < CALLS and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    assert srv.count() == CALLS, "the child never sent all its calls"
    return child


def _late_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if "after the run's last call was sent" in ln]


@pytest.mark.parametrize(("signals", "name"), [
    ((signal.SIGINT,), "SIGINT"), ((signal.SIGTERM,), "SIGTERM"),
    # a double Ctrl-C (0.1 s apart: one request, REPEAT_WINDOW) changes nothing
    ((signal.SIGINT, signal.SIGINT), "SIGINT")])
def test_a_signal_after_the_last_call_was_sent_whose_calls_all_finish_ends_the_run_normally(
        tmp_path, signals, name):
    """Every call in flight at the signal (answered 1.0 s after it was sent) answers within
    the 2 s grace: exit 0, the results with their metrics, one line naming the signal and the
    calls that finished, no stop line; a re-run sends nothing."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    cache = tmp_path / "c.sqlite"
    out = tmp_path / "a"
    with FakeLLMServer(latency=1.0, logprobs=False) as srv:
        child = _start_all_sent(srv, data, out, cache)
        for i, sig in enumerate(signals):
            if i:
                time.sleep(0.1)
            child.send_signal(sig)
        stdout, err = child.communicate(timeout=60)
        assert child.returncode == 0, err
        assert srv.count() == CALLS
        assert _stop_lines(err) == [], err  # no "interrupted ..." / "terminated ..." line
        late = _late_lines(err)
        assert late == [f"note: {name} came after the run's last call was sent, and the "
                        f"{CALLS} calls in flight all answered within the 2 s grace and were "
                        "cached: the run is complete, its results are written as usual"], err
        summary = json.loads(stdout)
        assert summary["ok"] is True and summary["exit_code"] == 0, summary
        assert summary["calls"]["made"] == CALLS and summary["calls"]["kept_in_flight"] == CALLS
        doc = json.loads((out / "results.json").read_text())
        assert doc["run"]["status"] == "ok" and "interrupted" not in doc["run"]
        assert not doc["run"].get("unfinished"), doc["run"]
        assert doc["run"]["signal_after_last_call"] == {
            "signal": name, "in_flight": CALLS, "answered": CALLS, "grace_s": 2.0}
        assert doc["accuracy"]["n"] == N and doc["accuracy"]["ci95"], doc  # the run's numbers
        assert _cached(cache) == CALLS

        rerun = subprocess.run(
            [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
             f"openai:m?base_url={srv.openai_url}&api_key=k", "--data", f"jsonl:{data}",
             "--cache", str(cache), "--out", str(tmp_path / "b")],
            env=_env(), capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        assert srv.count() == CALLS  # the re-run was free: nothing was left to ask


def test_calls_still_in_flight_when_the_grace_ends_keep_143(tmp_path):
    """Every call sent, but the answers take 10 s and the grace is 1 s: they are cut off,
    so the run did not finish: exit 143, the stop line saying so, no note of completion."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    env = {**_env(), "JUDGEAUDIT_INTERRUPT_GRACE": "1"}
    with FakeLLMServer(latency=10.0, logprobs=False) as srv:
        child = _start_all_sent(srv, data, tmp_path / "a", tmp_path / "c.sqlite", env=env)
        child.send_signal(signal.SIGTERM)
        stdout, err = child.communicate(timeout=60)
    assert child.returncode == 143, err
    assert _late_lines(err) == [], err
    lines = _stop_lines(err)
    assert len(lines) == 1 and lines[0].endswith(
        f"0 answered within the 1 s grace and were cached, {CALLS} were cut off (a re-run "
        "asks them again)"), err
    calls = json.loads(stdout)["calls"]
    assert (calls["kept_in_flight"], calls["given_up_in_flight"]) == (0, CALLS), calls
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    assert doc["run"]["exit_code"] == 143 and "signal_after_last_call" not in doc["run"]
