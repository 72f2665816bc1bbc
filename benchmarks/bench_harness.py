"""Harness benchmark: throughput of Client + openai provider against the loopback fake server
(fixed latency, no faults) at several concurrency levels, and the cost of a cache hit.

Run by hand: `python benchmarks/bench_harness.py [--server process|thread] [--latency 0.05]`.
Writes benchmarks/results/harness.json and prints a table.

The ideal throughput at concurrency c with latency L is c/L calls/s; the ratio to it shows
what the client stack (asyncio, the SDK, httpx, JSON, our client) costs on top of the wait.
By default the server runs in its own process, as a real server would: in-process its
request handling competes with the client for the same GIL and the figure measures both.

What limits the ratio (found with this script): the fake server used to send headers and
body in two segments with Nagle on (+40 ms per call: fixed with TCP_NODELAY); the SDK's
`chat.completions.create` spent ~1 ms CPU per call transforming params (the provider now
uses the SDK's raw `post`). What remains is the CPU cost of the Python HTTP stack, about
1-1.5 ms per call: at high concurrency the client process is CPU-bound (client_cpu_cores
near the share of a core it gets). The bare-httpx2 rows (same bodies, no SDK, no Client)
measure that floor.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "llm"))

from fakeserver import FakeLLMServer, judge_request  # noqa: E402

from judgeaudit.llm import Cache, Client, RetryPolicy, make_provider  # noqa: E402
from judgeaudit.llm.base import Response, Usage, request_key  # noqa: E402

LEVELS = (1, 8, 32, 64)
OUT = ROOT / "benchmarks" / "results" / "harness.json"


def calls_for(concurrency: int, latency: float, min_seconds: float = 2.4) -> int:
    """Enough calls that the level runs >= min_seconds at the ideal rate (and >= 64)."""
    return max(64, int(round(min_seconds * concurrency / latency)))


class ServerProcess:
    """The fake server in a child process (prints its port, serves until stdin closes)."""

    def __init__(self, latency: float):
        self.proc = subprocess.Popen(
            [sys.executable, str(ROOT / "tests" / "llm" / "fakeserver.py"),
             "--latency", str(latency)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"fake server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.openai_url = f"http://127.0.0.1:{self.port}/v1"

    def cpu_seconds(self) -> float | None:
        """User+system CPU the server process has used (Linux /proc), to show whether the
        server or the client is the bottleneck."""
        try:
            fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


async def throughput(url: str, concurrency: int, n: int, rep_offset: int) -> dict:
    provider = make_provider("openai", "bench", {
        "base_url": url, "api_key": "bench", "max_connections": str(max(64, concurrency)),
    })
    client = Client(provider, None, concurrency=concurrency,
                    retry=RetryPolicy(max_retries=0))
    # Warm-up: open the connections and import the SDK outside the timed part.
    await client.map([judge_request(i, repeat=rep_offset + 1) for i in range(concurrency)])
    reqs = [judge_request(i, "AB"[i % 2], repeat=rep_offset) for i in range(n)]
    cpu0, t0 = time.process_time(), time.perf_counter()
    outs = await client.map(reqs)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    await client.aclose()
    bad = sum(1 for o in outs if not isinstance(o, Response))
    return {"n": n, "seconds": wall, "calls_per_s": n / wall, "failed": bad,
            "client_cpu_ms_per_call": 1000 * cpu / n,
            # Share of one core the client process used: near 1 = CPU-bound client.
            "client_cpu_cores": cpu / wall}


async def raw_httpx(url: str, concurrency: int, n: int) -> dict:
    """Baseline: POST the same bodies with a bare httpx2 client, bounded by a semaphore."""
    from judgeaudit.llm.providers.openai import OpenAIProvider

    try:
        import httpx2 as hx
    except ImportError:  # older SDKs use httpx
        import httpx as hx
    p = OpenAIProvider("bench", {"base_url": url, "api_key": "bench"})
    limits = hx.Limits(max_connections=64, max_keepalive_connections=64)
    async with hx.AsyncClient(limits=limits, timeout=60) as http:
        sem = asyncio.Semaphore(concurrency)

        async def one(i: int) -> dict:
            msgs, _ = p.build_messages(judge_request(i, "AB"[i % 2]))
            body = {"model": "bench", "messages": msgs, "max_tokens": 8, "temperature": 0.0,
                    "logprobs": True, "top_logprobs": 20}
            async with sem:
                r = await http.post(url + "/chat/completions", json=body,
                                    headers={"Authorization": "Bearer bench"})
            return json.loads(r.content)

        await asyncio.gather(*(one(i) for i in range(concurrency)))  # warm-up
        cpu0, t0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(n)))
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    return {"n": n, "seconds": wall, "calls_per_s": n / wall,
            "client_cpu_ms_per_call": 1000 * cpu / n, "client_cpu_cores": cpu / wall}


async def cache_hits(n: int, reps: int) -> dict:
    with tempfile.TemporaryDirectory() as d:
        cache = Cache(Path(d) / "calls.sqlite")
        provider = make_provider("openai", "bench", {"base_url": "http://127.0.0.1:9/v1",
                                                     "api_key": "bench"})
        reqs = [judge_request(i, "AB"[i % 2]) for i in range(n)]
        for r in reqs:
            cache.put(request_key(provider, r), provider.name, provider.model,
                      Response(text="A", probs={"A": 0.9, "B": 0.1}, usage=Usage(60, 1)))
        client = Client(provider, cache)
        per_call = []
        for _ in range(reps):
            t0 = time.perf_counter()
            for r in reqs:
                await client.call(r)
            per_call.append((time.perf_counter() - t0) / n * 1e6)
        assert client.stats.made == 0 and client.stats.cached == n * reps
        cache.close()
    return {"n": n, "reps": reps, "us_per_call": per_call,
            "median_us_per_call": statistics.median(per_call)}


def machine() -> dict:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    vers = {}
    for pkg in ("openai", "httpx2", "httpx"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            vers[pkg] = metadata.version(pkg)
    return {
        "platform": platform.platform(), "python": platform.python_version(),
        "cpu": cpu, "cpu_count": os.cpu_count(),
        "loadavg_at_start": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "packages": vers,
    }


def _median_row(runs: list[dict]) -> dict:
    """Median of each numeric field over repeated runs, plus the per-run calls/s."""
    out: dict = {}
    for k in runs[0]:
        vals = [r[k] for r in runs]
        if all(isinstance(v, int | float) for v in vals):
            out[k] = statistics.median(vals)
        else:
            out[k] = vals[0]
    out["runs_calls_per_s"] = [round(r["calls_per_s"], 1) for r in runs]
    return out


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", choices=["process", "thread"], default="process")
    ap.add_argument("--latency", type=float, default=0.05)
    ap.add_argument("--levels", default=",".join(map(str, LEVELS)))
    ap.add_argument("--runs", type=int, default=3, help="repetitions per level (median kept)")
    ap.add_argument("--hits", type=int, default=2000)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    base_levels = [c for c in levels if c >= 32]

    info = machine()
    if args.server == "process":
        srv: ServerProcess | FakeLLMServer = ServerProcess(args.latency)
    else:
        srv = FakeLLMServer(latency=args.latency).start()
    runs: dict[int, list[dict]] = {c: [] for c in levels}
    base_runs: dict[int, list[dict]] = {c: [] for c in base_levels}
    try:
        # Levels interleaved across runs, and the bare-httpx2 reference right after ours at
        # the same level, so a burst of load on the shared machine hits both alike.
        for run in range(args.runs):
            for k, c in enumerate(levels):
                load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
                s0 = srv.cpu_seconds() if isinstance(srv, ServerProcess) else None
                n = calls_for(c, args.latency)
                r = await throughput(srv.openai_url, c, n, 100 * run + 10 * k)
                s1 = srv.cpu_seconds() if isinstance(srv, ServerProcess) else None
                r["server_cpu_ms_per_call"] = (None if s0 is None or s1 is None
                                               else 1000 * (s1 - s0) / (n + c))
                r["loadavg_1m_before"] = load
                runs[c].append(r)
                if c in base_levels:
                    base_runs[c].append(await raw_httpx(srv.openai_url, c, n))
    finally:
        srv.stop()
    rows, baseline = [], []
    for c in levels:
        ideal = c / args.latency
        m = _median_row(runs[c])
        rows.append({"concurrency": c, **m, "ideal_calls_per_s": ideal,
                     "ratio_to_ideal": m["calls_per_s"] / ideal})
    for c in base_levels:
        m = _median_row(base_runs[c])
        baseline.append({"concurrency": c, **m,
                         "ratio_to_ideal": m["calls_per_s"] / (c / args.latency)})
    hits = await cache_hits(args.hits, args.reps)

    result = {
        "benchmark": "harness", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": info, "server": args.server, "latency_s": args.latency, "runs": args.runs,
        "note": "medians over runs; shared 2-core machine, see loadavg fields",
        "throughput": rows, "raw_httpx_baseline": baseline, "cache_hit": hits,
        "loadavg_at_end": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "targets": {"ratio_at_32": 0.9, "cache_hit_us": 1000},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")

    print(f"server: {args.server}, latency {args.latency * 1000:.0f} ms, "
          f"{info['cpu_count']} cpus ({info['cpu']}), medians of {args.runs} runs")
    print(f"{'':>9} {'conc':>4} {'calls':>6} {'calls/s':>8} {'ideal':>6} {'ratio':>6} "
          f"{'client ms cpu/call':>18} {'cores':>5} {'server ms cpu/call':>18}  runs calls/s")
    for label, table in (("harness", rows), ("bare http", baseline)):
        for r in table:
            sv = r.get("server_cpu_ms_per_call")
            print(f"{label:>9} {r['concurrency']:>4} {r['n']:>6} {r['calls_per_s']:>8.1f} "
                  f"{r['concurrency'] / args.latency:>6.0f} {r['ratio_to_ideal']:>6.3f} "
                  f"{r['client_cpu_ms_per_call']:>18.2f} {r['client_cpu_cores']:>5.2f} "
                  f"{'-' if sv is None else f'{sv:.2f}':>18}  {r['runs_calls_per_s']}")
    print(f"cache hit: median {hits['median_us_per_call']:.1f} us/call "
          f"(n={hits['n']}, reps={hits['reps']}: "
          f"{', '.join(f'{x:.1f}' for x in hits['us_per_call'])})")
    print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out}")


if __name__ == "__main__":
    asyncio.run(main())
