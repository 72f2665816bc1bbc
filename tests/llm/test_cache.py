"""The SQLite call cache on a real file: roundtrip, WAL mode, reuse across clients, no key in
the file, stats and clear."""

from __future__ import annotations

import sqlite3

import pytest
from fakeserver import judge_request

from judgeaudit.llm import Cache, Client, Response, Usage, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
SECRET = "sk-proj-SECRET-9f8e7d6c5b4a3210"


def db_bytes(path) -> bytes:
    """The database file and its -wal/-shm companions, as they are on disk now."""
    return b"".join(p.read_bytes() for p in sorted(path.parent.glob(path.name + "*")))


def test_put_get_roundtrip(tmp_path):
    cache = Cache(tmp_path / "calls.sqlite")
    resp = Response(text=" A", probs={"A": 0.8, "B": 0.2}, usage=Usage(120, 1),
                    raw={"finish_reason": "stop", "ü": "ünïcode"})
    cache.put("k1", "openai", "m", resp)
    got = cache.get("k1")
    assert got is not None and got.cached is True
    assert (got.text, got.probs, got.usage, got.raw) == (resp.text, resp.probs, resp.usage,
                                                         resp.raw)
    assert cache.get("k2") is None
    cache.put("k1", "openai", "m", Response(text="B"))  # replace, not duplicate
    assert cache.get("k1").text == "B" and cache.stats().entries == 1
    cache.close()


def test_wal_mode_is_on_and_committed_rows_are_visible_to_another_connection(tmp_path):
    path = tmp_path / "calls.sqlite"
    cache = Cache(path)
    cache.put("k", "openai", "m", Response(text="A"))
    other = sqlite3.connect(path)
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert (tmp_path / "calls.sqlite-wal").exists()
    # Committed at once: a second process sees the row while the first still has it open.
    assert other.execute("SELECT COUNT(*) FROM calls").fetchone()[0] == 1
    other.close()
    cache.close()


async def test_second_client_with_the_same_cache_makes_no_calls(fake_server, tmp_path):
    srv = fake_server()
    path = tmp_path / "calls.sqlite"
    reqs = [judge_request(i, "AB"[i % 2]) for i in range(10)]

    def client(cache: Cache) -> Client:
        p = make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": SECRET})
        return Client(p, cache, concurrency=4)

    c1 = client(Cache(path))
    first = await c1.map(reqs)
    await c1.aclose()
    c1.cache.close()
    assert srv.count() == 10 and c1.stats.made == 10

    c2 = client(Cache(path))  # a fresh process would do exactly this
    second = await c2.map(reqs)
    assert srv.count() == 10  # zero new provider calls
    assert (c2.stats.made, c2.stats.cached) == (0, 10)
    assert all(o.cached for o in second)
    assert [(o.text, o.probs) for o in second] == [(o.text, o.probs) for o in first]
    await c2.aclose()
    c2.cache.close()


async def test_api_key_never_reaches_the_sqlite_file(fake_server, tmp_path):
    srv = fake_server()
    path = tmp_path / "calls.sqlite"
    cache = Cache(path)
    p = make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": SECRET,
                                         "timeout": "30"})
    client = Client(p, cache, concurrency=2)
    await client.map([judge_request(i) for i in range(5)])
    # The key was really used (so its absence below means something) ...
    assert all(r.headers["authorization"] == f"Bearer {SECRET}" for r in srv.requests)
    # ... and is in no byte of the database, its WAL or its shared-memory index, neither
    # while the cache is open nor after it is closed (checkpointed).
    assert (tmp_path / "calls.sqlite-wal").exists()
    secret = SECRET.encode()
    assert secret not in db_bytes(path) and b"9f8e7d6c5b4a3210" not in db_bytes(path)
    assert b"fake" in db_bytes(path)  # the scan does see the rows' text
    await client.aclose()
    cache.close()
    assert secret not in db_bytes(path)


def test_stats_and_clear(tmp_path):
    path = tmp_path / "calls.sqlite"
    cache = Cache(path)
    for i in range(5):
        cache.put(f"o{i}", "openai", "gpt-x", Response(text="A"))
    for i in range(3):
        cache.put(f"a{i}", "anthropic", "claude-y", Response(text="B"))
    cache.put("a9", "anthropic", "claude-z", Response(text="B"))
    st = cache.stats()
    assert st.entries == 9 and st.path == str(path) and st.bytes > 0
    assert st.by_model == {"openai:gpt-x": 5, "anthropic:claude-y": 3, "anthropic:claude-z": 1}
    assert cache.clear("anthropic", "claude-z") == 1
    assert cache.clear("anthropic") == 3
    assert cache.stats().by_model == {"openai:gpt-x": 5}
    assert cache.get("o0") is not None and cache.get("a0") is None
    assert cache.clear() == 5
    assert cache.stats().entries == 0 and cache.get("o0") is None
    cache.close()
