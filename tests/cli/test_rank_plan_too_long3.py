"""`rank --plan-only` with a pair too long for the judge: `judgeaudit ingest` keeps the
executor's too-long refusals (HTTP 400, over the model's context) in the cache, so the next
plan does not ask them again and the loop converges, as a live run leaves those pairs out.
Before, every --plan-only cycle planned the same refused pairs again and an adaptive rule
stayed in its first round for ever. Other error kinds are still planned again."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.llm import Cache
from tests.cli.test_plan_ingest import execute, invoke, stable


def _pool(path) -> None:
    rows = [{"id": f"it-{i:02d}", "prompt": "question", "quality": float(i),
             "response": ("LONGITEM " if i == 2 else "") + "word " * (3 + i) + f"answer {i}"}
            for i in range(6)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _too_long(req, attempt):
    return "too_long" if "LONGITEM" in req.prompt_text else None


@pytest.mark.parametrize("rule", ["topk", "random"])
def test_plan_cycles_with_a_too_long_item_converge_and_equal_a_direct_run(
        rule, tmp_path, monkeypatch, no_keys):
    pool = tmp_path / "pool.jsonl"
    _pool(pool)
    with FakeLLMServer(rule=_too_long, answer="A") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        args = ["rank", "--judge", spec, "--items", f"jsonl:{pool}", "--k", "2", "--budget",
                "24", "--rule", rule, "--samples", "100", "--lam", "1", "--covariates", "none",
                "--max-failed", "0.9"]
        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "direct.sqlite"))
        invoke(*args, "--out", tmp_path / "direct")
        direct = json.loads((tmp_path / "direct" / "results.json").read_text())
        assert direct["too_long"]["n_calls"] >= 1

        cache = tmp_path / "planned.sqlite"
        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(cache))
        planned = []
        for cycle in range(12):
            plan = tmp_path / f"plan{cycle}.jsonl"
            res = invoke("--plan-only", plan, *args, "--out", tmp_path / "planned")
            lines = plan.read_text().splitlines()
            planned.append(len(lines))
            if not lines:
                break
            execute(plan, tmp_path / f"out{cycle}.jsonl", srv.url)
            res = invoke("ingest", tmp_path / f"out{cycle}.jsonl", "--plan", plan)
            text = " ".join(res.output.split())
            if "too_long" in text:
                assert "too-long refusal" in text and "kept in the cache" in text
                assert "plans them again" not in text
        # before: the refused pairs were planned again every cycle and it never reached 0
        assert planned[-1] == 0, planned
        before = srv.count()
        invoke(*args, "--out", tmp_path / "replayed")
        assert srv.count() == before  # the refusals are read from the cache, not sent
    replayed = json.loads((tmp_path / "replayed" / "results.json").read_text())
    assert replayed["too_long"] == direct["too_long"]
    assert replayed["calls"]["made"] == 0
    assert replayed["calls"]["errors"] == direct["calls"]["errors"] == {
        "too_long": direct["too_long"]["n_calls"]}
    for doc in (replayed, direct):  # the error text differs: the executor's vs the client's
        for c in doc["comparisons"]:
            c.pop("error", None)
    assert stable(replayed) == stable(direct)


def test_only_too_long_refusals_are_kept_and_an_answer_replaces_one(tmp_path, monkeypatch,
                                                                   no_keys):
    """A server error line is planned again; a later answer to a refused request wins."""
    pool = tmp_path / "pool.jsonl"
    _pool(pool)
    cache_path = tmp_path / "c.sqlite"
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(cache_path))
    with FakeLLMServer(answer="A") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        args = ["rank", "--judge", spec, "--items", f"jsonl:{pool}", "--k", "2", "--budget",
                "6", "--rule", "random", "--samples", "100", "--lam", "1", "--covariates",
                "none", "--out", tmp_path / "o"]
        plan = tmp_path / "plan.jsonl"
        invoke("--plan-only", plan, *args)
        keys = [json.loads(x)["custom_id"] for x in plan.read_text().splitlines()]
        out = tmp_path / "out.jsonl"
        execute(plan, out, srv.url, fail={keys[0]})  # 400 "context length exceeded"
        rows = [json.loads(x) for x in out.read_text().splitlines()]
        rows[1] = {"id": "x", "custom_id": keys[1], "error": None, "response": {
            "status_code": 500, "request_id": "r", "body": {"error": {"message": "boom"}}}}
        out.write_text("".join(json.dumps(r) + "\n" for r in rows))
        res = invoke("ingest", out, "--plan", plan)
        text = " ".join(res.output.split())
        assert "1 too-long refusal kept in the cache" in text
        assert "the others not cached" in text
        cache = Cache(cache_path)
        assert cache.refusal(keys[0])[0] == "too_long" and cache.refusal(keys[1]) is None
        cache.close()
        invoke("--plan-only", tmp_path / "plan2.jsonl", *args)
        again = [json.loads(x)["custom_id"] for x in
                 (tmp_path / "plan2.jsonl").read_text().splitlines()]
        assert keys[1] in again and keys[0] not in again
        # an answer to the refused request, ingested later, replaces the refusal
        answer = next(r for r in rows if r["custom_id"] == keys[2])
        (tmp_path / "late.jsonl").write_text(json.dumps(answer | {"custom_id": keys[0]}) + "\n")
        invoke("ingest", tmp_path / "late.jsonl")
        cache = Cache(cache_path)
        assert cache.refusal(keys[0]) is None and cache.get(keys[0]) is not None
        cache.close()
