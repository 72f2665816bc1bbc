"""Files written whole or not at all get the mode a plain open() gives (the umask's), not
mkstemp's 0600: results, reports and plans stay readable by whoever may read the folder."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from judgeaudit.files import atomic_file, new_file_mode, write_atomic


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    old = os.umask(0o022)
    os.umask(old)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    yield set_mask
    os.umask(old)


def _mode(p: Path) -> int:
    return stat.S_IMODE(p.stat().st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o027, 0o077, 0o002])
def test_written_file_has_the_mode_open_would_give(tmp_path, umask, mask):
    umask(mask)
    plain = tmp_path / "plain.txt"
    plain.write_text("x", encoding="utf-8")
    p = write_atomic(tmp_path / "out" / "results.json", "{}\n")
    assert p.read_text(encoding="utf-8") == "{}\n"
    assert _mode(p) == _mode(plain) == 0o666 & ~mask == new_file_mode()


def test_new_file_mode_leaves_the_umask_as_it_was(umask):
    umask(0o027)
    new_file_mode()
    assert os.umask(0o027) == 0o027


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    p = write_atomic(tmp_path / "report.html", "old")
    with pytest.raises(RuntimeError), atomic_file(p) as f:
        f.write("half of the new")
        raise RuntimeError("crash mid-write")
    assert p.read_text(encoding="utf-8") == "old"
    assert sorted(x.name for x in tmp_path.iterdir()) == ["report.html"]


def test_binary_mode_writes_bytes(tmp_path):
    with atomic_file(tmp_path / "b.bin", binary=True) as f:
        f.write(b"\x00\x01")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"


def test_plan_file_gets_the_umask_mode_too(tmp_path, umask):
    from judgeaudit.llm.plan import write_jsonl

    umask(0o022)
    write_jsonl(tmp_path / "plan.jsonl", [{"custom_id": "a"}])
    assert _mode(tmp_path / "plan.jsonl") == 0o644
