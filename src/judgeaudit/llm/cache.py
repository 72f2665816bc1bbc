"""SQLite (WAL) cache of model calls: every finished call is committed at once, so a killed
run loses nothing it paid for and a re-run makes no call twice.

Answers a judge could not use (an unparseable label, empty content, a response over the size
cap) are marked in the `invalid` table with the reason; `forget_invalid` deletes those calls
so the next run asks them again (`judgeaudit cache forget --invalid`).

Two side tables serve batch work (judgeaudit.llm.plan, judgeaudit.llm.batch): `planned` keeps
what `judgeaudit ingest` needs to parse an answer to a planned request (provider, model and
the request's choices, by cache key); `batches` and `batch_requests` keep every batch
submitted to a provider's batch API and the cache keys in it, so a killed run resumes polling
instead of submitting again; `refusals` keeps the too-long refusals `judgeaudit ingest` read
from a plan's output and those a live run got (the server said the prompt is over the model's
context), so the re-run fails those calls as the live call failed instead of planning or
sending them again and again (`refused_by` names a live refusal's provider and model). All
tables are created if missing: older cache files keep working.

A cache file judgeaudit makes is marked (`APPLICATION_ID` in the SQLite header, `PRAGMA
application_id`; `PRAGMA user_version` says the schema, `SCHEMA_VERSION`), and an older one is
marked the first time it is opened for writing. Nothing is written to an existing file before
it is known to be a cache (`_not_a_cache`): empty (0 bytes, or a database with nothing in
it), marked, or an older cache (only judgeaudit's tables, with their columns). Anything else
(another tool's database given as --cache) is refused, left byte for byte as it was: it was
silently given judgeaudit's tables and switched to WAL, or failed late "no such column".

A cache that cannot be written (a team's shared, checked-in or mounted file: the file, its
directory or its file system read-only) is opened for reading (`Cache.read_only`): a run
whose answers are all in it runs as usual, and one that needs new calls makes them, warned
once that they are not stored, as when the disk refuses a write mid-run (`Cache._write`).
"""

from __future__ import annotations

import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from judgeaudit.llm.base import Response
from judgeaudit.llm.redact import redact

_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS calls_provider ON calls(provider, model);
CREATE TABLE IF NOT EXISTS invalid (
    key TEXT PRIMARY KEY,
    reason TEXT,
    created REAL
);
CREATE TABLE IF NOT EXISTS planned (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    choices TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS refusals (
    key TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    message TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS refused_by (
    key TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batches (
    batch_id TEXT PRIMARY KEY,
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    identity TEXT NOT NULL,
    params TEXT NOT NULL,
    status TEXT NOT NULL,
    n INTEGER NOT NULL,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    info TEXT
);
CREATE TABLE IF NOT EXISTS batch_requests (
    batch_id TEXT NOT NULL,
    key TEXT NOT NULL,
    choices TEXT NOT NULL,
    PRIMARY KEY (batch_id, key)
);
"""

# judgeaudit's mark in a cache file's SQLite header (`PRAGMA application_id`): "JAUD".
APPLICATION_ID = 0x4A415544
# `PRAGMA user_version` of a marked cache: 1 is the tables of `_SCHEMA` (every cache before
# the mark has a subset of them, with the same columns).
SCHEMA_VERSION = 1
_MARK = f"PRAGMA application_id={APPLICATION_ID}; PRAGMA user_version={SCHEMA_VERSION};"


def _schema_tables() -> dict[str, frozenset[str]]:
    """Every table of `_SCHEMA` and its columns: what an unmarked (older) cache may hold."""
    con = sqlite3.connect(":memory:")
    try:
        con.executescript(_SCHEMA)
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: frozenset(r[1] for r in con.execute(f"PRAGMA table_info({n})"))
                for n in names}
    finally:
        con.close()


_TABLES = _schema_tables()
_INDEXES = frozenset({"calls_provider"})

# Batch states after which nothing more comes back (`Cache.open_batches` leaves them out).
FINAL_BATCH_STATES = frozenset({"done", "failed", "cancelled", "expired"})


class CacheError(ValueError):
    """The cache file cannot be used: a directory, not an SQLite database, cannot be made,
    or neither writable nor a readable judgeaudit cache."""


def default_cache_path() -> Path:
    """`$JUDGEAUDIT_CACHE` if set, else the user cache dir."""
    import os

    env = os.environ.get("JUDGEAUDIT_CACHE")
    if env:
        return Path(env)
    return Path(platformdirs.user_cache_dir("judgeaudit")) / "calls.sqlite"


log = logging.getLogger("judgeaudit.llm")

# What SQLite says when the disk, not the statement, refuses a write.
_DISK_REFUSED = re.compile(r"full|read-?only|disk I/O|unable to open|locked", re.IGNORECASE)
# What it says when an existing file cannot be opened for writing (read-only file, directory
# or file system); then the file is opened for reading (`Cache._open_read_only`).
_READ_ONLY = re.compile(r"read-?only|unable to open", re.IGNORECASE)
# The columns a file must have to be read as a cache (its `calls` table).
_CALLS_COLUMNS = frozenset({"key", "provider", "model", "response"})


@dataclass
class CacheStats:
    path: str
    entries: int
    bytes: int
    by_model: dict[str, int]
    invalid: int = 0  # answers marked invalid (see Cache.mark_invalid)
    # The embedded judge's entries ("local:MODEL") per backend that made them (`Cache.
    # local_backends`): its backends key apart but all store provider "local".
    by_backend: dict[str, dict[str, int]] = field(default_factory=dict)
    refusals: int = 0  # too-long refusals kept by runs and ingest (see Cache.put_refusals)


class _Locked(Exception):
    """SQLite's "database is locked" while a cache file is opened: tried again (`_open`)."""


class Cache:
    """Key -> Response store. Thread-safe; opened in WAL mode so readers never block writers."""

    def __init__(self, path: str | Path | None = None, *, reading: bool = False):
        """`reading`: only read an existing file (`judgeaudit cache stats`): opened `mode=ro`,
        never marked, given tables or switched to WAL (stats wrote to an older cache)."""
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        # Why answers are no longer stored (the disk refused a write, or the cache was opened
        # read-only), or None (`_write`).
        self.write_error: str | None = None
        # Opened for reading only: the file could not be opened for writing (`_open`).
        self.read_only = False
        self._warned = False  # the warning that answers are not stored was given (`_write`)
        self._conn = self._open_read_only(None, chosen=True) if reading else self._open()

    def _open(self) -> sqlite3.Connection:
        """Open (creating if needed) the database, or raise CacheError saying why not. Several
        processes making one new file at once can meet SQLite's deadlock guard (a reader
        upgrading to switch the file to WAL gets "database is locked" at once, its busy
        timeout not applied): that open is tried again, a few times, after a short wait."""
        for attempt in range(6):
            try:
                return self._open_once()
            except _Locked:
                time.sleep(0.02 * 2 ** attempt)
        return self._open_once(last=True)

    def _open_once(self, last: bool = False) -> sqlite3.Connection:
        """One try of `_open`. An existing cache that cannot be opened for writing is opened
        for reading instead (`_open_read_only`); a file that cannot be created still fails
        here; "database is locked" raises `_Locked` (tried again) unless `last`."""
        where = f"cache {self.path}"
        if self.path.is_dir():
            raise CacheError(f"{where}: is a directory (give a file path, e.g. "
                             f"{self.path / 'calls.sqlite'})")
        existed = self.path.exists()
        if existed and not _may_write(self.path):
            # Not even tried read-write: SQLite would open it read-only by itself and leave
            # read-only -wal/-shm files behind, which keep the file read-only for its owner
            # after `chmod u+w` (every write then fails "attempt to write a readonly database").
            return self._open_read_only(None)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"{where}: cannot be created: {exc.strerror or exc}") from None
        conn = None
        try:
            conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            marked = False
            if existed:  # only read until it is known to be a cache: a refused file is unchanged
                foreign = _not_a_cache(conn)
                if foreign is not None:
                    conn.close()
                    conn = None
                    raise CacheError(_refusal(self.path, foreign))
                marked = conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            # one transaction: another process opening the new file sees it empty or whole
            conn.executescript("BEGIN;" + _SCHEMA + ("" if marked else _MARK) + "COMMIT;")
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            msg = str(exc)
            if "not a database" in msg or "malformed" in msg:
                raise CacheError(f"{where}: is not a SQLite database ({msg})") from None
            if existed and _READ_ONLY.search(msg):  # e.g. its directory is read-only
                return self._open_read_only(msg)
            if "database is locked" in msg and not last:
                raise _Locked from None
            what = "cannot be opened for writing" if existed else "cannot be created"
            raise CacheError(f"{where}: {what}: {msg}") from None
        return conn

    def _open_read_only(self, refused: str | None, chosen: bool = False) -> sqlite3.Connection:
        """Open the existing file for reading, after it could not be opened for writing
        (`refused`: SQLite's message, or None when the file is not writable): reads work,
        every write is skipped with one warning (`_write`), `write_error` says why.

        `mode=ro` reads the file as SQLite's locks and its WAL say, so a writer elsewhere is
        seen safely; it needs the -shm file (made beside the file when missing), so in a
        read-only directory without one it cannot open a WAL database. Then, and for a file
        nobody can write (no write bit, or a read-only file system) that has no WAL content,
        `immutable=1`: the file alone, no locks, no -wal/-shm files made (answers still in a
        leftover -wal of a killed run are not seen: they are asked again). Side tables an
        older cache lacks are empty TEMP tables; `query_only` refuses every write. `chosen`:
        opened so by the caller (`Cache(reading=True)`), whether or not it could be written;
        a file that is not a cache is refused as `_open` refuses it."""
        where = f"cache {self.path}"
        if chosen and self.path.is_dir():
            raise CacheError(f"{where}: is a directory (give a file path, e.g. "
                             f"{self.path / 'calls.sqlite'})")
        unwritable = _why_read_only(self.path) or refused
        why = unwritable or "it cannot be opened for writing"
        wal = Path(f"{self.path}-wal")
        wal_content = wal.exists() and wal.stat().st_size > 0
        uri = self.path.absolute().as_uri()
        modes = ["mode=ro", "mode=ro&immutable=1"]
        if _nobody_writes(self.path) and not wal_content:
            modes = modes[1:]
        elif chosen and not wal.exists() and not Path(f"{self.path}-shm").exists():
            # no connection has it open in WAL (it would have made them): read the file
            # alone, so reading leaves no -wal/-shm files beside it (`mode=ro` makes them)
            modes = modes[::-1]
        conn = None
        last = ""
        for mode in modes:
            try:
                conn = sqlite3.connect(f"{uri}?{mode}", uri=True, check_same_thread=False,
                                       timeout=30)
                tables = {r[0] for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type='table'")}
                break
            except sqlite3.DatabaseError as exc:
                if conn is not None:
                    conn.close()
                    conn = None
                last = str(exc)
                if "not a database" in last or "malformed" in last:
                    raise CacheError(f"{where}: is not a SQLite database ({last})") from None
        if conn is None:
            raise CacheError(f"{where}: cannot be opened for writing ({why}), nor for "
                             f"reading: {last}")
        columns = {r[1] for r in conn.execute("PRAGMA table_info(calls)")}
        if not chosen and not columns >= _CALLS_COLUMNS:  # chosen: refused as `_open` does
            conn.close()
            raise CacheError(f"{where}: cannot be opened for writing ({why}), and it holds "
                             "no judgeaudit cache (no calls table with key, provider, model "
                             "and response)")
        foreign = _not_a_cache(conn)
        if foreign is not None:  # e.g. another tool's `calls` table, or more than a cache
            conn.close()
            raise CacheError(_refusal(self.path, foreign))
        conn.execute("PRAGMA temp_store=MEMORY")
        for stmt in _SCHEMA.split(";"):
            m = re.search(r"CREATE TABLE IF NOT EXISTS (\w+)", stmt)
            if m and m.group(1) not in tables:
                conn.execute(stmt.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
        conn.execute("PRAGMA query_only=1")
        self.read_only = True
        self.write_error = (f"{where}: cannot be written: read-only ({why})"
                            if unwritable or not chosen else f"{where}: opened for reading only")
        # Not a warning: a run whose answers are all cached loses nothing. The first write
        # that is skipped warns (`_write`); `judgeaudit cache stats` says it too.
        log.info("%s; its answers are read, new ones are not stored", self.write_error)
        return conn

    def get(self, key: str) -> Response | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM calls WHERE key=?", (key,)).fetchone()
        return Response.from_json(row[0]) if row else None

    def adopt(self, legacy: str, key: str) -> Response | None:
        """The answer stored under `legacy` (the key an older version gave the request that
        now has `key`: `base.legacy_request_key`), copied under `key` with its invalid mark
        and time, so the next lookup finds it directly and `cache forget --invalid` still
        sees the mark. The old row stays (an older install may share the file). None when
        `legacy` holds nothing; a cache that cannot be written only reads it."""
        hit = self.get(legacy)
        if hit is None or self.read_only or self.write_error is not None:
            return hit

        def copy(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR IGNORE INTO calls(key, provider, model, response, created) "
                         "SELECT ?, provider, model, response, created FROM calls WHERE key=?",
                         (key, legacy))
            conn.execute("INSERT OR IGNORE INTO invalid(key, reason, created) "
                         "SELECT ?, reason, created FROM invalid WHERE key=?", (key, legacy))

        self._write(copy)
        return hit

    def _write(self, statements: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run `statements` as one transaction under the lock; their result. When the disk
        refuses the write (full, read-only, an I/O error, locked past the timeout) it is
        rolled back and the cache stops storing answers, warned once, with `write_error`
        saying why: a run goes on with the answers it paid for (a re-run asks the unstored
        ones again) instead of ending in a traceback. A cache opened read-only (`_open`)
        never tries, and warns at its first write. Returns None once it has stopped."""
        with self._lock:
            if self.write_error is None:
                try:
                    out = statements(self._conn)
                    self._conn.commit()
                    return out
                except sqlite3.OperationalError as exc:
                    self._conn.rollback()
                    if not _DISK_REFUSED.search(str(exc)):
                        raise
                    self.write_error = f"cache {self.path}: cannot be written: {exc}"
            if self._warned:
                return None
            self._warned = True
        hint = ("give a writable --cache to keep them (a copy of this file keeps its answers)"
                if self.read_only else "free space or give another --cache")
        log.warning("%s; the run goes on without storing answers (a re-run asks them again); "
                    "%s", self.write_error, hint)
        return None

    def put(self, key: str, provider: str, model: str, response: Response) -> None:
        """Store (or replace) a call's response; a new answer clears an invalid mark."""

        def put(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR REPLACE INTO calls(key, provider, model, response, created) "
                         "VALUES (?,?,?,?,?)",
                         (key, provider, model, response.to_json(), time.time()))
            conn.execute("DELETE FROM invalid WHERE key=?", (key,))
            conn.execute("DELETE FROM refusals WHERE key=?", (key,))

        self._write(put)

    def put_many(self, rows: list[tuple[str, str, str, Response]]) -> None:
        """Store several (key, provider, model, response) in one transaction."""
        if not rows:
            return
        now = time.time()

        def put(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO calls(key, provider, model, response, created) "
                "VALUES (?,?,?,?,?)", [(k, p, m, r.to_json(), now) for k, p, m, r in rows])
            conn.executemany("DELETE FROM invalid WHERE key=?", [(r[0],) for r in rows])
            conn.executemany("DELETE FROM refusals WHERE key=?", [(r[0],) for r in rows])

        self._write(put)

    def has(self, keys: list[str]) -> set[str]:
        """Which of `keys` have a cached answer."""
        out: set[str] = set()
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                marks = ",".join("?" * len(chunk))
                out.update(r[0] for r in self._conn.execute(
                    f"SELECT key FROM calls WHERE key IN ({marks})", chunk))
        return out

    # ---- planned requests (judgeaudit --plan-only / judgeaudit ingest) ---------------------

    def put_planned(self, rows: list[tuple[str, str, str, str]]) -> None:
        """Remember (key, provider, model, choices JSON) of planned requests."""
        now = time.time()
        self._write(lambda conn: conn.executemany(
            "INSERT OR REPLACE INTO planned(key, provider, model, choices, created) "
            "VALUES (?,?,?,?,?)", [(*r, now) for r in rows]))
        if self.write_error is not None:  # ingest needs them: no plan without them
            raise CacheError(self.write_error)

    def planned(self, keys: list[str]) -> dict[str, tuple[str, str, str]]:
        """key -> (provider, model, choices JSON) for the planned requests among `keys`."""
        out: dict[str, tuple[str, str, str]] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                chunk = keys[i:i + 500]
                marks = ",".join("?" * len(chunk))
                for k, p, m, c in self._conn.execute(
                        f"SELECT key, provider, model, choices FROM planned WHERE key IN "
                        f"({marks})", chunk):
                    out[k] = (p, m, c)
        return out

    # ---- refusals ingested from a plan's output (judgeaudit ingest) -----------------------

    def put_refusals(self, rows: list[tuple[str, str, str]], *, provider: str | None = None,
                     model: str | None = None) -> None:
        """Keep (key, kind, message) of requests the server refused for themselves (a prompt
        over the model's context: kind too_long), so a re-run fails them as a live call was
        failed, without sending or planning them again (`Client._call`). Ingest's are named
        by their plan (`planned`); a live run's by `provider` and `model` (`refused_by`), so
        `cache forget --invalid --provider P` and `cache clear --provider P` find them."""
        if not rows:
            return
        now = time.time()

        def put(conn: sqlite3.Connection) -> None:
            conn.executemany(
                "INSERT OR REPLACE INTO refusals(key, kind, message, created) VALUES (?,?,?,?)",
                [(k, kind, redact(msg)[:500], now) for k, kind, msg in rows])
            if provider is not None:
                conn.executemany(
                    "INSERT OR REPLACE INTO refused_by(key, provider, model) VALUES (?,?,?)",
                    [(r[0], provider, model or "") for r in rows])

        self._write(put)

    def refusal(self, key: str) -> tuple[str, str] | None:
        """(kind, message) of a refusal kept for `key` (`put_refusals`), or None."""
        with self._lock:
            row = self._conn.execute("SELECT kind, message FROM refusals WHERE key=?",
                                     (key,)).fetchone()
        return (row[0], row[1]) if row else None

    # ---- provider batches (batch=on) -------------------------------------------------------

    def add_batch(self, batch_id: str, *, provider: str, model: str, identity: str,
                  params: str, requests: list[tuple[str, str]], status: str = "submitted",
                  info: str | None = None) -> None:
        """Record a submitted batch and its (key, choices JSON) requests, in one commit (not
        when the cache cannot be written: `_write`; the run still polls it)."""
        now = time.time()
        info = _masked(info)

        def add(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR REPLACE INTO batches(batch_id, provider, model, identity, params, "
                "status, n, created, updated, info) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (batch_id, provider, model, identity, params, status, len(requests), now, now,
                 info))
            conn.executemany(
                "INSERT OR REPLACE INTO batch_requests(batch_id, key, choices) VALUES (?,?,?)",
                [(batch_id, k, c) for k, c in requests])

        self._write(add)

    def set_batch_status(self, batch_id: str, status: str, info: str | None = None) -> None:
        """Update a batch's status; a final one (FINAL_BATCH_STATES) drops its request list."""
        info = _masked(info)

        def update(conn: sqlite3.Connection) -> None:
            conn.execute(
                "UPDATE batches SET status=?, info=COALESCE(?, info), updated=? "
                "WHERE batch_id=?", (status, info, time.time(), batch_id))
            if status in FINAL_BATCH_STATES:
                conn.execute("DELETE FROM batch_requests WHERE batch_id=?", (batch_id,))

        self._write(update)

    def open_batches(self, identity: str | None = None) -> list[dict]:
        """Batches not yet finished (optionally one provider identity's), oldest first, each
        with its `requests` as (key, choices JSON) pairs."""
        sql = ("SELECT batch_id, provider, model, identity, params, status, n, created, "
               "updated, info FROM batches WHERE status NOT IN ({})".format(
                   ",".join("?" * len(FINAL_BATCH_STATES))))
        args: list = sorted(FINAL_BATCH_STATES)
        if identity is not None:
            sql += " AND identity=?"
            args.append(identity)
        with self._lock:
            rows = self._conn.execute(sql + " ORDER BY created", args).fetchall()
            out = []
            for r in rows:
                reqs = self._conn.execute(
                    "SELECT key, choices FROM batch_requests WHERE batch_id=?", (r[0],)
                ).fetchall()
                out.append(_batch_row(r) | {"requests": [(k, c) for k, c in reqs]})
        return out

    def batches(self) -> list[dict]:
        """Every batch recorded, newest first (without request lists)."""
        with self._lock:
            rows = self._conn.execute(
                "SELECT batch_id, provider, model, identity, params, status, n, created, "
                "updated, info FROM batches ORDER BY created DESC").fetchall()
        return [_batch_row(r) for r in rows]

    def mark_invalid(self, key: str, reason: str) -> bool:
        """Mark a cached answer as one a judge could not use; returns False (and marks
        nothing) when no call with this key is cached, or it cannot be written. A read-only
        cache whose answer is marked already needs no write (and gives no warning): a fully
        cached run re-reads the answers an earlier run marked."""
        if self.read_only and self.invalid_reason(key) is not None:
            return True
        cur = self._write(lambda conn: conn.execute(
            "INSERT OR REPLACE INTO invalid(key, reason, created) "
            "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM calls WHERE key=?)",
            (key, reason[:500], time.time(), key)))
        return cur is not None and cur.rowcount > 0

    def invalid_reason(self, key: str) -> str | None:
        with self._lock:
            row = self._conn.execute("SELECT reason FROM invalid WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    def count_invalid(self, provider: str | None = None, model: str | None = None) -> int:
        """How many cached answers are marked invalid (optionally one provider's/model's)."""
        where, args = self._filter(provider, model)
        with self._lock:
            return self._conn.execute(
                "SELECT COUNT(*) FROM invalid JOIN calls USING (key)" + where, args
            ).fetchone()[0]

    def forget_invalid(self, provider: str | None = None, model: str | None = None) -> int:
        """Delete the calls marked invalid (all, one provider's, or one provider:model's) and
        their marks, so they are asked again; returns how many were forgotten (0, with
        `write_error` saying why, when the cache cannot be written)."""
        where, args = self._filter(provider, model)

        def forget(conn: sqlite3.Connection) -> int:
            keys = [r[0] for r in conn.execute(
                "SELECT key FROM invalid JOIN calls USING (key)" + where, args)]
            conn.executemany("DELETE FROM calls WHERE key=?", [(k,) for k in keys])
            conn.executemany("DELETE FROM invalid WHERE key=?", [(k,) for k in keys])
            if provider is None:  # marks whose call is gone already
                conn.execute("DELETE FROM invalid WHERE key NOT IN (SELECT key FROM calls)")
            # too-long refusals ingest kept (a server given a longer context answers them
            # now): they were forgettable only with every answer of their provider
            refused = [r[0] for r in conn.execute(
                "SELECT key FROM refusals" + ("" if not where else
                                              " WHERE key IN (SELECT key FROM planned"
                                              + where + ") OR key IN (SELECT key FROM "
                                              "refused_by" + where + ")"), args + args)]
            conn.executemany("DELETE FROM refusals WHERE key=?", [(k,) for k in refused])
            conn.execute("DELETE FROM refused_by WHERE key NOT IN (SELECT key FROM refusals)")
            return len(keys) + len(refused)

        return self._write(forget) or 0

    @staticmethod
    def _filter(provider: str | None, model: str | None) -> tuple[str, list[str]]:
        if model and not provider:
            raise ValueError("give the provider with the model (--provider P --model M)")
        if not provider:
            return "", []
        if model:
            return " WHERE provider=? AND model=?", [provider, model]
        return " WHERE provider=?", [provider]

    def stats(self) -> CacheStats:
        with self._lock:
            n = self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
            rows = self._conn.execute(
                "SELECT provider || ':' || model, COUNT(*) FROM calls GROUP BY 1 ORDER BY 2 DESC"
            ).fetchall()
            n_invalid = self._conn.execute(
                "SELECT COUNT(*) FROM invalid JOIN calls USING (key)").fetchone()[0]
            n_refused = self._conn.execute("SELECT COUNT(*) FROM refusals").fetchone()[0]
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return CacheStats(str(self.path), n, size, {k: v for k, v in rows}, n_invalid,
                          self.local_backends(), n_refused)

    def local_backends(self) -> dict[str, dict[str, int]]:
        """The embedded judge's entries per model and backend: {"local:MODEL": {backend: n}}.

        The backend is in the cache key (entries of different backends never mix) but not
        in the row, which says provider "local" for all of them. The integer backends (ik,
        llamacpp) have written theirs into every answer since they exist (`raw.backend`);
        transformers, the first backend, writes none, so an answer without one is its
        ("transformers"), unless it was ingested from a plan (`planned`: whatever server ran
        the plan made it: "ingested"). An answer that is not readable JSON: "unknown"."""
        by: dict[str, dict[str, int]] = {}
        with self._lock:
            try:
                rows = self._conn.execute(
                    "SELECT model, CASE WHEN json_valid(response) THEN "
                    "coalesce(json_extract(response, '$.raw.backend'), '') ELSE NULL END, "
                    "key IN (SELECT key FROM planned), COUNT(*) FROM calls "
                    "WHERE provider='local' GROUP BY 1, 2, 3").fetchall()
            except sqlite3.OperationalError:  # an SQLite without its JSON functions
                rows = [(m, _backend_of(r), planned, 1) for m, r, planned in self._conn.execute(
                    "SELECT model, response, key IN (SELECT key FROM planned) FROM calls "
                    "WHERE provider='local'")]
        for model, backend, planned, n in rows:
            if backend is None or not isinstance(backend, str):
                name = "unknown"
            elif backend:
                name = backend
            else:
                name = "ingested" if planned else "transformers"
            counts = by.setdefault(f"local:{model}", {})
            counts[name] = counts.get(name, 0) + n
        return {k: dict(sorted(v.items(), key=lambda kv: (-kv[1], kv[0])))
                for k, v in by.items()}

    def clear(self, provider: str | None = None, model: str | None = None) -> int:
        """Delete entries (all, or one provider's, or one provider:model's); returns how many
        (0, with `write_error` saying why, when the cache cannot be written). Clearing all
        compacts the file too (VACUUM); when the disk refuses that, the entries stay deleted
        and a warning says the file was not made smaller."""
        sql, args = "DELETE FROM calls", []
        if provider:
            sql += " WHERE provider=?"
            args.append(provider)
            if model:
                sql += " AND model=?"
                args.append(model)

        def delete(conn: sqlite3.Connection) -> int:
            n = conn.execute(sql, args).rowcount
            conn.execute("DELETE FROM invalid WHERE key NOT IN (SELECT key FROM calls)")
            # refusals kept by ingest go with their provider's (or every) entry
            where = sql[len("DELETE FROM calls"):]
            conn.execute("DELETE FROM refusals" + (
                "" if not provider else " WHERE key IN (SELECT key FROM planned" + where
                + ") OR key IN (SELECT key FROM refused_by" + where + ")"),
                args + args if provider else args)
            conn.execute("DELETE FROM refused_by WHERE key NOT IN (SELECT key FROM refusals)")
            return n

        n = self._write(delete)
        if n is None:
            return 0
        if not provider:
            with self._lock:
                try:
                    self._conn.execute("VACUUM")
                except sqlite3.OperationalError as exc:
                    if not _DISK_REFUSED.search(str(exc)):
                        raise
                    log.warning("cache %s: %d entries deleted, but the file could not be "
                                "compacted (VACUUM: %s)", self.path, n, exc)
        return n

    def close(self) -> None:
        with self._lock:
            self._conn.close()


def _not_a_cache(conn: sqlite3.Connection) -> str | None:
    """What an existing database holds when it is not a judgeaudit cache ("holds tables
    users"), or None when it may be used as one: marked (`APPLICATION_ID`), empty (nothing in
    its schema, no other application's id), or an older cache (a `calls` table, and only
    `_SCHEMA`'s tables, with their columns, and its index). Reads only."""
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if app_id == APPLICATION_ID:
        return None
    rows = conn.execute("SELECT type, name FROM sqlite_master "
                        "WHERE name NOT LIKE 'sqlite~_%' ESCAPE '~' ORDER BY type, name"
                        ).fetchall()
    if app_id != 0:  # another application marked it as its own
        return (f"is another application's SQLite database (application_id {app_id:#010x})"
                + (f" and {_holds(conn, rows)}" if rows else ""))
    if not rows:
        return None
    tables = {name for kind, name in rows if kind == "table"}
    extra = [name for kind, name in rows if kind != "table" and name not in _INDEXES]
    if "calls" in tables and not extra and all(
            _TABLES.get(t) == _columns(conn, t) for t in tables):
        return None
    return _holds(conn, rows)


def _columns(conn: sqlite3.Connection, table: str) -> frozenset[str]:
    return frozenset(r[1] for r in conn.execute(f'PRAGMA table_info("{table}")'))


def _holds(conn: sqlite3.Connection, rows: list[tuple[str, str]], most: int = 8) -> str:
    """"holds tables calls (columns id, body), users": a database's schema, in short (a
    table judgeaudit also names is shown with its columns: it is not judgeaudit's)."""
    tables = [name for kind, name in rows if kind == "table"]
    named = []
    for t in tables[:most]:
        cols = _columns(conn, t)
        named.append(f"{t} (columns {', '.join(sorted(cols))})"
                     if t in _TABLES and cols != _TABLES[t] else t)
    if len(tables) > most:
        named.append(f"and {len(tables) - most} more")
    if named:
        return f"holds table{'s' if len(tables) != 1 else ''} {', '.join(named)}"
    plural = {"index": "indexes", "view": "views", "trigger": "triggers"}
    kinds = sorted({kind for kind, _ in rows})
    return "holds no tables but " + "; ".join(
        plural.get(kind, kind) + " " + ", ".join(n for k, n in rows if k == kind)
        for kind in kinds)


def _refusal(path: Path, foreign: str) -> str:
    """The refusal of a file that is not a judgeaudit cache: it names the file and what it
    holds, and says it is unchanged."""
    return (f"cache {path}: {foreign}, not a judgeaudit cache; it was left unchanged; give "
            "--cache a new file (or an existing judgeaudit cache)")


def _masked(info: str | None) -> str | None:
    """A batch's info as stored: its messages are the provider's (an error echoing the key:
    "bad key Bearer sk-..."), so secrets are masked (`redact`) as on the terminal. Answers
    are masked before they get here (`client.clean_response`)."""
    return redact(info) if info else info


def _may_write(path: Path) -> bool:
    """Whether this process may write `path` (its effective ids and capabilities: root
    without CAP_DAC_OVERRIDE may not write a read-only file; EROFS answers no too)."""
    return os.access(path, os.W_OK, effective_ids=os.access in os.supports_effective_ids)


def _nobody_writes(path: Path) -> bool:
    """No one can change the file without first changing its mode or mount: no write bit,
    or a read-only file system. Then no writer can appear while it is read (`immutable`)."""
    try:
        if os.stat(path).st_mode & 0o222 == 0:
            return True
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except (OSError, AttributeError):  # AttributeError: no statvfs (Windows)
        return False


def _why_read_only(path: Path) -> str | None:
    """Why an existing cache file cannot be written, in the user's terms, or None."""
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    except (OSError, AttributeError):
        pass
    if not _may_write(path):
        return "the file is not writable"
    if not _may_write(path.absolute().parent):
        return "its directory is not writable: SQLite keeps its -wal and -shm files there"
    return None


def _backend_of(response: str) -> str | None:
    """`raw.backend` of a stored answer ("" when it names none; None when unreadable)."""
    import json

    try:
        raw = json.loads(response).get("raw") or {}
        backend = raw.get("backend", "") if isinstance(raw, dict) else ""
    except (ValueError, AttributeError):
        return None
    return backend if isinstance(backend, str) else None


def _batch_row(r: tuple) -> dict:
    keys = ("batch_id", "provider", "model", "identity", "params", "status", "n", "created",
            "updated", "info")
    return dict(zip(keys, r, strict=True))
