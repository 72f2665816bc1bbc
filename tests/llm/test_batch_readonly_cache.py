"""Batch mode (`batch=on`) on a cache that cannot be written refuses before submitting
anything, naming the cache and what to do, unless every request is already cached.

A submitted batch is recorded in the cache so that a run stopped while it waits (hours)
picks it up again, and the run says "Stopping now loses nothing". A read-only cache
(`Cache.read_only`, `Cache.write_error`) cannot record it: the batch was submitted all the
same, the promise was false, and a stopped run lost answers already paid for. Real loopback
servers speaking OpenAI's and Anthropic's batch APIs (tests/llm/fakebatch.py) through the
official SDKs; real read-only files and directories (tests/llm/readonly_fs.py), also as root.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request
from readonly_fs import drop_write_override, make_read_only, make_writable, obeying_file_modes

from judgeaudit.llm import Cache, CallFailed, Client, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"poll": "0.02", "batch_wait": "0.05"}


def provider(srv: FakeBatchServer, kind: str, **params: str):
    if kind == "anthropic":
        return make_provider("anthropic", "claude-fake", {"base_url": srv.anthropic_url,
                                                          "api_key": "k", **params})
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k",
                                            **params})


def requests(n: int):
    return [judge_request(i, "AB"[i % 3 == 0]) for i in range(n)]


async def fill(srv: FakeBatchServer, kind: str, path: Path, n: int) -> list:
    """Answers to the first ``n`` requests, by live calls, in a cache then closed."""
    cache = Cache(path)
    client = Client(provider(srv, kind), cache)
    outs = await client.map(requests(n))
    await client.aclose()
    cache.close()
    assert not any(isinstance(o, CallFailed) for o in outs)
    srv.reset()
    return outs


def said(caplog) -> str:
    return " ".join(r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_batch_run_on_a_read_only_cache_submits_nothing_and_says_what_to_do(
        tmp_path, kind, caplog):
    (tmp_path / "shared").mkdir()
    path = tmp_path / "shared" / "calls.sqlite"
    with FakeBatchServer() as srv:
        await fill(srv, kind, path, 3)
        make_read_only(path, path.parent)
        try:
            with obeying_file_modes(tmp_path), caplog.at_level(logging.INFO, "judgeaudit.llm"):
                cache = Cache(path)
                assert cache.read_only
                client = Client(provider(srv, kind, batch="on", **FAST), cache)
                with pytest.raises(CallFailed) as info:  # 3 of the 6 are not cached
                    await asyncio.wait_for(client.map(requests(6)), 60)
                await client.aclose()
                cache.close()
        finally:
            make_writable(path.parent, path)
    msg = " ".join(str(info.value).split())
    assert info.value.fatal
    assert msg.startswith(f"{kind}: batch mode (batch=on) needs a cache it can write, and "
                          f"cache {path}: cannot be written: read-only")
    assert "Nothing was submitted" in msg
    assert "Give a writable cache (--cache PATH or JUDGEAUDIT_CACHE=PATH" in msg
    assert "or run without batch=on" in msg
    # nothing went out: no batch, no line, no live call
    assert srv.batch_count() == 0 and sum(srv.submitted.values()) == 0 and srv.count() == 0
    assert srv.api_log == []
    s = client.stats
    assert s.made == 0 and s.not_sent >= 1 and "needs a cache it can write" in s.not_sent_why
    assert ": submitted batch" not in said(caplog) and "loses nothing" not in said(caplog)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_batch_run_whose_requests_are_all_cached_needs_no_batch(tmp_path, kind,
                                                                        caplog):
    path = tmp_path / "calls.sqlite"
    with FakeBatchServer() as srv:
        want = await fill(srv, kind, path, 6)
        make_read_only(path)
        try:
            with obeying_file_modes(tmp_path), caplog.at_level(logging.WARNING):
                cache = Cache(path)
                assert cache.read_only
                client = Client(provider(srv, kind, batch="on", **FAST), cache)
                got = await client.map(requests(6))
                await client.aclose()
                cache.close()
        finally:
            make_writable(path)
        assert [g.text for g in got] == [w.text for w in want]
        assert (client.stats.cached, client.stats.made, client.stats.failed) == (6, 0, 0)
        assert srv.batch_count() == 0 and srv.count() == 0
        assert said(caplog) == ""  # quiet: nothing to store, nothing refused


async def test_a_resumed_batch_on_a_read_only_cache_does_not_submit_its_retries(
        tmp_path, caplog):
    """A batch an earlier run submitted (the cache writable then) is picked up and polled
    (it costs nothing more); its expired lines would go into a new batch, which the cache
    could not record: refused the same way, and only the first batch was ever submitted."""
    path = tmp_path / "calls.sqlite"
    with FakeBatchServer(expire_batches=1, finish_after=1.0) as srv:
        cache = Cache(path)
        client = Client(provider(srv, "openai", batch="on", **FAST), cache)
        task = asyncio.ensure_future(client.map(requests(6)))
        for _ in range(500):  # stopped while its batch waits, as a user would
            await asyncio.sleep(0.01)
            if cache.open_batches():
                break
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()
        assert len(cache.open_batches()) == 1 and srv.batch_count() == 1
        cache.close()
        make_read_only(path)
        caplog.clear()  # the first run said it submitted its batch
        try:
            with obeying_file_modes(tmp_path), caplog.at_level(logging.WARNING):
                cache = Cache(path)
                client = Client(provider(srv, "openai", batch="on", **FAST), cache)
                with pytest.raises(CallFailed) as info:
                    await asyncio.wait_for(client.map(requests(6)), 60)
                await client.aclose()
                cache.close()
        finally:
            make_writable(path)
        assert info.value.fatal and "needs a cache it can write" in str(info.value)
        assert srv.batch_count() == 1 and sorted(srv.submitted.values()) == [1] * 6
        assert ": submitted batch" not in said(caplog)
        assert "waiting for batch" in said(caplog)  # the resumed one


def test_the_command_on_a_read_only_cache_in_batch_mode_exits_3_naming_the_cache(tmp_path):
    """Through the real command in a real process (root obeys file modes there too): a run
    all of whose answers are cached exits 0 with 0 calls and no batch; one that needs new
    answers exits 3 before submitting a batch, naming the cache file and --cache."""
    (tmp_path / "shared").mkdir()
    cache = tmp_path / "shared" / "calls.sqlite"
    env = {k: v for k, v in os.environ.items()
           if k not in ("JUDGEAUDIT_CACHE", "OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"

    def evaluate(judge: str, limit: int, out: str, read_only: bool = True):
        return subprocess.run(
            [sys.executable, "-m", "judgeaudit.cli.main", "evaluate", "--judge", judge,
             "--data", "builtin:facts", "--limit", str(limit), "--cache", str(cache),
             "--out", str(tmp_path / out)], cwd=tmp_path, env=env, capture_output=True,
            text=True, timeout=300, preexec_fn=drop_write_override if read_only else None)

    with FakeBatchServer() as srv:
        live = f"openai:fake?base_url={srv.openai_url}&api_key=k"
        batch = f"{live}&batch=on&poll=0.02&batch_wait=0.05"
        res = evaluate(live, 4, "fill", read_only=False)
        assert res.returncode == 0, res.stderr
        srv.reset()
        make_read_only(cache, cache.parent)
        try:
            res = evaluate(batch, 4, "cached")
            assert res.returncode == 0, res.stderr
            doc = json.loads((tmp_path / "cached" / "results.json").read_text())
            assert doc["calls"]["made"] == 0 and doc["calls"]["cached"] == 8
            assert ": submitted batch" not in res.stderr

            res = evaluate(batch, 8, "more")
            err = " ".join(res.stderr.split())
            assert res.returncode == 3, res.stderr
            assert f"batch mode (batch=on) needs a cache it can write, and cache {cache}: " \
                   "cannot be written: read-only" in err
            assert "Nothing was submitted" in err and "--cache PATH or JUDGEAUDIT_CACHE" in err
            assert ": submitted batch" not in err and "loses nothing" not in err
        finally:
            make_writable(cache.parent, cache)
        assert srv.batch_count() == 0 and srv.count() == 0 and srv.api_log == []


async def test_a_batch_run_without_a_cache_does_not_promise_that_stopping_loses_nothing(
        caplog):
    """With no cache (--no-cache) the batch is submitted (the run may wait for it) but is not
    recorded: the run said "Stopping now loses nothing" all the same."""
    with FakeBatchServer() as srv, caplog.at_level(logging.WARNING):
        client = Client(provider(srv, "openai", batch="on", **FAST), None)
        outs = await client.map(requests(3))
        await client.aclose()
    assert not any(isinstance(o, CallFailed) for o in outs) and srv.batch_count() == 1
    text = said(caplog)
    assert "openai: submitted batch" in text and "loses nothing" not in text
    assert "It is not recorded (no cache): stopping before it ends loses its answers" in text
