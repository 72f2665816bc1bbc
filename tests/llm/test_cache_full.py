"""A cache whose disk is full (or read-only, or failing) mid-run.

SQLite's "database or disk is full" came out of the client as a traceback, and the CLI
exited 1, which is the exit code of a tripped `--fail-on` gate: a full disk read as "the
judge is biased". The run now goes on with the answers it paid for (a re-run asks the
unstored ones again), warns once, and finishes with its results; `judgeaudit ingest`,
whose output is the cache, fails saying so, as does planning (it needs the cache).

The full disk is SQLite's own: `PRAGMA max_page_count` caps the connection's file at its
current size, so the next write that needs a page fails with SQLITE_FULL, exactly as on a
full disk (a real full file system cannot be made here without mounting one).
"""

from __future__ import annotations

import json
import logging

import pytest
from fakeserver import FakeLLMServer, judge_request, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm import Cache, CacheError, Client, make_provider
from judgeaudit.llm import cache as cache_module
from judgeaudit.llm.plan import ingest

pytestmark = pytest.mark.usefixtures("no_key_env")


def fill_up(cache: Cache) -> None:
    """No page more for this connection: the next write that grows the file fails."""
    pages = cache._conn.execute("PRAGMA page_count").fetchone()[0]
    cache._conn.execute(f"PRAGMA max_page_count = {pages}")


@pytest.fixture
def full_caches(monkeypatch):
    """Every Cache opened from now on is full."""
    opened = cache_module.Cache._open

    def open_full(self):
        conn = opened(self)
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        conn.execute(f"PRAGMA max_page_count = {pages}")
        return conn

    monkeypatch.setattr(cache_module.Cache, "_open", open_full)


async def test_a_full_cache_mid_run_keeps_the_answers_and_warns_once(fake_server, tmp_path,
                                                                     caplog):
    srv = fake_server()
    cache = Cache(tmp_path / "c.sqlite")
    client = Client(make_provider("openai", "m", {"base_url": srv.openai_url, "api_key": "k"}),
                    cache, concurrency=2)
    await client.map([judge_request(i) for i in range(3)])  # stored
    fill_up(cache)
    with caplog.at_level(logging.WARNING, logger="judgeaudit.llm"):
        outs = await client.map([judge_request(i) for i in range(3, 60)])
    assert all(o.text in ("A", "B") for o in outs)  # every answer kept for the run
    assert client.stats.made == 60 and client.stats.failed == 0
    assert "database or disk is full" in (cache.write_error or "")
    warned = [r for r in caplog.records if "cannot be written" in r.getMessage()]
    assert len(warned) == 1 and "a re-run asks them again" in warned[0].getMessage()
    assert cache.get(client.key(judge_request(1))) is not None  # stored before
    assert cache.get(client.key(judge_request(59))) is None  # not stored, no error
    await client.aclose()
    cache.close()


def test_evaluate_with_a_full_cache_finishes_with_its_results(tmp_path, full_caches):
    data = tmp_path / "items.jsonl"
    write_pairs(data, 30)
    with FakeLLMServer() as srv:
        res = CliRunner().invoke(app, [
            "evaluate", "--judge", f"openai:m?base_url={srv.openai_url}&api_key=k",
            "--data", f"jsonl:{data}", "--cache", str(tmp_path / "c.sqlite"),
            "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output  # before: a traceback and exit 1 (a gate's code)
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["run"]["status"] == "ok" and doc["calls"]["made"] == 60


def test_ingest_into_a_full_cache_fails_saying_so(tmp_path):
    out = tmp_path / "output.jsonl"
    cache = Cache(tmp_path / "c.sqlite")
    key = "k" * 64
    cache.put_planned([(key, "openai", "m", json.dumps(["A", "B"]))])
    out.write_text(json.dumps({"id": "1", "custom_id": key, "error": None, "response": {
        "status_code": 200, "body": {"choices": [{"message": {"content": "A" * 50_000},
                                                  "finish_reason": "stop"}]}}}) + "\n")
    fill_up(cache)
    with pytest.raises(CacheError, match=r"cannot be written: database or disk is full; 0 "
                                         r"answers were stored before"):
        ingest(out, cache)
    cache.close()


def test_planning_into_a_full_cache_fails_saying_so(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    fill_up(cache)
    rows = [(f"{i:064d}", "openai", "m", "[]") for i in range(2000)]
    with pytest.raises(CacheError, match="cannot be written: database or disk is full"):
        cache.put_planned(rows)
    cache.close()
