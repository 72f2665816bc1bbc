"""Anytime-valid confidence sequences and e-values for adaptive audits (issue 16), by simulation.

Per setting (a distribution of the per-item preference shift on [-1, 1] and its true effect
0, 0.1 or 0.3), `--streams` independent streams of `--max-n` items, all stats.sequential
defaults (alpha 0.05, 2001-point grid, trunc 1/2, hedge "mean"):

- time-uniform miss rate: the fraction of streams whose sequence excludes the true mean at
  some n <= max-n (must be <= alpha), for the betting CS, the PrPl empirical-Bernstein CS
  and, for contrast, the fixed-n 95 % Wald interval mean +- 1.96 sd/sqrt(n) recomputed after
  every item from n = 10 (not time-uniform) or looked at only at n = 50, 200, 500;
- mean width at n = 50, 200, 500 (betting, EB, Wald);
- e-value rejection rate at alpha: sup_{n <= max-n} e_n >= 1/alpha (the sequential test's
  size under effect 0, its power otherwise), and the mean n at which it first rejects;
- the stopping rule "stop when the CS excludes 0 (biased) or lies inside [-0.05, 0.05]
  (not biased), else undecided at max-n": mean stopping n and the share of each decision.

    python benchmarks/sequential_coverage.py            # writes results/sequential_coverage.json
    python benchmarks/sequential_coverage.py --streams 200 --out /tmp/s.json   # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from judgeaudit.stats import betting_cs, betting_evalue, empirical_bernstein_cs

ALPHA = 0.05
WIDTH_AT = (50, 200, 500)
NO_BIAS = 0.05  # the rule's no-bias range [-0.05, 0.05]
WALD_FROM = 10
EFFECTS = (0.0, 0.1, 0.3)

Sampler = Callable[[np.random.Generator, tuple[int, int], float], np.ndarray]


def _shift(rng: np.random.Generator, shape: tuple[int, int], effect: float) -> np.ndarray:
    """Preference shift in {-1, -0.5, 0, 0.5, 1}, mostly 0; a symmetric null mixed with a
    push to +0.5/+1 (mean 0.75) with weight effect/0.75."""
    w = effect / 0.75
    p = (1 - w) * np.array([0.05, 0.1, 0.7, 0.1, 0.05]) + w * np.array([0, 0, 0, 0.5, 0.5])
    return rng.choice([-1.0, -0.5, 0.0, 0.5, 1.0], size=shape, p=p)


def _skewed(rng: np.random.Generator, shape: tuple[int, int], effect: float) -> np.ndarray:
    """Asymmetric shift: {-1: 0.1, 0: 0.7, +0.5: 0.2} (mean 0) mixed with +1 w.p. effect."""
    p = (1 - effect) * np.array([0.1, 0.7, 0.2, 0.0]) + effect * np.array([0, 0, 0, 1.0])
    return rng.choice([-1.0, 0.0, 0.5, 1.0], size=shape, p=p)


def _flip(rng: np.random.Generator, shape: tuple[int, int], effect: float) -> np.ndarray:
    """Verdict flips, {-1, +1} with P(+1) = (1 + effect)/2: the largest variance there is."""
    return np.where(rng.random(shape) < (1 + effect) / 2, 1.0, -1.0)


def _beta_skew(rng: np.random.Generator, shape: tuple[int, int], effect: float) -> np.ndarray:
    """Continuous, right-skewed, small variance: effect + 0.4 (2 B - 1 + 0.6), B ~ Beta(2, 8)
    (support [effect - 0.16, effect + 0.64], sd 0.096)."""
    return effect + 0.4 * (2 * rng.beta(2, 8, size=shape) - 0.4)


DISTRIBUTIONS: dict[str, tuple[Sampler, str]] = {
    "shift": (_shift, "{-1,-.5,0,.5,1}: (1-w)[.05,.1,.7,.1,.05] + w[0,0,0,.5,.5], w=effect/.75"),
    "skewed": (_skewed, "{-1,0,.5,1}: (1-e)[.1,.7,.2,0] + e[0,0,0,1]"),
    "flip": (_flip, "{-1,+1}, P(+1) = (1+effect)/2"),
    "beta_skew": (_beta_skew, "effect + 0.4 (2 Beta(2,8) - 0.4)"),
}


def first_true(mask: np.ndarray) -> np.ndarray:
    """1-based index of the first True per row, or 0 if none."""
    return np.where(mask.any(axis=1), mask.argmax(axis=1) + 1, 0)


def wald(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = np.arange(1, x.shape[1] + 1)
    mean = np.cumsum(x, axis=1) / t
    var = np.maximum(np.cumsum(x * x, axis=1) / t - mean**2, 0) * t / np.maximum(t - 1, 1)
    half = 1.96 * np.sqrt(var / t)
    return mean - half, mean + half


def stopping(lo: np.ndarray, hi: np.ndarray, effect: float) -> dict:
    n = lo.shape[1]
    biased = (lo > 0) | (hi < 0)
    clear = (lo >= -NO_BIAS) & (hi <= NO_BIAS)
    tb, tc = first_true(biased), first_true(clear)
    tb_eff = np.where(tb == 0, n + 1, tb)
    tc_eff = np.where(tc == 0, n + 1, tc)
    stop = np.minimum(np.minimum(tb_eff, tc_eff), n)
    dec_b = (tb > 0) & (tb_eff <= tc_eff)  # both at once (a CS inside (0, 0.05]): biased
    dec_c = (tc > 0) & (tc_eff < tb_eff)
    wrong = dec_c if effect > NO_BIAS else dec_b
    return {"mean_stop_n": round(float(stop.mean()), 1),
            "median_stop_n": float(np.median(stop)),
            "biased": round(float(dec_b.mean()), 4),
            "not_biased": round(float(dec_c.mean()), 4),
            "undecided": round(float(1 - dec_b.mean() - dec_c.mean()), 4),
            "wrong_decision": round(float(wrong.mean()), 4)}


def miss_rate(lo: np.ndarray, hi: np.ndarray, mu: float, cols=slice(None)) -> float:
    inside = (lo[:, cols] <= mu) & (mu <= hi[:, cols])  # NaN (empty) is a miss
    return round(float(np.mean(~inside.all(axis=1))), 4)


def run_setting(name: str, effect: float, streams: int, max_n: int, seed: int) -> dict:
    sampler = DISTRIBUTIONS[name][0]
    rng = np.random.default_rng(seed)
    x = sampler(rng, (streams, max_n), effect)
    assert np.all(np.abs(x) <= 1 + 1e-12)
    mu = effect
    t0 = time.process_time()
    b_lo, b_hi = betting_cs(x, alpha=ALPHA)
    t_bet = time.process_time() - t0
    t0 = time.process_time()
    e_lo, e_hi = empirical_bernstein_cs(x, alpha=ALPHA)
    ev = betting_evalue(x, alpha=ALPHA)
    t_cheap = time.process_time() - t0
    w_lo, w_hi = wald(x)
    looks = [n - 1 for n in WIDTH_AT if n <= max_n]
    crossed = np.maximum.accumulate(ev, axis=1) >= 1 / ALPHA
    t_rej = first_true(crossed)
    out = {
        "distribution": name, "effect": effect, "true_mean": mu,
        "sample_sd": round(float(x.std()), 4),
        "miss_rate_time_uniform": {
            "betting": miss_rate(b_lo, b_hi, mu),
            "empirical_bernstein": miss_rate(e_lo, e_hi, mu),
            f"wald_every_n_from_{WALD_FROM}": miss_rate(w_lo, w_hi, mu,
                                                          slice(WALD_FROM - 1, None)),
            "wald_at_n_50_200_500": miss_rate(w_lo, w_hi, mu, looks),
            "wald_at_max_n_only": miss_rate(w_lo, w_hi, mu, [max_n - 1]),
        },
        "mean_width": {
            meth: {str(n): round(float(np.nanmean((hi - lo)[:, n - 1])), 4)
                   for n in WIDTH_AT if n <= max_n}
            for meth, (lo, hi) in (("betting", (b_lo, b_hi)),
                                   ("empirical_bernstein", (e_lo, e_hi)),
                                   ("wald_fixed_n", (w_lo, w_hi)))
        },
        "evalue": {
            "reject_rate_sup_e_ge_1_over_alpha": round(float(crossed[:, -1].mean()), 4),
            "reject_rate_e_at_max_n": round(float(np.mean(ev[:, -1] >= 1 / ALPHA)), 4),
            "mean_n_first_reject_given_reject": (round(float(t_rej[t_rej > 0].mean()), 1)
                                                 if np.any(t_rej > 0) else None),
        },
        "stop_rule": {"betting": stopping(b_lo, b_hi, effect),
                      "empirical_bernstein": stopping(e_lo, e_hi, effect)},
        "empty_betting_cs": int(np.isnan(b_lo[:, -1]).sum()),
        "cpu_seconds": {"betting_cs": round(t_bet, 2), "eb_and_evalue": round(t_cheap, 2)},
    }
    return out


def machine() -> dict:
    info = {"platform": platform.platform(), "python": platform.python_version(),
            "numpy": np.__version__, "cores": os.cpu_count()}
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        info["cpu_model"] = next((ln.split(":", 1)[1].strip() for ln in cpu.splitlines()
                                  if ln.startswith("model name")), None)
    except OSError:
        info["cpu_model"] = platform.processor() or None
    return info


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=2000)
    ap.add_argument("--max-n", type=int, default=500)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--only", nargs="*", default=None, help="distribution names")
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "sequential_coverage.json")
    args = ap.parse_args()
    names = args.only or list(DISTRIBUTIONS)
    rows = []
    start = time.time()
    for i, name in enumerate(names):
        for j, effect in enumerate(EFFECTS):
            t0 = time.time()
            row = run_setting(name, effect, args.streams, args.max_n,
                              args.seed * 1000 + 10 * i + j)
            row["wall_seconds"] = round(time.time() - t0, 1)
            rows.append(row)
            m = row["miss_rate_time_uniform"]
            print(f"{name:10s} effect {effect:.1f}: miss bet {m['betting']:.3f} "
                  f"EB {m['empirical_bernstein']:.3f} wald-any {m['wald_every_n_from_10']:.3f}"
                  f" | width@{args.max_n} bet {row['mean_width']['betting'].get('500')} "
                  f"EB {row['mean_width']['empirical_bernstein'].get('500')} "
                  f"| e-reject {row['evalue']['reject_rate_sup_e_ge_1_over_alpha']:.3f} "
                  f"| stop n {row['stop_rule']['betting']['mean_stop_n']} "
                  f"| {row['wall_seconds']} s", flush=True)
    res = {
        "benchmark": "sequential_coverage",
        "what": "time-uniform coverage, widths, e-value rejection and a stopping rule for "
                "stats.sequential (issue 16)",
        "settings": {
            "streams_per_setting": args.streams, "max_n": args.max_n, "alpha": ALPHA,
            "effects": list(EFFECTS), "seed": args.seed, "width_at_n": list(WIDTH_AT),
            "betting_cs": {"grid": 2001, "grid_step_on_[-1,1]": 0.001, "trunc": 0.5,
                           "hedge": "mean", "bets": "PrPl, min(lambda, trunc/m) up and "
                                                     "min(lambda, trunc/(1-m)) down"},
            "empirical_bernstein_cs": {"trunc": 0.5, "theorem": "Waudby-Smith & Ramdas "
                                                                "2024, Theorem 2"},
            "wald": f"mean +- 1.96 sd/sqrt(n), sd with n-1; time-uniform miss counted from "
                    f"n = {WALD_FROM}",
            "stop_rule": f"stop when the CS excludes 0 (biased) or lies inside "
                         f"[-{NO_BIAS}, {NO_BIAS}] (not biased), 'biased' if both at "
                         f"once; undecided at max_n; "
                         f"wrong_decision = 'not biased' when effect > {NO_BIAS}, "
                         f"'biased' when effect is 0",
            "evalue": "betting_evalue(null=0): (K+ + K-)/2 with the CS's bets at m = 0",
            "distributions": {k: v[1] for k, v in DISTRIBUTIONS.items() if k in names},
        },
        "results": rows,
        "wall_seconds_total": round(time.time() - start, 1),
        "machine": {**machine(), "loadavg_end": list(os.getloadavg())},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(res, indent=2) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
