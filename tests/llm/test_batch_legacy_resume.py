"""An open batch an older version (before 6d2dcc3) submitted for a base_url written in the
spec not in one form (`URL/`) is resumed, not submitted again: it was recorded under the
identity and keys of then, which the new key no longer gives (the run submitted every line
again, billed twice, and left the old batch open in the cache for good). Loopback batch
server (tests/llm/fakebatch.py), a real SQLite cache."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request

from judgeaudit.llm import Cache, Client, make_provider
from judgeaudit.llm.batch import Batcher, identity_of
from judgeaudit.llm.client import CallStats

pytestmark = pytest.mark.usefixtures("no_key_env")
N = 10
FAST = {"poll": "0.02", "batch_wait": "0.05"}


def old(written: str, request=None) -> str:
    """The batch identity (no request) or a request's key as the old code made them: the
    parameters as given (batch parameters are operational, api_key secret: not in it)."""
    ident = {"provider": "openai", "model": "fake", "params": {"base_url": written}}
    if request is None:
        return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:32]
    blob = json.dumps({"id": ident, "req": request.key_material(False)}, sort_keys=True,
                      ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


async def submit_as_the_old_code_did(provider, cache, written, reqs) -> str:
    """A batch submitted and left open (a run killed while it waits), recorded under the old
    identity and keys: the old code's Batcher, given what it computed then."""
    b = Batcher(provider.batch_backend(), provider, cache=cache, stats=CallStats(),
                clean=lambda r: r)
    b.identity = old(written)
    tasks = [asyncio.ensure_future(b.call(old(written, r), r)) for r in reqs]
    while not b.submitted:
        await asyncio.sleep(0.01)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await b.aclose()
    return b.submitted[0]


async def test_an_open_batch_of_the_old_key_is_resumed_not_submitted_again(tmp_path):
    with FakeBatchServer(finish_after=0.5, polls_to_finish=1) as srv:
        written = srv.openai_url + "/"
        p = make_provider("openai", "fake", {"base_url": written, "api_key": "k",
                                             "batch": "on", **FAST})
        assert identity_of(p) != old(written)  # the identity did move
        reqs = [judge_request(i) for i in range(N)]
        cache = Cache(tmp_path / "c.sqlite")
        batch_id = await submit_as_the_old_code_did(p, cache, written, reqs)
        assert [b["batch_id"] for b in cache.open_batches()] == [batch_id]

        client = Client(p, cache)
        outs = await client.map(reqs)
        resumed = client._batcher.resumed
        await client.aclose()
        assert [o.text for o in outs] == ["A"] * N
        assert (srv.batch_count(), sum(srv.submitted.values())) == (1, N), (
            "the lines of the old batch were submitted again (billed twice)")
        assert resumed == [batch_id] and cache.open_batches() == []
        assert srv.count() == 0
        # its answers, stored under the old keys, serve a live run through the new key
        live = Client(make_provider("openai", "fake", {"base_url": written, "api_key": "k"}),
                      cache)
        again = await live.map(reqs)
        await live.aclose()
        assert [o.text for o in again] == ["A"] * N
        assert (live.stats.made, live.stats.cached, srv.count()) == (0, N, 0)
        cache.close()
