"""An audit stage judges its items a chunk at a time, with the same verdicts.

Every probe's stages are asked at once; each stage built all its requests (rendered prompts)
and the client held every answer until the stage ended, so an audit's memory grew about 64 KB
per item (5,000 items: 479 MB peak RSS). `AuditContext.judge` now hands the judge at most
`judge_chunk(client)` items at a time; a judge in batch mode still gets its stage whole (one
batch, not one per chunk). The sim judge, a real Client, the real `Client.map` underneath."""

from __future__ import annotations

import asyncio

from judgeaudit.audit.probe import AuditContext, judge_chunk
from judgeaudit.data import load
from judgeaudit.judges import make_judge

SPEC = "sim?quality=1.5&position=0.8&seed=4"


def _sizes_of_map_calls(client) -> list[int]:
    """Record the number of requests of each `client.map` call (the real map runs)."""
    sizes: list[int] = []
    real = client.map

    async def spy(requests, on_done=None):
        sizes.append(len(requests))
        return await real(requests, on_done=on_done)

    client.map = spy
    return sizes


def test_a_stage_holds_one_chunk_of_requests_and_gives_the_same_verdicts():
    items = load("builtin:facts?seeds=0-2")[:600]
    assert len(items) == 600
    bundle = make_judge(SPEC)
    chunk = judge_chunk(bundle.client)
    assert chunk is not None and chunk < len(items)
    sizes = _sizes_of_map_calls(bundle.client)
    chunked = asyncio.run(AuditContext(bundle, items).judge(items))
    whole = asyncio.run(make_judge(SPEC).pairwise.judge(items))  # one map of all 1,200
    assert max(sizes) <= 2 * chunk, f"a map call of {max(sizes)} requests, chunk {chunk}"
    assert sum(sizes) == 2 * len(items)  # every item, both orders, once
    assert [v.as_dict() for v in chunked] == [v.as_dict() for v in whole]


def test_a_chunk_keeps_a_wide_client_busy_and_batch_mode_gets_the_stage_whole():
    assert judge_chunk(make_judge(SPEC).client) == 256
    wide = make_judge(SPEC, concurrency=200).client
    assert judge_chunk(wide) == 800  # 4 items per call it sends at once
    batch = make_judge("openai:m?base_url=http://127.0.0.1:9/v1&api_key=k&batch=on").client
    assert batch.batched and judge_chunk(batch) is None
