"""`judgeaudit ingest` into a read-only cache is refused up front, in one message.

It opened the cache read-only (`Cache.read_only`, meant for runs: their cached answers are
still read), warned "the run goes on without storing answers (a re-run asks them again)"
(there is no run: ingest does nothing but store), then failed "0 answers were stored
before" (exit 2). Now one error says the cache cannot be written and what to do (exit 2),
before the answers file is read. The child processes obey file modes also as root
(`readonly_fs.drop_write_override`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from readonly_fs import drop_write_override, make_read_only, make_writable

JUDGE = "sim?seed=0"


def judgeaudit(*args: str, cwd: Path, read_only: bool = False) -> subprocess.CompletedProcess:
    """The real command; `read_only`: in a process that obeys file modes (root too)."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}
    env.pop("JUDGEAUDIT_CACHE", None)
    return subprocess.run([sys.executable, "-m", "judgeaudit.cli.main", *args], cwd=cwd,
                          env=env, preexec_fn=drop_write_override if read_only else None,
                          capture_output=True, text=True, timeout=300)


def rows(cache: Path) -> int:
    uri = cache.absolute().as_uri() + "?mode=ro&immutable=1"
    with contextlib.closing(sqlite3.connect(uri, uri=True)) as con:
        return con.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


@pytest.fixture
def planned(tmp_path) -> Path:
    """A plan of 3 pairs (6 requests) made with shared/calls.sqlite, an answers file for
    every request, then the cache file and its directory made read-only."""
    (tmp_path / "shared").mkdir()
    res = judgeaudit("--plan-only", "plan.jsonl", "evaluate", "--judge", JUDGE, "--data",
                     "builtin:facts", "--limit", "3", "--cache", "shared/calls.sqlite",
                     "--out", "run", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    with open(tmp_path / "answers.jsonl", "w", encoding="utf-8") as out:
        for i, line in enumerate((tmp_path / "plan.jsonl").read_text().splitlines()):
            body = {"id": f"c{i}", "object": "chat.completion", "model": "m",
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": "A"}}]}
            out.write(json.dumps({"custom_id": json.loads(line)["custom_id"],
                                  "response": {"status_code": 200, "body": body}}) + "\n")
    cache = tmp_path / "shared" / "calls.sqlite"
    for side in ("-wal", "-shm"):  # a read-only cache as it is shipped: one file
        Path(f"{cache}{side}").unlink(missing_ok=True)
    make_read_only(cache, tmp_path / "shared")
    check = subprocess.run([sys.executable, "-c", f"open({str(cache)!r}, 'a')"],
                           preexec_fn=drop_write_override, capture_output=True, text=True)
    if check.returncode == 0:
        make_writable(tmp_path / "shared", cache)
        pytest.skip("a chmod a-w file is still writable in a child here: no read-only cache")
    yield tmp_path
    make_writable(tmp_path / "shared", cache)


def test_ingest_into_a_read_only_cache_is_refused_up_front_in_one_message(planned):
    res = judgeaudit("ingest", "answers.jsonl", "--plan", "plan.jsonl", "--cache",
                     "shared/calls.sqlite", cwd=planned, read_only=True)
    said = " ".join((res.stdout + res.stderr).split())
    assert res.returncode == 2, said
    assert said == ("error: ingest: cache shared/calls.sqlite: cannot be written: read-only "
                    "(the file is not writable); nothing was stored: ingest stores answers, so "
                    "make it writable or ingest into a writable copy with --cache COPY (a copy "
                    "keeps its answers and the planned requests the answers are matched with)")
    # before: a run's warning first ("the run goes on without storing answers"), then this
    assert "goes on without storing" not in said and "WARNING" not in said
    assert rows(planned / "shared" / "calls.sqlite") == 0
    assert sorted(p.name for p in (planned / "shared").iterdir()) == ["calls.sqlite"]


def test_the_writable_copy_the_message_advises_takes_the_answers(planned):
    shutil.copy(planned / "shared" / "calls.sqlite", planned / "copy.sqlite")
    make_writable(planned / "copy.sqlite")
    res = judgeaudit("ingest", "answers.jsonl", "--plan", "plan.jsonl", "--cache",
                     "copy.sqlite", cwd=planned, read_only=True)
    assert res.returncode == 0, res.stderr
    assert "ingested 6 answers of 6 lines" in " ".join((res.stdout + res.stderr).split())
    assert rows(planned / "copy.sqlite") == 6
