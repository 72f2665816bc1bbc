"""Batch-mode figures: how fast plans are written and ingested, and what the default audit
costs a hosted judge at the sync and the batch price.

    python benchmarks/batch.py            # all parts, into benchmarks/results/batch.json
    python benchmarks/batch.py --n 20000  # a quicker look

plan: N distinct pairwise-judge requests (the built-in pairwise template's shape: a ~900
character system+user prompt, choices A/B, prefill) through `Client.call` with a planner on
an `openai:` provider and an empty SQLite cache: each call looks the cache up, misses, and
is planned; then the plan file is written (atomically) with the planned requests' meta in
the cache. Requests per second over the whole (calls + write), and the write alone.

ingest: an OpenAI batch output file with one chat.completion per planned request (with
first-token top-20 logprobs, as a live server with logprobs returns it) is read into the
cache with `judgeaudit.llm.plan.ingest`: parse, logprob choice probabilities, one
transaction per 5,000 answers. Requests per second.

cost: `judgeaudit --plan-only PLAN audit --judge sim` (the default probes at the default
n, 40 items) counts the distinct requests of the default audit (`--cost-only` re-measures
this part alone and keeps the file's plan and ingest figures); prompt tokens are estimated from
the plan bodies (message characters / 4, the usual English rule of thumb; ~5 completion
tokens per verdict), and also given at the brief's round 400/5. Prices: the providers'
tables in judgeaudit (USD per million tokens), batch = half.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

SYSTEM = ("You are a careful, impartial judge. You compare two responses to the same "
          "instruction and decide which one is better: more correct, more helpful and more "
          "faithful to the instruction. The order of the responses, their length and their "
          "style must not influence you.")


def request(i: int):
    from judgeaudit.llm import Message, Request

    user = (f"Instruction:\nWhat is {i} plus {i + 7}?\n\nResponse A:\nThe sum of {i} and "
            f"{i + 7} is {2 * i + 7}.\n\nResponse B:\nThe sum of {i} and {i + 7} is "
            f"{2 * i + 8}.\n\nWhich response is better? Answer with a single letter: A or B.")
    return Request(messages=(Message("system", SYSTEM), Message("user", user)),
                   prefill="The better response is Response", choices=("A", "B"),
                   max_tokens=8)


def completion(body: dict, answer: str = "A") -> dict:
    top = [{"token": "A", "logprob": math.log(0.9), "bytes": None},
           {"token": " B", "logprob": math.log(0.08), "bytes": None}]
    top += [{"token": f"t{k}", "logprob": -8.0 - k, "bytes": None} for k in range(18)]
    return {"id": "chatcmpl-x", "object": "chat.completion", "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer},
                         "finish_reason": "stop",
                         "logprobs": {"content": [{"token": answer,
                                                   "logprob": math.log(0.9),
                                                   "bytes": None, "top_logprobs": top}]}}],
            "usage": {"prompt_tokens": 200, "completion_tokens": 1, "total_tokens": 201}}


async def plan_part(n: int, tmp: Path) -> dict:
    from judgeaudit.llm import Cache, Client, make_provider
    from judgeaudit.llm.plan import Planner

    cache = Cache(tmp / "plan.sqlite")
    provider = make_provider("openai", "judge-model", {"base_url": "http://127.0.0.1:9/v1"})
    client = Client(provider, cache)
    planner = Planner(tmp / "plan.jsonl")
    planner.bind(cache)
    client.planner = planner
    reqs = [request(i) for i in range(n)]
    t0 = time.perf_counter()
    await client.map(reqs)
    t1 = time.perf_counter()
    planner.write()
    t2 = time.perf_counter()
    assert planner.n == n and client.stats.planned == n
    size = (tmp / "plan.jsonl").stat().st_size
    cache.close()
    return {"requests": n, "seconds_calls": round(t1 - t0, 2), "seconds_write": round(t2 - t1, 2),
            "requests_per_second": round(n / (t2 - t0)),
            "write_requests_per_second": round(n / (t2 - t1)),
            "plan_bytes": size}


def ingest_part(tmp: Path) -> dict:
    from judgeaudit.llm import Cache
    from judgeaudit.llm.plan import ingest

    out = tmp / "output.jsonl"
    n = 0
    with open(tmp / "plan.jsonl") as f, open(out, "w") as w:
        for i, raw in enumerate(f):
            line = json.loads(raw)
            w.write(json.dumps({"id": f"b{i}", "custom_id": line["custom_id"],
                                "response": {"status_code": 200, "request_id": f"r{i}",
                                             "body": completion(line["body"])},
                                "error": None}) + "\n")
            n += 1
    cache = Cache(tmp / "plan.sqlite")
    t0 = time.perf_counter()
    rep = ingest(out, cache)
    t1 = time.perf_counter()
    assert rep.ingested == n, rep
    entries = cache.stats().entries
    cache.close()
    return {"requests": n, "seconds": round(t1 - t0, 2),
            "requests_per_second": round(n / (t1 - t0)), "output_bytes": out.stat().st_size,
            "cache_entries": entries}


def cost_part(tmp: Path) -> dict:
    from judgeaudit.llm.providers.anthropic import ANTHROPIC_PRICES
    from judgeaudit.llm.providers.openai import BATCH_DISCOUNT, OPENAI_PRICES

    plan = tmp / "audit-plan.jsonl"
    env = {**os.environ, "JUDGEAUDIT_CACHE": str(tmp / "audit.sqlite"),
           "PYTHONPATH": str(ROOT / "src")}
    cmd = [sys.executable, "-m", "judgeaudit.cli.main", "--plan-only", str(plan), "audit",
           "--judge", "sim", "--out", str(tmp / "audit-out")]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    bodies = [json.loads(x)["body"] for x in plan.read_text().splitlines()]
    n = len(bodies)
    chars = [sum(len(m["content"]) for m in b["messages"]) for b in bodies]
    est_prompt = sum(c / 4 for c in chars) / n
    completion_tokens = 5
    judges = {"gpt-4o-mini": OPENAI_PRICES["gpt-4o-mini"],
              "claude-3-5-haiku": ANTHROPIC_PRICES["claude-3-5-haiku"],
              "claude-haiku-4-5": ANTHROPIC_PRICES["claude-haiku-4-5"]}
    out: dict = {"command": "judgeaudit --plan-only PLAN audit --judge sim",
                 "planned_requests": n,
                 "prompt_chars_mean": round(sum(chars) / n),
                 "prompt_tokens_estimated_mean": round(est_prompt),
                 "completion_tokens_assumed": completion_tokens, "judges": {}}
    for name, (pin, pout) in judges.items():
        row = {"price_per_mtok": [pin, pout]}
        for label, ptok in (("measured", est_prompt), ("assumed_400", 400.0)):
            sync = n * (ptok * pin + completion_tokens * pout) / 1e6
            row[label] = {"prompt_tokens_per_call": round(ptok),
                          "sync_usd": round(sync, 4),
                          "batch_usd": round(sync * BATCH_DISCOUNT, 4)}
        out["judges"][name] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "batch.json")
    ap.add_argument("--cost-only", action="store_true",
                    help="re-measure the default audit's cost alone, into the existing file")
    args = ap.parse_args()
    if args.cost_only:
        doc = json.loads(args.out.read_text())
        with tempfile.TemporaryDirectory() as d:
            doc["cost_default_audit"] = cost_part(Path(d))
        doc["cost_default_audit"]["date"] = dt.date.today().isoformat()
        args.out.write_text(json.dumps(doc, indent=2) + "\n")
        print(json.dumps(doc["cost_default_audit"], indent=1))
        return
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        plan = asyncio.run(plan_part(args.n, tmp))
        print("plan", plan, flush=True)
        ing = ingest_part(tmp)
        print("ingest", ing, flush=True)
        cost = cost_part(tmp)
        print("cost", json.dumps(cost, indent=1), flush=True)
    doc = {
        "about": {
            "script": "benchmarks/batch.py", "date": dt.date.today().isoformat(),
            "python": platform.python_version(), "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "load_before": round(os.getloadavg()[0], 2),
            "note": "shared 2-core machine; rates are of one process on a loaded machine",
        },
        "plan": plan, "ingest": ing, "cost_default_audit": cost,
    }
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
