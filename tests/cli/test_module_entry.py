"""`python -m judgeaudit` is the `judgeaudit` command, exit codes included: for a Python whose
scripts directory is not on PATH. It said "No module named judgeaudit.__main__"."""

from __future__ import annotations

import subprocess
import sys

import judgeaudit


def run(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judgeaudit", *args], capture_output=True,
                          text=True, timeout=120, **kw)


def test_python_m_judgeaudit_runs_the_command(tmp_path, isolated_cache):
    res = run("--version")
    assert res.returncode == 0, res.stderr
    assert judgeaudit.__version__ in res.stdout
    gate = run("audit", "--judge", "sim?position=4", "--probes", "position", "--n", "40",
               "--fail-on", "position", "--out", str(tmp_path / "a"))
    assert gate.returncode == 1, gate.stderr  # the release gate's exit code, unchanged
    bad = run("audit", "--n", "0", "--out", str(tmp_path / "b"))
    assert bad.returncode == 2 and "--n" in bad.stderr
