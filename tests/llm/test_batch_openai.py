"""Batch mode through OpenAI's Batch API (`openai:MODEL?batch=on`), against a loopback server
that implements files, batches, output and error files (tests/llm/fakebatch.py): the same
answers as live calls with no live call, expired batches and failed lines retried through the
next batch, refused lines reported, and a run killed while polling resumes its batches
without submitting anything again."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request
from typer.testing import CliRunner

from judgeaudit.llm import Cache, CallFailed, Client, RetryPolicy, make_provider
from judgeaudit.llm.base import request_key

pytestmark = pytest.mark.usefixtures("no_key_env")
SRC = Path(__file__).resolve().parents[2] / "src"
FAST = {"poll": "0.02", "batch_wait": "0.05"}


def provider(srv: FakeBatchServer, **params: str):
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k",
                                            **params})


def requests(n: int):
    return [judge_request(i, "AB"[i % 3 == 0]) for i in range(n)]


def same(a, b) -> bool:
    return (a.text, a.probs, a.usage, a.raw) == (b.text, b.probs, b.usage, b.raw)


async def test_2000_requests_in_batches_answer_as_live_calls_with_no_live_call(tmp_path):
    with FakeBatchServer() as srv:
        reqs = requests(2000)
        live = Client(provider(srv), Cache(tmp_path / "live.sqlite"), concurrency=32)
        want = await live.map(reqs)
        await live.aclose()
        assert srv.count() == 2000 and srv.batch_count() == 0

        srv.reset()
        cache = Cache(tmp_path / "batch.sqlite")
        client = Client(provider(srv, batch="on", batch_size="500", **FAST), cache)
        got = await client.map(reqs)
        await client.aclose()
        assert srv.count() == 0  # not one live call
        assert srv.batch_count() == 4 and sum(srv.submitted.values()) == 2000
        assert all(same(g, w) for g, w in zip(got, want, strict=True))
        s = client.stats
        assert (s.made, s.cached, s.failed, s.retries) == (2000, 0, 0, 0)
        assert s.prompt_tokens == live.stats.prompt_tokens
        # Every answer is in the cache, the batches are recorded as done.
        assert cache.stats().entries == 2000
        assert {b["status"] for b in cache.batches()} == {"done"}
        assert cache.open_batches() == []
        # A re-run (batch mode or not) is served from the cache.
        again = Client(provider(srv, batch="on", **FAST), cache)
        assert all(same(g, w) for g, w in zip(await again.map(reqs), want, strict=True))
        assert again.stats.cached == 2000 and srv.batch_count() == 4
        await again.aclose()


async def test_a_batch_submits_only_the_lines_the_spend_cap_can_pay_for(tmp_path):
    """Each batched call holds its ceiling on the cap before it is submitted (before, the
    calls were all submitted at once, before any had cost anything: the cap did nothing)."""
    from judgeaudit.llm import SpendCap
    from judgeaudit.llm.plan import body_ceiling, plan_body

    with FakeBatchServer() as srv:
        p = provider(srv, batch="on", price_in="1", price_out="0", **FAST)
        ceiling = body_ceiling(plan_body(judge_request(10), p), p.price_per_mtok)[2]
        client = Client(p, Cache(tmp_path / "c.sqlite"))
        client.spend_cap = SpendCap(10.5 * ceiling)
        outs = await client.map(requests(40))
        await client.aclose()
        sent = sum(srv.submitted.values())
        assert sent == client.stats.made == 10 and srv.count() == 0
        assert client.stats.not_sent == 30
        assert all(o.kind == "spend_cap" for o in outs if isinstance(o, CallFailed))
        assert client.stats.cost_usd <= client.spend_cap.limit


async def test_a_submitted_batch_is_said_without_verbose_with_what_stopping_costs(
        tmp_path, caplog):
    """A batch run may wait hours with its bar at 0: each batch is said once at the default
    level (it was INFO, shown only with -v), with the wait and that Ctrl-C loses nothing."""
    import logging

    caplog.set_level(logging.WARNING)
    with FakeBatchServer() as srv:
        client = Client(provider(srv, batch="on", **FAST), Cache(tmp_path / "c.sqlite"))
        await client.map(requests(5))
        await client.aclose()
    said = [r.getMessage() for r in caplog.records if "submitted batch" in r.getMessage()]
    assert len(said) == 1 and "(5 requests); the provider answers within 24 h" in said[0]
    assert "Stopping now loses nothing" in said[0]


async def test_an_expired_batch_sends_its_unfinished_requests_again(tmp_path):
    secret = "sk-batch-canary-0123456789"
    with FakeBatchServer(expire_batches=1) as srv:
        client = Client(provider(srv, batch="on", api_key=secret, **FAST),
                        Cache(tmp_path / "c.sqlite"))
        outs = await client.map(requests(40))
        await client.aclose()
        blob = b"".join(p.read_bytes() for p in tmp_path.glob("c.sqlite*"))
        assert secret.encode() not in blob  # batch records keep no key
        assert all(not isinstance(o, CallFailed) for o in outs)
        assert srv.batch_count() == 2
        assert sorted(srv.submitted.values()) == [1] * 20 + [2] * 20  # the expired half again
        s = client.stats
        assert s.made == 40 and s.retries == 20 and s.errors == {"timeout": 20}
        states = sorted(b["status"] for b in client.cache.batches())
        assert states == ["done", "expired"]


async def test_line_errors_retried_or_reported_by_kind(tmp_path):
    bad, flaky = {3, 7}, {1, 2, 5}
    keys: dict[str, int] = {}

    def rule(cid, body, attempt):
        i = keys[cid]
        if i in bad:
            return "400"
        if i in flaky and attempt == 0:
            return "500" if i != 5 else "429"
        return None

    with FakeBatchServer(line_rule=rule) as srv:
        p = provider(srv, batch="on", **FAST)
        reqs = requests(10)
        keys.update({request_key(p, r): i for i, r in enumerate(reqs)})
        client = Client(p, Cache(tmp_path / "c.sqlite"))
        outs = await client.map(reqs)
        await client.aclose()
        failed = {i for i, o in enumerate(outs) if isinstance(o, CallFailed)}
        assert failed == bad
        assert all(o.kind == "bad_request" and not o.fatal and "HTTP 400" in str(o)
                   for o in outs if isinstance(o, CallFailed))
        s = client.stats
        assert (s.made, s.failed, s.retries) == (8, 2, 3)
        assert s.errors == {"bad_request": 2, "server": 2, "rate_limit": 1}
        assert srv.count() == 0 and srv.batch_count() == 2
        for i in bad:  # a refused line is never cached
            assert client.cache.get(request_key(p, reqs[i])) is None


async def test_a_batch_failing_validation_fails_its_calls(tmp_path):
    with FakeBatchServer(fail_batches=1) as srv:
        client = Client(provider(srv, batch="on", **FAST), Cache(tmp_path / "c.sqlite"))
        outs = await client.map(requests(5))
        await client.aclose()
        assert all(isinstance(o, CallFailed) and o.kind == "bad_request" and not o.fatal
                   for o in outs)
        assert "model does not exist" in str(outs[0])
        assert client.stats.failed == 5 and client.stats.made == 0
        assert [b["status"] for b in client.cache.batches()] == ["failed"]


async def test_a_server_refusing_logprobs_in_batch_is_asked_without_them(tmp_path):
    with FakeBatchServer(reject_logprobs=True) as srv:
        client = Client(provider(srv, batch="on", **FAST), Cache(tmp_path / "c.sqlite"))
        outs = await client.map(requests(6))
        await client.aclose()
        assert [o.text for o in outs] == ["B", "A", "A", "B", "A", "A"]
        assert all(o.probs is None for o in outs)
        assert srv.batch_count() == 2 and client.stats.retries == 6


async def test_a_server_allowing_fewer_top_logprobs_in_batch_is_asked_for_what_it_allows(
        tmp_path):
    """Each line refused for asking 20 top logprobs (Azure: at most 5) is asked again in the
    next batch with 5, as a live call is, and keeps its probabilities (before, logprobs were
    dropped for good)."""
    with FakeBatchServer(max_top_logprobs=5) as srv:
        client = Client(provider(srv, batch="on", **FAST), Cache(tmp_path / "c.sqlite"))
        outs = await client.map(requests(6))
        await client.aclose()
        assert not any(isinstance(o, CallFailed) for o in outs)
        assert all(o.probs is not None for o in outs)
        assert srv.batch_count() == 2 and client.stats.retries == 6


def test_batch_price_is_half_the_listed_price_and_parameters_are_checked():
    sync = make_provider("openai", "gpt-4o-mini", {})
    batch = make_provider("openai", "gpt-4o-mini", {"batch": "on"})
    assert sync.price_per_mtok == (0.15, 0.60)
    assert batch.price_per_mtok == pytest.approx((0.075, 0.30))
    own = make_provider("openai", "gpt-4o-mini", {"batch": "on", "price_in": "1",
                                                  "price_out": "2"})
    assert own.price_per_mtok == (1.0, 2.0)
    # batch parameters are operational: batch mode and live calls share the cache
    assert request_key(sync, judge_request(1)) == request_key(batch, judge_request(1))
    with pytest.raises(ValueError, match="add batch=on"):
        make_provider("openai", "m", {"poll": "5"})
    with pytest.raises(ValueError, match="at most 50000"):
        make_provider("openai", "m", {"batch": "on", "batch_size": "60000"})
    with pytest.raises(ValueError, match="one base_url"):
        make_provider("openai", "m", {"batch": "on",
                                      "base_url": "http://a:1/v1|http://b:2/v1"})


# ---- kill -9 while polling, then resume -------------------------------------------------------

CHILD = '''
import asyncio, json, sys
sys.path.insert(0, sys.argv[5])
from fakeserver import judge_request
from judgeaudit.llm import Cache, Client, make_provider

async def main(port, cache_path, out_path, n):
    p = make_provider("openai", "fake", {"base_url": f"http://127.0.0.1:{port}/v1",
                      "api_key": "k", "batch": "on", "batch_size": "100", "poll": "0.05",
                      "batch_wait": "0.05"})
    client = Client(p, Cache(cache_path))
    outs = await client.map([judge_request(i, "AB"[i % 3 == 0]) for i in range(n)])
    b = client._batcher
    await client.aclose()
    with open(out_path, "w") as f:
        json.dump({"texts": [o.text for o in outs], "stats": client.stats.as_dict(),
                   "submitted": b.submitted if b else [], "resumed": b.resumed if b else []}, f)

a = sys.argv
asyncio.run(main(int(a[1]), a[2], a[3], int(a[4])))
'''


def test_kill_9_while_polling_then_resume_submits_nothing_again(tmp_path):
    n = 300
    with FakeBatchServer(finish_after=2.0, polls_to_finish=1) as srv:
        script = tmp_path / "child.py"
        script.write_text(CHILD)
        cache_path, out = tmp_path / "c.sqlite", tmp_path / "out.json"
        argv = [sys.executable, str(script), str(srv.port), str(cache_path), str(out), str(n),
                str(Path(__file__).parent)]
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not (srv.batch_count() == 3 and srv.polls() >= 6):  # all submitted, polling
            assert proc.poll() is None, f"child exited early: {proc.stderr.read()}"
            assert time.monotonic() < deadline, "child never got to polling"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stderr.close()
        assert proc.returncode == -signal.SIGKILL and not out.exists()
        cache = Cache(cache_path)
        open_batches = cache.open_batches()
        assert len(open_batches) == 3 and cache.stats().entries == 0
        assert sum(len(b["requests"]) for b in open_batches) == n
        cache.close()

        # `judgeaudit batch status` shows them, with their state at the provider.
        from judgeaudit.cli import plan_cmd
        from judgeaudit.cli.main import app

        plan_cmd.register(app)
        res = CliRunner().invoke(app, ["batch", "status", "--cache", str(cache_path)])
        assert res.exit_code == 0, res.output
        assert res.output.count("batch_0") == 3 and "in_progress" in res.output

        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        result = json.loads(out.read_text())
        # 0 requests submitted again, 0 results lost, no live call.
        assert result["submitted"] == [] and len(result["resumed"]) == 3
        assert srv.batch_count() == 3 and set(srv.submitted.values()) == {1}
        assert result["texts"] == ["AB"[i % 3 == 0] for i in range(n)]
        assert result["stats"]["made"] == n and result["stats"]["failed"] == 0
        assert srv.count() == 0
        cache = Cache(cache_path)
        assert cache.stats().entries == n and cache.open_batches() == []
        cache.close()


async def test_batch_cancel_then_rerun_asks_the_rest_in_a_new_batch(tmp_path):
    import asyncio

    from judgeaudit.cli import plan_cmd
    from judgeaudit.cli.main import app

    plan_cmd.register(app)
    cache_path = tmp_path / "c.sqlite"
    with FakeBatchServer(finish_after=30.0, polls_to_finish=1) as srv:
        reqs = requests(10)
        client = Client(provider(srv, batch="on", **FAST), Cache(cache_path),
                        retry=RetryPolicy(max_retries=1))
        task = asyncio.ensure_future(client.map(reqs))
        while srv.polls() < 2:
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.aclose()  # the batch stays open, as after a kill

        res = await asyncio.to_thread(CliRunner().invoke, app,
                                      ["batch", "cancel", "--all", "--cache", str(cache_path)])
        assert res.exit_code == 0, res.output
        assert "cancelling" in res.output

        client = Client(provider(srv, batch="on", **FAST), Cache(cache_path))
        outs = await client.map(reqs)
        assert sum(isinstance(o, CallFailed) for o in outs) == 5  # cancelled, not retried
        assert all(o.kind == "other" and "cancel" in str(o) for o in outs
                   if isinstance(o, CallFailed))
        await client.aclose()
        srv.finish_after = 0.0
        client = Client(provider(srv, batch="on", **FAST), Cache(cache_path))
        outs = await client.map(reqs)
        await client.aclose()
        assert not any(isinstance(o, CallFailed) for o in outs)
        assert (client.stats.cached, client.stats.made) == (5, 5)
        assert srv.batch_count() == 2 and srv.count() == 0


def test_an_audit_in_batch_mode_writes_the_results_of_a_sync_audit(tmp_path, monkeypatch):
    from judgeaudit.cli.main import app
    from tests.cli.test_cli import write_items
    from tests.cli.test_plan_ingest import stable

    data = tmp_path / "items.jsonl"
    write_items(data, 12)
    docs = {}
    with FakeBatchServer() as srv:
        for mode, extra in (("sync", ""), ("batch", "&batch=on&poll=0.02&batch_wait=0.1")):
            monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / f"{mode}.sqlite"))
            srv.reset()
            spec = f"openai:fake?base_url={srv.openai_url}&api_key=k{extra}"
            res = CliRunner().invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                           "--n", "12", "--out", str(tmp_path / mode)])
            assert res.exit_code == 0, res.output
            docs[mode] = json.loads((tmp_path / mode / "results.json").read_text())
            if mode == "batch":
                assert srv.count() == 0 and srv.batch_count() == 1  # every stage at once
                assert sum(srv.submitted.values()) == docs["sync"]["calls"]["made"]
    assert docs["batch"]["calls"]["made"] == docs["sync"]["calls"]["made"]
    # the judge's spec differs by batch=on: its name and what it used (keyed by the spec)
    same = {"judge": None, "judges_used": None}
    for doc in docs.values():  # and the settings record the spec as given (6e9ae81)
        assert doc["settings"].pop("judge").startswith("openai:fake?")
    assert stable({**docs["batch"], **same}) == stable({**docs["sync"], **same})


def test_an_adaptive_audit_or_a_ranking_in_batch_mode_is_warned_of_its_rounds(
        tmp_path, monkeypatch, caplog):
    """Each round of an adaptive audit (or an active ranking) is chosen from the answers
    before it, so in batch mode it waits for a batch of its own: said up front, with how
    many rounds there can be; a live judge, or a fixed-n audit, hears nothing of it."""
    from judgeaudit.cli.main import app
    from tests.cli.test_cli import write_items

    data = tmp_path / "items.jsonl"
    write_items(data, 12)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    with FakeBatchServer() as srv:
        live = f"openai:fake?base_url={srv.openai_url}&api_key=k"
        batch = f"{live}&batch=on&poll=0.02&batch_wait=0.05"
        args = ["audit", "--data", f"jsonl:{data}", "--probes", "position"]
        adaptive = ["--adaptive", "--round-size", "4", "--max-n", "12"]
        for judge, extra, warned in ((batch, adaptive, True), (live, adaptive, False),
                                     (batch, ["--n", "12"], False)):
            caplog.clear()
            res = CliRunner().invoke(app, [*args, "--judge", judge, *extra,
                                           "--out", str(tmp_path / "o")])
            assert res.exit_code == 0, res.output
            said = "asks in rounds chosen from the answers before: up to 3 batches" in " ".join(
                caplog.text.split())
            assert said == warned, (judge, extra)
        caplog.clear()
        res = CliRunner().invoke(app, ["rank", "--judge", batch, "--items",
                                       "builtin:controlled?seed=1&n=8&k=2", "--budget", "16",
                                       "--out", str(tmp_path / "r")])
        assert res.exit_code == 0, res.output
        assert "rank asks in rounds chosen from the answers before: up to 2 batches" in " ".join(
            caplog.text.split())
