"""SQLite (WAL) cache of model calls: every finished call is committed at once, so a killed
run loses nothing it paid for and a re-run makes no call twice.

Answers a judge could not use (an unparseable label, empty content, a response over the size
cap) are marked in the `invalid` table with the reason; `forget_invalid` deletes those calls
so the next run asks them again (`judgeaudit cache forget --invalid`).

Two side tables serve batch work (judgeaudit.llm.plan, judgeaudit.llm.batch): `planned` keeps
what `judgeaudit ingest` needs to parse an answer to a planned request (provider, model and
the request's choices, by cache key); `batches` and `batch_requests` keep every batch
submitted to a provider's batch API and the cache keys in it, so a killed run resumes polling
instead of submitting again. All tables are created if missing: older cache files keep
working.
"""

from __future__ import annotations

import logging
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

# Batch states after which nothing more comes back (`Cache.open_batches` leaves them out).
FINAL_BATCH_STATES = frozenset({"done", "failed", "cancelled", "expired"})


class CacheError(ValueError):
    """The cache file cannot be used: a directory, not an SQLite database, not writable."""


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


class Cache:
    """Key -> Response store. Thread-safe; opened in WAL mode so readers never block writers."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._conn = self._open()
        # Why answers are no longer stored (the disk refused a write), or None (`_write`).
        self.write_error: str | None = None

    def _open(self) -> sqlite3.Connection:
        """Open (creating if needed) the database, or raise CacheError saying why not."""
        where = f"cache {self.path}"
        if self.path.is_dir():
            raise CacheError(f"{where}: is a directory (give a file path, e.g. "
                             f"{self.path / 'calls.sqlite'})")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise CacheError(f"{where}: cannot be created: {exc.strerror or exc}") from None
        existed = self.path.exists()
        conn = None
        try:
            conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.executescript(_SCHEMA)
            conn.commit()
        except sqlite3.DatabaseError as exc:
            if conn is not None:
                conn.close()
            msg = str(exc)
            if "not a database" in msg or "malformed" in msg:
                raise CacheError(f"{where}: is not a SQLite database ({msg})") from None
            what = "cannot be opened for writing" if existed else "cannot be created"
            raise CacheError(f"{where}: {what}: {msg}") from None
        return conn

    def get(self, key: str) -> Response | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM calls WHERE key=?", (key,)).fetchone()
        return Response.from_json(row[0]) if row else None

    def _write(self, statements: Callable[[sqlite3.Connection], Any]) -> Any:
        """Run `statements` as one transaction under the lock; their result. When the disk
        refuses the write (full, read-only, an I/O error, locked past the timeout) it is
        rolled back and the cache stops storing answers, warned once, with `write_error`
        saying why: a run goes on with the answers it paid for (a re-run asks the unstored
        ones again) instead of ending in a traceback. Returns None once it has stopped."""
        with self._lock:
            if self.write_error is not None:
                return None
            try:
                out = statements(self._conn)
                self._conn.commit()
                return out
            except sqlite3.OperationalError as exc:
                self._conn.rollback()
                if not _DISK_REFUSED.search(str(exc)):
                    raise
                self.write_error = f"cache {self.path}: cannot be written: {exc}"
        log.warning("%s; the run goes on without storing answers (a re-run asks them again); "
                    "free space or give another --cache", self.write_error)
        return None

    def put(self, key: str, provider: str, model: str, response: Response) -> None:
        """Store (or replace) a call's response; a new answer clears an invalid mark."""

        def put(conn: sqlite3.Connection) -> None:
            conn.execute("INSERT OR REPLACE INTO calls(key, provider, model, response, created) "
                         "VALUES (?,?,?,?,?)",
                         (key, provider, model, response.to_json(), time.time()))
            conn.execute("DELETE FROM invalid WHERE key=?", (key,))

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

    # ---- provider batches (batch=on) -------------------------------------------------------

    def add_batch(self, batch_id: str, *, provider: str, model: str, identity: str,
                  params: str, requests: list[tuple[str, str]], status: str = "submitted",
                  info: str | None = None) -> None:
        """Record a submitted batch and its (key, choices JSON) requests, in one commit."""
        now = time.time()
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO batches(batch_id, provider, model, identity, params, "
                "status, n, created, updated, info) VALUES (?,?,?,?,?,?,?,?,?,?)",
                (batch_id, provider, model, identity, params, status, len(requests), now, now,
                 info))
            self._conn.executemany(
                "INSERT OR REPLACE INTO batch_requests(batch_id, key, choices) VALUES (?,?,?)",
                [(batch_id, k, c) for k, c in requests])
            self._conn.commit()

    def set_batch_status(self, batch_id: str, status: str, info: str | None = None) -> None:
        """Update a batch's status; a final one (FINAL_BATCH_STATES) drops its request list."""
        with self._lock:
            self._conn.execute(
                "UPDATE batches SET status=?, info=COALESCE(?, info), updated=? "
                "WHERE batch_id=?", (status, info, time.time(), batch_id))
            if status in FINAL_BATCH_STATES:
                self._conn.execute("DELETE FROM batch_requests WHERE batch_id=?", (batch_id,))
            self._conn.commit()

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
        nothing) when no call with this key is cached."""
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
        their marks, so they are asked again; returns how many were forgotten."""
        where, args = self._filter(provider, model)
        with self._lock:
            keys = [r[0] for r in self._conn.execute(
                "SELECT key FROM invalid JOIN calls USING (key)" + where, args)]
            self._conn.executemany("DELETE FROM calls WHERE key=?", [(k,) for k in keys])
            self._conn.executemany("DELETE FROM invalid WHERE key=?", [(k,) for k in keys])
            if provider is None:  # marks whose call is gone already
                self._conn.execute(
                    "DELETE FROM invalid WHERE key NOT IN (SELECT key FROM calls)")
            self._conn.commit()
        return len(keys)

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
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return CacheStats(str(self.path), n, size, {k: v for k, v in rows}, n_invalid,
                          self.local_backends())

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
        """Delete entries (all, or one provider's, or one provider:model's); returns how many."""
        sql, args = "DELETE FROM calls", []
        if provider:
            sql += " WHERE provider=?"
            args.append(provider)
            if model:
                sql += " AND model=?"
                args.append(model)
        with self._lock:
            cur = self._conn.execute(sql, args)
            n = cur.rowcount
            self._conn.execute("DELETE FROM invalid WHERE key NOT IN (SELECT key FROM calls)")
            self._conn.commit()
            if not provider:
                self._conn.execute("VACUUM")
        return n

    def close(self) -> None:
        with self._lock:
            self._conn.close()


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
