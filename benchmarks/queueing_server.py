"""Calls to a server that answers one request at a time (a llama.cpp server on a CPU, a
single replica), more of them in flight than it has slots: the queued ones wait out the
timeout. Runs the same workload with the code of two source trees side by side, alternating
(A B, B A, ...), and counts failed calls, retries, the requests that reached the server and
the wall time; medians per tree, the CPU and the load average beside them.

`--server fake` (default): the loopback test server answering one request at a time,
`--seconds` each, through the client (48 calls, concurrency 8, 1.6 s timeout).
`--server llamacpp`: llama.cpp's own HTTP server (the xllamacpp wheel of the embedded
judge, one slot, the 0.5B preset), a fresh one per run, judged through the openai provider
(`prefill=assistant`) by `judgeaudit evaluate --limit 40` (80 calls, 1.5 s timeout).

    git worktree add /tmp/before <rev-before>
    python benchmarks/queueing_server.py --before /tmp/before/src --runs 3 \
        --out benchmarks/results/queueing_server.json
    python benchmarks/queueing_server.py --server llamacpp --before /tmp/before/src \
        --runs 2 --out benchmarks/results/queueing_llamacpp.json
    python benchmarks/queueing_server.py --before /tmp/before/src --runs 2 --calls 900 \
        --seconds 0.1 --timeout 0.35 --out benchmarks/results/queueing_cycle.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

FAKE = r"""
import asyncio, json, logging, sys, threading, time
sys.path.insert(0, {tests!r})
narrowings = []
class Count(logging.Handler):
    def emit(self, record):
        if "sending at most" in record.getMessage():
            narrowings.append(record.getMessage())
logging.getLogger("judgeaudit").addHandler(Count())
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
    outs = asyncio.run(c.map([judge_request(i) for i in range({calls})]))
    print(json.dumps({{"failed": sum(isinstance(o, CallFailed) for o in outs),
                      "retries": c.stats.retries, "server_requests": srv.count(),
                      "narrowings": len(narrowings)}}))
"""
SERVE = r"""
import signal, sys
import xllamacpp as x
from judgeaudit.llm.local_model import PRESETS, gguf_path
p = x.CommonParams()
p.model.path = str(gguf_path(PRESETS["qwen-0.5b"]))
p.n_ctx, p.n_parallel = 4096, 1
p.cpuparams.n_threads = p.cpuparams_batch.n_threads = int(sys.argv[2])
p.port, p.verbosity = int(sys.argv[1]), 0
server = x.Server(p)
print("READY", flush=True)
signal.sigwait({signal.SIGTERM, signal.SIGINT})
"""
CLI = "import sys; from judgeaudit.cli.main import main; sys.argv[0] = 'judgeaudit'; main()"
DEFAULTS = {"fake": {"calls": 48, "timeout": 1.6}, "llamacpp": {"calls": 80, "timeout": 1.5}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_fake(env: dict[str, str], args: argparse.Namespace) -> dict:
    code = FAKE.format(tests=str(ROOT / "tests/llm"), seconds=args.seconds,
                       concurrency=args.concurrency, timeout=args.timeout, calls=args.calls)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run_llamacpp(env: dict[str, str], args: argparse.Namespace) -> dict:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVE, str(port), str(args.threads)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None and "READY" in server.stdout.readline()
        with tempfile.TemporaryDirectory() as tmp:
            judge = f"openai:qwen?base_url=http://127.0.0.1:{port}/v1&prefill=assistant"
            run = subprocess.run(
                [sys.executable, "-c", CLI, "evaluate", "--judge", judge, "--data",
                 "builtin:facts", "--limit", str(args.calls // 2), "--concurrency",
                 str(args.concurrency), "--timeout", str(args.timeout), "--out",
                 str(Path(tmp) / "out")],
                env={**env, "JUDGEAUDIT_CACHE": str(Path(tmp) / "c.sqlite")},
                capture_output=True, text=True)
            doc = json.loads((Path(tmp) / "out" / "results.json").read_text())
    finally:
        server.terminate()
        server.wait(timeout=30)
    calls = doc["calls"]
    return {"exit": run.returncode, "made": calls["made"], "failed": calls["failed"],
            "retries": calls["retries"], "invalid_verdicts": doc["n_invalid"],
            "narrowings": run.stderr.count("sending at most"),
            "stopped_answering": int("stopped answering" in run.stderr)}


def one(src: str, args: argparse.Namespace) -> dict:
    env = {**os.environ, "PYTHONPATH": src}
    t0 = time.monotonic()
    row = (run_fake if args.server == "fake" else run_llamacpp)(env, args)
    return {**row, "wall_s": round(time.monotonic() - t0, 1),
            "load_1min": round(os.getloadavg()[0], 2)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", choices=sorted(DEFAULTS), default="fake")
    ap.add_argument("--before", required=True, help="src/ of the code to compare with")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--calls", type=int, default=None, help="fake 48, llamacpp 80")
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=None, help="fake 1.6 s, llamacpp 1.5 s")
    ap.add_argument("--seconds", type=float, default=0.5, help="fake: per answer")
    ap.add_argument("--threads", type=int, default=2, help="llamacpp: server threads")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    for k, v in DEFAULTS[args.server].items():
        if getattr(args, k) is None:
            setattr(args, k, v)
    from judgeaudit.llm.local_model import cpu_summary

    trees = {"before": args.before, "now": str(ROOT / "src")}
    rows: dict[str, list[dict]] = {k: [] for k in trees}
    for r in range(args.runs):
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        for name, src in order:
            rows[name].append(one(src, args))
            print(r, name, rows[name][-1], flush=True)
    median = {name: {k: statistics.median(x[k] for x in runs) for k in runs[0]}
              for name, runs in rows.items()}
    keys = ("server", "calls", "concurrency", "timeout", "runs") + (
        ("seconds",) if args.server == "fake" else ("threads",))
    doc = {"setting": {k: getattr(args, k) for k in keys}, "median": median, "runs": rows,
           "cpu": cpu_summary()}
    print(json.dumps(median, indent=1))
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
