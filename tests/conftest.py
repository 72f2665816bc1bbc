"""Project-wide fixtures: the shared public data (skipped cleanly when absent) and an
isolated cache per test."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else (ROOT / ".." / "shared" / "data").resolve()


@pytest.fixture
def shared_data() -> Path:
    d = shared_data_dir()
    if not (d / "README.md").exists():
        pytest.skip(f"shared data absent at {d} (set JUDGEAUDIT_SHARED_DATA to its path)")
    return d


@pytest.fixture
def isolated_cache(tmp_path, monkeypatch) -> Path:
    """Point the default cache at a fresh file so tests never touch the user's cache."""
    p = tmp_path / "cache.sqlite"
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(p))
    return p
