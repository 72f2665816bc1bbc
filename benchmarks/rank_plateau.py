"""Issue 4, acceptance 1 read as "as data grows": naive Bradley-Terry plateaus, bias-aware
converges (and with c* = 0 both agree). The full ordered-pair matrix is judged R times
(independent verdicts of the same simulated judge, c* = 1 or 0 on the verbosity indicator,
kappa = 0.3) and recall@5 of both models
is measured as R grows, on the controlled pools (N = 30, k = 5) at several quality scales
(logits per net true statement).

Run by hand:  PYTHONPATH=src python benchmarks/rank_plateau.py [--seeds 100]
Writes benchmarks/results/rank_plateau.json and prints the table.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from judgeaudit.rank.membership import recall_at_k  # noqa: E402
from judgeaudit.rank.simulate import SimOracle, controlled_sim_pool  # noqa: E402
from judgeaudit.stats.bradley_terry import fit_map, fit_naive  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
REPEATS = (1, 2, 5, 10, 20, 40)
SCALES = (0.25, 0.35, 0.5)


def _ms(v: list[float]) -> dict:
    a = np.asarray(v, float)
    return {"mean": float(a.mean()), "se": float(a.std(ddof=1) / np.sqrt(a.size)), "n": a.size}


def run(seeds: list[int], c: float = 1.0) -> dict:
    out = {}
    for scale in SCALES:
        rows = []
        for r in REPEATS:
            rn, rb, cov = [], [], []
            for s in seeds:
                pool = controlled_sim_pool(s, scale=scale)
                comps = np.concatenate([
                    SimOracle(pool.theta, pool.X, c=c, kappa=0.3,
                              seed=s * 1000 + rep + 10_000).full_comparisons()
                    for rep in range(r)])
                fn = fit_naive(30, comps, lam=1.0)
                fb = fit_map(30, comps, X=pool.X)
                rn.append(recall_at_k(fn.theta, pool.true_topk))
                rb.append(recall_at_k(fb.theta, pool.true_topk))
                lo, hi = fb.c_interval()[0]
                cov.append(lo <= c <= hi)
            rows.append({"repeats": r, "comparisons": 870 * r, "naive": _ms(rn),
                         "bias_aware": _ms(rb), "coverage_c_95": float(np.mean(cov))})
            print(f"c* {c:g} scale {scale} R={r:>2}: naive {np.mean(rn):.3f}  bias-aware "
                  f"{np.mean(rb):.3f}  coverage c {np.mean(cov):.2f}", flush=True)
        naive_limit = []
        for s in seeds:
            pool = controlled_sim_pool(s, scale=scale)
            rng = np.random.default_rng(s)
            score = pool.theta + c * pool.X[:, 0] + 1e-9 * rng.standard_normal(30)
            naive_limit.append(recall_at_k(score, pool.true_topk))
        out[str(scale)] = {"rows": rows, "naive_infinite_data": float(np.mean(naive_limit))}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    args = ap.parse_args()
    t0 = time.perf_counter()
    res = {f"c={c:g}": run(list(range(args.seeds)), c) for c in (1.0, 0.0)}
    doc = {"benchmark": "rank_plateau", "date": dt.datetime.now(dt.UTC).isoformat(),
           "setup": {"pool": "controlled N=30 k=5, theta = scale * (q - mean q) (logits per "
                             "net true statement)", "c": [1.0, 0.0], "kappa": 0.3,
                     "seeds": args.seeds, "repeats": list(REPEATS)},
           "by_c_and_scale": res, "elapsed_s": time.perf_counter() - t0}
    path = ROOT / "benchmarks" / "results" / "rank_plateau.json"
    path.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {path} in {doc['elapsed_s']:.0f} s")


if __name__ == "__main__":
    main()
