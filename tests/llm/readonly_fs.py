"""Real read-only files for the tests, also when they run as root (CI does).

Root writes a `chmod a-w` file anyway: CAP_DAC_OVERRIDE lets it (and CAP_DAC_READ_SEARCH
reads a `chmod 0` one). So, as root, the tests give those capabilities up: in this thread
for a while (`obeying_file_modes`: out of the effective set, kept in the permitted set and
put back after), or for good in a child process before it runs the real command
(`drop_write_override`, a `preexec_fn`: out of the bounding set, so the command, every
thread of it, has them no more). The kernel then refuses the writes as it does for any
user: no mount, no mock. A user other than root obeys the modes anyway; where the
capabilities cannot be changed the tests skip, saying why.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

CAP_DAC_OVERRIDE = 1  # linux/capability.h
CAP_DAC_READ_SEARCH = 2
_CAPS = (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH)
PR_CAPBSET_DROP = 24  # linux/prctl.h
_CAP_V3 = 0x20080522


class _Header(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _Data(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _set_override(on: bool) -> None:
    """Put the two capabilities in (or take them out of) this thread's effective set."""
    libc = _libc()
    header, data = _Header(_CAP_V3, 0), (_Data * 2)()
    if libc.capget(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capget")
    bits = sum(1 << cap for cap in _CAPS)
    if on:
        data[0].effective |= bits
    else:
        data[0].effective &= ~bits
    if libc.capset(ctypes.byref(header), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")


def _refused(probe_dir: Path) -> bool:
    """Whether a `chmod a-w` file really cannot be opened for writing now."""
    probe = probe_dir / ".readonly-probe"
    probe.write_text("")
    probe.chmod(0o444)
    try:
        with open(probe, "a"):
            return False
    except PermissionError:
        return True
    finally:
        probe.chmod(0o644)
        probe.unlink()


@contextlib.contextmanager
def obeying_file_modes(probe_dir: Path) -> Iterator[None]:
    """This thread obeys file modes inside the block (root: without the capabilities)."""
    dropped = False
    if os.geteuid() == 0:
        try:
            _set_override(False)
            dropped = True
        except (OSError, AttributeError) as exc:  # AttributeError: no capget in this libc
            pytest.skip(f"root cannot give up CAP_DAC_OVERRIDE here ({exc}): no read-only "
                        "file")
    try:
        if not _refused(probe_dir):
            pytest.skip("a chmod a-w file is still writable here: no read-only file to test")
        yield
    finally:
        if dropped:
            _set_override(True)


def drop_write_override() -> None:
    """`preexec_fn`: the child (root or not) obeys file modes, every thread of it."""
    if os.geteuid() != 0:
        return
    for cap in _CAPS:
        if _libc().prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap})")


def make_read_only(*paths: Path) -> None:
    """`chmod a-w` each path (files and directories)."""
    for p in paths:
        p.chmod(p.stat().st_mode & ~0o222)


def make_writable(*paths: Path) -> None:
    """Give the owner its write bit back (tmp_path must be removable after the test)."""
    for p in paths:
        p.chmod(p.stat().st_mode | 0o200)
