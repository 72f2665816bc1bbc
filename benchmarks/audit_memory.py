"""Peak memory of `judgeaudit audit` at scale, old tree beside new, in one run.

    python benchmarks/audit_memory.py --base <commit>             # 1,000 2,000 5,000; 3 runs
    python benchmarks/audit_memory.py --base <commit> --sizes 1000 --repeats 1
    python benchmarks/audit_memory.py --base <commit> --new <commit>   # both as worktrees

The old tree is a `git worktree` of `--base` (made at --old-tree if missing) and the new one
this checkout, or with `--new` a worktree of that commit (at --new-tree), so that edits not
yet committed in the checkout are not measured; each runs the CLI as `python -m judgeaudit`
with PYTHONPATH set to its src/, the sim judge `sim?position=0.8&length=1.0&seed=0` on
`builtin:facts?seeds=0-94` (20,140 pairs), `--n N`, a fresh SQLite cache per run (as a
first run pays every call). Runs
alternate old/new so load on a shared machine falls on both alike. Recorded per tree and
size: the child's peak RSS (os.wait4 ru_maxrss), its median over the runs, CPU seconds, and
whether the two trees' results.json agree byte-for-byte except timing fields
(`compare_audit_results.py`). The CPU's flags (avx2 / avx512_bf16 / amx) and the machine are
written with them to benchmarks/results/audit_memory.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from compare_audit_results import canonical  # noqa: E402
from machine_info import cpu  # noqa: E402

JUDGE = "sim?position=0.8&length=1.0&seed=0"
DATA = "builtin:facts?seeds=0-94"
OUT = ROOT / "benchmarks" / "results" / "audit_memory.json"




def old_tree(base: str, where: Path) -> Path:
    """A worktree of `base` at `where` (made once, left for the next run)."""
    if not (where / "src" / "judgeaudit").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where),
                        base], check=True)
    return where


def run_once(tree: Path, n: int, out: Path, full: bool) -> dict[str, float]:
    """One audit in a child process: its peak RSS (MB), CPU and wall seconds."""
    cache = out / "cache.sqlite"
    cmd = [sys.executable, "-m", "judgeaudit", "audit", "--judge", JUDGE, "--data", DATA,
           "--n", str(n), "--cache", str(cache), "--out", str(out)]
    if full:
        cmd.append("--full")
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=str(out))
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):  # 1: a probe came out biased (no --fail-on: still 0); kept safe
        raise SystemExit(f"{tree}: audit --n {n} exited {code}: {err.decode()[-800:]}")
    cache.unlink(missing_ok=True)
    return {"peak_rss_mb": usage.ru_maxrss / 1024, "cpu_s": usage.ru_utime + usage.ru_stime,
            "wall_s": wall}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the old tree's commit")
    ap.add_argument("--old-tree", type=Path, default=Path("/tmp/memfix/old"))
    ap.add_argument("--new", default=None, help="the new tree's commit (default: this checkout)")
    ap.add_argument("--new-tree", type=Path, default=Path("/tmp/memfix/new"))
    ap.add_argument("--sizes", default="1000,2000,5000")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--full", action="store_true", help="audit --full (every probe)")
    ap.add_argument("--trees", default="old,new",
                    help="which trees to run: old,new (default), or one of them (a size too "
                         "long to run twice; its row then has no comparison)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    new_root = ROOT if args.new is None else old_tree(args.new, args.new_tree)
    trees = {k: v for k, v in {"old": old_tree(args.base, args.old_tree),
                                "new": new_root}.items() if k in args.trees.split(",")}
    new_commit = subprocess.run(["git", "-C", str(new_root), "rev-parse", "HEAD"],
                                capture_output=True, text=True, check=True).stdout.strip()
    rows: list[dict[str, Any]] = []
    doc = {"benchmark": "audit_memory", "judge": JUDGE, "data": DATA, "full": args.full,
           "repeats": args.repeats, "base": args.base, "new": new_commit,
           "trees": list(trees), "machine": cpu(), "rows": rows}
    for n in [int(s) for s in args.sizes.split(",")]:
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
        with tempfile.TemporaryDirectory(prefix="audit_memory_") as tmp:
            for r in range(args.repeats):
                for name, tree in trees.items():
                    out = Path(tmp) / f"{name}{r}"
                    out.mkdir()
                    runs[name].append(run_once(tree, n, out, args.full))
                    print(f"n={n} {name} run {r + 1}: {runs[name][-1]}", file=sys.stderr)
            same = canonical(Path(tmp) / "old0" / "results.json") == canonical(
                Path(tmp) / "new0" / "results.json") if len(trees) == 2 else None
        row: dict[str, Any] = {"n": n, "results_identical": same}
        for name, rs in runs.items():
            row[name] = {"peak_rss_mb_median": statistics.median(x["peak_rss_mb"] for x in rs),
                         "cpu_s_median": statistics.median(x["cpu_s"] for x in rs),
                         "runs": rs}
        if len(trees) == 2:
            row["cut_mb"] = (row["old"]["peak_rss_mb_median"]
                             - row["new"]["peak_rss_mb_median"])
        rows.append(row)
        print(f"n={n}: " + ", ".join(f"{k} {row[k]['peak_rss_mb_median']:.0f} MB"
                                      for k in trees) + f", results identical: {same}")
        # written after each size: a long run stopped early keeps the sizes it finished
        doc["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
