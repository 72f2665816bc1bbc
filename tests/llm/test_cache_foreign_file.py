"""--cache never alters a file that is not judgeaudit's cache.

Another tool's SQLite database given as --cache (`create table users(...)`) was silently
given judgeaudit's tables and switched to WAL, and the run went on (exit 0, every call paid
again); one with its own `calls` table failed late, "no such column: provider", after the
switch to WAL. Now an existing file is only read until it is known to be a cache
(`cache._not_a_cache`): empty, marked (`APPLICATION_ID`, written when judgeaudit makes or
first writes a cache), or an older cache (judgeaudit's tables and columns only). Anything
else is refused with exit 2 before any request and any write, naming the file and what it
holds, and stays byte for byte as it was, with no -wal/-shm files left beside it. Caches made
by every earlier schema (the SQL below, from git history) keep working, and are marked.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from fakeserver import FakeLLMServer, judge_request, write_pairs
from readonly_fs import make_read_only, make_writable, obeying_file_modes

from judgeaudit.llm import Cache, CacheError, Client, Response, make_provider

SRC = Path(__file__).resolve().parents[2] / "src"
pytestmark = pytest.mark.usefixtures("no_key_env")
APPLICATION_ID = 0x4A415544  # "JAUD", judgeaudit.llm.cache.APPLICATION_ID: a file format's mark

# The cache's SQL as each earlier version wrote it (`git log -p -- src/judgeaudit/llm/cache.py`):
# the tables were added one by one, their columns never changed.
_CALLS = ("CREATE TABLE calls (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT "
          "NULL, response TEXT NOT NULL, created REAL NOT NULL);"
          "CREATE INDEX calls_provider ON calls(provider, model);")
_INVALID = "CREATE TABLE invalid (key TEXT PRIMARY KEY, reason TEXT, created REAL);"
_BATCH = ("CREATE TABLE planned (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT "
          "NULL, choices TEXT NOT NULL, created REAL NOT NULL);"
          "CREATE TABLE batches (batch_id TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT "
          "NOT NULL, identity TEXT NOT NULL, params TEXT NOT NULL, status TEXT NOT NULL, n "
          "INTEGER NOT NULL, created REAL NOT NULL, updated REAL NOT NULL, info TEXT);"
          "CREATE TABLE batch_requests (batch_id TEXT NOT NULL, key TEXT NOT NULL, choices "
          "TEXT NOT NULL, PRIMARY KEY (batch_id, key));")
_REFUSALS = ("CREATE TABLE refusals (key TEXT PRIMARY KEY, kind TEXT NOT NULL, message TEXT "
             "NOT NULL, created REAL NOT NULL);")
_REFUSED_BY = ("CREATE TABLE refused_by (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model "
               "TEXT NOT NULL);")
OLD_SCHEMAS = {
    "6b3e8e3": _CALLS,
    "b5fbe57": _CALLS + _INVALID,
    "f5df8f2": _CALLS + _INVALID + _BATCH,
    "484fcd9": _CALLS + _INVALID + _BATCH + _REFUSALS,
    "0ac0fe4": _CALLS + _INVALID + _BATCH + _REFUSALS + _REFUSED_BY,
}


def old_cache(path: Path, version: str) -> None:
    """A cache as the code of `version` made it (WAL, its tables, no mark)."""
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript(OLD_SCHEMAS[version])
    con.commit()
    con.close()


def sqlite_file(path: Path, sql: str, wal: bool = False) -> None:
    con = sqlite3.connect(path)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
    con.executescript(sql)
    con.commit()
    con.close()


# What other files a user may give as --cache, and what the refusal says each holds.
FOREIGN = {
    "users": ("other.sqlite", "holds table users, not a judgeaudit cache"),
    "own_calls": ("calls.sqlite", "holds table calls (columns body, id), not a judgeaudit"),
    "cache_and_more": ("more.sqlite", "holds tables batch_requests, batches, calls, invalid, "
                                      "planned, refusals, refused_by, users, not a judgeaudit"),
    "other_app": ("app.sqlite", "is another application's SQLite database (application_id "
                                "0x0f055112), not a judgeaudit cache"),
    "wal_db": ("wal.sqlite", "holds tables a, b, not a judgeaudit cache"),
    "view_only": ("view.sqlite", "holds no tables but views v, not a judgeaudit cache"),
    "text": ("notes.txt", "is not a SQLite database"),
    "json": ("data.json", "is not a SQLite database"),
}


def make_foreign(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / FOREIGN[kind][0]
    if kind == "users":
        sqlite_file(path, "create table users(id integer primary key, name text);"
                          "insert into users(name) values ('ada');")
    elif kind == "own_calls":
        sqlite_file(path, "create table calls(id integer primary key, body text);"
                          "insert into calls(body) values ('x');")
    elif kind == "cache_and_more":  # judgeaudit's tables and a table of the user's
        sqlite_file(path, OLD_SCHEMAS["0ac0fe4"] + "create table users(id integer);")
    elif kind == "other_app":  # no tables yet, but marked as another application's
        sqlite_file(path, "PRAGMA application_id=252006674;")
    elif kind == "wal_db":
        sqlite_file(path, "create table a(x); create table b(y); insert into a values (1);",
                    wal=True)
    elif kind == "view_only":
        sqlite_file(path, "create view v as select 1 as one;")
    elif kind == "text":
        path.write_text("these are my notes, not a database\n" * 50)
    else:
        path.write_text(json.dumps({"items": list(range(300))}))
    return path


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def beside(path: Path) -> list[str]:
    """Files named after `path` (its -wal, -shm, -journal, if any)."""
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(path.name))


def cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """The real command line, `python -m judgeaudit ARGS`, with no key from the environment."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "JUDGEAUDIT_CACHE")}
    env.update(PYTHONPATH=str(SRC), COLUMNS="300")
    return subprocess.run([sys.executable, "-m", "judgeaudit", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=180)


def evaluate(srv: FakeLLMServer, data: Path, cache: Path, out: Path):
    return cli(["evaluate", "--judge", f"openai:m?base_url={srv.openai_url}&api_key=k",
                "--data", f"jsonl:{data}", "--cache", str(cache), "--out", str(out)],
               cache.parent)


# ---- the real command line ----------------------------------------------------------------

@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_a_run_given_another_file_as_cache_is_refused_and_leaves_it_unchanged(tmp_path, kind):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 4)
    path = make_foreign(tmp_path, kind)
    before, files = digest(path), beside(path)
    with FakeLLMServer() as srv:
        res = evaluate(srv, data, path, tmp_path / "out")
        assert srv.count() == 0  # no request before the refusal
    assert res.returncode == 2, res.stdout + res.stderr
    said = " ".join(res.stderr.split())
    assert f"{path.name}: {FOREIGN[kind][1]}" in said
    assert "Traceback" not in res.stderr
    assert digest(path) == before and beside(path) == files == [path.name]


@pytest.mark.parametrize("kind", ["users", "own_calls"])
@pytest.mark.parametrize("command", [["stats"], ["clear", "--yes"], ["forget", "--invalid"]])
def test_cache_commands_refuse_another_file_and_leave_it_unchanged(tmp_path, kind, command):
    path = make_foreign(tmp_path, kind)
    before = digest(path)
    res = cli(["cache", *command, "--cache", str(path)], tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"{path.name}: {FOREIGN[kind][1]}" in " ".join(res.stderr.split())
    assert digest(path) == before and beside(path) == [path.name]


def test_a_cache_made_by_the_oldest_schema_is_used_by_a_run_and_marked(tmp_path):
    """The first run's answers, in a cache with the first version's SQL (calls only): the
    run asks nothing again, and the file gets today's tables and the mark."""
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 4)
    fresh, old = tmp_path / "fresh.sqlite", tmp_path / "old.sqlite"
    with FakeLLMServer() as srv:
        first = evaluate(srv, data, fresh, tmp_path / "a")
        assert first.returncode == 0, first.stderr
        paid = srv.count()
        old_cache(old, "6b3e8e3")
        con = sqlite3.connect(old)
        con.execute("ATTACH ? AS fresh", (str(fresh),))
        con.execute("INSERT INTO calls SELECT * FROM fresh.calls")
        con.commit()
        con.close()
        again = evaluate(srv, data, old, tmp_path / "b")
        assert again.returncode == 0, again.stderr
        assert paid == 8 and srv.count() == paid  # every answer from the old cache
    con = sqlite3.connect(old)
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"calls", "invalid", "planned", "refusals", "refused_by", "batches"} <= tables
    con.close()
    stats = cli(["cache", "stats", "--cache", str(old)], tmp_path)
    assert stats.returncode == 0 and "old.sqlite: 8 entries" in stats.stdout + stats.stderr


# ---- the Cache ----------------------------------------------------------------------------

@pytest.mark.parametrize("version", sorted(OLD_SCHEMAS))
def test_every_earlier_schema_opens_keeps_its_answers_and_is_marked(tmp_path, version):
    path = tmp_path / "c.sqlite"
    old_cache(path, version)
    con = sqlite3.connect(path)
    con.execute("INSERT INTO calls VALUES ('k', 'openai', 'm', ?, 0)",
                (Response(text="B").to_json(),))
    con.commit()
    con.close()
    c = Cache(path)
    assert not c.read_only and c.get("k").text == "B"
    c.put("k2", "openai", "m", Response(text="A"))
    assert c.mark_invalid("k2", "unparseable") and c.stats().entries == 2
    c.close()
    con = sqlite3.connect(path)
    assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert con.execute("PRAGMA user_version").fetchone()[0] == 1
    con.close()
    Cache(path).close()  # marked: opens again


def test_a_new_cache_is_marked_and_an_empty_file_is_taken(tmp_path):
    new, empty, blank_db = tmp_path / "new.sqlite", tmp_path / "empty.sqlite", tmp_path / "b.db"
    empty.touch()
    sqlite_file(blank_db, "", wal=True)  # a SQLite file with nothing in it (4 KB)
    assert blank_db.stat().st_size > 0
    for path in (new, empty, blank_db):
        c = Cache(path)
        c.put("k", "sim", "default", Response(text="A"))
        c.close()
        con = sqlite3.connect(path)
        assert con.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID, path
        con.close()
        assert Cache(path).get("k").text == "A"


def test_a_marked_cache_is_taken_whatever_else_it_holds(tmp_path):
    """The mark is judgeaudit's word: a user's own table in a marked cache is no refusal."""
    path = tmp_path / "c.sqlite"
    Cache(path).close()
    sqlite_file(path, "create table notes(text);")
    c = Cache(path)
    assert c.stats().entries == 0
    c.close()


def test_many_openers_of_one_new_file_all_get_the_cache(tmp_path):
    """The tables and the mark are made in one transaction: a process opening the file while
    another makes it sees it empty or whole, never half made (and refused)."""
    path = tmp_path / "c.sqlite"
    errors: list[Exception] = []

    def open_it() -> None:
        try:
            Cache(path).close()
        except Exception as exc:  # noqa: BLE001 (collected, asserted below)
            errors.append(exc)

    threads = [threading.Thread(target=open_it) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def _open_and_close(path: str) -> str | None:
    try:
        Cache(Path(path)).close()
    except Exception as exc:  # noqa: BLE001 (returned, asserted by the caller)
        return str(exc)
    return None


def test_many_processes_opening_one_new_file_all_get_the_cache(tmp_path):
    """Processes (two CI jobs, a pool of workers) making one new cache at once: one that
    read the file as another made it met SQLite's deadlock guard when it switched the file to
    WAL ("database is locked" at once, no busy wait) and failed "cannot be created" (5 of 60
    rounds of 12 processes here; a CI run of the thread test above failed so). The open is
    tried again after a short wait."""
    ctx = multiprocessing.get_context("fork")
    errors: list[str] = []
    with ctx.Pool(8) as pool:
        for k in range(30):
            path = str(tmp_path / f"c{k}.sqlite")
            errors += [e for e in pool.map(_open_and_close, [path] * 8) if e]
    assert errors == []


def test_a_read_only_file_with_a_calls_table_and_more_is_refused(tmp_path):
    path = make_foreign(tmp_path, "cache_and_more")
    make_read_only(path)
    try:
        with obeying_file_modes(tmp_path), pytest.raises(
                CacheError, match=r"more.sqlite: holds tables .*users, not a judgeaudit cache"):
            Cache(path)
    finally:
        make_writable(path)


async def test_a_read_only_old_cache_still_answers(tmp_path, fake_server):
    """A read-only cache of the newest unmarked schema (it cannot be marked): read as before."""
    path = tmp_path / "c.sqlite"
    srv = fake_server()
    spec = {"base_url": srv.openai_url, "api_key": "k"}
    old_cache(path, "0ac0fe4")
    first = Client(make_provider("openai", "m", spec), Cache(path))
    await first.map([judge_request(i) for i in range(3)])
    await first.aclose()
    first.cache.close()
    con = sqlite3.connect(path)
    con.execute("PRAGMA application_id=0")  # as the old code left it
    con.commit()
    con.close()
    make_read_only(path)
    try:
        with obeying_file_modes(tmp_path):
            cache = Cache(path)
            client = Client(make_provider("openai", "m", spec), cache)
            await client.map([judge_request(i) for i in range(3)])
            assert cache.read_only and client.stats.cached == 3 and client.stats.made == 0
            await client.aclose()
            cache.close()
    finally:
        make_writable(path)
    assert srv.count() == 3
