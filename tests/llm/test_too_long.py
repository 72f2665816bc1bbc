"""A prompt over the model's context fails that one call, not the run.

Servers answer such a prompt with a 400 (OpenAI, vLLM, llama.cpp, Anthropic), a 422 (TGI)
or a proxy's 413. Every other 400 stays fatal (a bad parameter is wrong for every call),
but this one is about one item: an audit whose verbosity probe makes a long item longer,
or a data set with a few huge responses, used to stop at the first such item with exit 3
and no results. Now the call fails at once (no retry), is counted under `too_long`, the
item is left out like any failed verdict, and the run's outcome rule decides.

Real servers on loopback (tests/llm/fakeserver.py) answering with each server's own words;
the embedded judge's own length check (its backends' tests check the error itself) in a
batch of generations.
"""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, judge_request, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm import CallFailed, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
LONG = {"3", "7"}

# What servers say (verbatim shapes) when a prompt does not fit.
MESSAGES = {
    "vllm": ("This model's maximum context length is 2048 tokens. However, you requested "
             "2100 tokens (2092 in the messages, 8 in the completion). Please reduce the "
             "length of the messages or completion."),
    "llamacpp": "the request exceeds the available context size, try increasing it",
    "tgi": ("Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. "
            "Given: 4100 `inputs` tokens and 8 `max_new_tokens`"),
    "anthropic": "prompt is too long: 210000 tokens > 200000 maximum",
}


def item_of(text: str) -> str | None:
    m = re.search(r"question item (\d+)\n", text)
    return m.group(1) if m else None


def too_long_for(items: set[str], fault: str = "too_long"):
    return lambda rec, attempt: fault if item_of(rec.prompt_text) in items else None


def openai(srv):
    return make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k"})


def anthropic(srv):
    return make_provider("anthropic", "claude-fake",
                         {"base_url": srv.anthropic_url, "api_key": "k"})


@pytest.mark.parametrize(("make", "server", "fault"), [
    (openai, "vllm", "too_long"), (openai, "llamacpp", "too_long"),
    (openai, "tgi", "too_long"), (openai, None, "413"), (anthropic, "anthropic", "too_long"),
])
async def test_a_prompt_too_long_fails_that_call_only(fake_server, make, server, fault):
    srv = fake_server(rule=too_long_for(LONG, fault), tgi=server == "tgi",
                      too_long_message=MESSAGES.get(server) if server else None)
    client = Client(make(srv), concurrency=2, retry=RetryPolicy(max_retries=3,
                                                               base_delay=0.001))
    outs = await client.map([judge_request(i) for i in range(10)])
    failed = {str(i): o for i, o in enumerate(outs) if isinstance(o, CallFailed)}
    assert set(failed) == LONG
    assert all(o.kind == "too_long" and not o.fatal for o in failed.values())
    assert all("too long for the model" in str(o) for o in failed.values())
    s = client.stats
    assert (s.made, s.failed, s.retries, s.not_sent) == (8, 2, 0, 0)
    assert s.errors == {"too_long": 2}
    # each rejected prompt was sent once (no retry), and calls after it still go out
    sent = [item_of(r.prompt_text) for r in srv.snapshot()]
    assert sorted(sent) == sorted(str(i) for i in range(10))
    assert not isinstance(await client.call(judge_request(11)), CallFailed)
    await client.aclose()


async def test_any_other_400_is_still_fatal(fake_server):
    srv = fake_server(rule=too_long_for({"3"}, "400"))
    client = Client(openai(srv), concurrency=1)
    outs = None
    with pytest.raises(CallFailed) as err:
        outs = await client.map([judge_request(i) for i in range(10)])
    assert outs is None and err.value.fatal and err.value.kind == "bad_request"
    await client.aclose()


def test_evaluate_with_one_item_too_long_finishes_and_counts_it(tmp_path, isolated_cache):
    """1 item of 10 too long: 2 of 20 calls fail (10%, under --max-failed 0.2): exit 0, the
    item counted as failed, the kind in results.json. Before, exit 3 and no results."""
    data = tmp_path / "items.jsonl"
    write_pairs(data, 10)
    with FakeLLMServer(rule=too_long_for({"4"})) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = CliRunner().invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                       "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["calls"]["failed"] == 2 and doc["calls"]["errors"] == {"too_long": 2}
    assert doc["run"]["status"] == "ok" and doc["n"] == 10
    row = next(v for v in doc["verdicts"] if v["item_id"] == "t:4")
    assert all("too long for the model" in (o["error"] or "") for o in row["orders"])


async def test_a_batch_of_local_generations_with_one_prompt_too_long(monkeypatch):
    """The embedded judge decodes generations in batches (gen_batch): a prompt over the
    model's context fails alone and the rest of its batch is answered one by one. The
    model is replaced by stand-ins for `generate_batch` / `generate_text` here (loading it
    is for the local_model tests); the batching and the settling are the provider's own."""
    import asyncio

    from judgeaudit.llm import Message, Request, RequestRejected, Response
    from judgeaudit.llm.providers import local

    def fake_batch(lm, reqs):
        if any("LONG" in r.messages[-1].content for r in reqs):
            raise RequestRejected("prompt of 9000 tokens (+8 to generate) exceeds the model's "
                                  "context of 4096 tokens")
        return [Response(text="ok " + r.messages[-1].content) for r in reqs]

    monkeypatch.setattr(local, "generate_batch", fake_batch)
    monkeypatch.setattr(local, "generate_text", lambda lm, r, *a: fake_batch(lm, [r])[0])
    p = make_provider("local", "qwen-0.5b", {"gen_batch": "4", "backend": "transformers"})
    p._lm = object()  # loaded: the stand-ins never look at it
    texts = ["one", "LONG two", "three", "four"]
    outs = await asyncio.gather(*(p.generate(Request(messages=(Message("user", t),),
                                                     temperature=0.5, max_tokens=8))
                                  for t in texts), return_exceptions=True)
    assert [o.text for o in outs if isinstance(o, Response)] == ["ok one", "ok three",
                                                                 "ok four"]
    assert isinstance(outs[1], RequestRejected) and outs[1].kind == "too_long"
