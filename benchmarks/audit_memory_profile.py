"""What holds an audit's memory at its peak: tracemalloc, sampled once a second, keeps the
snapshot of the highest traced total and prints its largest allocation sites by line.

    python benchmarks/audit_memory_profile.py --n 2000 [--top 30]

Runs `judgeaudit audit` in this process with the sim judge on builtin:facts?seeds=0-94 and a
fresh cache in a temp dir (as benchmarks/audit_memory.py does); tracing slows it about 3x.
Group by line only: a 25-frame trace of a 2,000-item audit took over 12 minutes to group.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
import tracemalloc
from typing import Any

JUDGE = "sim?position=0.8&length=1.0&seed=0"
DATA = "builtin:facts?seeds=0-94"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--top", type=int, default=30)
    args = ap.parse_args(argv)
    tracemalloc.start(1)
    best: dict[str, Any] = {"cur": 0, "snap": None, "t": 0.0}
    stop = threading.Event()
    t0 = time.perf_counter()

    def watch() -> None:
        while not stop.is_set():
            cur, _ = tracemalloc.get_traced_memory()
            if cur > best["cur"] * 1.03:  # a new high: keep its snapshot
                best.update(cur=cur, snap=tracemalloc.take_snapshot(),
                            t=time.perf_counter() - t0)
            stop.wait(1.0)

    threading.Thread(target=watch, daemon=True).start()
    from judgeaudit.cli.main import main as cli

    with tempfile.TemporaryDirectory(prefix="audit_memory_profile_") as tmp:
        sys.argv = ["judgeaudit", "audit", "--judge", JUDGE, "--data", DATA, "--n",
                    str(args.n), "--cache", f"{tmp}/cache.sqlite", "--out", f"{tmp}/out"]
        with contextlib.suppress(SystemExit):  # the CLI exits; the snapshot is kept
            cli()
    stop.set()
    _, peak = tracemalloc.get_traced_memory()
    print(f"traced peak {peak / 1e6:.1f} MB; largest sample {best['cur'] / 1e6:.1f} MB at "
          f"{best['t']:.0f} s; its top {args.top} sites:")
    if best["snap"] is not None:
        for st in best["snap"].statistics("lineno")[:args.top]:
            print(f"{st.size / 1e6:8.1f} MB {st.count:8d} blocks  {st.traceback[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
