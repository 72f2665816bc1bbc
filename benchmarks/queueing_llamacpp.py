"""`benchmarks/queueing_server.py` on a real server: the llama.cpp HTTP server (xllamacpp, the
embedded judge's wheel) with one slot and the 0.5B preset on loopback, judged through the
openai provider (`prefill=assistant`) by `judgeaudit evaluate` at concurrency 8 with a 1.5 s
timeout, so calls queue behind the slot. The code of two source trees side by side,
alternating, a fresh server and cache per run; counts failed calls, retries, exit code and
wall time.

    git worktree add /tmp/before <rev-before>
    python benchmarks/queueing_llamacpp.py --before /tmp/before/src --runs 2 \
        --out benchmarks/results/queueing_llamacpp.json
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

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


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one(src: str, args: argparse.Namespace) -> dict:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", SERVE, str(port), str(args.threads)],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert server.stdout is not None and "READY" in server.stdout.readline()
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "PYTHONPATH": src,
                   "JUDGEAUDIT_CACHE": str(Path(tmp) / "c.sqlite")}
            judge = f"openai:qwen?base_url=http://127.0.0.1:{port}/v1&prefill=assistant"
            t0 = time.monotonic()
            run = subprocess.run(
                [sys.executable, "-c", CLI, "evaluate", "--judge", judge, "--data",
                 "builtin:facts", "--limit", str(args.items), "--concurrency",
                 str(args.concurrency), "--timeout", str(args.timeout), "--out",
                 str(Path(tmp) / "out")], env=env, capture_output=True, text=True)
            wall = time.monotonic() - t0
            doc = json.loads((Path(tmp) / "out" / "results.json").read_text())
    finally:
        server.terminate()
        server.wait(timeout=30)
    calls = doc["calls"]
    return {"exit": run.returncode, "wall_s": round(wall, 1), "made": calls["made"],
            "failed": calls["failed"], "retries": calls["retries"],
            "invalid_verdicts": doc["n_invalid"],
            "narrowings": run.stderr.count("sending at most"),
            "stopped_answering": "stopped answering" in run.stderr}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", required=True, help="src/ of the code to compare with")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--items", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=1.5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    from judgeaudit.llm.local_model import cpu_summary

    trees = {"before": args.before, "now": str(ROOT / "src")}
    rows: dict[str, list[dict]] = {k: [] for k in trees}
    for r in range(args.runs):
        order = list(trees.items()) if r % 2 == 0 else list(reversed(trees.items()))
        for name, src in order:
            rows[name].append(one(src, args))
            print(r, name, rows[name][-1], flush=True)
    doc = {"setting": {k: getattr(args, k) for k in ("items", "concurrency", "timeout",
                                                     "threads", "runs")},
           "server": "llama.cpp HTTP server (xllamacpp), 1 slot, qwen-0.5b, loopback",
           "runs": rows, "cpu": cpu_summary()}
    if args.out:
        args.out.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
