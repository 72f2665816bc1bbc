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


def _release_local_models() -> None:
    """Forget the embedded models loaded so far and hand the freed memory back to the OS
    (glibc keeps freed heap pages otherwise: the next module's model would add to them)."""
    import gc
    import sys

    local_model = sys.modules.get("judgeaudit.llm.local_model")
    if local_model is None:
        return
    local_model.unload_all()
    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


@pytest.fixture(scope="module", autouse=True)
def _unload_local_models():
    """Each test module starts without the embedded models of the modules before it, so the
    suite holds one module's models at a time (peak RSS: one model, not the sum). Released
    on entry too: the previous module's last test still holds its fixtures while this
    fixture's teardown runs."""
    _release_local_models()
    yield
    _release_local_models()


@pytest.fixture(autouse=True)
def _forget_secrets():
    """Each test starts and ends with no registered secret (`redact.reset_secrets`): the
    registry is process-wide, so a key one test's provider registered ("wrong", "sk-1")
    was masked in every later test's text, and results depended on the order."""
    from judgeaudit.llm.redact import reset_secrets

    reset_secrets()
    yield
    reset_secrets()


@pytest.fixture
def no_keys(monkeypatch):
    """No OpenAI key or base URL from the environment: a test's judge talks only to the
    loopback server it names."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
