"""SQLite (WAL) cache of model calls: every finished call is committed at once, so a killed
run loses nothing it paid for and a re-run makes no call twice."""

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
"""


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


class Cache:
    """Key -> Response store. Thread-safe; opened in WAL mode so readers never block writers."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False, timeout=30)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)
        self._conn.commit()

    def get(self, key: str) -> Response | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM calls WHERE key=?", (key,)).fetchone()
        return Response.from_json(row[0]) if row else None

    def put(self, key: str, provider: str, model: str, response: Response) -> None:
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO calls(key, provider, model, response, created) "
                "VALUES (?,?,?,?,?)",
                (key, provider, model, response.to_json(), time.time()),
            )
            self._conn.commit()

    def stats(self) -> CacheStats:
        with self._lock:
            n = self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]
            rows = self._conn.execute(
                "SELECT provider || ':' || model, COUNT(*) FROM calls GROUP BY 1 ORDER BY 2 DESC"
            ).fetchall()
        size = sum(p.stat().st_size for p in self.path.parent.glob(self.path.name + "*"))
        return CacheStats(str(self.path), n, size, {k: v for k, v in rows})

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
            self._conn.commit()
            if not provider:
                self._conn.execute("VACUUM")
        return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._conn.close()
