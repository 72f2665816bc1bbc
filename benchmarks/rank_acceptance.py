"""Acceptance figures for the bias-aware ranking core (issue 4, items 1-3), by simulation.

Run by hand:  PYTHONPATH=src python benchmarks/rank_acceptance.py [--seeds 30]
Writes benchmarks/results/rank_acceptance.json and prints the tables.

Pools: the controlled benchmark (N = 30, k = 5, balanced design), planted theta in statement
units: one logit per net true statement (theta = q - mean q), so c* = 1 on the verbosity
indicator means the judge values the content-free elaboration as much as one true statement.
The simulated judge answers from a seeded full verdict matrix (one verdict per ordered pair)
with planted c on the verbosity indicator and kappa = 0.3 (position).
0. Scale: full-data recall of naive and bias-aware for c* = 1 as the quality scale s (logits
   per statement) varies, for c* = 1, 2, 3 at s = 1, and the first version's scale
   (theta = 1.2 * standardised quality) for reference: naive recall at full data depends on
   c*/s only through where the elaboration bonus lands among the near-miss items.
1. Correctness: full-data recall@5 of naive and bias-aware for c* = 1 and c* = 0, coverage of
   the 95% Laplace intervals for c and kappa, the baselines, and the hierarchical (EB tau) fit.
2. Efficiency: recall@5 at B = 60, 120, 200 for every rule under both models (paired tests,
   2x2 model x acquisition ablation).
3. Gate: 10 trusted pairs; spurious pools (verbosity, c* = 1) and legitimate pools (a
   covariate that tracks quality, corr ~0.9, judge unbiased), on full data and after B = 120.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

from judgeaudit.rank.baselines import length_residualised, order_swap_majority  # noqa: E402
from judgeaudit.rank.evaluate import controlled_sim_case, rank_eval  # noqa: E402
from judgeaudit.rank.fitting import fit_model  # noqa: E402
from judgeaudit.rank.gate import anchor_gate  # noqa: E402
from judgeaudit.rank.loop import run_active  # noqa: E402
from judgeaudit.rank.membership import recall_at_k  # noqa: E402
from judgeaudit.rank.simulate import SimOracle, controlled_sim_pool, trusted_pairs  # noqa: E402
from judgeaudit.stats.bradley_terry import fit_map, fit_naive  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
RULES = ["topk", "global", "roundrobin", "random", "entropy", "uncertainty_only", "outcome_only"]
BUDGETS = [60, 120, 200]


def _ms(v) -> dict:
    v = np.asarray(v, float)
    return {"mean": float(v.mean()), "se": float(v.std(ddof=1) / np.sqrt(len(v))), "n": len(v)}


def correctness(seeds) -> dict:
    out = {}
    for c in (1.0, 0.0):
        rec = {k: [] for k in ("naive", "bias_aware", "bias_aware_hier", "bias_aware_eb_lam",
                               "order_swap_majority", "length_residualised")}
        cov_c, cov_k, c_hat, k_hat, taus = [], [], [], [], []
        for s in seeds:
            pool = controlled_sim_pool(s)
            o = SimOracle(pool.theta, pool.X, c=c, kappa=0.3, seed=s + 10_000)
            comps = o.full_comparisons()
            fn = fit_naive(30, comps, lam=1.0)
            fb = fit_map(30, comps, X=pool.X)
            fh = fit_map(30, comps, X=pool.X, hierarchical=True)
            t = pool.true_topk
            rec["naive"].append(recall_at_k(fn.theta, t))
            rec["bias_aware"].append(recall_at_k(fb.theta, t))
            rec["bias_aware_hier"].append(recall_at_k(fh.theta, t))
            fe = fit_model("bias_aware", 30, comps, X=pool.X, eb_lam=True)
            rec["bias_aware_eb_lam"].append(recall_at_k(fe.theta, t))
            rec["order_swap_majority"].append(recall_at_k(order_swap_majority(30, comps), t))
            rec["length_residualised"].append(recall_at_k(length_residualised(30, comps, pool.X),
                                                          t))
            lo, hi = fb.c_interval()[0]
            klo, khi = fb.kappa_interval()
            cov_c.append(lo <= c <= hi)
            cov_k.append(klo <= 0.3 <= khi)
            c_hat.append(float(fb.c[0]))
            k_hat.append(fb.kappa)
            taus.append(fh.tau)
        out[f"c={c:g}"] = {
            "full_data_recall": {k: _ms(v) for k, v in rec.items()},
            "c_hat": _ms(c_hat), "kappa_hat": _ms(k_hat),
            "coverage_c_95": float(np.mean(cov_c)), "coverage_kappa_95": float(np.mean(cov_k)),
            "hierarchical_tau": _ms(taus),
        }
    out["bias_aware_minus_naive_at_c0"] = (out["c=0"]["full_data_recall"]["bias_aware"]["mean"]
                                           - out["c=0"]["full_data_recall"]["naive"]["mean"])
    return out


def _full_recall(seeds, scale: float, c: float, unit: str = "statement") -> dict:
    rn, rb, rh, re, cov, covh, cove, covk, covke = [], [], [], [], [], [], [], [], []
    for s in seeds:
        pool = controlled_sim_pool(s, scale=scale, unit=unit)
        o = SimOracle(pool.theta, pool.X, c=c, kappa=0.3, seed=s + 10_000)
        comps = o.full_comparisons()
        fb = fit_map(30, comps, X=pool.X)
        fh = fit_map(30, comps, X=pool.X, hierarchical=True)
        fe = fit_model("bias_aware", 30, comps, X=pool.X, eb_lam=True)
        rn.append(recall_at_k(fit_naive(30, comps, lam=1.0).theta, pool.true_topk))
        rb.append(recall_at_k(fb.theta, pool.true_topk))
        rh.append(recall_at_k(fh.theta, pool.true_topk))
        re.append(recall_at_k(fe.theta, pool.true_topk))
        for f, out in ((fb, cov), (fh, covh), (fe, cove)):
            out.append(bool(f.c_interval()[0, 0] <= c <= f.c_interval()[0, 1]))
        for f, out in ((fb, covk), (fe, covke)):
            lo, hi = f.kappa_interval()
            out.append(bool(lo <= 0.3 <= hi))
    return {"scale": scale, "unit": unit, "c": c, "naive": _ms(rn), "bias_aware": _ms(rb),
            "bias_aware_hier": _ms(rh), "bias_aware_eb_lam": _ms(re),
            "coverage_c_95": float(np.mean(cov)), "coverage_c_95_hier": float(np.mean(covh)),
            "coverage_c_95_eb_lam": float(np.mean(cove)),
            "coverage_kappa_95": float(np.mean(covk)),
            "coverage_kappa_95_eb_lam": float(np.mean(covke))}


def _naive_limit(seeds, scale: float, c: float) -> float:
    """Naive recall with infinitely many verdicts: the ranking of theta + c * verbosity, ties
    broken at random."""
    r = []
    for s in seeds:
        pool = controlled_sim_pool(s, scale=scale)
        rng = np.random.default_rng(s)
        score = pool.theta + c * pool.X[:, 0] + 1e-9 * rng.standard_normal(30)
        r.append(recall_at_k(score, pool.true_topk))
    return float(np.mean(r))


def scale_sweep(seeds) -> dict:
    rows = []
    for s in (0.25, 0.35, 0.5, 0.75, 1.0, 1.5):
        row = _full_recall(seeds, s, 1.0)
        row["naive_infinite_data"] = _naive_limit(seeds, s, 1.0)
        rows.append(row)
    dose = []
    for c in (1.0, 2.0, 3.0):
        row = _full_recall(seeds, 1.0, c)
        row["naive_infinite_data"] = _naive_limit(seeds, 1.0, c)
        dose.append(row)
    first = _full_recall(seeds, 1.2, 1.0, unit="sd")
    return {"by_scale_c1": rows, "by_c_scale1": dose, "first_version_scale": first}


def coverage(seeds) -> dict:
    """Interval coverage over many seeds (fits only, cheap): at 30 seeds a 95% interval
    covers on fewer than 90% of seeds with probability ~6% by chance alone."""
    out = {}
    for c in (1.0, 0.0):
        cc, ck, se, kh, cce, cke, khe = [], [], [], [], [], [], []
        for s in seeds:
            pool = controlled_sim_pool(s)
            o = SimOracle(pool.theta, pool.X, c=c, kappa=0.3, seed=s + 10_000)
            fb = fit_map(30, o.full_comparisons(), X=pool.X)
            lo, hi = fb.c_interval()[0]
            klo, khi = fb.kappa_interval()
            cc.append(lo <= c <= hi)
            ck.append(klo <= 0.3 <= khi)
            se.append(fb.kappa_se)
            kh.append(fb.kappa)
            fe = fit_model("bias_aware", 30, o.full_comparisons(), X=pool.X, eb_lam=True)
            lo, hi = fe.c_interval()[0]
            klo, khi = fe.kappa_interval()
            cce.append(lo <= c <= hi)
            cke.append(klo <= 0.3 <= khi)
            khe.append(fe.kappa)
        out[f"c={c:g}"] = {"n_seeds": len(seeds), "coverage_c_95": float(np.mean(cc)),
                           "coverage_kappa_95": float(np.mean(ck)),
                           "kappa_hat_mean": float(np.mean(kh)),
                           "kappa_hat_sd": float(np.std(kh, ddof=1)),
                           "kappa_laplace_se_mean": float(np.mean(se)),
                           "eb_lam": {"coverage_c_95": float(np.mean(cce)),
                                      "coverage_kappa_95": float(np.mean(cke)),
                                      "kappa_hat_mean": float(np.mean(khe))}}
    return out


def gate(seeds, n_trusted: int = 10) -> dict:
    out = {}
    for kind, cov, c in (("spurious", "verbosity", 1.0), ("legitimate", "legit", 0.0)):
        for data in ("full", "B=120"):
            en, rn, rb, rg = [], [], [], []
            for s in seeds:
                pool = controlled_sim_pool(s, covariate=cov)
                o = SimOracle(pool.theta, pool.X, c=c, kappa=0.3, seed=s + 10_000)
                if data == "full":
                    comps = o.full_comparisons()
                    fn, fb = fit_naive(30, comps, lam=1.0), fit_map(30, comps, X=pool.X)
                else:
                    r = run_active(o, 30, 120, 5, rule="topk", X=pool.X, seed=s)
                    fn, fb = r.naive, r.bias_aware
                d = anchor_gate(fn, fb, trusted_pairs(pool.theta, n_trusted, seed=s + 99))
                en.append(d.enabled)
                rn.append(recall_at_k(fn.theta, pool.true_topk))
                rb.append(recall_at_k(fb.theta, pool.true_topk))
                rg.append(recall_at_k(d.choose(fn, fb).theta, pool.true_topk))
            out[f"{kind}/{data}"] = {"enable_rate": float(np.mean(en)), "recall_naive": _ms(rn),
                                     "recall_bias_aware_blind": _ms(rb),
                                     "recall_gated": _ms(rg), "n_trusted": n_trusted}
    return out


def _slim(r: dict) -> dict:
    r = dict(r)
    r.pop("cases", None)
    for k in ("c", "kappa"):
        r["estimates"][k].pop("per_case", None)
    return r


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=30)
    ap.add_argument("--coverage-seeds", type=int, default=200)
    ap.add_argument("--ablation-seeds", type=int, default=400)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "rank_acceptance.json"))
    args = ap.parse_args()
    seeds = list(range(args.seeds))
    t0 = time.time()
    res: dict = {"schema": "judgeaudit.rank_acceptance/2",
                 "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                 "setup": {"pool": "controlled N=30 k=5 (balanced design), theta = 1 logit per "
                                   "net true statement (q - mean q)",
                           "kappa": 0.3, "lam": 1.0, "tau": 1.0, "S": 1500, "refit_every": 8,
                           "seeds": args.seeds, "ablation_seeds": args.ablation_seeds}}
    res["scale"] = scale_sweep(seeds)
    print(json.dumps(res["scale"], indent=1))
    res["correctness"] = correctness(seeds)
    print(json.dumps(res["correctness"], indent=1))
    res["coverage_many_seeds"] = coverage(list(range(args.coverage_seeds)))
    print(json.dumps(res["coverage_many_seeds"], indent=1))
    res["gate"] = gate(seeds)
    print(json.dumps(res["gate"], indent=1))
    eff = rank_eval({"sim(c=1,kappa=0.3)": controlled_sim_case(c=1.0, kappa=0.3)}, BUDGETS,
                    RULES, seeds)
    res["efficiency_c1"] = _slim(eff)
    eff0 = rank_eval({"sim(c=0,kappa=0.3)": controlled_sim_case(c=0.0, kappa=0.3)}, BUDGETS,
                     ["topk", "global", "roundrobin", "random"], seeds)
    res["efficiency_c0"] = _slim(eff0)
    abl = rank_eval({"sim(c=1,kappa=0.3)": controlled_sim_case(c=1.0, kappa=0.3)}, BUDGETS,
                    ["topk", "global"], list(range(args.ablation_seeds)))
    res["ablation_c1_many_seeds"] = {"n_seeds": args.ablation_seeds,
                                     "ablation": abl["ablation"], "recall": abl["recall"]}
    print(json.dumps(abl["ablation"], indent=1))
    for name, e in (("c=1", eff), ("c=0", eff0)):
        print(f"recall@5, {name}")
        for m, rules in e["recall"].items():
            for rule, cells in rules.items():
                print(f"  {m:10s} {rule:17s} " + "  ".join(
                    f"B={b}: {cells[b]['mean']:.3f}±{cells[b]['se']:.3f}" for b in BUDGETS))
        print("  full data:", {m: round(v["mean"], 3) for m, v in e["full_data"].items()})
    res["elapsed_s"] = time.time() - t0
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(res, indent=2, default=float))
    print(f"wrote {args.out} in {res['elapsed_s']:.0f} s")


if __name__ == "__main__":
    main()
