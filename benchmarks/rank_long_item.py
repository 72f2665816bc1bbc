"""Calls a `judgeaudit rank` run sends with an item too long for the judge, old loop vs new.

The top-k rule's picks of a round are made before any of its answers, and the item whose
length covariate is the pool's extreme scores highest again after each pick: the old loop
sent several calls with the long item in one round before its first refusal was known
(9 of 40 in a tester's run). The new loop sends a round in waves, an item with no verdict
yet in one call of a wave (rank.loop, "Items with no verdict yet").

Each run is `judgeaudit.rank` (topk, default covariates, lam auto, refit every 8) through a
real loopback OpenAI-compatible server (tests/llm/fakeserver.py) that answers 400
context_length_exceeded to any prompt holding the long item's marker and otherwise prefers
the response with the higher item number (a judge that knows the quality). Per seed: the
calls sent with a long item (`wasted`; per long item, a call with both counting for each),
the calls in all, the items left out and the wall
time with `--latency` seconds per answer (waves cost round trips). A pool with no long item
checks that the new loop's comparisons are the old loop's (`same_as_old`).

The old and new loops run from worktrees of `--old` and `--new` (made once under /tmp),
each in its own process with its own PYTHONPATH.

Run by hand:  PYTHONPATH=src python benchmarks/rank_long_item.py [--seeds 20] [--old REF]
Writes benchmarks/results/rank_long_item.json and prints the table.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine_info import cpu  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "rank_long_item.json"
MARK = "LONGITEM"
# name: (items, long item indices, budget)
SCENARIOS: dict[str, tuple[int, tuple[int, ...], int]] = {
    "10 items, 1 long, budget 40": (10, (4,), 40),
    "20 items, 1 long, budget 60": (20, (7,), 60),
    "10 items, 2 long, budget 40": (10, (2, 6), 40),
    "10 items, none long, budget 40": (10, (), 40),
}




def records(n: int, long_items: tuple[int, ...]) -> list[dict]:
    """n items on one prompt, 20-60 words each; a long item carries the marker and 300
    more words (the pool's extreme length)."""
    import random

    rng = random.Random(0)
    return [{"id": f"it-{i:02d}", "prompt": "question", "quality": float(i),
             "response": (f"{MARK}{i} " + "filler " * 300 if i in long_items else "")
             + "word " * rng.randint(20, 60) + f"answer {i}"} for i in range(n)]


def worker(seeds: list[int], latency: float) -> dict:
    """Every scenario and seed in this process's tree (PYTHONPATH)."""
    sys.path.insert(0, str(ROOT / "tests" / "llm"))
    import re

    from fakeserver import FakeLLMServer

    import judgeaudit

    def better(prompt: str) -> str:  # the response with the higher item number wins
        nums = [int(x) for x in re.findall(r"answer (\d+)", prompt)]
        return "A" if len(nums) < 2 or nums[0] >= nums[1] else "B"

    def refuse(req: Any, attempt: int) -> str | None:
        return "too_long" if MARK in req.prompt_text else None

    out: dict = {}
    for name, (n, long_items, budget) in SCENARIOS.items():
        recs = records(n, long_items)
        rows = []
        for seed in seeds:
            with FakeLLMServer(rule=refuse, answer=better, latency=latency) as srv:
                t0 = time.perf_counter()
                res = judgeaudit.rank(
                    f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off", recs,
                    k=3, budget=budget, seed=seed, samples=300, max_failed=0.9, cache=False,
                    retry=0)
                wall = time.perf_counter() - t0
                sent = srv.snapshot()
            tl = res["too_long"] or {}
            per_item = [sum(f"{MARK}{i} " in r.prompt_text for r in sent) for i in long_items]
            rows.append({"seed": seed, "wasted": sum(MARK in r.prompt_text for r in sent),
                         "wasted_per_long_item": per_item,
                         "calls": len(sent), "n_comparisons": res["n_comparisons"],
                         "items_left_out": tl.get("items_left_out", []),
                         "wall_s": round(wall, 3),
                         "comparisons": [(c["first_id"], c["second_id"], c["y"])
                                         for c in res["comparisons"]]})
        out[name] = rows
    return out


def run_tree(src: Path, seeds: list[int], latency: float) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "OPENBLAS_NUM_THREADS": "1"}
    cmd = [sys.executable, __file__, "--worker", "--seeds", str(len(seeds)),
           "--latency", str(latency)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, cwd=ROOT)
    if done.returncode:
        raise SystemExit(f"worker on {src} failed (exit {done.returncode}):\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


def tree(ref: str, where: Path) -> Path:
    """A detached worktree of ``ref`` at ``where`` (made once, left for the next run, moved
    to ``ref``): committed code only, not the working tree's edits in progress."""
    if not (where / "src" / "judgeaudit").is_dir():
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(where),
                        ref], check=True)
    else:
        subprocess.run(["git", "-C", str(where), "checkout", "-q", "--detach", ref],
                       check=True)
    return where


def summary(rows: list[dict]) -> dict:
    w = [r["wasted"] for r in rows]
    wall = [r["wall_s"] for r in rows]
    per_item = [x for r in rows for x in r["wasted_per_long_item"]]
    return {"wasted_median": statistics.median(w), "wasted_max": max(w), "wasted_min": min(w),
            "wasted_per_seed": w, "n_seeds": len(w),
            "per_long_item_median": statistics.median(per_item) if per_item else None,
            "per_long_item_max": max(per_item) if per_item else None,
            "budget_spent": all(r["calls"] == r["n_comparisons"] for r in rows),
            "items_left_out": sorted({tuple(r["items_left_out"]) for r in rows}),
            "wall_s_median": round(statistics.median(wall), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--latency", type=float, default=0.02,
                    help="seconds the server waits before each answer")
    ap.add_argument("--old", default="ffebffa", help="git ref of the old loop")
    ap.add_argument("--new", default="HEAD", help="git ref of the new loop")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    seeds = list(range(a.seeds))
    if a.worker:
        print(json.dumps(worker(seeds, a.latency)))
        return
    new = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", a.new],
                         capture_output=True, text=True, check=True).stdout.strip()
    old_src = tree(a.old, Path("/tmp/rank_long_item_old")) / "src"
    new_src = tree(new, Path("/tmp/rank_long_item_new")) / "src"
    res = {"old": run_tree(old_src, seeds, a.latency), "new": run_tree(new_src, seeds,
                                                                      a.latency)}
    table = {}
    for name in SCENARIOS:
        o, n = res["old"][name], res["new"][name]
        table[name] = {"old": summary(o), "new": summary(n),
                       "same_as_old": sum(x["comparisons"] == y["comparisons"]
                                          for x, y in zip(o, n, strict=True))}
        t = table[name]
        print(f"{name:32s} wasted old median {t['old']['wasted_median']:>4} max "
              f"{t['old']['wasted_max']:>2} | new median {t['new']['wasted_median']:>4} max "
              f"{t['new']['wasted_max']:>2} (per item max {t['new']['per_long_item_max']}) | "
              f"same comparisons {t['same_as_old']}/{len(o)} | "
              f"wall old {t['old']['wall_s_median']}s new {t['new']['wall_s_median']}s")
    doc = {"what": __doc__.splitlines()[0], "when": dt.datetime.now(dt.UTC).isoformat(
        timespec="seconds"), "old": a.old, "new": new, "cpu": cpu(),
        "seeds": len(seeds), "latency_s": a.latency,
        "run": "judgeaudit.rank(topk, k=3, samples=300, default covariates, lam auto, "
               "refit_every 8) through tests/llm/fakeserver.py",
        "scenarios": table}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
