"""A reader that goes away (`judgeaudit audit ... | head -1`, a log collector that stops)
never changes the exit code: a run that succeeded exits 0 (it exited 1, a tripped gate to a
`set -o pipefail` CI job), a tripped gate still exits 1, and results.json is written.

The CLI runs in a child process whose stdout and/or stderr is a real pipe whose read end is
already closed: every write to it fails with EPIPE, deterministically."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"


def _run(args: list[str], tmp: Path, *, stdout_closed: bool, stderr_closed: bool
         ) -> subprocess.CompletedProcess[bytes]:
    r, w = os.pipe()
    os.close(r)  # nobody reads: every write gets EPIPE
    env = {**os.environ, "JUDGEAUDIT_CACHE": str(tmp / "cache.sqlite"),
           "PYTHONPATH": str(SRC)}
    env.pop("COLUMNS", None)
    try:
        return subprocess.run(
            [sys.executable, "-m", "judgeaudit", *args], env=env, cwd=tmp, timeout=300,
            stdout=w if stdout_closed else subprocess.DEVNULL,
            stderr=w if stderr_closed else subprocess.PIPE, check=False)
    finally:
        os.close(w)


def test_a_closed_output_pipe_keeps_exit_0_of_a_run_that_succeeded(tmp_path):
    out = tmp_path / "a"
    r = _run(["audit", "--judge", "sim", "--n", "10", "--out", str(out)], tmp_path,
             stdout_closed=True, stderr_closed=True)
    assert r.returncode == 0
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["status"] == "ok"
    assert (out / "report.html").exists()


def test_a_closed_stdout_under_json_keeps_exit_0_and_says_nothing_on_stderr(tmp_path):
    out = tmp_path / "b"
    r = _run(["audit", "--judge", "sim", "--n", "10", "--json", "--out", str(out)], tmp_path,
             stdout_closed=True, stderr_closed=False)
    assert r.returncode == 0, r.stderr.decode()
    err = r.stderr.decode()
    assert "Traceback" not in err and "BrokenPipeError" not in err and "error:" not in err
    assert json.loads((out / "results.json").read_text())["run"]["status"] == "ok"


def test_a_closed_pipe_keeps_a_tripped_gates_exit_1(tmp_path):
    out = tmp_path / "c"
    r = _run(["audit", "--judge", "sim?position=4", "--probes", "position", "--n", "40",
              "--fail-on", "biased", "--out", str(out)], tmp_path,
             stdout_closed=True, stderr_closed=True)
    assert r.returncode == 1
    doc = json.loads((out / "results.json").read_text())
    assert doc["gate"]["outcome"] == "tripped"


def test_a_closed_pipe_keeps_a_usage_errors_exit_2(tmp_path):
    r = _run(["audit", "--judge", "sim", "--n", "0", "--out", str(tmp_path / "d")], tmp_path,
             stdout_closed=True, stderr_closed=True)
    assert r.returncode == 2
