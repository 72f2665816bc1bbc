"""Coverage and width of scoring-bias's shift and MAD intervals, before and after.

A shift is the mean of d = (perturbed score) - (baseline score) over items, d an integer in
[-span, span] (span 4 on a 1-5 scale, 9 on 1-10); the MAD is the mean of |d|. Items are drawn
independently from a law of d (the truth is its mean), `--reps` runs per cell, and each run's
95% interval is computed by every rule on the same draws:

- before: `stats.paired_estimate` with the scale's span (exact `movers_ci` below 5 items that
  moved, `constant_ci` when all alike, else the score interval of a bounded mean,
  `bounded_mean_ci`, whose variance puts mass on +-span);
- after: `stats.intervals.score_shift_estimate` (exact `movers_ci` about the common value
  below 5 items off it, `constant_ci` when all alike at c != 0, else each end the farther of
  Student's t and the studentized bootstrap's, 2000 resamples);
- mode_t: the same exact rules, then Student's t alone;
- t_movers: the movers rule about 0 only (as before), then Student's t;
- boot_t: the same rule, then the studentized bootstrap (999 resamples);
- observed_range: the same rule, then `bounded_mean_ci` with the largest |d| observed as the
  bound (not a bound the data must respect: shown for comparison).

Laws (the `laws` entry of the output lists each): the sim judge's latent model (score =
round(mu + bias + sd Z) clipped to the scale, mu spread over the scale, as
`/tmp/scoretest/sim/ttest.py` and the sim provider), few items moved by 1 one way or both
ways, nearly every item moved alike, rare large moves, and the empirical laws of d of the
embedded models on MT-Bench (benchmarks/results/scoring_bias_local{05,15}_mtbench100.json,
resampled). Per cell: coverage, mean width, the share whose interval lies above / below the
truth, and the share that excludes 0 (power, or the false-positive rate where the truth is 0).

    python benchmarks/scoring_shift_interval.py                # results/scoring_shift_interval.json
    python benchmarks/scoring_shift_interval.py --reps 200 --out /tmp/s.json   # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy import stats

from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.stats import SPARSE_MOVERS, movers_ci, paired_estimate
from judgeaudit.stats.intervals import bounded_mean_ci, constant_ci, score_shift_estimate

NS = (10, 20, 40, 100)
# the embedded models' d on MT-Bench, 100 items (count per value)
EMPIRICAL = {
    "qwen0.5b_ids_roman": {0: 28, 1: 67, 2: 1, 4: 4},
    "qwen0.5b_order_random": {-4: 2, -3: 1, -2: 2, -1: 9, 0: 34, 1: 52},
    "qwen0.5b_ids_letters": {-3: 3, -2: 14, -1: 8, 0: 34, 1: 40, 2: 1},
    "qwen1.5b_ids_letters": {0: 86, 1: 13, 2: 1},
    "qwen1.5b_ref_5": {-1: 7, 0: 87, 1: 6},
    "qwen1.5b_ref_1": {-3: 6, -2: 2, -1: 55, 0: 73},
    "qwen1.5b_order_desc": {0: 28, 1: 69, 2: 3},
}


def _law(counts: dict[float, float]) -> tuple[np.ndarray, np.ndarray]:
    keys = sorted(counts)
    p = np.array([counts[k] for k in keys], dtype=float)
    return np.array(keys, dtype=float), p / p.sum()


def _latent(k: int, sd: float, bias: float, m: int = 400_000, seed: int = 1
            ) -> tuple[np.ndarray, np.ndarray]:
    """The law of d under the sim judge's latent model, by a large draw (MC error ~0.001)."""
    rng = np.random.default_rng(seed)
    mu = 1 + (k - 1) / (1 + np.exp(-3 * (rng.uniform(0, 1, m) - 0.5)))
    a = np.clip(np.floor(mu + bias + sd * rng.standard_normal(m) + 0.5), 1, k)
    b = np.clip(np.floor(mu + sd * rng.standard_normal(m) + 0.5), 1, k)
    vals, cnt = np.unique(a - b, return_counts=True)
    return vals, cnt / m


def laws() -> dict[str, tuple[np.ndarray, np.ndarray, float]]:
    out: dict[str, tuple[np.ndarray, np.ndarray, float]] = {}
    for b in (0.0, 0.3, 0.5):
        out[f"sim_1-5_sd0.5_bias{b}"] = (*_latent(5, 0.5, b), 4.0)
    out["sim_1-5_sd0.3_bias0.2"] = (*_latent(5, 0.3, 0.2), 4.0)
    for b in (0.0, 0.5, 1.0):
        out[f"sim_1-10_sd1_bias{b}"] = (*_latent(10, 1.0, b), 9.0)
    for p in (0.05, 0.1, 0.2):
        out[f"up1_{p}"] = (*_law({0: 1 - p, 1: p}), 4.0)
    out["both1_0.1_0.1"] = (*_law({-1: 0.1, 0: 0.8, 1: 0.1}), 4.0)
    out["both1_0.05_0.15"] = (*_law({-1: 0.05, 0: 0.8, 1: 0.15}), 4.0)
    out["nearly_all_up1_0.95"] = (*_law({0: 0.05, 1: 0.95}), 4.0)
    out["all_up1"] = (*_law({1: 1.0}), 4.0)
    out["rare4_0.02"] = (*_law({0: 0.9, 1: 0.08, 4: 0.02}), 4.0)
    out["skew_1-10"] = (*_law({0: 0.7, 1: 0.15, 2: 0.08, 3: 0.04, 6: 0.03}), 9.0)
    out["both2_1-10"] = (*_law({-2: 0.05, 0: 0.85, 2: 0.1}), 9.0)
    for name, counts in EMPIRICAL.items():
        out[name] = (*_law(counts), 4.0)
    return out


def _pre(d: np.ndarray, span: float) -> tuple[float, float] | None:
    """The rule before for few movers / all alike (shared by the comparison rules)."""
    if int((d != 0).sum()) < SPARSE_MOVERS:
        return movers_ci(d, span)
    if np.ptp(d) == 0:
        return constant_ci(float(d[0]), d.size, span)
    return None


def _t_movers(d: np.ndarray, span: float, rng: np.random.Generator) -> tuple[float, float]:
    pre = _pre(d, span)
    if pre:
        return pre
    n = d.size
    half = float(stats.t.ppf(0.975, n - 1)) * float(d.std(ddof=1)) / np.sqrt(n)
    return float(d.mean()) - half, float(d.mean()) + half


def _boot_t(d: np.ndarray, span: float, rng: np.random.Generator,
            b: int = 999) -> tuple[float, float]:
    pre = _pre(d, span)
    if pre:
        return pre
    n, m, s = d.size, float(d.mean()), float(d.std(ddof=1))
    x = d[rng.integers(0, n, (b, n))]
    ms, ss = x.mean(1), x.std(1, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(ss > 0, (ms - m) / (ss / np.sqrt(n)), np.sign(ms - m) * np.inf)
    t = np.sort(np.nan_to_num(t, nan=0.0))
    k = int(np.floor(0.025 * (b + 1)))
    se = s / np.sqrt(n)
    return max(-span, m - t[b - k] * se), min(span, m - t[k - 1] * se)


def _observed(d: np.ndarray, span: float, rng: np.random.Generator) -> tuple[float, float]:
    pre = _pre(d, span)
    return pre if pre else bounded_mean_ci(d, float(np.abs(d).max()))


def _mode_t(d: np.ndarray, span: float, rng: np.random.Generator) -> tuple[float, float]:
    est = score_shift_estimate(d, span, n_boot=10)
    if est.method != "t|bootstrap-t":
        return est.ci95
    n = d.size
    half = float(stats.t.ppf(0.975, n - 1)) * float(d.std(ddof=1)) / np.sqrt(n)
    return float(d.mean()) - half, float(d.mean()) + half


RULES = {
    "before": lambda d, span, rng: paired_estimate(d, span=span).ci95,
    "after": lambda d, span, rng: score_shift_estimate(
        d, span, seed=int(rng.integers(2**31))).ci95,
    "mode_t": _mode_t,
    "t_movers": _t_movers,
    "boot_t": _boot_t,
    "observed_range": _observed,
}


def cell(vals: np.ndarray, p: np.ndarray, n: int, span: float, reps: int, seed: int,
         mad: bool) -> dict:
    rng = np.random.default_rng(seed)
    v = np.abs(vals) if mad else vals
    truth = float(v @ p)
    draws = rng.choice(v, size=(reps, n), p=p)
    out: dict = {"n": n, "truth": round(truth, 4)}
    for name, rule in RULES.items():
        r2 = np.random.default_rng(seed + 1)
        ci = np.array([rule(draws[i], span, r2) for i in range(reps)], dtype=float)
        if mad:
            ci[:, 0] = np.maximum(ci[:, 0], 0.0)
        lo, hi = ci[:, 0], ci[:, 1]
        out[name] = {"coverage": round(float(np.mean((lo <= truth + 1e-9)
                                                      & (truth - 1e-9 <= hi))), 4),
                     "width": round(float(np.mean(hi - lo)), 3),
                     "above": round(float(np.mean(lo > truth + 1e-9)), 4),
                     "below": round(float(np.mean(hi < truth - 1e-9)), 4),
                     "excludes_0": round(float(np.mean((lo > 0) | (hi < 0))), 4)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results"
                                         / "scoring_shift_interval.json"))
    args = ap.parse_args()
    t0 = time.time()
    load_before = [round(x, 2) for x in os.getloadavg()]
    rows = []
    all_laws = laws()
    for quantity in ("shift", "mad"):
        for i, (name, (vals, p, span)) in enumerate(all_laws.items()):
            for n in NS:
                row = {"quantity": quantity, "law": name, "span": span,
                       **cell(vals, p, n, span, args.reps, args.seed + 1000 * i + n,
                              quantity == "mad")}
                rows.append(row)
                print(f"{quantity:5s} {name:24s} n={n:3d} truth {row['truth']:+.3f} | "
                      + " | ".join(f"{r} {row[r]['coverage']:.3f} w{row[r]['width']:.2f}"
                                   for r in RULES), flush=True)
    summary = {r: {"min_coverage": min(row[r]["coverage"] for row in rows),
                   "cells_below_0.94": sum(row[r]["coverage"] < 0.94 for row in rows),
                   "mean_width": round(float(np.mean([row[r]["width"] for row in rows])), 3)}
               for r in RULES}
    doc = {"what": __doc__, "reps": args.reps, "seed": args.seed, "ns": list(NS),
           "mc_se_at_0.95": round(float(np.sqrt(0.95 * 0.05 / args.reps)), 4),
           "laws": {k: {"values": v.tolist(), "probs": [round(float(x), 5) for x in p],
                        "span": s} for k, (v, p, s) in all_laws.items()},
           "summary": summary, "rows": rows, "seconds": round(time.time() - t0, 1),
           "load_before": load_before, "load_after": [round(x, 2) for x in os.getloadavg()],
           "python": platform.python_version(), "machine": cpu_summary()}
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
