"""Coverage of Cohen's kappa's 95% interval (`stats.kappa_ci`) where the raters rarely
disagree, as in `evaluate` on a good judge and few items.

A judge agrees with balanced binary labels with probability p on each item, so the true
kappa is 2p - 1. Per (n, p) cell, R simulated samples; the share of intervals that cover the
truth, for the bootstrap alone (the interval before) and for `kappa_ci` as it is now (the
Clopper-Pearson agreement interval carried through kappa where fewer than SPARSE_MOVERS
items disagree, the bootstrap otherwise). Goal: about 95%.

    python benchmarks/kappa_coverage.py --reps 400

writes benchmarks/results/kappa_coverage.json.
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path

import numpy as np

from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.stats import kappa_ci, wilson
from judgeaudit.stats.agreement import _codes, _kappa_codes
from judgeaudit.stats.intervals import bootstrap_ci

CELLS = [(n, p) for n in (10, 20, 40, 80, 200) for p in (0.8, 0.9, 0.95, 0.98)]


def bootstrap_only(ver: np.ndarray, lab: np.ndarray, seed: int) -> tuple[float, float]:
    ca, cb, k = _codes(ver, lab, [1, 2])
    codes = np.stack([ca, cb], axis=1)
    return bootstrap_ci(codes, lambda x: _kappa_codes(x[..., 0], x[..., 1], k), n_boot=500,
                        seed=seed, vectorized=True)


def covers(ci: tuple[float, float], truth: float) -> bool:
    lo, hi = ci
    return not (math.isnan(lo) or math.isnan(hi)) and lo <= truth <= hi


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=400)
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "kappa_coverage.json")
    args = ap.parse_args()
    t0 = time.perf_counter()
    rng = np.random.default_rng(0)
    rows = []
    for n, p in CELLS:
        truth = 2 * p - 1
        before = now = 0
        for r in range(args.reps):
            lab = rng.integers(1, 3, n)
            ver = np.where(rng.random(n) < p, lab, 3 - lab)
            before += covers(bootstrap_only(ver, lab, r), truth)
            now += covers(kappa_ci(ver, lab, labels=[1, 2], n_boot=500, seed=r).ci95, truth)
        row = {"n": n, "p_agree": p, "true_kappa": truth, "reps": args.reps}
        for key, k in (("bootstrap_only", before), ("kappa_ci", now)):
            lo, hi = wilson(k, args.reps)
            row[key] = {"coverage": k / args.reps, "ci95": [lo, hi]}
        rows.append(row)
        print(f"n={n:4d} p={p:.2f}: bootstrap {before / args.reps:.3f}, "
              f"kappa_ci {now / args.reps:.3f}", flush=True)
    doc = {"benchmark": "kappa_coverage",
           "command": "python benchmarks/kappa_coverage.py " + " ".join(sys.argv[1:]),
           "rows": rows, "seconds": time.perf_counter() - t0,
           "machine": {"python": platform.python_version(), "platform": platform.platform(),
                       **cpu_summary()}}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
