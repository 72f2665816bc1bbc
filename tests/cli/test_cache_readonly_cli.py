"""A read-only cache through the real command in a real process: a team's shared cache,
filled by one run, then `chmod a-w` (file and directory), as a checked-in or mounted one is.

Before, every command on it failed "cache ...: cannot be opened for writing" (exit 2),
although every answer the run needed was in it. Now a run whose answers are all cached runs
as usual (same numbers, 0 calls, no warning); one that needs new calls makes them and warns
once that they are not stored; `cache clear` and `cache forget` fail naming the file (exit 2)
and delete nothing; `cache stats` says it is read-only.

The child processes obey file modes also as root (`readonly_fs.drop_write_override`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from readonly_fs import drop_write_override, make_read_only, make_writable

from judgeaudit.llm import Cache

JUDGE = "sim?position=1.5&invalid=0.2&seed=0"  # some wrong, some unreadable: numbers to keep
# the numbers a re-run from the cache must give again
NUMBERS = ("n", "n_valid", "n_invalid", "accuracy", "accuracy_valid", "first_position_rate",
           "position_consistency", "cohen_kappa", "verdicts")


def judgeaudit(*args: str, cwd: Path, read_only: bool = True) -> subprocess.CompletedProcess:
    """The real command; `read_only`: in a process that obeys file modes (root too)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    env.pop("JUDGEAUDIT_CACHE", None)
    return subprocess.run([sys.executable, "-m", "judgeaudit.cli.main", *args], cwd=cwd,
                          env=env, preexec_fn=drop_write_override if read_only else None,
                          capture_output=True, text=True, timeout=300)


def evaluate(limit: int, out: str, cwd: Path, read_only: bool = True):
    res = judgeaudit("evaluate", "--judge", JUDGE, "--data", "builtin:facts", "--limit",
                     str(limit), "--max-failed", "0.5", "--cache", "shared/calls.sqlite",
                     "--out", out, cwd=cwd, read_only=read_only)
    doc = json.loads((cwd / out / "results.json").read_text()) if res.returncode == 0 else {}
    return res, doc


@pytest.fixture
def shared_cache(tmp_path) -> Path:
    """A cache filled by a real run (12 pairs, both orders: 24 calls), then made read-only,
    file and directory; its owner gets write back after the test."""
    (tmp_path / "shared").mkdir()
    res, doc = evaluate(12, "first", tmp_path, read_only=False)
    assert res.returncode == 0, res.stderr
    assert doc["calls"]["made"] == 24 and doc["n_invalid"] > 0  # marks to re-read
    (tmp_path / "first.json").write_text(json.dumps({k: doc[k] for k in NUMBERS}))
    probe = tmp_path / "shared" / "probe"
    probe.write_text("")
    cache = tmp_path / "shared" / "calls.sqlite"
    make_read_only(cache, probe, tmp_path / "shared")
    check = subprocess.run([sys.executable, "-c", f"open({str(probe)!r}, 'a')"],
                           preexec_fn=drop_write_override, capture_output=True, text=True)
    if check.returncode == 0:
        make_writable(tmp_path / "shared")
        pytest.skip("a chmod a-w file is still writable in a child here: no read-only cache")
    assert "PermissionError" in check.stderr
    yield cache
    make_writable(tmp_path / "shared", cache)


def entries(cache: Path) -> int:
    c = Cache(cache)  # this process may still write: opened as it always was
    try:
        return c.stats().entries
    finally:
        c.close()


def test_a_fully_cached_run_on_a_read_only_cache_runs_as_before(tmp_path, shared_cache):
    res, doc = evaluate(12, "again", tmp_path)
    # before: exit 2, "cache shared/calls.sqlite: cannot be opened for writing: attempt to
    # write a readonly database"
    assert res.returncode == 0, res.stderr
    assert doc["calls"]["made"] == 0 and doc["calls"]["cached"] == 24
    first = json.loads((tmp_path / "first.json").read_text())
    assert {k: doc[k] for k in NUMBERS} == first  # the same numbers
    assert "cannot be written" not in res.stderr and "WARNING" not in res.stderr
    assert sorted(p.name for p in shared_cache.parent.iterdir()) == ["calls.sqlite", "probe"]


def test_a_run_needing_new_calls_makes_them_and_says_they_are_not_stored(tmp_path,
                                                                         shared_cache):
    res, doc = evaluate(16, "more", tmp_path)
    assert res.returncode == 0, res.stderr
    assert doc["run"]["status"] == "ok"
    assert doc["calls"]["cached"] == 24 and doc["calls"]["made"] == 8  # 4 new pairs x 2
    assert doc["n"] == 16
    assert res.stderr.count("cannot be written") == 1, res.stderr  # warned once
    said = " ".join(res.stderr.split())
    assert ("cache shared/calls.sqlite: cannot be written: read-only (the file is not "
            "writable); the run goes on without storing answers (a re-run asks them again)"
            in said)
    make_writable(shared_cache.parent, shared_cache)
    assert entries(shared_cache) == 24  # nothing stored


def test_cache_clear_and_forget_on_a_read_only_cache_fail_naming_it(tmp_path, shared_cache):
    for args in (["cache", "clear", "--yes"], ["cache", "clear", "--provider", "sim", "--yes"],
                 ["cache", "forget", "--invalid"]):
        res = judgeaudit(*args, "--cache", "shared/calls.sqlite", cwd=tmp_path)
        said = " ".join((res.stdout + res.stderr).split())
        command = " ".join(args[:2]) + (" --invalid" if "forget" in args else "")
        assert res.returncode == 2, said  # before: exit 2 "cannot be opened for writing"
        assert (f"error: {command}: cache shared/calls.sqlite: cannot be written: read-only "
                "(the file is not writable); nothing was deleted") in said
        assert "deleted 0" not in said and "forgot" not in said and "Traceback" not in said
    res = judgeaudit("cache", "stats", "--cache", "shared/calls.sqlite", cwd=tmp_path)
    said = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 0, res.stderr
    assert "24 entries" in said and "invalid answers marked" in said
    assert "read-only (the file is not writable): runs read its answers and store no new " \
           "ones" in said
    make_writable(shared_cache.parent, shared_cache)
    assert entries(shared_cache) == 24


def test_a_missing_cache_in_a_read_only_directory_still_fails_clearly(tmp_path, shared_cache):
    res = judgeaudit("evaluate", "--judge", JUDGE, "--data", "builtin:facts", "--limit", "4",
                     "--cache", "shared/other.sqlite", "--out", "x", cwd=tmp_path)
    said = " ".join(res.stderr.split())
    assert res.returncode == 2, said
    # the file named once (6ced46e): the option names it, the cache's message follows
    assert "--cache shared/other.sqlite: cannot be created" in said
