"""How the CLI process ends when something other than its command ends it: a reader that
went away (`judgeaudit audit ... | head -1`), and an exception no command expected (a
plugin's code failing at run time, a full disk, a bug in judgeaudit).

Exit codes are those of `judgeaudit.outcome`: a closed pipe never changes the run's
own code (0 ok, 1 a tripped gate, 3 a failed run), and a crash is exit 3, never Python's own
exit 1 (a tripped `--fail-on` gate)."""

from __future__ import annotations

import contextlib
import os
import sys
from typing import IO, Any

# ---- a reader that went away -------------------------------------------------------------


class PipeSafe:
    """A standard stream (stdout or stderr) that outlives its reader: when a write or flush
    fails with BrokenPipeError (`| head -1` exited, a CI log collector stopped reading), its
    file descriptor is pointed at /dev/null (the Python docs' "Note on SIGPIPE") and the
    command goes on to its end, so the process exits with the code its run had (0, or 1 for
    a tripped gate, 3 for a failed run), not with the 1 of an uncaught BrokenPipeError (read
    as a tripped gate) nor the 120 of a failed flush at exit. What is written afterwards is
    discarded; results.json and report.html are written as ever."""

    def __init__(self, inner: IO[str]):
        self.inner = inner
        self.broken = False

    def write(self, s: Any) -> int:
        try:
            return self.inner.write(s)
        except BrokenPipeError:
            self._reader_gone()
            return len(s)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.inner.flush()
        except BrokenPipeError:
            self._reader_gone()

    def _reader_gone(self) -> None:
        self.broken = True
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self.inner.fileno())
            finally:
                os.close(devnull)
        # what the failed write left in the stream's buffer now goes to /dev/null
        with contextlib.suppress(OSError, ValueError):
            self.inner.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def guard_std_streams() -> None:
    """Make sys.stdout and sys.stderr `PipeSafe` (once; a stream that is None, as under
    pythonw, stays None)."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is not None and not isinstance(stream, PipeSafe):
            setattr(sys, name, PipeSafe(stream))


def silence_std_streams() -> None:
    """After a BrokenPipeError that got past `PipeSafe`: point both standard streams' file
    descriptors at /dev/null, so the interpreter's last flush cannot fail again."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:
            continue
        with contextlib.suppress(OSError, ValueError, AttributeError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, stream.fileno())
            finally:
                os.close(devnull)


# ---- an exception no command expected ----------------------------------------------------


def crash_reason(exc: BaseException) -> tuple[str, bool]:
    """(one line saying what failed, whether a plugin is blamed). A plugin is blamed when
    the innermost frame of the traceback that is a plugin's or judgeaudit's own is the
    plugin's (`plugins.blame`): "plugin DIST (GROUP entry point NAME = VALUE) failed:
    ExcType: message"."""
    from judgeaudit import plugins

    who = plugins.blame(exc)
    what = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if who is not None:
        return f"plugin {who} failed: {what}", True
    return f"unexpected {type(exc).__name__}: a bug in judgeaudit", False


__all__ = ["PipeSafe", "crash_reason", "guard_std_streams", "silence_std_streams"]
