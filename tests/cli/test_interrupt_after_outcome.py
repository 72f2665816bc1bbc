"""Signals once a run's pipeline has ended: while its results are written, and after its
outcome is printed.

A CI job cancelled sends SIGTERM (then SIGKILL); a user presses Ctrl-C. Once the outcome is
said, b7dfcdd ignored both, and Python's exit then waited for every non-daemon thread (the
local backend's forward pass in its ThreadPoolExecutor): the process did not end. While the
results were written, the first signal said nothing until the write was over, and a second
one under --no-cache said finished calls were in the cache.

The children here run the real CLI (`main()`, the simulated judge, builtin:facts); a slow
disk is stood in for by a report write that sleeps first (it says so on stderr), and a
forward pass still running by a non-daemon worker thread that sleeps.
"""

from __future__ import annotations

import json
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from .test_interrupt import _sigint_as_at_a_terminal
from .test_interrupt_signals import _env, _stop_lines

# A forward pass of the local backend still under way when the command ends (its executor's
# worker thread is not a daemon: Python's exit joins it).
_HANGS = """
import sys, time
from concurrent.futures import ThreadPoolExecutor
ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgeaudit-local")
ex.submit(time.sleep, 60)
from judgeaudit.cli.main import main
sys.argv = ["judgeaudit", *sys.argv[1:]]
main()
"""

# The report written slowly (a slow disk): the results are being written for `SLOW` seconds.
SLOW = 5.0
_WRITES_SLOWLY = f"""
import sys, time
import judgeaudit.report as R
orig = R.write_report
def slow(*a, **k):
    print("[slow report write begins]", file=sys.stderr, flush=True)
    time.sleep({SLOW}); return orig(*a, **k)
R.write_report = slow
from judgeaudit.cli.main import main
sys.argv = ["judgeaudit", *sys.argv[1:]]
main()
"""


def _audit(script: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", script, "audit", "--judge", "sim?seed=1", "--data",
         "builtin:facts", "--n", "8", "--probes", "position", "--out", str(out), "--no-cache",
         *extra],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_as_at_a_terminal)


class _Lines:
    """The child's stderr, line by line as it comes (a thread reads it), so that a test can
    wait for one line for a given time."""

    def __init__(self, child: subprocess.Popen[str]) -> None:
        self.q: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self.reader = threading.Thread(target=self._read, args=(child,), daemon=True)
        self.reader.start()

    def _read(self, child: subprocess.Popen[str]) -> None:
        assert child.stderr is not None
        for line in child.stderr:
            self.q.put(line.rstrip("\n"))
        self.q.put(None)

    def next(self, timeout: float) -> str | None:
        """The next line within `timeout` seconds; None at its end or when none came."""
        try:
            line = self.q.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is not None:
            self.seen.append(line)
        return line

    def until(self, text: str, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.next(deadline - time.monotonic())
            if line is None:
                break
            if text in line:
                return
        raise AssertionError(f"no line with {text!r} on stderr: {self.seen[-20:]}")

    def rest(self) -> list[str]:
        self.reader.join(timeout=30)
        while self.next(0.01) is not None:
            pass
        return self.seen


def _end(child: subprocess.Popen[str], timeout: float) -> float | None:
    """Seconds until the child ended, at most `timeout` (then killed: None)."""
    t0 = time.monotonic()
    try:
        child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        return None
    return time.monotonic() - t0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_after_the_outcome_ends_the_process_at_once_with_the_runs_code(tmp_path,
                                                                                 sig):
    """The run has printed its --json summary (exit code 0) and Python's exit waits for a
    forward pass in a worker thread: the signal ends the process at once, exit 0, the
    run's own code. b7dfcdd ignored it, and the process went on for the thread's 60 s."""
    child = _audit(_HANGS, tmp_path / "o", "--json")
    assert child.stdout is not None
    summary = json.loads(child.stdout.readline())  # the outcome, printed
    assert summary["exit_code"] == 0, summary
    time.sleep(0.5)  # main() is past the command: in Python's exit, joining the thread
    child.send_signal(sig)
    took = _end(child, timeout=10)
    err = child.stderr.read() if child.stderr else ""
    assert took is not None, f"{signal.Signals(sig).name} did not end the process in 10 s"
    assert child.returncode == 0, (child.returncode, err[-2000:])
    assert took < 5, took
    assert _stop_lines(err) == [], err[-2000:]
    assert json.loads((tmp_path / "o" / "results.json").read_text())["run"]["status"] == "ok"


def test_the_first_signal_while_the_results_are_written_is_said_at_once(tmp_path):
    """SIGINT while the report takes `SLOW` seconds to write: one line says so within a
    second (b7dfcdd said nothing until the write was over), then the run ends as without
    the signal, exit 0, the report written."""
    out = tmp_path / "o"
    child = _audit(_WRITES_SLOWLY, out)
    lines = _Lines(child)
    lines.until("[slow report write begins]")
    t0 = time.monotonic()
    child.send_signal(signal.SIGINT)
    first = lines.next(timeout=1.5)
    said_after = time.monotonic() - t0
    took = _end(child, timeout=60)
    err = lines.rest()
    assert first == ("note: SIGINT while the run's results are being written: they are "
                     "written in full, then the run exits with its own code (a signal again "
                     "more than 1 s from now stops it at once)"), (first, err[-20:])
    assert said_after < 1.5, said_after
    assert took is not None and child.returncode == 0, (child.returncode, err[-20:])
    assert (out / "report.html").is_file()
    assert _stop_lines("\n".join(err)) == [], err[-20:]


def test_a_second_signal_while_the_results_are_written_under_no_cache_says_none_was_kept(
        tmp_path):
    """--no-cache, SIGINT while the results are written, SIGINT again 1.5 s later: the run
    stops at once (130), and its line says what the ordinary stop line says under
    --no-cache, that nothing was kept and a re-run pays again; b7dfcdd said finished calls
    were in the cache and a re-run resumes."""
    child = _audit(_WRITES_SLOWLY, tmp_path / "o")
    lines = _Lines(child)
    lines.until("[slow report write begins]")
    child.send_signal(signal.SIGINT)
    time.sleep(1.5)  # past the repeat window: the user insists
    child.send_signal(signal.SIGINT)
    took = _end(child, timeout=60)
    err = lines.rest()
    assert took is not None and took < SLOW, took
    assert child.returncode == 130, (child.returncode, err[-20:])
    stops = _stop_lines("\n".join(err))
    assert stops == [
        "interrupted (SIGINT) again as the run's results were being written: its folder "
        "holds them if they were written by then, else the record saying the run did not "
        "finish; the answers were not kept (no cache: --no-cache); running the same command "
        "again pays for every call again"], err[-20:]
