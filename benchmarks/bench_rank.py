"""Rank benchmark: one acquisition step at N = 30, 100, 300, and the MAP fit against choix.

Run by hand:  PYTHONPATH=src python benchmarks/bench_rank.py [--reps 5] [--quick]
Writes benchmarks/results/rank.json and prints tables.

- Acquisition step: the work between two oracle calls right after a refit: top-k membership
  by Monte-Carlo (S = 1500), the top-k-aware score of every unqueried pair, the pick. Timed
  separately: the warm-started refit that happens every 8 acquisitions. Target: step at
  N = 100 under 50 ms.
- Fit vs choix on the same simulated Bradley-Terry data (no covariates, no position term):
  our `fit_naive(lam)` against `choix.opt_pairwise(alpha)` with lam = 2 * alpha (choix's
  objective adds alpha * ||theta||^2, a Gaussian prior of precision 2 * alpha; its docstring
  says "variance 1/alpha", the code says otherwise), and against `choix.ilsr_pairwise`
  (alpha = 0: maximum likelihood; its own alpha is a Markov-chain prior of a different
  form, so we compare at the ML point, using our fit with a 1e-9 ridge). Estimates are
  compared after centering. Medians over --reps runs, side by side in one process.
BLAS threads are pinned to 1 (small dense algebra; extra threads only contend).
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402
from importlib import metadata  # noqa: E402
from pathlib import Path  # noqa: E402

import choix  # noqa: E402
import numpy as np  # noqa: E402

from judgeaudit.rank.acquisition import get_rule  # noqa: E402
from judgeaudit.rank.loop import LoopConfig, _context  # noqa: E402
from judgeaudit.rank.simulate import SimOracle, random_pool  # noqa: E402
from judgeaudit.stats.bradley_terry import fit_map, fit_naive, from_winner_loser  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def _median_ms(fn, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(1000 * (time.perf_counter() - t))
    return statistics.median(times), out


def bench_step(n: int, reps: int) -> dict:
    pool = random_pool(n, 5 if n <= 30 else 10, seed=n)
    o = SimOracle(pool.theta, pool.X, c=1.0, kappa=0.3, seed=n)
    rng = np.random.default_rng(0)
    m = 3 * n
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    comps = np.column_stack([a, b, o.matrix[a, b]]).astype(float)
    fit = fit_map(n, comps, X=pool.X)
    cfg = LoopConfig(k=pool.k, budget=0)
    A, B = np.triu_indices(n, 1)
    asked = np.zeros(A.shape[0], bool)
    asked[rng.choice(A.shape[0], min(m, A.shape[0] // 2), replace=False)] = True
    cand = np.nonzero(~asked)[0]
    score = get_rule("topk")

    def step():
        ctx = _context(fit, pool.X, cfg, np.zeros(n), np.random.default_rng(1))
        s = score(ctx, A[cand], B[cand])
        return int(cand[np.argmax(s)])

    step_ms, _ = _median_ms(step, reps)
    extra = np.column_stack([a[:8], b[:8], o.matrix[a[:8], b[:8]]]).astype(float)
    more = np.vstack([comps, extra])
    refit_ms, _ = _median_ms(lambda: fit_map(n, more, X=pool.X, init=fit), reps)
    cold_ms, _ = _median_ms(lambda: fit_map(n, more, X=pool.X), reps)
    return {"n_items": n, "n_comparisons": m, "n_candidates": int(cand.shape[0]),
            "n_samples": 1500, "step_ms_median": step_ms, "refit_warm_ms_median": refit_ms,
            "refit_cold_ms_median": cold_ms}


def bench_fit(n: int, per_item: int, reps: int, choix_reps: int) -> dict:
    rng = np.random.default_rng(n * 1000 + per_item)
    theta = rng.normal(scale=0.5, size=n)
    m = per_item * n
    a = rng.integers(0, n, m)
    b = (a + rng.integers(1, n, m)) % n
    win = rng.random(m) < 1 / (1 + np.exp(theta[b] - theta[a]))
    pairs = [(int(x), int(y)) if w else (int(y), int(x)) for x, y, w in zip(a, b, win,
                                                                              strict=True)]
    comps = from_winner_loser(pairs)
    alpha = 0.01
    out: dict = {"n_items": n, "n_comparisons": m, "alpha": alpha, "lam": 2 * alpha}

    def center(v):
        return np.asarray(v) - np.mean(v)

    ours_ms, ours = _median_ms(lambda: fit_naive(n, comps, lam=2 * alpha), reps)
    opt_ms, opt = _median_ms(lambda: choix.opt_pairwise(n, pairs, alpha=alpha, tol=1e-8),
                             choix_reps)
    ours_ml_ms, ours_ml = _median_ms(lambda: fit_naive(n, comps, lam=1e-9), reps)
    try:
        ilsr_ms, ilsr = _median_ms(lambda: choix.ilsr_pairwise(n, pairs, alpha=0.0, tol=1e-10),
                                   choix_reps)
        ilsr_diff = float(np.max(np.abs(center(ours_ml.theta) - center(ilsr))))
    except (RuntimeError, ValueError) as e:  # no ML (a never-losing item) or no convergence
        ilsr_ms, ilsr_diff = float("nan"), f"ilsr failed: {e}"
    out.update({
        "ours_map_ms": ours_ms, "choix_opt_pairwise_ms": opt_ms,
        "max_abs_diff_vs_opt_pairwise": float(np.max(np.abs(center(ours.theta) - center(opt)))),
        "ours_ml_ms": ours_ml_ms, "choix_ilsr_pairwise_ms": ilsr_ms,
        "max_abs_diff_vs_ilsr": ilsr_diff, "ours_converged": bool(ours.converged),
        "theta_range": float(np.ptp(ours.theta)),
    })
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--choix-reps", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="N = 100 only for the fit benchmark")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rank.json"))
    args = ap.parse_args()
    steps = [bench_step(n, args.reps) for n in (30, 100, 300)]
    print("acquisition step (top-k rule, S=1500):")
    for s in steps:
        print(f"  N={s['n_items']:4d}  step {s['step_ms_median']:7.1f} ms   warm refit "
              f"{s['refit_warm_ms_median']:7.1f} ms   cold refit "
              f"{s['refit_cold_ms_median']:7.1f} ms")
    fits = []
    for n in (100,) if args.quick else (100, 1000):
        for per in (10, 50):
            r = bench_fit(n, per, args.reps, args.choix_reps)
            fits.append(r)
            print(f"  fit N={n:5d} m={r['n_comparisons']:6d}: ours {r['ours_map_ms']:8.1f} ms vs "
                  f"opt_pairwise {r['choix_opt_pairwise_ms']:9.1f} ms (max|diff| "
                  f"{r['max_abs_diff_vs_opt_pairwise']:.1e}); ours-ML {r['ours_ml_ms']:8.1f} ms "
                  f"vs ilsr {r['choix_ilsr_pairwise_ms']:8.1f} ms (max|diff| "
                  f"{r['max_abs_diff_vs_ilsr']})")
    res = {"schema": "judgeaudit.bench_rank/1",
           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "machine": {"python": platform.python_version(), "cpu_count": os.cpu_count(),
                       "platform": platform.platform(),
                       "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS")},
           "versions": {p: metadata.version(p) for p in ("numpy", "scipy", "choix")},
           "step_target_ms_at_100": 50.0,
           "step_at_100_meets_target": steps[1]["step_ms_median"] < 50.0,
           "acquisition_step": steps, "fit_vs_choix": fits}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
