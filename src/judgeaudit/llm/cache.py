"""SQLite (WAL) cache of model calls: every finished call is committed at once, so a killed
run loses nothing it paid for and a re-run makes no call twice.

Answers a judge could not use (an unparseable label, empty content, a response over the size
cap) are marked in the `invalid` table with the reason; `forget_invalid` deletes those calls
so the next run asks them again (`judgeaudit cache forget --invalid`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

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
"""


class CacheError(ValueError):
    """The cache file cannot be used: a directory, not an SQLite database, not writable."""


def default_cache_path() -> Path:
    """`$JUDGEAUDIT_CACHE` if set, else the user cache dir."""
    import os

    env = os.environ.get("JUDGEAUDIT_CACHE")
    if env:
        return Path(env)
    return Path(platformdirs.user_cache_dir("judgeaudit")) / "calls.sqlite"


@dataclass
class CacheStats:
    path: str
    entries: int
    bytes: int
    by_model: dict[str, int]
    invalid: int = 0  # answers marked invalid (see Cache.mark_invalid)


class Cache:
    """Key -> Response store. Thread-safe; opened in WAL mode so readers never block writers."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self._lock = threading.Lock()
        self._conn = self._open()

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

    def put(self, key: str, provider: str, model: str, response: Response) -> None:
        """Store (or replace) a call's response; a new answer clears an invalid mark."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO calls(key, provider, model, response, created) "
                "VALUES (?,?,?,?,?)",
                (key, provider, model, response.to_json(), time.time()),
            )
            self._conn.execute("DELETE FROM invalid WHERE key=?", (key,))
            self._conn.commit()

    def mark_invalid(self, key: str, reason: str) -> bool:
        """Mark a cached answer as one a judge could not use; returns False (and marks
        nothing) when no call with this key is cached."""
        with self._lock:
            cur = self._conn.execute(
                "INSERT OR REPLACE INTO invalid(key, reason, created) "
                "SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM calls WHERE key=?)",
                (key, reason[:500], time.time(), key),
            )
            self._conn.commit()
        return cur.rowcount > 0

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
        return CacheStats(str(self.path), n, size, {k: v for k, v in rows}, n_invalid)

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
