"""Where `rank --hierarchical`'s learned tau (the prior sd of the bias terms c and kappa)
collapses toward 0, and whether rank says so.

Per planted (length c, position kappa), budget and seed: `judgeaudit.rank` with the sim
judge `sim?length=c&position=kappa` (quality 3 logits per net true statement) on
`builtin:controlled?seed=S` (30 items, length nearly uncorrelated with quality), covariate
length, k = 5, `--lam auto --hierarchical`. The planted spread of the bias terms is
sqrt((c^2 + kappa^2) / 2), what an empirical-Bayes tau would find if the data told c and
kappa apart from quality. Recorded: tau of the ranking fit and of the bias terms' fit
(`tau_terms`, at the Laplace evidence's lam), each term's posterior sd as a share of tau
(1.0: the prior alone), estimates and coverage of the planted values, whether the
bias-aware top-k is the naive one, and which notes rank wrote (`said_collapse`: the
"--hierarchical: empirical Bayes set tau to ..." note; `c_from_prior`: c marked mostly the
prior; `said_topk_naive`: that note adds that the bias-aware top-k is the naive one;
`tau_collapsed`: the results' flag). `evidence`: the Laplace log evidence of the run's
comparisons over a tau grid at the terms' lam, relative to its maximum
(stats.bradley_terry.log_evidence), to tell an optimiser that stopped short from data that
favour tau -> 0.

    python benchmarks/rank_hier_tau.py            (~90 CPU seconds)

writes benchmarks/results/rank_hier_tau.json.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from rank_c_interval import machine  # the CPU flags and load a CPU figure holds for

import judgeaudit as ja
from judgeaudit.stats.bradley_terry import log_evidence

OUT = Path(__file__).parent / "results" / "rank_hier_tau.json"
PLANTED = ((0.0, 0.0), (3.0, 0.0), (1.0, 0.5), (3.0, 1.0))
TAU_GRID = (1e-3, 1e-2, 0.1, 0.3, 1.0, 3.0, 10.0)
COLLAPSED = 0.05  # tau below this: 20x under its start, far under any planted spread here
SAID = "--hierarchical: empirical Bayes set tau to"
SAID_TOPK = "its top-k is the naive model's"


def evidence_profile(r: dict) -> dict[str, float]:
    """The Laplace log evidence of the run's valid comparisons at each tau of TAU_GRID (the
    bias terms' lam), minus its maximum over the grid."""
    m = r["models"]["bias_aware"]
    order = {it: n for n, it in enumerate(m["theta"])}
    mean = r["covariates"][0]["mean"]
    x = np.zeros(len(order))
    for row in r["ranking"]:
        x[order[row["id"]]] = row["covariates"]["length"] - mean
    comps = np.array([[v["first"], v["second"], v["y"]] for v in r["comparisons"]
                      if not v["invalid"]], dtype=float)
    lam = m.get("lam_terms") or m["lam"]
    ev = {t: log_evidence(len(order), comps, X=x[:, None], lam=lam, tau=t)[0]
          for t in TAU_GRID}
    top = max(ev.values())
    return {f"{t:g}": float(v - top) for t, v in ev.items()}


def one(c: float, kappa: float, budget: int, seed: int) -> dict:
    t0 = time.process_time()
    r = ja.rank(judge=f"sim?length={c:g}&position={kappa:g}",
                items=f"builtin:controlled?seed={seed}", k=5, budget=budget,
                covariates="length", seed=seed, hierarchical=True, lam="auto", cache=False,
                samples=200)
    cpu = time.process_time() - t0
    m = r["models"]["bias_aware"]
    cl, kp = m["c"]["length"], m["kappa"]
    ev = evidence_profile(r)
    return {
        "c": c, "kappa": kappa, "budget": budget, "seed": seed,
        "planted_spread": math.sqrt((c * c + kappa * kappa) / 2),
        "tau": m["tau"], "tau_terms": m.get("tau_terms", m["tau"]),
        "lam": m["lam"], "lam_terms": m.get("lam_terms"),
        "c_estimate": cl["estimate"], "c_se_share": cl["se"] / cl["prior_sd"],
        "c_covered": cl["covered"], "c_from_prior": cl["from_prior"],
        "kappa_estimate": kp["estimate"], "kappa_se_share": kp["se"] / kp["prior_sd"],
        "kappa_covered": kp["covered"], "kappa_from_prior": kp["from_prior"],
        "topk_same": set(m["topk"]) == set(r["models"]["naive"]["topk"]),
        "recall": r.get("recall"),
        "said_collapse": any(n.startswith(SAID) for n in r["notes"]),
        "said_topk_naive": any(n.startswith(SAID) and SAID_TOPK in n for n in r["notes"]),
        "tau_collapsed": m.get("tau_collapsed"),
        "evidence": ev, "evidence_argmax": float(max(ev, key=ev.get)),
        "converged": m["converged"], "cpu": cpu,
    }


def table(rows: list[dict]) -> list[dict]:
    out = []
    for c, kappa in PLANTED:
        for b in sorted({r["budget"] for r in rows}):
            rs = [r for r in rows if (r["c"], r["kappa"], r["budget"]) == (c, kappa, b)]
            if not rs:
                continue
            col = [r for r in rs if r["tau_terms"] < COLLAPSED]
            out.append({
                "c": c, "kappa": kappa, "budget": b, "n": len(rs),
                "planted_spread": rs[0]["planted_spread"],
                "tau_median": float(np.median([r["tau"] for r in rs])),
                "tau_terms_median": float(np.median([r["tau_terms"] for r in rs])),
                "tau_terms_range": [min(r["tau_terms"] for r in rs),
                                    max(r["tau_terms"] for r in rs)],
                "collapsed": len(col), "collapsed_said": sum(r["said_collapse"] for r in col),
                "said_not_collapsed": sum(r["said_collapse"] for r in rs
                                          if r["tau_terms"] >= COLLAPSED),
                "collapsed_topk_same": sum(r["topk_same"] for r in col),
                "collapsed_said_topk_naive": sum(r["said_topk_naive"] for r in col),
                "flagged_tau_collapsed": sum(bool(r["tau_collapsed"]) for r in rs),
                "evidence_argmax_median": float(np.median([r["evidence_argmax"]
                                                           for r in rs])),
                "c_estimate_mean": float(np.mean([r["c_estimate"] for r in rs])),
                "c_covered": sum(r["c_covered"] for r in rs),
                "kappa_estimate_mean": float(np.mean([r["kappa_estimate"] for r in rs])),
                "kappa_covered": sum(r["kappa_covered"] for r in rs),
                "cpu_median": float(np.median([r["cpu"] for r in rs]))})
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budgets", default="50,100,200,400,800")
    a = ap.parse_args()
    t0 = time.process_time()
    rows = [one(c, kappa, b, s) for c, kappa in PLANTED
            for b in map(int, a.budgets.split(",")) for s in range(a.seeds)]
    tab = table(rows)
    OUT.write_text(json.dumps({
        "about": __doc__.split("\n\n")[0].replace("\n", " "),
        "setup": {"pool": "builtin:controlled?seed=S (30 items)", "judge":
                  "sim?length=c&position=kappa", "k": 5, "lam": "auto",
                  "hierarchical": True, "samples": 200, "seeds": list(range(a.seeds)),
                  "tau_floor": 1e-3, "collapsed_below": COLLAPSED, "tau_grid": TAU_GRID},
        "cpu_seconds": time.process_time() - t0, "machine": machine(),
        "table": tab, "rows": rows}, indent=1) + "\n")
    print("c    kappa  spread budget  tau_terms(median, range)     collapsed said "
          "topk=naive  evidence argmax  c est  kappa est")
    for t in tab:
        lo, hi = t["tau_terms_range"]
        print(f"{t['c']:.1f}  {t['kappa']:.1f}    {t['planted_spread']:.2f}  {t['budget']:5d}  "
              f"{t['tau_terms_median']:.4f} [{lo:.4f}, {hi:.4f}]    {t['collapsed']}/{t['n']}"
              f"        {t['collapsed_said']}/{t['collapsed']}  "
              f"{t['collapsed_topk_same']}/{t['collapsed']}        "
              f"{t['evidence_argmax_median']:g}          {t['c_estimate_mean']:+.2f}  "
              f"{t['kappa_estimate_mean']:+.2f}")
    print(f"cpu {time.process_time() - t0:.0f} s")


if __name__ == "__main__":
    main()
