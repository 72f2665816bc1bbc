"""Carried acquisition contexts (judgeaudit.rank.loop, issue 15): does the active loop find the
top-k as well when the context's inverse is made anew only every 8 refits (the default from
CARRY_MIN parameters on) as when it is made at every refit?

For each seed: a random pool (theta ~ N(0, 1), one binary covariate), the sim judge of
benchmarks/rank_scale.py (covariate bias c = 1, position bias kappa = 0.3, logistic noise),
the bias-aware model with the empirical-Bayes tau update, the top-k rule, the same seed for
both runs; recall@k of the bias-aware fit at each checkpoint budget, for exact_every = 1
(every context exact) and 8 (the default). Paired over seeds: the mean difference with its
95% interval (t), and the wall time of each loop.

Run by hand (about 10 minutes on 2 cores):
    python benchmarks/rank_carried.py [--n 600] [--seeds 20] [--budgets 600,1200,2400]
    python benchmarks/rank_carried.py --start-seed 20 --seeds 20 --merge   # 20 more seeds
Writes benchmarks/results/rank_carried.json (``--merge``: adds to the rows already there).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np
from rank_scale import machine  # benchmarks/ is the script's directory
from scipy import stats

from judgeaudit.rank.loop import CARRY_MIN, run_active
from judgeaudit.rank.membership import recall_at_k
from judgeaudit.rank.simulate import SimOracle, random_pool

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "rank_carried.json"


def one(n: int, k: int, budgets: list[int], seed: int, exact_every: int) -> dict:
    pool = random_pool(n, k, seed=1000 + seed)
    oracle = SimOracle(pool.theta, pool.X, c=1.0, kappa=0.3, seed=seed)
    t0 = time.perf_counter()
    res = run_active(oracle, n, max(budgets), k, X=pool.X, seed=seed, hierarchical=True,
                     checkpoints=budgets, exact_every=exact_every)
    wall = time.perf_counter() - t0
    kinds = [r["context"] for r in res.refits]
    return {"seed": seed, "exact_every": exact_every, "wall_s": wall,
            "n_carried": kinds.count("carried"), "n_exact": kinds.count("exact"),
            "recall": {str(b): recall_at_k(res.checkpoints[b]["bias_aware"].theta,
                                           pool.true_topk) for b in budgets}}


def paired(a: list[float], b: list[float]) -> dict:
    d = np.asarray(b) - np.asarray(a)
    m, se = float(d.mean()), float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
    t = float(stats.t.ppf(0.975, max(d.size - 1, 1)))
    return {"mean_exact": float(np.mean(a)), "mean_carried": float(np.mean(b)),
            "diff_carried_minus_exact": m, "ci95": [m - t * se, m + t * se], "n": int(d.size)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--start-seed", type=int, default=0)
    ap.add_argument("--merge", action="store_true",
                    help="keep the rows of --out (same setting) and add these seeds' rows")
    ap.add_argument("--budgets", default="600,1200,2400")
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args()
    if args.n + 2 < CARRY_MIN:
        raise SystemExit(f"--n: carried contexts start at {CARRY_MIN} parameters")
    budgets = [int(b) for b in args.budgets.split(",")]
    info = machine()
    rows: list[dict] = []
    machines: list[dict] = []
    if args.merge and Path(args.out).exists():
        old = json.loads(Path(args.out).read_text())
        if (old["setting"]["n"], old["setting"]["k"], old["setting"]["budgets"]) != (
                args.n, args.k, budgets):
            raise SystemExit(f"--merge: {args.out} has another setting: {old['setting']}")
        rows = old["rows"]
        machines = old["machines"]
    done = {(r["seed"], r["exact_every"]) for r in rows}
    for seed in range(args.start_seed, args.start_seed + args.seeds):
        if (seed, 1) in done:
            raise SystemExit(f"--merge: seed {seed} is already in {args.out}")
        for every in (1, 8):  # side by side, seed by seed
            r = one(args.n, args.k, budgets, seed, every)
            rows.append(r)
            print(json.dumps(r), flush=True)
    ex = sorted((r for r in rows if r["exact_every"] == 1), key=lambda r: r["seed"])
    ca = sorted((r for r in rows if r["exact_every"] == 8), key=lambda r: r["seed"])
    out = {
        "what": __doc__.split("\n\n")[0],
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machines": [*machines, {**info, "loadavg_end": list(os.getloadavg()),
                                 "seeds": [args.start_seed, args.start_seed + args.seeds - 1]}],
        "setting": {"n": args.n, "k": args.k, "budgets": budgets, "seeds": len(ex),
                    "judge": "sim c=1 kappa=0.3", "model": "bias_aware, EB tau",
                    "rule": "topk", "refit_every": 8},
        "recall": {str(b): paired([r["recall"][str(b)] for r in ex],
                                  [r["recall"][str(b)] for r in ca]) for b in budgets},
        "wall_s_median": {"exact_every_1": statistics.median(r["wall_s"] for r in ex),
                          "exact_every_8": statistics.median(r["wall_s"] for r in ca)},
        "rows": rows,
    }
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: out[k] for k in ("recall", "wall_s_median")}, indent=1))


if __name__ == "__main__":
    main()
