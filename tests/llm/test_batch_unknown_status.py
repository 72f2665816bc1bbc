"""A batch whose status checks come back without a status (or with one the batch API does not
have) fails the run, naming the batch and what came back. It was polled until killed (17
polls in 120 s against a server whose GET /v1/batches/ID had no `status`): nothing told such
an answer from a batch still under way. The batch stays recorded, so a later run (against a
fixed server) picks it up instead of paying for its requests again. Real loopback servers
speaking the batch APIs (tests/llm/fakebatch.py), through the official SDKs."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request
from typer.testing import CliRunner

from judgeaudit.llm import Cache, CallFailed, Client, make_provider
from judgeaudit.llm.batch import UNKNOWN_POLLS

pytestmark = pytest.mark.usefixtures("no_key_env")
FAST = {"poll": "0.02", "batch_wait": "0.05"}
STATUS = {"openai": "status", "anthropic": "processing_status"}


def provider(srv: FakeBatchServer, kind: str, **params: str):
    if kind == "anthropic":
        return make_provider("anthropic", "claude-fake", {"base_url": srv.anthropic_url,
                                                          "api_key": "k", **params})
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k",
                                            **params})


def without_status(kind: str):
    def rewrite(obj: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in obj.items() if k != STATUS[kind]}
    return rewrite


def named(kind: str, status: str):
    def rewrite(obj: dict[str, Any]) -> dict[str, Any]:
        return {**obj, STATUS[kind]: status}
    return rewrite


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize(("how", "said"), [
    ("missing", "no status"), ("unknown", "status 'paused_forever'")])
async def test_a_batch_without_a_known_status_fails_the_run_naming_it(tmp_path, kind, how, said):
    rewrite = without_status(kind) if how == "missing" else named(kind, "paused_forever")
    with FakeBatchServer(polls_to_finish=1000, batch_object=rewrite) as srv:
        cache = Cache(tmp_path / "c.sqlite")
        client = Client(provider(srv, kind, batch="on", **FAST), cache)
        with pytest.raises(CallFailed) as info:  # within a minute: it was polled forever
            await asyncio.wait_for(client.map([judge_request(i) for i in range(4)]), 60)
        await client.aclose()
        (batch_id,) = srv.batches
        msg = str(info.value)
        assert info.value.fatal and info.value.kind == "malformed"
        assert f"batch {batch_id}: the provider's status checks came back with {said} " \
            f"{UNKNOWN_POLLS} times in a row" in msg
        assert f'"id": "{batch_id}"' in msg  # what came back
        assert "judgeaudit batch cancel" in msg
        assert srv.polls() == UNKNOWN_POLLS  # then no more
        assert [b["status"] for b in cache.batches()] == ["submitted"]  # still open
        cache.close()

        # The batch stays recorded: once the server answers properly, the next run resumes
        # it and submits nothing again.
        srv.batch_object = lambda obj: obj
        srv.polls_to_finish = 1
        cache = Cache(tmp_path / "c.sqlite")
        client = Client(provider(srv, kind, batch="on", **FAST), cache)
        outs = await client.map([judge_request(i) for i in range(4)])
        await client.aclose()
        assert not any(isinstance(o, CallFailed) for o in outs)
        assert srv.batch_count() == 1 and srv.count() == 0


async def test_a_status_missing_now_and_then_is_waited_out(tmp_path):
    """A proxy that drops the status on a check or two: fewer than UNKNOWN_POLLS in a row
    does not fail the run."""
    seen = {"n": 0}

    def flaky(obj: dict[str, Any]) -> dict[str, Any]:
        seen["n"] += 1
        return without_status("openai")(obj) if seen["n"] % UNKNOWN_POLLS else obj

    with FakeBatchServer(polls_to_finish=4, batch_object=flaky) as srv:
        client = Client(provider(srv, "openai", batch="on", **FAST), Cache(tmp_path / "c.db"))
        outs = await client.map([judge_request(i) for i in range(4)])
        await client.aclose()
        assert not any(isinstance(o, CallFailed) for o in outs)
        assert srv.polls() > UNKNOWN_POLLS


def test_an_audit_against_such_a_server_ends_with_the_failure(tmp_path, monkeypatch):
    from judgeaudit.cli.main import app
    from tests.cli.test_cli import write_items

    data = tmp_path / "items.jsonl"
    write_items(data, 6)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    with FakeBatchServer(polls_to_finish=1000, batch_object=without_status("openai")) as srv:
        spec = (f"openai:fake?base_url={srv.openai_url}&api_key=k&batch=on&poll=0.02"
                "&batch_wait=0.1")
        res = CliRunner().invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                       "--n", "6", "--out", str(tmp_path / "out")])
        (batch_id,) = srv.batches
        assert srv.polls() == UNKNOWN_POLLS
    assert res.exit_code != 0
    out = " ".join(res.output.split())
    assert f"batch {batch_id}: the provider's status checks came back with no status" in out
    assert f'"id": "{batch_id}"' in out  # what came back


def test_batch_cancel_gives_up_a_batch_whose_status_cannot_be_read(tmp_path):
    """The failure says `judgeaudit batch cancel ID` gives the batch up, but cancel only asked
    the provider: the batch stayed "submitted" and the next run waited for it and failed
    again (tester t-docs). It is now recorded as cancelled, and the next run asks its
    requests again in a new batch."""
    from judgeaudit.cli.main import app

    db = tmp_path / "c.sqlite"
    with FakeBatchServer(polls_to_finish=1000, batch_object=without_status("openai")) as srv:
        async def run() -> list[Any]:
            client = Client(provider(srv, "openai", batch="on", **FAST), Cache(db))
            try:
                return await asyncio.wait_for(
                    client.map([judge_request(i) for i in range(4)]), 60)
            finally:
                await client.aclose()

        with pytest.raises(CallFailed):
            asyncio.run(run())
        (batch_id,) = srv.batches
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&batch=on"
        res = CliRunner().invoke(app, ["batch", "cancel", batch_id, "--cache", str(db),
                                       "--judge", spec])
        assert res.exit_code == 0, res.output
        # the next run, against the same server, gives it up and asks again in a new batch
        srv.polls_to_finish = 1
        srv.batch_object = lambda obj: obj if obj["id"] != batch_id else \
            without_status("openai")(obj)
        outs = asyncio.run(run())
        assert not any(isinstance(o, CallFailed) for o in outs)
        assert srv.batch_count() == 2  # a new batch for the requests the first never answered
        cache = Cache(db)
        assert {b["batch_id"]: b["status"] for b in cache.batches()}[batch_id] == "cancelled"
        cache.close()
