"""Ctrl-C (or SIGTERM: a CI job cancelled, a container stopped) in the middle of `evaluate`:
the process stops promptly, says how to resume, exits 130 (143), and every verdict it
finished is in the cache, so the re-run asks only for the rest.

The CLI runs in a child process (a real SIGINT to a real process) against a real loopback
server in this process."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.report import write_report

from .test_cli import write_items

SRC = Path(__file__).resolve().parents[2] / "src"
N = 30


class _SlowsDown(FakeLLMServer):
    """Answers the first calls in 0.25 s, the rest in 5 s until `fast` is set: the child
    cannot finish before the SIGINT, however late a loaded machine lets the test send it."""

    fast = False

    @property
    def latency(self) -> float:
        return 0.25 if self.fast or self.count() < 10 else 5.0

    @latency.setter
    def latency(self, _value: float) -> None:
        pass


def _sigint_as_at_a_terminal() -> None:
    """In the child, before Python starts: SIGINT's default action. A test run started as a
    background job inherits SIGINT ignored (POSIX shells do that to background jobs), the
    child would inherit it too, and Python then installs no KeyboardInterrupt handler: the
    run goes on to the end, as it should for a job nobody can Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _cached(cache: Path) -> int:
    if not cache.exists():
        return 0
    with sqlite3.connect(cache) as c:
        return c.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize(("sig", "code", "said"), [(signal.SIGINT, 130, "interrupted"),
                                                   (signal.SIGTERM, 143, "terminated")])
def test_signal_stops_keeps_finished_verdicts_and_resumes(tmp_path, sig, code, said):
    data = tmp_path / "items.jsonl"
    write_items(data, N)
    cache = tmp_path / "cache.sqlite"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    env["PYTHONPATH"] = str(SRC)
    # an earlier run's results in the folder: the interrupted run must not leave them there
    # as its own (they stayed, "ok", and --json printed nothing)
    earlier = subprocess.run([sys.executable, "-m", "judgeaudit.cli.main", "evaluate",
                              "--judge", "sim", "--data", f"jsonl:{data}", "--no-cache",
                              "--out", str(tmp_path / "a")], env=env, capture_output=True,
                             text=True, timeout=120)
    assert earlier.returncode == 0, earlier.stderr
    with _SlowsDown(logprobs=False) as srv:
        args = [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
                f"openai:m?base_url={srv.openai_url}&api_key=k", "--data", f"jsonl:{data}",
                "--cache", str(cache), "--concurrency", "2"]
        child = subprocess.Popen([*args, "--out", str(tmp_path / "a"), "--json"], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 preexec_fn=_sigint_as_at_a_terminal)
        deadline = time.monotonic() + 60
        while srv.count() < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.count() >= 8, "the child never got going"
        t0 = time.monotonic()
        child.send_signal(sig)
        out, err = child.communicate(timeout=30)
        stopped_after = time.monotonic() - t0
        assert child.returncode == code, err
        assert said in err and "resume" in err
        summary = json.loads(out)
        assert summary["ok"] is False and "did not finish" in summary["reason"]
        doc = json.loads((tmp_path / "a" / "results.json").read_text())
        assert doc["judge"].startswith("openai:m") and doc["run"]["status"] == "failed"
        assert "did not finish" in doc["run"]["message"]
        assert not (tmp_path / "a" / "report.html").exists()  # evaluate writes none
        # its report says it did not finish (it said the run judged too little, exit code 3)
        assert doc["run"]["unfinished"] is True
        page = write_report(tmp_path / "a", tmp_path / "unfinished.html").read_text()
        assert "This run did not finish (interrupted" in page and "exit code 3" not in page
        assert "could not be reached" not in page or not doc["calls"]["cancelled"]
        # generous bound against hangs (the 2 s is checked by hand on a quiet machine)
        assert stopped_after < 10, stopped_after
        finished = _cached(cache)
        assert 0 < finished < 2 * N
        # the calls made before the signal are counted (the document written before the
        # first call said 0 made, in results.json and in --json)
        assert summary["calls"]["made"] == doc["calls"]["made"] >= finished
        # the calls the interruption ended are said to be cancelled, not failures of the
        # server (it read "57 failed" with no error); SIGTERM counts them as Ctrl-C does (it
        # ended the process at once: the calls under way were counted neither way)
        calls = doc["calls"]
        assert calls["cancelled"] == calls["failed"] > 0
        assert summary["calls"]["cancelled"] == calls["cancelled"]  # --json says it
        # and the terminal: the calls line of the interrupted run
        assert f"{calls['failed']} cancelled by the interruption" in err
        assert not calls["errors"]
        # every call the run asked for is accounted for: answered, or failed as cancelled
        assert calls["made"] + calls["cached"] + calls["failed"] == 2 * N
        # and every request the server got is one answered or one the signal cut short
        sent = calls["made"] + calls["retries"] + calls["cancelled"] - calls["not_sent"]
        deadline = time.monotonic() + 5  # a request in the socket is counted a bit later
        while srv.count() != sent and time.monotonic() < deadline:
            time.sleep(0.05)
        assert srv.count() == sent, (srv.count(), calls)
        asked_before = srv.count()
        srv.fast = True

        rerun = subprocess.run([*args, "--out", str(tmp_path / "b")], env=env,
                               capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        # no finished call is made again: the re-run asks exactly for the rest
        assert srv.count() - asked_before == 2 * N - finished
        assert _cached(cache) == 2 * N


def test_sigterm_held_up_ends_after_the_grace_period(monkeypatch):
    """A run that does not wind down after SIGTERM (a worker thread in a forward pass) is
    ended regardless after SIGTERM_GRACE seconds, with exit 143; a SIGTERM when no run is
    under way ends the process at once."""
    import threading

    from judgeaudit.cli import main, runner

    ended = threading.Event()
    codes: list[int] = []

    def fake_exit(code: int) -> None:
        codes.append(code)
        ended.set()

    monkeypatch.setattr(os, "_exit", fake_exit)
    monkeypatch.setattr(main, "SIGTERM_GRACE", 0.2)
    monkeypatch.setattr(main, "_TERMINATING", {"asked": False})
    monkeypatch.setattr(runner, "terminate_run", lambda *_: True)  # a run that never ends
    t0 = time.monotonic()
    main._on_sigterm(signal.SIGTERM, None)
    assert not codes  # the run was asked to wind down, not ended
    assert ended.wait(5) and codes == [143]
    assert time.monotonic() - t0 >= 0.2

    codes.clear()
    monkeypatch.setattr(main, "_TERMINATING", {"asked": False})
    monkeypatch.setattr(runner, "terminate_run", lambda *_: False)  # no run under way
    main._on_sigterm(signal.SIGTERM, None)
    assert codes == [143]


def test_terminate_run_without_a_run_cancels_nothing():
    from judgeaudit.cli import runner

    assert runner.terminate_run() is False
    assert runner._RUNNING["terminated"] is False
