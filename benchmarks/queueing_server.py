"""Calls to a server that answers one request at a time (a llama.cpp server on a CPU, a
single replica), more of them in flight than it has slots: the queued ones wait out the
timeout. Runs the same client workload with the code of two source trees side by side,
alternating, and counts failed calls, the requests that reached the server (each a paid or
computed answer) and the wall time.

    git worktree add /tmp/before <rev-before>
    python benchmarks/queueing_server.py --before /tmp/before/src --runs 3 \
        --out benchmarks/results/queueing_server.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

RUN = r"""
import asyncio, json, sys, threading, time
sys.path.insert(0, {tests!r})
from fakeserver import FakeLLMServer, default_answer, judge_request
from judgeaudit.llm import CallFailed, Client, make_provider

lock = threading.Lock()
def one_slot(text):
    with lock:
        time.sleep({seconds})
    return default_answer(text)

with FakeLLMServer(answer=one_slot) as srv:
    p = make_provider("openai", "m", {{"base_url": srv.openai_url, "api_key": "k"}})
    c = Client(p, concurrency={concurrency}, timeout={timeout})
    t0 = time.monotonic()
    outs = asyncio.run(c.map([judge_request(i) for i in range({calls})]))
    wall = time.monotonic() - t0
    print(json.dumps({{"wall_s": round(wall, 2),
                      "failed": sum(isinstance(o, CallFailed) for o in outs),
                      "server_requests": srv.count(), "retries": c.stats.retries}}))
"""


def one(src: str, args: argparse.Namespace) -> dict:
    code = RUN.format(tests=str(ROOT / "tests/llm"), seconds=args.seconds,
                      concurrency=args.concurrency, timeout=args.timeout, calls=args.calls)
    env = {**os.environ, "PYTHONPATH": src}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="src/ of the code to compare with")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=48)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=1.6)
    ap.add_argument("--seconds", type=float, default=0.5, help="per answer, one at a time")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from judgeaudit.llm.local_model import cpu_summary

    trees = {"before": args.before, "now": str(ROOT / "src")}
    rows: dict[str, list[dict]] = {k: [] for k in trees}
    for r in range(args.runs):
        for name, src in trees.items():
            rows[name].append(one(src, args))
            print(r, name, rows[name][-1], flush=True)
    summary = {name: {k: statistics.median(x[k] for x in runs) for k in runs[0]}
               for name, runs in rows.items()}
    doc = {"setting": {k: getattr(args, k) for k in ("calls", "concurrency", "timeout",
                                                     "seconds", "runs")},
           "ideal_wall_s": args.calls * args.seconds,
           "median": summary, "runs": rows, "cpu": cpu_summary()}
    print(json.dumps(doc["median"], indent=1))
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
