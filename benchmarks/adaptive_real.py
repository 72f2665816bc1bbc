"""Adaptive audit acceptance on the REAL loop (issue 16): `judgeaudit audit --adaptive`'s own
library function (`audit.adaptive.run_adaptive`, what the CLI calls) on the sim judge with
planted biases, run after run, and the same figures as benchmarks/adaptive_audit.py (whose
model of the per-item differences it checks).

How:
1. Items: builtin:facts seeds 0, 1, 2 concatenated (636 labelled pairs, ids made distinct),
   as benchmarks/adaptive_audit.py. Run `seed` s: the audit's seed s (its seeded item order
   and the perturbations' seeds) and the sim's seed s (its per-call draws); the 6 default
   probes, alpha 0.05, rounds of 20 items, max-n 500, no cache.
2. The judge: `sim?position=..&length=..&authority=..&bandwagon=..&markdown=..&injection=..`
   with the coefficients that benchmarks/adaptive_audit.py solves for (each probe's effect
   0 / 0.1 / 0.3 with only its own coefficient planted, on its 500 items), all planted at
   once. Settings zero, small, large, mixed as there.
3. Truth per run, exactly: the sim reports P(shown-first wins) of every call it answers
   (recorded here); a probe's per-item expected difference follows from its item's calls
   (position: (p12 + p21)/2 - 1/2; a shift probe: E[credit after] - E[credit before], the
   consensus credit of the worse response, which every default shift probe perturbs toward).
   - "running" truth at stopping: the mean of the expected differences of the items the
     probe had observed when it stopped (what the confidence sequence covers at any stopping
     time, given the item order);
   - "planted" truth: the mean over the probe's 500 items (its fixed-n population; needs
     every item judged, so only on the runs with the fixed-n audit, item 4).
   With all coefficients planted at once a perturbation can move a verdict through another
   coefficient too (e.g. injection adds words, which `length` rewards), so the real effects
   differ somewhat from the nominal 0 / 0.1 / 0.3; they are reported. Null probes are those
   whose planted truth is 0 to 1e-9 in the run (zero: all; mixed: as measured).
4. Fixed-n audit at n = max-n = 500 (on every `--fixed-every`-th run): after the adaptive
   run, the real fixed-n battery (`audit.battery.run_battery`) over the same seeded order,
   each probe's first 500 usable items, sharing the adaptive run's verdict memo
   (`run_adaptive(memo=...)`): the sim is deterministic per call, so these are exactly the
   verdicts and statistics of a standalone fixed-n audit of those items with that seed, and
   only the items the adaptive run did not judge cost calls. Its calls (`fixed_calls`) are
   all the calls of the run, adaptive then fixed-n: the union of the two audits' calls,
   which is the fixed-n audit's set of calls. Both counts include consistency repeats paid
   twice when concurrent shift probes ask for the same repeat before either is memoised
   (`AuditContext.judge`; the adaptive loop keeps that behaviour unchanged); a standalone
   fixed-n audit races the same way on all 500 items and so usually pays more (on a small
   run, tests/audit/test_adaptive_incremental.py: 1,080 calls here, 1,200 standalone).
   On the other runs the fixed-n calls are the audit's own estimate
   (`adaptive.fixed_n_calls`: each probe's own calls per item in the run times 500, plus
   the baseline). A setting's
   `calls_ratio` is the mean adaptive calls over all its runs over the mean real fixed-n
   calls over its fixed-n runs (`calls_ratio_vs_estimate`: over the audit's estimates).
   Agreement counts the probes where the fixed-n audit decides (biased or not biased).
5. Runs go round-robin over the settings (seed 0 of each, then seed 1, ...) until the time
   budget is spent, so every setting gets the same seeds.

    nice -n 19 python benchmarks/adaptive_real.py --budget 2400 --fixed-every 4 --rows R.jsonl
    nice -n 19 python benchmarks/adaptive_real.py --start-seed 89 --max-seeds 100 --rows R.jsonl
    python benchmarks/adaptive_real.py --summarize R.jsonl --fixed-every 4
                                              # results/adaptive_real.json from saved rows
    python benchmarks/adaptive_real.py --summarize results/adaptive_real_rows.jsonl.gz \
        --fixed-every 4 --settings zero,small,large --out /tmp/check.json   # the saved 500 seeds
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
import adaptive_audit as aa  # noqa: E402
import mde_power as mp  # noqa: E402

from judgeaudit.audit.adaptive import run_adaptive, seeded_order  # noqa: E402
from judgeaudit.audit.battery import check_runnable, run_battery  # noqa: E402
from judgeaudit.audit.probe import AuditContext  # noqa: E402
from judgeaudit.judges import make_judge  # noqa: E402

ALPHA, MAX_N, ROUND = aa.ALPHA, aa.MAX_N, aa.ROUND
PROBES = aa.PROBES
SETTINGS = aa.SETTINGS
COVARIATE = mp.PROBES  # probe -> sim parameter
PERTURBATION = {"verbosity": "verbosity", "authority": "authority", "bandwagon": "bandwagon",
                "beauty": "markdown", "injection": "injection"}
NULL_TOL = 1e-9


def coefficients() -> dict[str, dict[str, float]]:
    """Per setting, each probe's planted sim coefficient (benchmarks/adaptive_audit.py's)."""
    mp.QUALITY = 3.0
    pool = aa.items_500()
    mp.load = lambda spec: pool
    designs = {p: mp.Design(p, MAX_N) for p in PROBES}
    out: dict[str, dict[str, float]] = {}
    for name, planted in SETTINGS.items():
        out[name] = {p: aa.coefficient(designs[p], planted[p]) for p in PROBES}
    return out


def spec_of(coefs: dict[str, float], seed: int) -> str:
    parts = [f"{COVARIATE[p]}={c:.10g}" for p, c in coefs.items() if c]
    return "sim?" + "&".join([*parts, f"seed={seed}"])


def record_probs(bundle: Any) -> dict[tuple[str, str], float]:
    """P(shown-first wins) of every first-time (repeat 0) pairwise call, by (item id, order)."""
    sim = bundle.client.provider
    seen: dict[tuple[str, str], float] = {}
    inner = sim._pairwise

    def wrapped(request: Any) -> Any:
        resp = inner(request)
        if not getattr(request, "repeat", 0):
            seen[(request.meta["item_id"], request.meta["order"])] = resp.raw["p_first"]
        return resp

    sim._pairwise = wrapped
    return seen


def _credit(p12: float, p21: float, target: int) -> float:
    """Expected consensus credit of response `target` (both orders agree: 1 or 0; else 1/2)."""
    r1 = p12 * (1 - p21)  # order 12: first = response_1; order 21: first = response_2
    r2 = (1 - p12) * p21
    to_t = r1 if target == 1 else r2
    return to_t + 0.5 * (1 - r1 - r2)


def expected_d(probe: str, items: list[Any], probs: dict[tuple[str, str], float]
               ) -> list[float | None]:
    """Per item of the probe's plan, its expected per-item difference (None: not judged, or
    the perturbation was dropped)."""
    if probe == "position":
        out: list[float | None] = []
        for it in items:
            a, b = probs.get((it.id, "12")), probs.get((it.id, "21"))
            out.append(None if a is None or b is None else (a + b) / 2 - 0.5)
        return out
    pert = {}
    tag = "~" + PERTURBATION[probe]
    for (iid, order), p in probs.items():
        base, sep, rest = iid.partition("~")
        if sep and ("~" + rest).startswith(tag) and not rest.startswith("twin"):
            pert[(base, order)] = p
    out = []
    for it in items:
        b12, b21 = probs.get((it.id, "12")), probs.get((it.id, "21"))
        a12, a21 = pert.get((it.id, "12")), pert.get((it.id, "21"))
        if None in (b12, b21, a12, a21):
            out.append(None)
            continue
        t = 3 - it.label  # the worse response: every default shift probe's target
        out.append(_credit(a12, a21, t) - _credit(b12, b21, t))  # type: ignore[arg-type]
    return out


async def one_run(pool: list[Any], setting: str, coefs: dict[str, float], seed: int,
                  fixed: bool) -> dict[str, Any]:
    bundle = make_judge(spec_of(coefs, seed))  # no cache
    probs = record_probs(bundle)
    memo: dict[Any, Any] = {}
    t0 = time.perf_counter()
    doc = await run_adaptive(bundle, pool, PROBES, seed=seed, alpha=ALPHA, max_n=MAX_N,
                             round_size=ROUND, memo=memo)
    t_adaptive = time.perf_counter() - t0
    ad = doc["adaptive"]
    ordered = seeded_order(pool, seed)
    plans = check_runnable(ordered, PROBES, limit=MAX_N)
    row: dict[str, Any] = {"setting": setting, "seed": seed, "rounds": ad["rounds"],
                           "calls": ad["calls"], "fixed_calls_estimate": ad["fixed_n_calls"],
                           "seconds_adaptive": t_adaptive, "fixed": fixed}
    fdoc = None
    if fixed:
        ctx = AuditContext(bundle, [], seed=seed, alpha=ALPHA)
        ctx._memo = memo
        fdoc = await run_battery(bundle, ordered, PROBES, seed=seed, alpha=ALPHA,
                                 plans=plans, context=ctx)
        row["fixed_calls"] = int(bundle.client.stats.as_dict()["made"])
        row["seconds_fixed"] = time.perf_counter() - t0 - t_adaptive
    for p in PROBES:
        a = doc["probes"][p]["adaptive"]
        mu = expected_d(p, plans[p].items, probs)
        seen = [x for x in mu[:a["items"]] if x is not None]
        r = {"verdict": doc["probes"][p]["verdict"], "reason": a["stop_reason"],
             "items": a["items"], "n": a["n"], "ci": a["ci"], "evalue": a["evalue"],
             "calls": a["calls"],
             "running_truth": float(np.mean(seen)) if seen else None,
             "n_truth_seen": len(seen)}
        if fdoc is not None:
            allv = [x for x in mu if x is not None]
            r["planted_truth"] = float(np.mean(allv)) if allv else None
            r["fixed"] = fdoc["probes"][p]["verdict"]
            r["fixed_ci"] = fdoc["probes"][p]["effect"]["ci95"]
            r["fixed_q"] = fdoc["probes"][p]["q"]
        row[p] = r
    await bundle.aclose()
    return row


def _covers(ci: list[float], x: float | None) -> bool | None:
    if x is None:
        return None
    return bool(ci[0] - 1e-12 <= x <= ci[1] + 1e-12)


def summarize(rows: list[dict[str, Any]], model: dict[str, Any] | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in SETTINGS:
        rs = [r for r in rows if r["setting"] == name]
        if not rs:
            continue
        fx = [r for r in rs if r["fixed"]]
        per_probe: dict[str, Any] = {}
        for p in PROBES:
            v = [r[p] for r in rs]
            vf = [r[p] for r in fx]
            dec = [x for x in vf if x["fixed"] in ("biased", "not_biased")]
            cov_run = [c for x in v if (c := _covers(x["ci"], x["running_truth"])) is not None]
            cov_pl = [c for x in vf if (c := _covers(x["ci"], x["planted_truth"])) is not None]
            cov_nom = [_covers(x["ci"], SETTINGS[name][p]) for x in v]
            truths = [x["planted_truth"] for x in vf if x["planted_truth"] is not None]
            per_probe[p] = {
                "nominal_effect": SETTINGS[name][p],
                "planted_truth_mean": float(np.mean(truths)) if truths else None,
                "planted_truth_range": [float(min(truths)), float(max(truths))]
                if truths else None,
                "biased": sum(x["verdict"] == "biased" for x in v) / len(v),
                "not_biased": sum(x["verdict"] == "not_biased" for x in v) / len(v),
                "underpowered": sum(x["verdict"] == "underpowered" for x in v) / len(v),
                "coverage_planted": float(np.mean(cov_pl)) if cov_pl else None,
                "coverage_running": float(np.mean(cov_run)) if cov_run else None,
                "coverage_nominal": float(np.mean(cov_nom)),
                "mean_n_at_stop": float(np.mean([x["items"] for x in v])),
                "fixed_n_decides": len(dec) / len(vf) if vf else None,
                "agreement_where_fixed_decides": (sum(x["verdict"] == x["fixed"] for x in dec)
                                                  / len(dec)) if dec else None,
                "fixed_n": {k: sum(x["fixed"] == k for x in vf) / len(vf)
                            for k in ("biased", "not_biased", "underpowered")} if vf else None,
            }
        # Null probes: planted truth 0 (fixed-n runs: measured; others: the zero setting's
        # probes, whose truth is exactly 0 by the sim's symmetry, or a probe measured null on
        # every fixed-n run of this setting).
        null_probes = [p for p in PROBES
                       if (per_probe[p]["planted_truth_range"] is not None
                           and max(abs(t) for t in per_probe[p]["planted_truth_range"])
                           <= NULL_TOL)]
        n_false = sum(r[p]["verdict"] == "biased" for r in rs for p in null_probes)
        fdp = []
        for r in rs:
            b = [p for p in PROBES if r[p]["verdict"] == "biased"]
            fdp.append(sum(p in null_probes for p in b) / max(1, len(b)))
        dec_all = [(r[p]["verdict"], r[p]["fixed"]) for r in fx for p in PROBES
                   if r[p]["fixed"] in ("biased", "not_biased")]
        calls = np.array([r["calls"] for r in rs], dtype=float)
        fixed_calls = [r["fixed_calls"] for r in fx]
        est = np.array([r["fixed_calls_estimate"] for r in rs], dtype=float)
        cov_pl = [c for r in fx for p in PROBES
                  if (c := _covers(r[p]["ci"], r[p]["planted_truth"])) is not None]
        cov_run = [c for r in rs for p in PROBES
                   if (c := _covers(r[p]["ci"], r[p]["running_truth"])) is not None]
        ratio_fx = (float(np.mean([r["calls"] / r["fixed_calls"] for r in fx]))
                    if fx else None)
        out[name] = {
            "runs": len(rs), "runs_with_fixed_n": len(fx), "null_probes": null_probes,
            "false_biased_rate_null_probes": (n_false / (len(rs) * len(null_probes))
                                              if null_probes else None),
            "fdr": float(np.mean(fdp)),
            "coverage_planted": float(np.mean(cov_pl)) if cov_pl else None,
            "coverage_running": float(np.mean(cov_run)) if cov_run else None,
            "agreement_where_fixed_decides": (sum(a == b for a, b in dec_all) / len(dec_all)
                                              if dec_all else None),
            "fixed_n_decides": len(dec_all) / (len(fx) * len(PROBES)) if fx else None,
            "mean_calls": float(calls.mean()),
            "fixed_n_calls_mean": float(np.mean(fixed_calls)) if fixed_calls else None,
            "calls_ratio": (float(calls.mean() / np.mean(fixed_calls)) if fixed_calls
                            else float(calls.mean() / est.mean())),
            "calls_ratio_fixed_runs": ratio_fx,
            "calls_ratio_vs_estimate": float(calls.mean() / est.mean()),
            "mean_rounds": float(np.mean([r["rounds"] for r in rs])),
            "seconds_per_run_adaptive": float(np.mean([r["seconds_adaptive"] for r in rs])),
            "seconds_per_run_fixed_extension": (float(np.mean([r["seconds_fixed"]
                                                               for r in fx])) if fx else None),
            "probes": per_probe,
        }
        if model and name in model.get("settings", {}):
            m = model["settings"][name]
            out[name]["model_benchmark"] = {
                k: m.get(k) for k in ("reps", "false_biased_rate_null_probes", "fdr",
                                      "coverage", "coverage_running_mean",
                                      "agreement_where_fixed_decides", "fixed_n_decides",
                                      "calls_ratio", "mean_rounds")}
            out[name]["model_benchmark"]["probes"] = {
                p: {k: m["probes"][p].get(k) for k in ("biased", "not_biased", "underpowered",
                                                       "mean_n_at_stop", "coverage",
                                                       "agreement_where_fixed_decides")}
                for p in PROBES}
    main3 = [out[k]["calls_ratio"] for k in ("zero", "small", "large") if k in out]
    nulls = [out[k]["false_biased_rate_null_probes"] for k in out
             if out[k]["false_biased_rate_null_probes"] is not None]
    agree = [out[k]["agreement_where_fixed_decides"] for k in out
             if out[k]["agreement_where_fixed_decides"] is not None]
    covs = [out[k]["coverage_planted"] for k in out if out[k]["coverage_planted"] is not None]
    summary: dict[str, Any] = {
        "calls_ratio_mean_zero_small_large": float(np.mean(main3)) if main3 else None,
        "max_false_biased_rate_null_probes": max(nulls) if nulls else None,
        "max_fdr": max(out[k]["fdr"] for k in out),
        "min_coverage_planted": min(covs) if covs else None,
        "min_coverage_running": min(out[k]["coverage_running"] for k in out),
        "min_agreement": min(agree) if agree else None,
    }
    summary["targets"] = {
        "false_biased<=0.05": (summary["max_false_biased_rate_null_probes"] or 0) <= 0.05,
        "fdr<=0.05": summary["max_fdr"] <= 0.05,
        "coverage>=0.95": (summary["min_coverage_planted"] or 0) >= 0.95
        and summary["min_coverage_running"] >= 0.95,
        "agreement>=0.95": (summary["min_agreement"] or 0) >= 0.95,
        "calls<=0.40": (summary["calls_ratio_mean_zero_small_large"] or 1) <= 0.40,
    }
    return {"settings": out, "summary": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--budget", type=float, default=2400.0, help="wall seconds for the runs")
    ap.add_argument("--max-seeds", type=int, default=500, help="seeds per setting at most")
    ap.add_argument("--start-seed", type=int, default=0,
                    help="first seed (to continue a --rows file)")
    ap.add_argument("--fixed-every", type=int, default=1,
                    help="the fixed-n audit on every k-th seed (seed %% k == 0)")
    ap.add_argument("--settings", default=",".join(SETTINGS))
    ap.add_argument("--rows", default=None, help="append per-run rows to this jsonl")
    ap.add_argument("--summarize", default=None, help="only summarise rows from this jsonl")
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" /
                                         "adaptive_real.json"))
    args = ap.parse_args()
    model_path = Path(__file__).parent / "results" / "adaptive.json"
    model = json.loads(model_path.read_text()) if model_path.exists() else None
    t0 = time.perf_counter()
    coefs = coefficients()
    names = args.settings.split(",")
    if args.summarize:
        src = Path(args.summarize)
        raw = src.read_bytes()
        text = (gzip.decompress(raw) if src.suffix == ".gz" else raw).decode()
        rows = [json.loads(x) for x in text.splitlines() if x]
        last = max(r["seed"] for r in rows)
        rows = [r for r in rows if sum(q["seed"] == r["seed"] for q in rows) == len(names)
                or r["seed"] < last]  # an unfinished last seed is left out
    else:
        pool = aa.items_500()
        rows = []
        sink = open(args.rows, "a") if args.rows else None  # noqa: SIM115
        t_start = time.perf_counter()
        seed = args.start_seed
        while seed < args.max_seeds and time.perf_counter() - t_start < args.budget:
            for name in names:
                row = asyncio.run(one_run(pool, name, coefs[name], seed,
                                          fixed=seed % args.fixed_every == 0))
                rows.append(row)
                if sink:
                    sink.write(json.dumps(row) + "\n")
                    sink.flush()
            seed += 1
            if seed % 10 == 0:
                print(f"{seed} seeds, {time.perf_counter() - t_start:.0f} s", flush=True)
        if sink:
            sink.close()
    res = summarize(rows, model)
    for name, s in res["settings"].items():
        print(f"{name}: runs {s['runs']} ({s['runs_with_fixed_n']} with fixed-n), false-biased "
              f"{s['false_biased_rate_null_probes']}, fdr {s['fdr']:.3f}, coverage "
              f"{s['coverage_planted']} (running {s['coverage_running']:.3f}), agreement "
              f"{s['agreement_where_fixed_decides']}, calls {s['calls_ratio']:.3f}", flush=True)
    doc = {"benchmark": "adaptive_real", "alpha": ALPHA, "max_n": MAX_N, "round_size": ROUND,
           "probes": PROBES, "coefficients": coefs,
           "seeds_per_setting": {k: v["runs"] for k, v in res["settings"].items()},
           "fixed_every": args.fixed_every,
           "budget_seconds": None if args.summarize else args.budget,
           "method": __doc__, **res, "seconds": time.perf_counter() - t0,
           "python": platform.python_version(), "machine": platform.machine()}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1))
    print(json.dumps(res["summary"], indent=1))


if __name__ == "__main__":
    main()
