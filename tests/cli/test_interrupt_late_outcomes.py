"""What a signal late in a run says, when the run's end is not the signal's doing.

- A signal after the last call the run could send, the rest refused by the spend cap: the
  run ends as it would have (exit 3, the cap's outcome), and the note said "the run is
  complete" beside "8 of 12 calls failed; 8 of them not sent: the spend cap". It now says
  the signal came after the last call the run could send and how many the cap left unsent.
- A signal while the run's results are being written (its pipeline ended): it raised
  KeyboardInterrupt wherever the command was, exit 130 (or death by the signal) with no
  report.html and no --json beside a results.json saying ok. The results are now written
  and printed, the run exits with its own code and says the signal waited for them.
- Calls in flight that came back with an error (HTTP 500) within the grace: the stop line
  said "0 answered within the 2 s grace" though all 6 had answered; it now says they ended
  in an error and were not retried.

The CLI runs in a child process (real signals) against a real loopback server in this
process; the tests wait for its request count, or for results.json to say ok."""

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
from .test_interrupt import _sigint_as_at_a_terminal
from .test_interrupt_signals import _env, _stop_lines

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _evaluate(srv: FakeLLMServer, data: Path, out: Path, *extra: str,
              judge_extra: str = "") -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge",
         f"openai:m?base_url={srv.openai_url}&api_key=k{judge_extra}", "--data",
         f"jsonl:{data}", "--out", str(out), "--cache", str(out.parent / "c.sqlite"),
         "--json", *extra],
        env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_as_at_a_terminal)


def _wait_for(srv: FakeLLMServer, child: subprocess.Popen[str], n: int) -> None:
    deadline = time.monotonic() + 60
    while srv.count() < n and time.monotonic() < deadline and child.poll() is None:
        time.sleep(0.02)
    assert srv.count() == n, f"the child sent {srv.count()} calls, expected {n}"


def test_a_signal_after_the_last_call_the_spend_cap_let_through_says_the_rest_unsent(
        tmp_path):
    """6 items (12 calls), 4 at a time, about $1.28 a call under a $4.5 cap: 4 are sent,
    then the cap refuses the rest. SIGINT after the 4th is sent: exit 3 (the cap's outcome,
    as without the signal), and the note names the 8 calls the cap left unsent instead of
    calling the run complete."""
    data = tmp_path / "items.jsonl"
    write_items(data, 6)
    out = tmp_path / "a"
    with FakeLLMServer(latency=1.0, logprobs=False) as srv:
        child = _evaluate(srv, data, out, "--concurrency", "4", "--max-cost", "4.5",
                          judge_extra="&price_in=10000&price_out=10")
        _wait_for(srv, child, 4)
        child.send_signal(signal.SIGINT)
        stdout, err = child.communicate(timeout=60)
        assert srv.count() == 4
    assert child.returncode == 3, err
    assert _stop_lines(err) == [], err
    notes = [ln for ln in err.splitlines() if ln.startswith("note: SIGINT came after")]
    assert len(notes) == 1, err
    assert "the run is complete" not in notes[0], notes[0]
    assert notes[0].startswith("note: SIGINT came after the last call the run could send, "
                               "and the 1 call in flight answered within the 2 s grace"), notes
    assert ("; 8 calls were not sent because the spend cap is reached, not because of the "
            "signal") in notes[0], notes[0]
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["signal_after_last_call"]["not_sent"] == 8, doc["run"]
    assert doc["calls"]["not_sent"] == 8 and json.loads(stdout)["exit_code"] == 3


def test_calls_in_flight_that_came_back_with_an_error_are_said_apart(tmp_path):
    """Every first attempt answers HTTP 500 after 1 s; SIGINT once all 6 calls are sent.
    Their retries are held back, so the run stops (130), and the line says the 6 ended in an
    error within the grace and were not retried, not merely '0 answered'."""
    data = tmp_path / "items.jsonl"
    write_items(data, 3)
    out = tmp_path / "a"
    with FakeLLMServer(latency=1.0, logprobs=False,
                       rule=lambda rec, attempt: "500" if attempt == 0 else None) as srv:
        child = _evaluate(srv, data, out, "--concurrency", "6")
        _wait_for(srv, child, 6)
        child.send_signal(signal.SIGINT)
        stdout, err = child.communicate(timeout=60)
        assert srv.count() == 6  # no retry was sent after the signal
    assert child.returncode == 130, err
    lines = _stop_lines(err)
    assert len(lines) == 1, err
    assert lines[0].endswith(
        "of the calls in flight at the signal, 0 answered within the 2 s grace and were "
        "cached, 6 ended in an error within it (not retried: nothing is sent after the "
        "signal; a re-run asks them again)"), lines[0]
    calls = json.loads(stdout)["calls"]
    assert calls["retries"] == 0 and calls["failed"] == 6, calls
    assert "6 ended in an error" in json.loads(
        (out / "results.json").read_text())["run"]["message"]


def _items(path: Path, n: int) -> None:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"it-{i:02d}", "prompt": "Which answer is better?",
                                "response": "word " * (3 + i % 4) + f"answer {i}",
                                "quality": float(i)}) + "\n")


def _status(path: Path) -> str | None:
    try:
        return json.loads(path.read_text())["run"]["status"]
    except (OSError, ValueError, KeyError):
        return None


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_the_results_are_written_leaves_the_runs_own_exit_code(tmp_path, sig):
    """rank writes results.json, then report.html, then prints --json: a signal sent as
    soon as results.json says ok waits for the rest, and the run exits 0 (its own code) with
    report.html, the --json summary and one note; it exited 130 (143), or died by the
    signal, beside a folder saying ok."""
    items = tmp_path / "pool.jsonl"
    _items(items, 10)
    out = tmp_path / "r"
    with FakeLLMServer(latency=0.3, logprobs=False, answer="A") as srv:
        child = subprocess.Popen(
            [sys.executable, "-m", "judgeaudit.cli.main", "rank", "--judge",
             f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off", "--items",
             f"jsonl:{items}", "--k", "3", "--samples", "20000", "--covariates", "none",
             "--budget", "16", "--refit-every", "8", "--concurrency", "8", "--out", str(out),
             "--cache", str(tmp_path / "c.sqlite"), "--json"],
            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=_sigint_as_at_a_terminal)
        deadline = time.monotonic() + 120
        while (_status(out / "results.json") != "ok" and time.monotonic() < deadline
               and child.poll() is None):
            time.sleep(0.005)
        assert child.poll() is None, "the run ended before the signal could be sent"
        child.send_signal(sig)
        stdout, err = child.communicate(timeout=120)
    name = signal.Signals(sig).name
    assert child.returncode == 0, (child.returncode, err[-2000:])
    assert _stop_lines(err) == [], err
    summary = json.loads(stdout)
    assert summary["exit_code"] == 0 and summary["ok"] is True, summary
    assert (out / "report.html").is_file()
    assert _status(out / "results.json") == "ok"
    notes = [ln for ln in err.splitlines() if ln.startswith(f"note: {name} came after")]
    assert notes == [f"note: {name} came after the run's calls had all ended, as its results "
                     "were being written: they were written in full, and the run exits with "
                     "its own code (0), as without the signal"], err[-2000:]
