"""How long a run takes to say that its judge's server is not there: `judgeaudit audit` with
an OpenAI-compatible judge on a port nobody listens on (builtin:facts, the default probes,
--n 30: 780 calls), run with the code of two source trees side by side, alternating, so the
breaker (`RetryPolicy.stop_after`) can be compared with the code before it. Default retry
policy (6 retries, 0.5 s doubling, jitter) and timeout (60 s); exit 3 expected from both.

`--target closed` (default): the port refuses connections (nothing listens).
`--target dropping`: connection requests go unanswered, as behind a firewall that drops
them (a listening socket with a full backlog), to compare the connect cap
(`CONNECT_TIMEOUT`) with waiting out the whole call timeout on every attempt.

    git worktree add /tmp/before <rev-before>
    python benchmarks/unreachable_server.py --before /tmp/before/src --runs 3
    python benchmarks/unreachable_server.py --before /tmp/before/src --runs 1 \
        --target dropping --out benchmarks/results/dropping.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests/llm"))
from fakeserver import dropping_port  # noqa: E402

FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu() -> dict:
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    flags = next((line.split(":", 1)[1].split() for line in info.splitlines()
                  if line.startswith("flags")), [])
    model = next((line.split(":", 1)[1].strip() for line in info.splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"model": model, "flags": [f for f in FLAGS if f in flags],
            "cores": os.cpu_count(), "load": list(os.getloadavg())}


def one(src: Path, out: Path, port: int, timeout: float | None = None) -> dict:
    """One audit run with the package from `src` first on the path, its judge on `port`:
    wall seconds, exit code and the calls line of results.json."""
    spec = f"openai:fake?base_url=http://127.0.0.1:{port}/v1&api_key=k" + (
        f"&timeout={timeout:g}" if timeout else "")
    code = "import sys; from judgeaudit.cli.main import main; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(src)}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, "audit", "--judge", spec, "--data",
                           "builtin:facts", "--n", "30", "--no-cache", "--out", str(out)],
                          env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    calls = json.loads((out / "results.json").read_text())["calls"] if (
        out / "results.json").exists() else {}
    return {"seconds": round(wall, 1), "exit": proc.returncode,
            "calls": {k: calls.get(k) for k in ("made", "failed", "not_sent", "retries")}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", type=Path, required=True, help="src/ of the code before")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--target", choices=("closed", "dropping"), default="closed")
    ap.add_argument("--timeout", type=float, default=None,
                    help="the judge's timeout=SECONDS (default: the provider's, 60 s)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/unreachable.json")
    a = ap.parse_args()
    trees = {"before": a.before, "now": ROOT / "src"}
    runs: dict[str, list[dict]] = {k: [] for k in trees}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.runs):
            order = list(trees) if i % 2 == 0 else list(reversed(trees))
            for name in order:
                with (dropping_port() if a.target == "dropping"
                      else contextlib.nullcontext(closed_port())) as port:
                    r = one(trees[name], Path(tmp) / f"{name}{i}", port, a.timeout)
                runs[name].append(r)
                print(name, r, flush=True)
    med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    port = "a closed port" if a.target == "closed" else "a port that drops connection requests"
    tmo = f"timeout={a.timeout:g} s" if a.timeout else "the default timeout"
    res = {"what": f"audit --n 30 (780 calls) against {port}, default retry policy, {tmo}",
           "cpu": cpu(), "before_src": str(a.before), "runs": runs,
           "median_seconds": med, "ratio_before_over_now": round(med["before"] / med["now"], 2)}
    a.out.write_text(json.dumps(res, indent=2) + "\n")
    print(json.dumps({"median_seconds": med, "ratio": res["ratio_before_over_now"]}))


if __name__ == "__main__":
    main()
