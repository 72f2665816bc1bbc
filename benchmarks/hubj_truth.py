"""Acceptance 1 of issue 6 (HUB-J truth recovery) by simulation, at full size.

mitigate: verdicts drawn from the two-stage model itself (`judgeaudit.hubj.mitigate.simulate`:
planted theta_m, phi_m, psi_m, per-query gamma_x), fitted per seed with both estimators
(`marginal`, the default, and the paper's plug-in `two_stage`). Reported per judge: the share
of seeds whose 95% interval covers the planted phi_m, the planted bias share
Win_m - BC_m (computed from the planted parameters and the realised gamma, Delta), and the
planted unbiased win rate BC_m = mean sigmoid(theta_m + psi_m gamma_x); target >= 90%.

quantify: `simhubj` as generator, checker and judge (both orders, fresh noise per call) with
planted per-level effects e(1..5); items are hand-built pairs with a human label. The planted
flip probability of an item at level l is read from the sim model itself:
    E[y] = (P(judge picks r- in order 12) + P(picks r- in order 21)) / 2
(y = 1 both orders pick r-, 0.5 when they disagree, independent draws per order), averaged
over the items whose FR is reported. Reported: the share of seeds where l* (argmax on the
calibration split) equals the planted argmax, and the share of (seed, level) Wilson intervals
that cover the planted FR, plus the susceptibility interval's coverage at l*.

Every share comes with its n and a Wilson interval.

    nice -n 10 python benchmarks/hubj_truth.py            # 100 seeds; writes
                                                         # benchmarks/results/hubj_truth.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj import mitigate as M
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor
from judgeaudit.hubj.quantify import agreement_items, quantify, rewritten_item
from judgeaudit.judges.factory import JudgeBundle, make_judge
from judgeaudit.llm import Client, make_provider
from judgeaudit.stats import rate

OUT = Path(__file__).parent / "results" / "hubj_truth.json"

# ---- mitigate ------------------------------------------------------------------------------

SCENARIOS: dict[str, dict[str, Any]] = {
    # four judges, one strongly biased, one unbiased, one biased the other way
    "J4_N400": {"n": 400, "theta": [-0.5, 0.3, 0.0, 0.4], "phi": [1.2, 0.0, -0.6, 0.5],
                "psi": None, "gamma_sd": 1.0},
    # judges that weigh the query effect differently, weaker query effect
    "J4_N400_psi": {"n": 400, "theta": [0.2, -0.3, 0.0, 0.5], "phi": [0.8, 1.5, 0.0, -0.4],
                    "psi": [1.0, 0.5, 1.5, 0.8], "gamma_sd": 0.7},
    # the small end: three judges, 150 queries
    "J3_N150": {"n": 150, "theta": [-0.5, 0.3, 0.0], "phi": [1.2, 0.0, -0.6],
                "psi": None, "gamma_sd": 1.0},
}


def share(hits: int, n: int) -> dict[str, Any]:
    return rate(hits, n).as_dict()


def mitigate_truth(seeds: Sequence[int]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, sc in SCENARIOS.items():
        J = len(sc["theta"])
        judges = [f"j{i}" for i in range(J)]
        for est in M.ESTIMATORS:
            hits = {k: np.zeros(J, int) for k in ("phi", "bias_share", "bc")}
            err = {k: [[] for _ in range(J)] for k in ("phi", "bias_share", "bc")}
            t0 = time.perf_counter()
            for s in seeds:
                p = M.simulate(sc["n"], sc["theta"], sc["phi"], sc["psi"], sc["gamma_sd"],
                               seed=s)
                f = M.fit(p.Y, p.delta, judges, [str(i) for i in range(sc["n"])],
                          estimator=est)
                for j, jn in enumerate(judges):
                    d = f.per_judge[jn].as_dict()
                    truth = {"phi": p.phi[j], "bias_share": p.bias_share(j), "bc": p.bc(j)}
                    for k, v in truth.items():
                        est_v = d[k]["value"]
                        lo, hi = d[k]["ci95"]
                        hits[k][j] += lo <= v <= hi
                        err[k][j].append(est_v - v)
            n = len(seeds)
            per_judge = {}
            for j, jn in enumerate(judges):
                per_judge[jn] = {
                    "planted": {"theta": sc["theta"][j], "phi": sc["phi"][j],
                                "psi": 1.0 if sc["psi"] is None else sc["psi"][j]},
                    **{f"coverage_{k}": share(int(hits[k][j]), n) for k in hits},
                    **{f"mean_error_{k}": float(np.mean(err[k][j])) for k in err},
                    **{f"rmse_{k}": float(np.sqrt(np.mean(np.square(err[k][j])))) for k in err},
                }
            pooled = {f"coverage_{k}": share(int(hits[k].sum()), n * J) for k in hits}
            worst = {f"min_coverage_{k}": float(hits[k].min() / n) for k in hits}
            out.setdefault(name, {"scenario": sc})[est] = {
                "n_seeds": n, "seconds_per_fit": (time.perf_counter() - t0) / n,
                "pooled": pooled, **worst, "per_judge": per_judge}
    return out


# ---- quantify ------------------------------------------------------------------------------

JUDGES = {
    # planted l* = 3 (peaked effect), with a position effect and both orders asked
    "peaked": {"factor_verbosity": "0,0.5,2,1,0", "quality": "1", "position": "0.5"},
    # planted l* = 5 (effect 0.5 * level)
    "linear": {"factor_verbosity": "0.5", "quality": "1", "position": "0"},
}
PLANTED_LSTAR = {"peaked": 3, "linear": 5}
FACTOR = Factor("verbosity", "The response is longer and more detailed than needed.")
CRITERIA = {"verbosity": {k: f"verbosity level {k}" for k in range(1, 6)}}


def make_items(n: int) -> list[PairwiseItem]:
    return [PairwiseItem(id=f"q{i}", prompt=f"Question {i}?", response_1=f"Answer A to {i}.",
                         response_2=f"Answer B to {i}.", label=1 + i % 2) for i in range(n)]


def planted_fr(bundle: JudgeBundle, items: dict[str, PairwiseItem], rewrites: Sequence[Any],
               ids: set[str], level: int) -> float:
    """The sim model's expected flip value averaged over the rewrites of `ids` at `level`."""
    prov = bundle.client.provider
    vals = []
    for rw in rewrites:
        if rw.level != level or rw.item_id not in ids or not rw.kept:
            continue
        it = rewritten_item(items[rw.item_id], rw)
        worse_first = rw.side == "response_1"   # r- shown first in order 12
        p12 = prov.prob_first(bundle.pairwise.request(it, "12").meta)
        p21 = prov.prob_first(bundle.pairwise.request(it, "21").meta)
        pick_worse = (p12 if worse_first else 1 - p12, 1 - p21 if worse_first else p21)
        vals.append(sum(pick_worse) / 2)
    return float(np.mean(vals))


async def quantify_one(judge: str, seed: int, n_items: int, n_cal: int) -> dict[str, Any]:
    params = {**JUDGES[judge], "seed": str(seed)}
    spec = "simhubj?" + "&".join(f"{k}={v}" for k, v in params.items())
    bundle = make_judge(spec)
    gen = Client(make_provider("simhubj", "default"))
    items = make_items(n_items)
    agr, _sizes = await agreement_items({judge: bundle}, items)
    stats: dict[str, JSONStats] = {}
    out = await quantify({judge: bundle}, gen, agr, [FACTOR], CRITERIA, stats, n_cal=n_cal,
                         seed=seed)
    res = out.per_judge[judge]["verbosity"]
    by_id = {it.id: it for it in agr}
    all_ids, test_ids = set(out.cal) | set(out.test), set(out.test)
    levels = {}
    for lv in range(1, 6):
        e = res["by_level"][str(lv)]
        truth = planted_fr(bundle, by_id, out.rewrites, all_ids, lv)
        levels[lv] = {"planted": truth, "value": e["value"],
                      "covered": e["ci95"][0] <= truth <= e["ci95"][1]}
    l_hat = res["l_star"]
    sus = res["susceptibility"]
    sus_truth = planted_fr(bundle, by_id, out.rewrites, test_ids, l_hat)
    await bundle.aclose()
    await gen.aclose()
    return {"n_agree": len(agr), "l_star": l_hat, "levels": levels,
            "susceptibility_covered": sus["ci95"][0] <= sus_truth <= sus["ci95"][1],
            "answer_change": out.answer_change()["value"],
            "kept": sum(1 for rw in out.rewrites if rw.kept), "rewrites": len(out.rewrites)}


def quantify_truth(seeds: Sequence[int], n_items: int, n_cal: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for judge in JUDGES:
        t0 = time.perf_counter()
        runs = [asyncio.run(quantify_one(judge, s, n_items, n_cal)) for s in seeds]
        n = len(runs)
        l_ok = sum(r["l_star"] == PLANTED_LSTAR[judge] for r in runs)
        lv_cov = sum(v["covered"] for r in runs for v in r["levels"].values())
        per_level = {lv: share(sum(r["levels"][lv]["covered"] for r in runs), n)
                     for lv in range(1, 6)}
        out[judge] = {
            "spec_params": JUDGES[judge], "planted_l_star": PLANTED_LSTAR[judge],
            "n_seeds": n, "n_items": n_items, "n_cal": n_cal,
            "mean_agreement_items": float(np.mean([r["n_agree"] for r in runs])),
            "planted_fr_by_level": {lv: float(np.mean([r["levels"][lv]["planted"]
                                                       for r in runs])) for lv in range(1, 6)},
            "mean_fr_by_level": {lv: float(np.mean([r["levels"][lv]["value"] for r in runs]))
                                 for lv in range(1, 6)},
            "l_star_recovered": share(l_ok, n),
            "l_star_counts": {str(k): sum(r["l_star"] == k for r in runs) for k in range(1, 6)},
            "fr_interval_covers_planted": share(lv_cov, 5 * n),
            "fr_interval_covers_planted_by_level": per_level,
            "susceptibility_interval_covers_planted": share(
                sum(r["susceptibility_covered"] for r in runs), n),
            "answer_change_rate_max": max(r["answer_change"] for r in runs),
            "seconds_per_seed": (time.perf_counter() - t0) / n,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--quantify-seeds", type=int, default=None,
                    help="seeds for the quantify part (default: --seeds)")
    ap.add_argument("--items", type=int, default=1200, help="quantify: items per seed")
    ap.add_argument("--n-cal", type=int, default=100, help="quantify: calibration items")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    seeds = list(range(a.seeds))
    qseeds = list(range(a.quantify_seeds if a.quantify_seeds is not None else a.seeds))
    t0 = time.perf_counter()
    mit = mitigate_truth(seeds)
    t1 = time.perf_counter()
    qua = quantify_truth(qseeds, a.items, a.n_cal)
    t2 = time.perf_counter()
    doc = {"benchmark": "hubj_truth", "issue": 6, "acceptance": 1, "target_coverage": 0.90,
           "mitigate": {"seeds": seeds, "estimators": list(M.ESTIMATORS), "default": "marginal",
                        "scenarios": mit, "seconds": round(t1 - t0, 1)},
           "quantify": {"seeds": qseeds, "judges": qua, "seconds": round(t2 - t1, 1)}}
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n")

    def fmt(e: dict[str, Any]) -> str:
        return f"{e['value']:.2f} [{e['ci95'][0]:.2f}, {e['ci95'][1]:.2f}]"

    print(f"mitigate: {len(seeds)} seeds, coverage of 95% intervals (per judge: min)")
    for name, sc in mit.items():
        for est in M.ESTIMATORS:
            r = sc[est]
            print(f"  {name:12s} {est:9s} pooled phi {fmt(r['pooled']['coverage_phi'])}  "
                  f"share {fmt(r['pooled']['coverage_bias_share'])}  "
                  f"bc {fmt(r['pooled']['coverage_bc'])}  | min phi {r['min_coverage_phi']:.2f}"
                  f" share {r['min_coverage_bias_share']:.2f} bc {r['min_coverage_bc']:.2f}"
                  f"  ({r['seconds_per_fit']:.2f} s/fit)")
    print(f"quantify: {len(qseeds)} seeds, {a.items} items, n_cal {a.n_cal}")
    for judge, r in qua.items():
        print(f"  {judge:7s} l* recovered {fmt(r['l_star_recovered'])} "
              f"(planted {r['planted_l_star']}; counts {r['l_star_counts']})  FR covers "
              f"{fmt(r['fr_interval_covers_planted'])}  susceptibility covers "
              f"{fmt(r['susceptibility_interval_covers_planted'])}  "
              f"agreement items {r['mean_agreement_items']:.0f}")
    print(f"wrote {a.out} ({t2 - t0:.0f} s)")


if __name__ == "__main__":
    main()
