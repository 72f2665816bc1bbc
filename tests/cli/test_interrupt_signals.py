"""A run a signal ends says what is true, once: signals in quick succession (SIGINT, SIGINT,
SIGTERM 5 ms apart) gave exit 130 with no message, or two messages; under --no-cache it
promised a resume that paid every call again; its results.json and --json did not say it
was interrupted, so `judgeaudit report DIR --json` said exit code 3.

The CLI runs in a child process (real signals to a real process) against a real loopback
server in this process that counts the requests; the tests wait for that count, not for a
fixed time."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .test_cli import write_items
from .test_interrupt import SRC, _sigint_as_at_a_terminal, _SlowsDown

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
N = 30


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(SRC)
    return env


def _start(srv: _SlowsDown, data: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    """evaluate in a child process, started and sending calls (8 reached the server)."""
    child = subprocess.Popen(
        [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
         f"openai:m?base_url={srv.openai_url}&api_key=k", "--data", f"jsonl:{data}",
         "--concurrency", "2", "--out", str(out), "--json", *extra],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_as_at_a_terminal)
    deadline = time.monotonic() + 60
    while srv.count() < 8 and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.05)
    assert srv.count() >= 8, "the child never got going"
    return child


def _report_json(out: Path) -> dict:
    done = subprocess.run([sys.executable, "-m", "judgeaudit.cli.main", "report", str(out),
                           "--out", str(out / "again.html"), "--json"], env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _stop_lines(err: str) -> list[str]:
    return [ln for ln in err.splitlines() if ln.startswith(("interrupted", "terminated"))]


def test_signals_in_quick_succession_say_the_first_once(tmp_path):
    """SIGINT, SIGINT 5 ms later, SIGTERM 5 ms after: one interruption, the first signal's
    exit code (130), its one message, one --json object; the folder and `report --json`
    say it was interrupted by SIGINT, exit code 130."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    out = tmp_path / "a"
    with _SlowsDown(logprobs=False) as srv:
        child = _start(srv, data, out, "--cache", str(tmp_path / "c.sqlite"))
        for sig in (signal.SIGINT, signal.SIGINT, signal.SIGTERM):
            child.send_signal(sig)
            time.sleep(0.005)
        stdout, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    lines = _stop_lines(err)
    assert len(lines) == 1, err
    assert lines[0].startswith("interrupted (SIGINT): finished calls are in the cache"), err
    assert "resume" in lines[0]
    summary = json.loads(stdout)  # one object, nothing else on stdout
    assert summary["exit_code"] == 130 and summary["ok"] is False
    assert summary["reason"].startswith("run failed: interrupted (SIGINT): the run did not "
                                        "finish; finished calls are in the cache")
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["interrupted"] == "SIGINT" and doc["run"]["exit_code"] == 130
    assert doc["run"]["unfinished"] is True
    again = _report_json(out)
    assert again["exit_code"] == 130 and "interrupted (SIGINT)" in again["reason"]


def test_no_cache_sigterm_says_a_rerun_pays_again(tmp_path):
    """SIGTERM under --no-cache: exit 143, and the message says the answers were not kept
    (it said "finished calls are in the cache; run the same command again to resume", and
    the re-run paid all of them again); `report --json` says 143, terminated (SIGTERM)."""
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    out = tmp_path / "a"
    with _SlowsDown(logprobs=False) as srv:
        child = _start(srv, data, out, "--no-cache")
        child.send_signal(signal.SIGTERM)
        stdout, err = child.communicate(timeout=60)
    assert child.returncode == 143, err
    lines = _stop_lines(err)
    summary = json.loads(stdout)
    cut = summary["calls"]["given_up_in_flight"]  # said on the line since s44 when any was
    cut_said = "" if not cut else (
        "; 1 call in flight was cut off (a re-run asks it again)" if cut == 1 else
        f"; {cut} calls in flight were cut off (a re-run asks them again)")
    assert lines == ["terminated (SIGTERM): the answers were not kept (no cache: --no-cache); "
                     "running the same command again pays for every call again" + cut_said], err
    assert "in the cache" not in err and "resume" not in err
    assert summary["exit_code"] == 143 and "in the cache" not in summary["reason"]
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["interrupted"] == "SIGTERM" and doc["run"]["exit_code"] == 143
    assert "not kept" in doc["run"]["message"] and "resume" not in doc["run"]["message"]
    again = _report_json(out)
    assert again["exit_code"] == 143 and "terminated (SIGTERM)" in again["reason"]


def test_unfinished_document_without_a_cache_promises_no_resume(tmp_path):
    """What the folder holds while a run without a cache is under way (and after a kill -9,
    which leaves no chance to write more): no resume promised (with a cache, the resume);
    its recorded exit code stays 3 and its reason the generic one (no signal is known)."""
    from judgeaudit.cli.runner import recorded_exit_code
    from judgeaudit.commands import UNFINISHED, Run
    from judgeaudit.session import Session

    async def body(_sess: Session) -> dict:
        return {}

    run = Run(command="evaluate", judge="sim", data="builtin:facts", body=body,
              n_planned=lambda: 10, min_valid=1, max_failed=0.2)
    none = run.unfinished_document(Session(cache=False))
    assert "not kept" in none["run"]["message"] and "in the cache" not in none["run"]["message"]
    assert "exit_code" not in none["run"] and recorded_exit_code(none) == 3
    kept = run.unfinished_document(Session(cache=tmp_path / "c.sqlite"))
    assert kept["run"]["message"] == f"run failed: {UNFINISHED}"
    assert recorded_exit_code(kept) == 3


def test_later_signals_are_the_same_request_until_the_window_ends(monkeypatch):
    """In the handler itself: a signal during the first one's window is ignored (no second
    message, no other exit code); one after it ends the process at once with the first
    signal's code (130), as the grace timer does if the run never winds down."""
    import threading

    from judgeaudit.cli import main, runner

    codes: list[int] = []
    said: list[int] = []
    two = threading.Semaphore(0)

    def fake_exit(code: int) -> None:
        codes.append(code)
        two.release()

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(main, "SIGTERM_GRACE", 0.2)
    monkeypatch.setattr(main, "REPEAT_WINDOW", 60.0)
    monkeypatch.setattr(main, "_TERMINATING", {"asked": False, "signal": None, "at": 0.0})
    monkeypatch.setitem(runner._RUNNING, "stop", None)
    monkeypatch.setattr(runner, "terminate_run", lambda *_: True)  # a run that never ends
    monkeypatch.setattr(runner, "say_stopped", lambda: said.append(runner._RUNNING["stop"]))
    main._on_signal(signal.SIGINT, None)
    main._on_signal(signal.SIGINT, None)
    main._on_signal(signal.SIGTERM, None)
    assert main._TERMINATING["signal"] == signal.SIGINT
    main._TERMINATING["at"] -= 120  # the window is over: the user insists
    main._on_signal(signal.SIGTERM, None)
    assert codes == [130] and said == [signal.SIGINT]
    assert two.acquire(timeout=10)  # the first one's exit, then the grace timer's
    assert two.acquire(timeout=10) and codes == [130, 130]
