"""Writing a file whole or not at all: a temporary file beside it, renamed into place.

The temporary file comes from `tempfile.mkstemp`, which makes it 0600 whatever the umask; it
gets the mode a plain `open(path, "w")` would give before the rename, so a results folder, a
report or a plan stays readable by whoever the user's umask lets read it (a web server
serving report.html, a CI step uploading artifacts as another user). A neutral module: it
imports nothing of ours, so `report`, `llm` and the CLI all use it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import IO

_umask_lock = threading.Lock()


def new_file_mode() -> int:
    """The mode `open(path, "w")` gives a new file here: 0o666 less the process umask."""
    with _umask_lock:  # reading the umask means setting it; threads here agree on it
        mask = os.umask(0o022)
        os.umask(mask)
    return 0o666 & ~mask


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike[str], *, binary: bool = False) -> Iterator[IO]:
    """Open a temporary file beside `path` for writing (text as UTF-8, or `binary`). On a
    clean exit it gets the umask's mode and replaces `path` in one rename; on an error it
    is deleted and `path` is left as it was (a failed write raises an OSError naming
    `path`)."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with (os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8")) as f:
            yield f
        os.chmod(tmp, new_file_mode())
        os.replace(tmp, target)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if exc.filename is None:  # a failed write (no space left) names no file: name it
            raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc
        raise
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write `text` to `path` whole or not at all (`atomic_file`); returns the path."""
    with atomic_file(path) as f:
        f.write(text)
    return Path(path)


__all__ = ["atomic_file", "new_file_mode", "write_atomic"]
