"""Planning (`Client.planner`) and ingest at the llm layer: one plan line per distinct request
with the body a live call sends, planned calls counted as planned (not failed), no secret in
a plan, ingest parsing exactly as a live reply, stages planned one after another, and cache
files from before the side tables."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import types
from pathlib import Path

import httpx
import pytest
from fakeserver import judge_request

from judgeaudit.llm import Cache, CallFailed, Client, Message, Request, make_provider
from judgeaudit.llm.base import request_key
from judgeaudit.llm.plan import Planner, ingest, is_planned

pytestmark = pytest.mark.usefixtures("no_key_env")


def execute(plan_path, out_path, url):
    with httpx.Client() as http, open(plan_path) as f, open(out_path, "w") as w:
        for i, raw in enumerate(f):
            line = json.loads(raw)
            r = http.post(url + line["url"], json=line["body"])
            w.write(json.dumps({"id": f"b{i}", "custom_id": line["custom_id"],
                                "response": {"status_code": r.status_code, "body": r.json()},
                                "error": None}) + "\n")


async def plan_and_execute(p, reqs, srv, tmp_path) -> tuple[Cache, Client]:
    """Plan `reqs` into plan.jsonl (their meta in c.sqlite), and answer the plan into
    out.jsonl from `srv`, as an executor would. Returns the cache and the planning client."""
    cache = Cache(tmp_path / "c.sqlite")
    planner = Planner(tmp_path / "plan.jsonl")
    planner.bind(cache)
    client = Client(p, cache)
    client.planner = planner
    await client.map(reqs)
    planner.write()
    execute(tmp_path / "plan.jsonl", tmp_path / "out.jsonl", srv.url)
    return cache, client


async def test_planned_calls_are_lines_not_failures_and_bodies_match_live_calls(
        fake_server, tmp_path):
    srv = fake_server()
    secret = "sk-canary-0123456789abcdef"
    p = make_provider("openai", "m", {"base_url": srv.openai_url, "api_key": secret,
                                      "prefill": "assistant"})
    cache = Cache(tmp_path / "c.sqlite")
    live = Client(p, cache)
    hit = await live.call(judge_request(0))  # one already answered
    planner = Planner(tmp_path / "plan.jsonl")
    planner.bind(cache)
    client = Client(p, cache)
    client.planner = planner
    reqs = [judge_request(i) for i in range(5)] * 2  # duplicates: one line each
    outs = await client.map(reqs)
    assert outs[0].text == hit.text
    planned = [o for o in outs if isinstance(o, CallFailed)]
    assert len(planned) == 8 and all(is_planned(o) and not o.fatal for o in planned)
    s = client.stats
    assert (s.made, s.cached, s.failed, s.planned) == (0, 2, 0, 8)
    assert srv.count() == 1  # only the live call above
    assert planner.n == 4 and planner.cached == {client.key(judge_request(0))}
    planner.write()
    lines = [json.loads(x) for x in (tmp_path / "plan.jsonl").read_text().splitlines()]
    assert [x["custom_id"] for x in lines] == [client.key(judge_request(i)) for i in (1, 2, 3, 4)]
    # The body is exactly what the live call sent (assistant prefill, logprobs).
    assert lines[0]["body"]["messages"][-1] == {"role": "assistant",
                                                "content": "The better response is Response"}
    live_body = srv.snapshot()[0].body
    assert {k for k in live_body} == {k for k in lines[0]["body"]}
    assert secret not in (tmp_path / "plan.jsonl").read_text()
    await live.aclose()
    await client.aclose()


async def test_ingest_parses_an_answer_exactly_as_a_live_reply(fake_server, tmp_path):
    srv = fake_server(confidence=0.8)
    p = make_provider("openai", "m", {"base_url": srv.openai_url})
    reqs = [judge_request(i, "AB"[i % 2]) for i in range(6)]
    live = Client(p, Cache(tmp_path / "live.sqlite"))
    want = await live.map(reqs)
    cache, client = await plan_and_execute(p, reqs, srv, tmp_path)
    rep = ingest(tmp_path / "out.jsonl", cache, plan=tmp_path / "plan.jsonl")
    assert (rep.ingested, rep.unanswered, rep.not_in_plan, rep.errors) == (6, 0, 0, {})
    again = Client(p, cache)
    got = await again.map(reqs)
    assert again.stats.cached == 6 and again.stats.made == 0
    assert [(g.text, g.probs, g.usage, g.raw) for g in got] == \
        [(w.text, w.probs, w.usage, w.raw) for w in want]
    assert got[0].probs == pytest.approx({"A": 0.8 / (0.8 + 0.2 * 0.8),
                                          "B": 0.2 * 0.8 / (0.8 + 0.2 * 0.8)})
    for c in (live, client, again):
        await c.aclose()


async def test_ingest_cuts_a_prefill_the_executing_server_repeats(fake_server, tmp_path):
    """llama.cpp's server answers an assistant prefill with the prefill and its continuation;
    ingest cuts it off as a live call does, so text-only verdicts stay valid."""
    srv = fake_server(echo_prefill=True, logprobs=False)
    p = make_provider("openai", "m", {"base_url": srv.openai_url, "prefill": "assistant",
                                      "logprobs": "off"})
    reqs = [judge_request(i, "AB"[i % 2]) for i in range(4)]
    live = Client(p, Cache(tmp_path / "live.sqlite"))
    want = [r.text for r in await live.map(reqs)]
    assert [w.strip() for w in want] == ["A.", "B.", "A.", "B."]
    cache, client = await plan_and_execute(p, reqs, srv, tmp_path)
    assert "The better response is Response A." in (tmp_path / "out.jsonl").read_text()
    assert ingest(tmp_path / "out.jsonl", cache).ingested == 4
    again = Client(p, cache)
    assert [r.text for r in await again.map(reqs)] == want and again.stats.made == 0
    for c in (live, client, again):
        await c.aclose()


async def test_other_providers_plan_an_openai_shaped_body(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    for kind, model in (("anthropic", "claude-x"), ("sim", "default")):
        planner = Planner(tmp_path / f"{kind}.jsonl")
        planner.bind(cache)
        client = Client(make_provider(kind, model, {}), cache)
        client.planner = planner
        req = judge_request(1)
        if kind == "sim":
            req = Request(req.messages, max_tokens=8, prefill=req.prefill, choices=("A", "B"),
                          meta={"quality": (1.0, 0.0), "texts": ("a", "b")})
        with pytest.raises(CallFailed) as err:
            await client.call(req)
        assert err.value.kind == "planned"
        planner.write()
        (line,) = [json.loads(x) for x in planner.path.read_text().splitlines()]
        body = line["body"]
        assert body["model"] == model and body["logprobs"] is True
        assert body["top_logprobs"] == 20 and body["max_tokens"] == 8
        # prefill as an answer-format line in the user turn, as the openai provider does
        assert body["messages"][-1]["role"] == "user"
        assert body["messages"][-1]["content"].endswith("Answer with a single letter.")
        assert cache.planned([line["custom_id"]])[line["custom_id"]][:2] == (kind, model)


async def test_dependent_requests_are_planned_stage_by_stage(fake_server, tmp_path):
    """A rewrite, then a judgement of the rewritten text: the first plan holds the rewrite,
    the second (after ingest) the judgement, the third nothing."""
    srv = fake_server(answer=lambda text: "rewritten text" if "Rewrite" in text else "A")
    p = make_provider("openai", "m", {"base_url": srv.openai_url})
    cache = Cache(tmp_path / "c.sqlite")

    async def pipeline(client: Client) -> str | None:
        rewrite = Request((Message("user", "Rewrite: the original"),), max_tokens=32)
        try:
            text = (await client.call(rewrite)).text
        except CallFailed:
            return None
        judge = Request((Message("user", f"Judge this: {text}"),), choices=("A", "B"),
                        prefill="Verdict:")
        try:
            return (await client.call(judge)).text
        except CallFailed:
            return None

    sizes = []
    for stage in range(3):
        planner = Planner(tmp_path / f"plan{stage}.jsonl")
        planner.bind(cache)
        client = Client(p, cache)
        client.planner = planner
        assert await pipeline(client) is None or stage == 2
        planner.write()
        sizes.append(planner.n)
        if planner.n:
            execute(planner.path, tmp_path / f"out{stage}.jsonl", srv.url)
            assert ingest(tmp_path / f"out{stage}.jsonl", cache).ingested == planner.n
        await client.aclose()
    assert sizes == [1, 1, 0]
    client = Client(p, cache)
    assert await pipeline(client) == "A" and client.stats.made == 0
    assert "Judge this: rewritten text" in json.loads(
        (tmp_path / "plan1.jsonl").read_text())["body"]["messages"][0]["content"]


def test_an_old_cache_file_gains_the_side_tables(tmp_path):
    path = tmp_path / "old.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE calls (key TEXT PRIMARY KEY, provider TEXT NOT NULL, "
                       "model TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL);"
                       "INSERT INTO calls VALUES ('k1', 'openai', 'm', "
                       "'{\"text\": \"A\", \"probs\": null, \"usage\": {}, \"raw\": null}', 0);")
    conn.commit()
    conn.close()
    cache = Cache(path)
    assert cache.get("k1").text == "A"
    cache.put_planned([("k2", "openai", "m", "[]")])
    assert cache.planned(["k1", "k2"]) == {"k2": ("openai", "m", "[]")}
    cache.add_batch("b1", provider="openai", model="m", identity="x", params="{}",
                    requests=[("k2", "[]")])
    assert [b["batch_id"] for b in cache.open_batches("x")] == ["b1"]
    cache.set_batch_status("b1", "done")
    assert cache.open_batches() == [] and cache.batches()[0]["status"] == "done"


def test_plan_keys_are_the_cache_keys_of_the_same_spec():
    p = make_provider("openai", "m", {"base_url": "http://127.0.0.1:9/v1", "batch": "on"})
    q = make_provider("openai", "m", {"base_url": "http://127.0.0.1:9/v1"})
    assert request_key(p, judge_request(3)) == request_key(q, judge_request(3))


# ---- the Ray Data recipe of docs/scale-out.md -------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs" / "scale-out.md"


def ray_recipe(ray_module) -> dict:
    """The recipe's code block, run with `ray_module` as `ray`."""
    text = DOCS.read_text()
    block = text.split("<!-- ray-recipe")[1].split("```python\n", 1)[1].split("```", 1)[0]
    saved = sys.modules.get("ray")
    sys.modules["ray"] = ray_module
    try:
        ns: dict = {}
        exec(compile(block, str(DOCS), "exec"), ns)  # noqa: S102 - our own documentation
    finally:
        if saved is None:
            sys.modules.pop("ray", None)
        else:
            sys.modules["ray"] = saved
    return ns


async def planned(tmp_path, srv, n=12):
    p = make_provider("openai", "m", {"base_url": srv.openai_url})
    cache = Cache(tmp_path / "c.sqlite")
    planner = Planner(tmp_path / "plan.jsonl")
    planner.bind(cache)
    client = Client(p, cache)
    client.planner = planner
    reqs = [judge_request(i, "AB"[i % 2]) for i in range(n)]
    await client.map(reqs)
    planner.write()
    return p, cache, reqs


async def test_the_ray_recipe_answers_plan_lines_in_the_output_format(fake_server, tmp_path):
    srv = fake_server()
    p, cache, reqs = await planned(tmp_path, srv)
    ns = ray_recipe(types.ModuleType("ray"))
    lines = (tmp_path / "plan.jsonl").read_text().splitlines()
    out = ns["answer"]({"text": lines}, base_url=srv.openai_url)["line"]
    (tmp_path / "out.jsonl").write_text("\n".join(out) + "\n")
    rep = ingest(tmp_path / "out.jsonl", cache, plan=tmp_path / "plan.jsonl")
    assert (rep.ingested, rep.unanswered, rep.errors) == (12, 0, {})
    client = Client(p, cache)
    assert [o.text for o in await client.map(reqs)] == ["AB"[i % 2] for i in range(12)]
    assert client.stats.cached == 12


@pytest.mark.slow
async def test_the_ray_recipe_runs_as_a_ray_data_job(fake_server, tmp_path):
    ray = pytest.importorskip("ray")
    srv = fake_server()
    p, cache, reqs = await planned(tmp_path, srv, n=40)
    ns = ray_recipe(ray)
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        n = await asyncio.to_thread(ns["run"], str(tmp_path / "plan.jsonl"),
                                    str(tmp_path / "out.jsonl"), srv.openai_url, 2)
    finally:
        ray.shutdown()
    assert n == 40
    rep = ingest(tmp_path / "out.jsonl", cache, plan=tmp_path / "plan.jsonl")
    assert (rep.ingested, rep.unanswered) == (40, 0)
