"""A cache that cannot be written: a team's shared, checked-in or mounted file (`chmod a-w`
on the file or its directory).

`Cache._open` connected read-write, set WAL and ran the schema script, so a file in a
read-only directory failed "cannot be opened for writing" although every answer a run
needed was in it; a read-only file in a writable directory opened (SQLite fell back to
reading by itself), left read-only -wal/-shm files behind that kept it read-only for its
owner after `chmod u+w`, and the batch, forget and clear writes ended in a traceback. Now
such a cache is opened for reading (`Cache.read_only`): reads work, every write is skipped
with one warning at the first of them, `write_error` says why, and planning (whose output is
the cache) fails saying so.

The files are really read-only: `readonly_fs.obeying_file_modes` makes root obey the modes.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import subprocess
import sys

import pytest
from fakeserver import judge_request
from readonly_fs import make_read_only, make_writable, obeying_file_modes

from judgeaudit.llm import Cache, CacheError, Client, Response, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")


def fill(path) -> None:
    """A cache with answers, invalid marks, planned requests and batches, closed cleanly."""
    c = Cache(path)
    c.put_many([(f"k{i}", "openai", "m", Response(text="A" if i % 2 else "B"))
                for i in range(6)])
    c.put("bad", "openai", "m", Response(text="?"))
    c.mark_invalid("bad", "unparseable answer: '?'")
    c.put_planned([("p1", "openai", "m", json.dumps(["A", "B"]))])
    c.add_batch("b-open", provider="openai", model="m", identity="id", params="{}",
                requests=[("p1", json.dumps(["A", "B"]))])
    c.add_batch("b-done", provider="openai", model="m", identity="id", params="{}",
                requests=[], status="done")
    c.close()


def snapshot(path) -> tuple:
    """What the file holds, read with plain sqlite3 (after the test gave write back)."""
    con = sqlite3.connect(path)
    try:
        return tuple(con.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall()
                     for t in ("calls", "invalid", "planned", "batches", "batch_requests"))
    finally:
        con.close()


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_read_only_file_is_read_and_leaves_nothing_behind(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    fill(path)
    make_read_only(path)
    with obeying_file_modes(tmp_path), caplog.at_level(logging.INFO, "judgeaudit.llm"):
        c = Cache(path)  # before: opened (SQLite fell back to reading), read_only unknown
        assert c.read_only
        assert c.write_error == f"cache {path}: cannot be written: read-only (the file is not " \
                                "writable)"
        assert c.get("k1").text == "A" and c.get("nope") is None
        assert c.has(["k0", "k5", "nope"]) == {"k0", "k5"}
        assert c.planned(["p1", "nope"]) == {"p1": ("openai", "m", json.dumps(["A", "B"]))}
        assert [b["batch_id"] for b in c.open_batches("id")] == ["b-open"]
        assert {b["batch_id"] for b in c.batches()} == {"b-open", "b-done"}
        assert c.invalid_reason("bad") == "unparseable answer: '?'"
        assert c.count_invalid() == 1
        s = c.stats()
        assert (s.entries, s.invalid, s.by_model) == (7, 1, {"openai:m": 7})
        # an answer marked invalid already: nothing to write, no warning (a cached run
        # re-reads the marks an earlier run made)
        assert c.mark_invalid("bad", "unparseable answer: '?'") is True
        c.close()
    assert warnings_of(caplog) == []  # a fully cached read loses nothing: no warning
    assert any("its answers are read, new ones are not stored" in r.getMessage()
               for r in caplog.records)  # said at INFO (-v)
    # no -wal/-shm files made beside it: read-only ones kept the file read-only for its
    # owner after chmod u+w (every write failed "attempt to write a readonly database")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.sqlite"]


def test_every_write_to_a_read_only_cache_is_skipped_with_one_warning(tmp_path, caplog):
    path = tmp_path / "c.sqlite"
    fill(path)
    before = snapshot(path)
    make_read_only(path)
    with obeying_file_modes(tmp_path), caplog.at_level(logging.WARNING, "judgeaudit.llm"):
        c = Cache(path)
        c.put("new", "openai", "m", Response(text="A"))
        c.put_many([("new2", "openai", "m", Response(text="B"))])
        assert c.mark_invalid("k1", "empty answer") is False
        # before: sqlite3.OperationalError tracebacks from here on
        c.add_batch("b-new", provider="openai", model="m", identity="id", params="{}",
                    requests=[("x", "[]")])
        c.set_batch_status("b-open", "done")
        assert c.forget_invalid() == 0
        assert c.clear("openai") == 0
        assert c.clear() == 0
        with pytest.raises(CacheError, match=r"c.sqlite: cannot be written: read-only \(the "
                                             r"file is not writable\)"):
            c.put_planned([("p2", "openai", "m", "[]")])  # a plan needs its cache
        assert c.get("new") is None and c.get("k1").text == "A"
        assert c.invalid_reason("bad") is not None
        c.close()
    warned = warnings_of(caplog)
    assert len(warned) == 1, warned
    assert "cannot be written: read-only (the file is not writable)" in warned[0]
    assert "the run goes on without storing answers (a re-run asks them again)" in warned[0]
    assert "give a writable --cache" in warned[0] and "free space" not in warned[0]
    make_writable(path)
    assert snapshot(path) == before  # nothing changed


def test_a_cache_in_a_read_only_directory_is_read(tmp_path):
    """The file is writable, its directory is not: WAL needs its -wal/-shm files there.
    Before: CacheError "cannot be opened for writing: attempt to write a readonly database"."""
    shared = tmp_path / "shared"
    shared.mkdir()
    path = shared / "c.sqlite"
    fill(path)
    make_read_only(shared)
    try:
        with obeying_file_modes(tmp_path):
            c = Cache(path)
            assert c.read_only and "its directory is not writable" in c.write_error
            assert c.stats().entries == 7 and c.get("k2").text == "B"
            c.put("new", "openai", "m", Response(text="A"))  # skipped, no traceback
            assert c.get("new") is None
            c.close()
    finally:
        make_writable(shared)
    assert sorted(p.name for p in shared.iterdir()) == ["c.sqlite"]


def test_a_killed_runs_wal_is_read_in_a_read_only_directory(tmp_path):
    """A run killed mid-way leaves its last answers in the -wal file (with its -shm): read
    through SQLite's read-only WAL support, not lost to the file alone."""
    shared = tmp_path / "shared"
    shared.mkdir()
    path = shared / "c.sqlite"
    fill(path)
    subprocess.run([sys.executable, "-c", (
        "import os, sqlite3, sys\n"
        "c = sqlite3.connect(sys.argv[1])\n"
        "c.execute('PRAGMA journal_mode=WAL')\n"
        "c.execute(\"INSERT INTO calls VALUES ('late', 'openai', 'm', ?, 0)\", (sys.argv[2],))\n"
        "c.commit()\n"
        "os._exit(0)\n"), str(path), Response(text="A").to_json()], check=True, timeout=60)
    assert (shared / "c.sqlite-wal").stat().st_size > 0
    make_read_only(shared, *shared.iterdir())
    try:
        with obeying_file_modes(tmp_path):
            c = Cache(path)
            assert c.read_only and c.get("late").text == "A" and c.stats().entries == 8
            c.close()
    finally:
        make_writable(shared, *shared.iterdir())


def test_an_old_read_only_cache_reads_with_empty_side_tables(tmp_path):
    """A cache from before `invalid`, `planned` and the batch tables: they cannot be made in
    the file, so they are empty ones of the connection's own (TEMP)."""
    path = tmp_path / "old.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, provider TEXT NOT NULL, "
                "model TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)")
    con.execute("INSERT INTO calls VALUES ('k', 'local', 'm', ?, 0)",
                (Response(text="C").to_json(),))
    con.commit()
    con.close()
    make_read_only(path)
    with obeying_file_modes(tmp_path):
        c = Cache(path)
        assert c.read_only and c.get("k").text == "C"
        assert c.planned(["k"]) == {} and c.batches() == [] and c.open_batches() == []
        assert c.count_invalid() == 0 and c.invalid_reason("k") is None
        assert c.stats().by_backend == {"local:m": {"transformers": 1}}
        assert c.mark_invalid("k", "empty") is False  # skipped, not written to a TEMP table
        assert c.invalid_reason("k") is None
        c.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.sqlite"]


def test_a_read_only_file_that_is_no_cache_is_named(tmp_path):
    other = tmp_path / "other.sqlite"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (text TEXT)")
    con.commit()
    con.close()
    text = tmp_path / "notes.txt"
    text.write_text("these are my notes, not a database\n" * 200)
    make_read_only(other, text)
    with obeying_file_modes(tmp_path):
        with pytest.raises(CacheError, match=r"other.sqlite: cannot be opened for writing \(the "
                                             r"file is not writable\), and it holds no "
                                             r"judgeaudit cache \(no calls table"):
            Cache(other)
        with pytest.raises(CacheError, match=r"notes.txt: is not a SQLite database"):
            Cache(text)


def test_a_missing_cache_in_a_read_only_directory_fails_as_before(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    make_read_only(shared)
    try:
        with obeying_file_modes(tmp_path), pytest.raises(
                CacheError, match=r"shared/c.sqlite: cannot be created: unable to open"):
            Cache(shared / "c.sqlite")
    finally:
        make_writable(shared)
    assert list(shared.iterdir()) == []


def test_an_unreadable_cache_says_it_can_be_neither_written_nor_read(tmp_path):
    path = tmp_path / "c.sqlite"
    fill(path)
    path.chmod(0)
    try:
        with obeying_file_modes(tmp_path), pytest.raises(
                CacheError, match=r"cannot be opened for writing \(the file is not writable\), "
                                  r"nor for reading: unable to open database file"):
            Cache(path)
    finally:
        path.chmod(0o644)


async def test_a_client_on_a_read_only_cache_uses_its_answers_and_makes_the_rest(
        fake_server, tmp_path, caplog):
    srv = fake_server()
    path = tmp_path / "c.sqlite"
    spec = {"base_url": srv.openai_url, "api_key": "k"}
    first = Client(make_provider("openai", "m", spec), Cache(path))
    answers = await first.map([judge_request(i) for i in range(4)])
    await first.aclose()
    first.cache.close()
    make_read_only(path)
    with obeying_file_modes(tmp_path):
        cache = Cache(path)
        client = Client(make_provider("openai", "m", spec), cache, concurrency=2)
        with caplog.at_level(logging.WARNING, "judgeaudit.llm"):
            again = await client.map([judge_request(i) for i in range(4)])
            assert client.stats.made == 0 and client.stats.cached == 4
            assert [a.text for a in again] == [a.text for a in answers]
            assert warnings_of(caplog) == []
            more = await client.map([judge_request(i) for i in range(4, 10)])
        assert all(o.text in ("A", "B") for o in more)  # answered, not stored
        assert client.stats.made == 6 and client.stats.failed == 0
        assert srv.count() == 10
        warned = warnings_of(caplog)
        assert len(warned) == 1 and "cannot be written: read-only" in warned[0]
        assert cache.stats().entries == 4
        await client.aclose()
        cache.close()
    assert os.listdir(tmp_path) == ["c.sqlite"]


async def test_a_request_asked_again_on_a_read_only_cache_is_paid_for_once(
        fake_server, tmp_path):
    """The client read a cache that stopped storing and never its run's memory, so each
    re-ask of a request (the audit's shared baseline, once per probe) was sent and paid for
    again: 3 made for 1 request."""
    srv = fake_server()
    path = tmp_path / "c.sqlite"
    Cache(path).close()
    make_read_only(path)
    spec = {"base_url": srv.openai_url, "api_key": "k"}
    with obeying_file_modes(tmp_path):
        cache = Cache(path)
        client = Client(make_provider("openai", "m", spec), cache)
        for _ in range(3):
            out = await client.map([judge_request(0), judge_request(1)])
            assert all(o.text in ("A", "B") for o in out)
        assert (client.stats.made, client.stats.cached, client.stats.shared) == (2, 4, 4)
        assert srv.count() == 2
        await client.aclose()
        cache.close()
