"""The calls in flight at Ctrl-C or SIGTERM are not paid for twice: the run sends nothing new,
gives them a short grace period (2 s) to finish, caches their answers as any answer is, then
stops as before (exit 130 or 143, one message that now says how many it kept and cut off,
`calls.kept_in_flight` and `calls.given_up_in_flight` in --json). They were cancelled with
the run, their answers lost, and the re-run paid for them again. A second signal during the
grace stops at once, writing nothing more; --no-cache has no grace (nothing would be kept).

The CLI runs in a child process (real signals to a real process) against a real loopback
server in this process that answers each request after a fixed delay and counts them; the
tests wait for that count, not for a fixed time."""

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
N = 10  # items: 2 * N calls (both orders)
AT_ONCE = 4  # --concurrency: the calls in flight when the signal comes


def _start(srv: FakeLLMServer, data: Path, out: Path, *extra: str,
           env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """evaluate in a child process, its first AT_ONCE calls sent (and not answered yet)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
         f"openai:m?base_url={srv.openai_url}&api_key=k", "--data", f"jsonl:{data}",
         "--concurrency", str(AT_ONCE), "--out", str(out), "--json", *extra],
        env=env or _env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_as_at_a_terminal)
    deadline = time.monotonic() + 60
    while srv.count() < AT_ONCE and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert srv.count() == AT_ONCE, "the child never got going"
    return child


def test_answers_in_flight_at_sigint_are_cached_and_not_paid_again(tmp_path):
    """SIGINT while 4 calls are in flight (each answered 1.0 s after it was sent): nothing new
    is sent, the 4 answers arrive within the 2 s grace and are cached, the run exits 130
    saying so; the re-run sends only the calls never sent (16), not 20 as before."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    cache = tmp_path / "c.sqlite"
    with FakeLLMServer(latency=1.0, logprobs=False) as srv:
        child = _start(srv, data, tmp_path / "a", "--cache", str(cache))
        child.send_signal(signal.SIGINT)
        stdout, err = child.communicate(timeout=60)
        assert child.returncode == 130, err
        first = srv.count()
        assert first == AT_ONCE, "a call was sent after the signal"
        lines = _stop_lines(err)
        assert len(lines) == 1, err
        assert lines[0].startswith("interrupted (SIGINT): finished calls are in the cache"), err
        assert lines[0].endswith(f"of the calls in flight at the signal, {AT_ONCE} answered "
                                 "within the 2 s grace and were cached"), err
        calls = json.loads(stdout)["calls"]
        assert (calls["kept_in_flight"], calls["given_up_in_flight"]) == (AT_ONCE, 0), calls
        assert calls["made"] == AT_ONCE and calls["not_sent"] == calls["failed"] == 2 * N - 4
        assert _cached(cache) == AT_ONCE  # every request paid for is in the cache
        doc = json.loads((tmp_path / "a" / "results.json").read_text())
        assert doc["run"]["exit_code"] == 130 and doc["calls"]["kept_in_flight"] == AT_ONCE
        assert "4 answered within the 2 s grace" in doc["run"]["message"]

        srv.latency = 0.0
        rerun = subprocess.run(
            [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
             f"openai:m?base_url={srv.openai_url}&api_key=k", "--data", f"jsonl:{data}",
             "--cache", str(cache), "--out", str(tmp_path / "b")],
            env=_env(), capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        # no request is paid for twice: the re-run asks only for what was never sent
        assert srv.count() - first == 2 * N - AT_ONCE


def test_a_double_ctrl_c_keeps_the_grace(tmp_path):
    """Two SIGINTs 0.1 s apart (a double Ctrl-C, a supervisor's SIGINT then SIGTERM) are one
    request (REPEAT_WINDOW): the calls in flight keep their grace and are cached. The second
    signal cut the grace (review9 finding 4): 0 kept, 4 cut off, the re-run paid again."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    cache = tmp_path / "c.sqlite"
    with FakeLLMServer(latency=1.5, logprobs=False) as srv:
        child = _start(srv, data, tmp_path / "a", "--cache", str(cache))
        child.send_signal(signal.SIGINT)
        time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        stdout, err = child.communicate(timeout=60)
        assert srv.count() == AT_ONCE
    assert child.returncode == 130, err
    assert len(_stop_lines(err)) == 1, err
    calls = json.loads(stdout)["calls"]
    assert (calls["kept_in_flight"], calls["given_up_in_flight"]) == (AT_ONCE, 0), calls
    assert _cached(cache) == AT_ONCE


def test_a_second_signal_in_the_grace_stops_at_once_writing_nothing(tmp_path):
    """With a 30 s grace ($JUDGEAUDIT_INTERRUPT_GRACE) and answers that take 10 s, the run
    waits after the first SIGINT (it stopped at once before: nothing kept); a second SIGINT
    ends the wait at once: exit 130, the 4 calls cut off and said so, none cached."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    cache = tmp_path / "c.sqlite"
    env = {**_env(), "JUDGEAUDIT_INTERRUPT_GRACE": "30"}
    with FakeLLMServer(latency=10.0, logprobs=False) as srv:
        child = _start(srv, data, tmp_path / "a", "--cache", str(cache), env=env)
        child.send_signal(signal.SIGINT)
        with pytest.raises(subprocess.TimeoutExpired):  # waiting for the calls in flight
            # past REPEAT_WINDOW (1 s) with room: at 1.0 s, the child handling the first
            # signal later than the second took it for a repeat now and then, and waited
            child.wait(timeout=1.5)
        t0 = time.monotonic()
        child.send_signal(signal.SIGINT)
        stdout, err = child.communicate(timeout=60)
        stopped_after = time.monotonic() - t0
        assert srv.count() == AT_ONCE
    assert child.returncode == 130, err
    # the answers were due 8 s or more later, the grace 28 s: a generous bound for a
    # loaded machine that still tells "at once" from waiting for either
    assert stopped_after < 6, stopped_after
    lines = _stop_lines(err)
    assert len(lines) == 1, err
    assert lines[0].endswith("0 answered within the 30 s grace and were cached, 4 were cut off "
                             "(a re-run asks them again)"), err
    calls = json.loads(stdout)["calls"]
    assert (calls["kept_in_flight"], calls["given_up_in_flight"]) == (0, AT_ONCE), calls
    assert calls["made"] == 0 and calls["cancelled"] == 2 * N
    assert _cached(cache) == 0


def test_no_cache_has_no_grace(tmp_path):
    """--no-cache: nothing would be kept, so SIGTERM stops at once as before (answers due in
    10 s are not waited for): exit 143, the line as before and the 4 calls in flight it cut
    off (counted in --json's `given_up_in_flight`, said on the line since s44), none kept."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    with FakeLLMServer(latency=10.0, logprobs=False) as srv:
        child = _start(srv, data, tmp_path / "a", "--no-cache")
        t0 = time.monotonic()
        child.send_signal(signal.SIGTERM)
        stdout, err = child.communicate(timeout=60)
        stopped_after = time.monotonic() - t0
        assert srv.count() == AT_ONCE
    assert child.returncode == 143, err
    assert stopped_after < 6, stopped_after
    assert _stop_lines(err) == [
        "terminated (SIGTERM): the answers were not kept (no cache: --no-cache); running the "
        "same command again pays for every call again; 4 calls in flight were cut off (a "
        "re-run asks them again)"], err
    calls = json.loads(stdout)["calls"]
    assert (calls["kept_in_flight"], calls["given_up_in_flight"]) == (0, AT_ONCE), calls


@pytest.mark.parametrize(("value", "seconds"), [(None, 2.0), ("0", 0.0), ("7.5", 7.5),
                                                ("abc", None), ("-1", None), ("31", None),
                                                ("nan", None)])
def test_grace_setting_from_the_environment(monkeypatch, value, seconds):
    """$JUDGEAUDIT_INTERRUPT_GRACE sets the grace (0 stops at once, as before it); a value
    that is not 0 to 30 seconds is a usage error (exit 2) naming the variable, when the run
    starts, not at Ctrl-C."""
    import typer

    from judgeaudit.cli.progress import LAST_ERROR
    from judgeaudit.cli.runner import interrupt_grace

    if value is None:
        monkeypatch.delenv("JUDGEAUDIT_INTERRUPT_GRACE", raising=False)
    else:
        monkeypatch.setenv("JUDGEAUDIT_INTERRUPT_GRACE", value)
    if seconds is not None:
        assert interrupt_grace() == seconds
        return
    with pytest.raises(typer.Exit) as err:
        interrupt_grace()
    assert err.value.exit_code == 2
    assert LAST_ERROR["msg"].startswith(f"JUDGEAUDIT_INTERRUPT_GRACE={value!r}: expected "
                                        "seconds from 0 to 30")
