"""`judgeaudit` typed alone prints the full help (the commands list) on stdout and exits 0,
as `pip` and `cargo` do; it exited 2, argparse's and click's usage error, for a user who
asked for nothing wrong. Real usage errors keep exit 2."""

from __future__ import annotations

import subprocess
import sys

from typer.main import get_command

from judgeaudit.cli.main import app


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "judgeaudit", *args], capture_output=True,
                          text=True, timeout=120)


def test_the_bare_command_prints_the_help_and_exits_0():
    res = run()
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    out = res.stdout
    assert "Usage:" in out and "COMMAND [ARGS]" in out and "Commands" in out
    for name in get_command(app).commands:  # type: ignore[attr-defined]
        assert name in out, name
    assert out.split() == run("--help").stdout.split()  # the full help, as --help prints it


def test_usage_errors_still_exit_2():
    for args in (("-v",), ("no-such-command",)):
        res = run(*args)
        assert res.returncode == 2, (args, res.stdout, res.stderr)
        assert "Commands" not in res.stdout
