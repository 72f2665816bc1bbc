"""How much a run sends to a server that answers only some of its calls, before and after the
breaker's answer-rate rule (`judgeaudit.llm.client.AnswerWindow`: fewer than 10% of the last
max(50, 5 x stop_after) finished calls answered stops the client). Each run is an `audit`
(builtin:facts, default probes, n=40: 1,040 calls) or an `evaluate` (builtin:facts, limit=100:
200 calls) through the Python API, at concurrency 4 and 8, with the package from one of two
source trees (`--before`, `--now`) in a subprocess, against a real loopback server
(tests/llm/fakeserver.py) started afresh for each run:

- `prompts P`: answers P% of the prompts (by a hash of the prompt), the others get HTTP 500
  on every attempt; `prompts 0` answers nothing (a dead server answering 500s);
- `requests P`: answers P% of the requests it gets, retries included, spread evenly (every
  100/P-th): an overloaded server shedding load, whose rare answers come all through the run;
- `closed`: a port nobody listens on.

Retries: 6 (7 attempts, as the default policy) with a backoff of 0.05 s doubling up to 0.1 s
(about 0.55 s per call in all instead of about 31 s), so a run takes seconds; the counts of
calls and requests do not depend on the backoff, the seconds do. Measured per run: wall
seconds of the subprocess, the requests the server got (attempts), the distinct prompts it
was sent (calls sent), the calls not sent, whether the client stopped, and the run's outcome.

    git worktree add /tmp/before <rev-before>    # or: git archive <rev> src | tar -x -C DIR
    python benchmarks/breaker_rates.py --before /tmp/before/src --runs 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests/llm"))
from fakeserver import FakeLLMServer  # noqa: E402

SERVERS = [("prompts", 0), ("prompts", 1), ("prompts", 5), ("prompts", 11),
           ("prompts", 50), ("prompts", 89), ("requests", 1), ("requests", 5), ("closed", 0)]
COMMANDS = {"audit": 40, "evaluate": 100}

# The run, in a subprocess whose path starts with the tree under test.
CHILD = """
import json, logging, sys
import judgeaudit
from judgeaudit.llm import RetryPolicy
logging.disable(logging.WARNING)
cmd, spec, n, conc = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
kw = dict(cache=False, concurrency=conc,
          retry=RetryPolicy(max_retries=6, base_delay=0.05, max_delay=0.1))
if cmd == "audit":
    res = judgeaudit.audit(spec, "builtin:facts", n=n, **kw)
else:
    res = judgeaudit.evaluate(spec, "builtin:facts", limit=n, **kw)
c = res.calls
print(json.dumps({"ok": res.ok, "reason": res.reason or "",
                  "calls": {k: c.get(k) for k in ("made", "failed", "not_sent", "retries")},
                  "asked": c.get("made", 0) + c.get("cached", 0) + c.get("failed", 0)}))
"""


def cpu() -> dict:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"model": model, "cores": os.cpu_count(), "load": list(os.getloadavg())}


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rule_for(mode: str, pct: int) -> Callable[[Any, int], str | None]:
    """The server's answer rule: None answers, "500" fails the attempt."""
    if mode == "prompts":
        return lambda rec, attempt: (
            None if zlib.crc32(rec.prompt_text.encode()) % 100 < pct else "500")
    lock, seen = threading.Lock(), [0]

    def by_request(rec: Any, attempt: int) -> str | None:
        with lock:
            seen[0] += 1
            k = seen[0]
        # every 100/pct-th request (1%: the 100th, 200th, ...)
        return None if (k * pct) // 100 > ((k - 1) * pct) // 100 else "500"

    return by_request


def one(src: Path, mode: str, pct: int, cmd: str, conc: int) -> dict:
    """One run of `cmd` with the package from `src` against a fresh server."""
    srv = None if mode == "closed" else FakeLLMServer(rule=rule_for(mode, pct)).start()
    try:
        url = srv.openai_url if srv else f"http://127.0.0.1:{closed_port()}/v1"
        spec = f"openai:m?base_url={url}&api_key=k"
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", CHILD, cmd, spec, str(COMMANDS[cmd]),
                               str(conc)], env={**os.environ, "PYTHONPATH": str(src)},
                              capture_output=True, text=True, timeout=900)
        wall = time.perf_counter() - t
        if proc.returncode:
            raise RuntimeError(f"{src} {mode} {pct} {cmd}: exit {proc.returncode}: "
                               f"{proc.stderr[-2000:]}")
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        recs = srv.snapshot() if srv else []
    finally:
        if srv is not None:
            srv.stop()
    reason = out["reason"]
    return {"seconds": round(wall, 2), "requests": len(recs),
            "calls_sent": len({r.prompt_text for r in recs}), "asked": out["asked"],
            **out["calls"], "ok": out["ok"],
            "stopped_by_rate": "answers almost no call" in reason,
            "stopped": bool(out["calls"]["not_sent"]), "reason": reason[:400]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="src/ of the code before")
    ap.add_argument("--now", type=Path, default=ROOT / "src", help="src/ of the code now")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", type=Path,
                    default=ROOT / "benchmarks/results/breaker_rates.json")
    a = ap.parse_args()
    trees = {"before": a.before, "now": a.now}
    rows = []
    for mode, pct in SERVERS:
        for cmd in COMMANDS:
            for conc in (4, 8):
                runs: dict[str, list[dict]] = {k: [] for k in trees}
                for i in range(a.runs):  # alternating, so load hits both alike
                    for name in (list(trees) if i % 2 == 0 else list(reversed(trees))):
                        runs[name].append(one(trees[name], mode, pct, cmd, conc))
                row: dict[str, Any] = {"server": f"{mode} {pct}%" if mode != "closed"
                                       else "closed port", "command": cmd,
                                       "concurrency": conc}
                for name, rs in runs.items():
                    row[name] = {
                        "median_seconds": statistics.median(r["seconds"] for r in rs),
                        "median_requests": statistics.median(r["requests"] for r in rs),
                        "median_calls_sent": statistics.median(r["calls_sent"] for r in rs),
                        "median_not_sent": statistics.median(r["not_sent"] for r in rs),
                        "calls": rs[0]["asked"],
                        "stopped_runs": sum(r["stopped"] for r in rs),
                        "stopped_by_rate_runs": sum(r["stopped_by_rate"] for r in rs),
                        "ok_runs": sum(r["ok"] for r in rs), "runs": rs}
                rows.append(row)
                b, n = row["before"], row["now"]
                print(f"{row['server']:>13} {cmd:8} c={conc}: requests {b['median_requests']:>6}"
                      f" -> {n['median_requests']:>6}, calls sent {b['median_calls_sent']:>5}"
                      f" -> {n['median_calls_sent']:>5} of {n['calls']}, seconds "
                      f"{b['median_seconds']:>6} -> {n['median_seconds']:>6}, stopped "
                      f"{b['stopped_runs']}/{a.runs} -> {n['stopped_runs']}/{a.runs} "
                      f"(by rate {n['stopped_by_rate_runs']})", flush=True)
    res = {"what": ("calls and requests sent to a loopback server answering part of the calls, "
                    "and wall seconds, before and after the breaker's answer-rate rule; "
                    "retries 6 at 0.05 s doubling to 0.1 s; medians of `runs` runs"),
           "cpu": cpu(), "before_src": str(a.before), "now_src": str(a.now),
           "runs": a.runs, "rows": rows}
    a.out.write_text(json.dumps(res, indent=2) + "\n")


if __name__ == "__main__":
    main()
