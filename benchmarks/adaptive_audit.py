"""Adaptive audit acceptance on the sim judge (issue 16): error rates, coverage, agreement with
the fixed-n audit and judge calls saved, >= 500 seeds per setting.

This is the fast model-based check (the probes' effect model, not the audit itself);
benchmarks/adaptive_real.py (results/adaptive_real.json) runs the real `audit --adaptive`
loop (`audit.adaptive.run_adaptive`, sim judge with the coefficients solved here, the real
fixed-n battery for the agreement) over as many seeds as its time budget allows, and sets
its figures beside these.

How:
1. Items: builtin:facts seeds 0, 1, 2 concatenated (ids made distinct: 636 labelled pairs),
   the first 500 usable per probe; each rep draws its own random order (the seeded order of
   the real audit).
2. Per probe, the sim judge's own model (benchmarks/mde_power.py `Design`: P(verdict A) =
   sigmoid(z / noise) for every call the probe makes, z from `SimProvider.logit` on the text
   actually shown, quality 3 and noise 1 = the sim defaults) gives each item's paired
   difference distribution as a function of the planted coefficient of that probe's bias
   (position, length, authority, bandwagon, markdown, injection). The planted coefficient is
   solved so that the true effect (mean per-item expected difference) is 0, 0.1 or 0.3.
   Verdicts are drawn call by call (fresh draws per call, as the sim without crn).
3. The adaptive rule is the audit's own code (`audit.adaptive.AdaptiveRule`, `sequence`'s
   betting_cs / betting_evalue, e-BH over the 6 probes at alpha 0.05), rounds of 20 items,
   max-n 500. Probes' streams are drawn independently (in the real audit they share the
   baseline verdicts; e-BH is valid under any dependence).
4. Fixed-n audit at n = 500: exact two-sided sign test, BH over the 6 probes, biased when
   q < alpha and the interval excludes 0, not biased when the interval is inside the
   no-bias range [-0.05, 0.05]; the interval is the normal one (mean +- 1.96 sd / sqrt n) in
   place of the audit's bootstrap (the same to two decimals at n = 500, and 1000x faster).
5. Calls: per item, 2 baseline calls (both orders, shared over the probes), and for a shift
   probe 2 perturbed calls, 2 repeat calls for its consistency rate (shared over shift
   probes) and for verbosity 2 equal-substance calls; the fixed-n audit pays these for 500
   items per probe, the adaptive one for the items each probe had when it stopped (the
   shared calls for the largest prefix). Dropped perturbations are ignored (< 2%).

Settings: every probe at 0 ("zero"), every probe at 0.1 ("small"), every probe at 0.3
("large"), and "mixed" (position 0.3, verbosity 0.1, authority 0.3, the other three 0), which
measures the report's FDR with true nulls among true effects.

    python benchmarks/adaptive_audit.py                 # results/adaptive.json (~4 min)
    python benchmarks/adaptive_audit.py --reps 50 --out /tmp/a.json
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

sys.path.insert(0, str(Path(__file__).parent))
import mde_power as mp  # noqa: E402

from judgeaudit.audit.adaptive import AdaptiveRule, ProbeState, bounds  # noqa: E402
from judgeaudit.audit.probe import get_probe  # noqa: E402
from judgeaudit.data import load  # noqa: E402
from judgeaudit.stats import benjamini_hochberg  # noqa: E402
from judgeaudit.stats.sequential import betting_cs, betting_evalue  # noqa: E402

ALPHA = 0.05
MAX_N = 500
ROUND = 20
PROBES = list(mp.PROBES)  # position, verbosity, authority, bandwagon, beauty, injection
SETTINGS = {
    "zero": dict.fromkeys(PROBES, 0.0),
    "small": dict.fromkeys(PROBES, 0.1),
    "large": dict.fromkeys(PROBES, 0.3),
    "mixed": {"position": 0.3, "verbosity": 0.1, "authority": 0.3, "bandwagon": 0.0,
              "beauty": 0.0, "injection": 0.0},
}
OWN_CALLS = {"position": 0, "verbosity": 4}  # per item, beyond baseline and shared repeats
SHIFT_CALLS = 2


def items_500() -> list[Any]:
    out = []
    for s in (0, 1, 2):
        for it in load(f"builtin:facts?seed={s}"):
            out.append(it.model_copy(update={"id": f"{it.id}@{s}"}))
    return out


def calls_for(m: dict[str, int]) -> int:
    """Judge calls of an audit in which probe p took m[p] items."""
    shift = [p for p in m if p != "position"]
    total = 2 * max(m.values())  # shared baseline over the largest prefix
    total += 2 * max((m[p] for p in shift), default=0)  # shared consistency repeats
    total += sum(m[p] * OWN_CALLS.get(p, SHIFT_CALLS) for p in m)
    return total


def coefficient(design: Any, effect: float) -> float:
    """The planted coefficient of a probe's bias giving it `effect` on its items (0 for 0);
    benchmarks/adaptive_real.py plants the same ones in the real loop."""
    return 0.0 if effect == 0 else mp.solve_c(design, 1.0, lambda _c, t=effect: t)


def fixed_n(d: np.ndarray, names: list[str]) -> list[str]:
    """Fixed-n verdicts of one rep: d (K, n)."""
    ps, cis = [], []
    for x in d:
        up, dn = int((x > 0).sum()), int((x < 0).sum())
        k = up + dn
        ps.append(float(sps.binomtest(min(up, dn), k, 0.5).pvalue) if k else 1.0)
        h = 1.96 * x.std(ddof=1) / math.sqrt(x.size)
        cis.append((x.mean() - h, x.mean() + h))
    qs = benjamini_hochberg(ps)
    out = []
    for name, q, (lo, hi) in zip(names, qs, cis, strict=True):
        nb = get_probe(name).no_bias_range
        out.append("biased" if q < ALPHA and (lo > 0 or hi < 0) else
                   "not_biased" if nb[0] <= lo and hi <= nb[1] else "underpowered")
    return out


def run_setting(name: str, planted: dict[str, float], designs: dict[str, Any], reps: int,
                rng: np.random.Generator) -> dict[str, Any]:
    t0 = time.perf_counter()
    names = PROBES
    streams, mus, coefs, truths = {}, {}, {}, {}
    for p in names:
        des = designs[p]
        c = coefficient(des, planted[p])
        coefs[p] = c
        vals, probs = des.d_dist(c, 1.0)
        mu = probs @ vals  # per-item expected difference
        d = des.draw(c, 1.0, reps, rng)[:, :MAX_N]
        mu = mu[:MAX_N]
        perm = np.argsort(rng.random(d.shape), axis=1)  # each rep's own item order
        streams[p] = np.take_along_axis(d, perm, axis=1)
        mus[p] = mu[perm]
        truths[p] = float(mu.mean())
    cs = {}
    for p in names:
        lo, hi = bounds(p)
        cl, ch = betting_cs(streams[p], lo, hi, ALPHA)
        ev = betting_evalue(streams[p], lo, hi, 0.0, alpha=ALPHA)
        cs[p] = (cl, ch, ev)
    rows = []
    for r in range(reps):
        states = [ProbeState(p, tuple(get_probe(p).no_bias_range), *bounds(p),
                             ci=bounds(p)) for p in names]
        rule = AdaptiveRule(states, ALPHA)
        rnd = 0
        while not rule.all_stopped:
            rnd += 1
            done = {}
            for s in states:
                if not s.open:
                    continue
                n_p = streams[s.name].shape[1]
                m = min(rnd * ROUND, n_p)
                cl, ch, ev = cs[s.name]
                s.update(m, m, (float(cl[r, m - 1]), float(ch[r, m - 1])),
                         float(ev[r, m - 1]), rnd)
                done[s.name] = "max_n" if m >= n_p else None
            rule.step(rnd, done)
        verdicts = rule.verdicts()
        fixed = fixed_n(np.stack([streams[p][r] for p in names]), names)
        row = {"rounds": rnd,
               "calls": calls_for({s.name: s.items for s in states}),
               "fixed_calls": calls_for({p: streams[p].shape[1] for p in names})}
        for s, fv in zip(states, fixed, strict=True):
            lo, hi = s.ci
            run_mean = float(mus[s.name][r, :s.items].mean())
            row[s.name] = {"verdict": verdicts[s.name], "reason": s.reason, "n": s.items,
                           "fixed": fv,
                           "covers_running": bool(lo <= run_mean + 1e-12 and
                                                  run_mean - 1e-12 <= hi),
                           "covers_planted": bool(lo <= truths[s.name] <= hi)}
        rows.append(row)
    per_probe = {}
    for p in names:
        v = [row[p] for row in rows]
        dec = [x for x in v if x["fixed"] != "underpowered"]
        per_probe[p] = {
            "planted_effect": truths[p], "planted_coefficient": coefs[p],
            "biased": sum(x["verdict"] == "biased" for x in v) / reps,
            "not_biased": sum(x["verdict"] == "not_biased" for x in v) / reps,
            "underpowered": sum(x["verdict"] == "underpowered" for x in v) / reps,
            "coverage": sum(x["covers_planted"] for x in v) / reps,
            "coverage_running_mean": sum(x["covers_running"] for x in v) / reps,
            "mean_n_at_stop": float(np.mean([x["n"] for x in v])),
            "fixed_n_decides": len(dec) / reps,
            "agreement_where_fixed_decides": (sum(x["verdict"] == x["fixed"] for x in dec)
                                              / len(dec)) if dec else None,
            "fixed_n": {k: sum(x["fixed"] == k for x in v) / reps
                        for k in ("biased", "not_biased", "underpowered")},
        }
    nulls = [p for p in names if planted[p] == 0]
    fdp = []
    for row in rows:
        b = [p for p in names if row[p]["verdict"] == "biased"]
        fdp.append(sum(p in nulls for p in b) / max(1, len(b)))
    n_false = sum(row[p]["verdict"] == "biased" for row in rows for p in nulls)
    dec_all = [(row[p]["verdict"], row[p]["fixed"]) for row in rows for p in names
               if row[p]["fixed"] != "underpowered"]
    calls = np.array([row["calls"] for row in rows], dtype=float)
    fixed_calls = rows[0]["fixed_calls"]
    return {
        "planted": planted, "reps": reps, "seconds": time.perf_counter() - t0,
        "false_biased_rate_null_probes": (n_false / (reps * len(nulls))) if nulls else None,
        "fdr": float(np.mean(fdp)),
        "coverage": float(np.mean([row[p]["covers_planted"] for row in rows for p in names])),
        "coverage_running_mean": float(np.mean([row[p]["covers_running"] for row in rows
                                                for p in names])),
        "agreement_where_fixed_decides": (sum(a == b for a, b in dec_all) / len(dec_all)
                                          if dec_all else None),
        "fixed_n_decides": len(dec_all) / (reps * len(names)),
        "mean_calls": float(calls.mean()), "fixed_n_calls": fixed_calls,
        "calls_ratio": float(calls.mean() / fixed_calls),
        "mean_rounds": float(np.mean([row["rounds"] for row in rows])),
        "probes": per_probe,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=500)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "adaptive.json"))
    args = ap.parse_args()
    t0 = time.perf_counter()
    mp.QUALITY = 3.0  # the sim's default quality coefficient
    pool = items_500()
    mp.load = lambda spec: pool  # Design draws its items from here
    designs = {p: mp.Design(p, MAX_N) for p in PROBES}
    rng = np.random.default_rng(args.seed)
    out: dict[str, Any] = {}
    for name in args.settings.split(","):
        out[name] = run_setting(name, SETTINGS[name], designs, args.reps, rng)
        s = out[name]
        print(f"{name}: false-biased {s['false_biased_rate_null_probes']}, fdr {s['fdr']:.3f}, "
              f"coverage {s['coverage']:.3f} (running {s['coverage_running_mean']:.3f}), "
              f"agreement {s['agreement_where_fixed_decides']}, calls "
              f"{s['calls_ratio']:.3f}, {s['seconds']:.0f} s", flush=True)
    main3 = [out[k]["calls_ratio"] for k in ("zero", "small", "large") if k in out]
    nulls = [out[k]["false_biased_rate_null_probes"] for k in out
             if out[k]["false_biased_rate_null_probes"] is not None]
    summary = {
        "calls_ratio_mean_zero_small_large": float(np.mean(main3)) if main3 else None,
        "max_false_biased_rate_null_probes": max(nulls) if nulls else None,
        "max_fdr": max(out[k]["fdr"] for k in out),
        "min_coverage": min(out[k]["coverage"] for k in out),
        "min_coverage_running_mean": min(out[k]["coverage_running_mean"] for k in out),
        "min_agreement": min(out[k]["agreement_where_fixed_decides"] for k in out
                             if out[k]["agreement_where_fixed_decides"] is not None),
    }
    summary["targets"] = {
        "false_biased<=0.05": summary["max_false_biased_rate_null_probes"] <= 0.05,
        "fdr<=0.05": summary["max_fdr"] <= 0.05,
        "coverage>=0.95": summary["min_coverage"] >= 0.95,
        "agreement>=0.95": summary["min_agreement"] >= 0.95,
        "calls<=0.40": (summary["calls_ratio_mean_zero_small_large"] or 1) <= 0.40,
    }
    doc = {"benchmark": "adaptive_audit", "alpha": ALPHA, "max_n": MAX_N, "round_size": ROUND,
           "reps": args.reps, "seed": args.seed, "sim": {"quality": 3.0, "noise": 1.0},
           "method": __doc__, "settings": out, "summary": summary,
           "seconds": time.perf_counter() - t0, "python": platform.python_version()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
