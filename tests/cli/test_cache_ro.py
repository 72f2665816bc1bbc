"""`judgeaudit cache stats` only reads the cache: it opens the file read-only (SQLite
`mode=ro`) and neither migrates nor marks it.

It opened the file for writing, as a run does: an older cache (e1ec95e's: five tables, no
application_id) got today's tables, its application_id and user_version, and grew from 1.41
to 1.43 MB, by a command that looks read-only (and an older judgeaudit sharing the file then
met a file it had not made). The old caches here are built as those builds made them."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.cache import APPLICATION_ID, Cache

runner = CliRunner()

# The tables of the cache e1ec95e made (llm/cache.py there): no refusals, no refused_by, no
# mark in the header.
OLD_SCHEMA = """
CREATE TABLE calls (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL,
                    response TEXT NOT NULL, created REAL NOT NULL);
CREATE INDEX calls_provider ON calls(provider, model);
CREATE TABLE invalid (key TEXT PRIMARY KEY, reason TEXT, created REAL);
CREATE TABLE planned (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL,
                      choices TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE batches (batch_id TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL,
                      identity TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL,
                      n INTEGER NOT NULL, created REAL NOT NULL, updated REAL NOT NULL,
                      info TEXT);
CREATE TABLE batch_requests (batch_id TEXT NOT NULL, key TEXT NOT NULL, choices TEXT NOT NULL,
                             PRIMARY KEY (batch_id, key));
"""


def _answer(i: int) -> str:
    return json.dumps({"content": f"[[A]] {i}", "raw": {}})


def old_cache(path: Path, n: int = 30, invalid: int = 3) -> sqlite3.Connection:
    """An e1ec95e cache with `n` answers of sim:default (`invalid` of them marked), in WAL
    as it kept it; the connection is returned (closed by the caller)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(OLD_SCHEMA)
    con.executemany("INSERT INTO calls VALUES (?, 'sim', 'default', ?, 0)",
                    [(f"k{i}", _answer(i)) for i in range(n)])
    con.executemany("INSERT INTO invalid VALUES (?, 'unparseable', 0)",
                    [(f"k{i}",) for i in range(invalid)])
    con.commit()
    return con


def facts(path: Path) -> tuple[str, int, int, list[str], list[str]]:
    """The file's bytes (digest), its header's marks, its tables, and the files beside it."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    con = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro&immutable=1", uri=True)
    try:
        app_id = con.execute("PRAGMA application_id").fetchone()[0]
        user = con.execute("PRAGMA user_version").fetchone()[0]
        tables = sorted(r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type='table'"))
    finally:
        con.close()
    beside = sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))
    return digest, app_id, user, tables, beside


def stats(path: Path) -> str:
    res = runner.invoke(app, ["cache", "stats", "--cache", str(path)])
    assert res.exit_code == 0, res.output
    return " ".join(res.output.split())


def test_stats_on_an_older_cache_leaves_the_file_as_it_was(tmp_path):
    path = tmp_path / "old.sqlite"
    old_cache(path).close()
    before = facts(path)
    assert before[1:4] == (0, 0, ["batch_requests", "batches", "calls", "invalid", "planned"])
    said = stats(path)
    assert "30 entries" in said and "sim:default: 30" in said
    assert "3 invalid answers marked" in said
    assert "read-only" not in said and "cannot be written" not in said  # it can be
    assert facts(path) == before  # same bytes, no mark, no new table, no -wal/-shm left


def test_stats_reads_what_a_running_writer_has_in_its_wal(tmp_path):
    """A run holding the cache open (its answers in the -wal, not yet in the file): stats
    reads them through SQLite's locks, and changes neither file."""
    path = tmp_path / "busy.sqlite"
    con = old_cache(path, n=5, invalid=0)
    try:
        con.execute("PRAGMA wal_autocheckpoint=0")
        con.executemany("INSERT INTO calls VALUES (?, 'sim', 'default', ?, 0)",
                        [(f"w{i}", _answer(i)) for i in range(7)])
        con.commit()
        wal = Path(f"{path}-wal")
        assert wal.stat().st_size > 0
        main, log = path.read_bytes(), wal.read_bytes()
        assert "12 entries" in stats(path)
        assert path.read_bytes() == main and wal.read_bytes() == log
    finally:
        con.close()


def test_stats_on_a_current_cache_does_not_write_it_either(tmp_path):
    path = tmp_path / "new.sqlite"
    Cache(path).close()  # made by this judgeaudit: marked, today's tables
    before = facts(path)
    assert before[1] == APPLICATION_ID and before[4] == [path.name]
    assert "entries" in stats(path)
    assert facts(path) == before
