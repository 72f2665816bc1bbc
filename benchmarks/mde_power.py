"""Does the audit's MDE have the power it claims? A simulation on the sim judge.

The audit reports, per probe, the MDE of the probe's own test (an exact two-sided sign test
on the per-item paired differences) at the realised n and discordance: the effect it would
detect with 80% power at alpha. This checks that claim for each default probe at a few
(n, noise) settings:

1. Items: the first n pairs of builtin:facts (seed 1); a shift probe perturbs them exactly as
   the probe does (answer-preservation drops removed), position judges them in both orders.
2. The sim judge's own model (judgeaudit.llm.providers.sim: P(verdict A) =
   sigmoid(z / noise), each call an independent draw) gives, for every call the probe makes,
   its probability as a function of the planted coefficient c of the probe's bias (position,
   length, authority, bandwagon, markdown, injection). From these the exact distribution of
   each item's paired difference d follows, hence the true effect delta(c) = E[mean d], the
   discordance psi(c) = P(d != 0) and the mean change m(c) = E[|d| | d != 0].
3. Calibration: c* solves delta(c) = the MDE the audit reports at that n, psi(c) and
   distribution of moves (`stats.power.mde_sign_test`, which the probes call through
   `audit.paired.sign_test_mde` with their data's psi and moves, here at the population
   values), i.e. the planted effect equals the reported MDE.
4. Power: `--reps` data sets of verdicts drawn at c*; each runs the probe's test (exact
   two-sided sign test at alpha; `stats.power.sign_test_critical` reproduces
   `stats.binomial_test`, tests/stats/test_power.py) and, for the first `--mde-reps`, reports
   its MDE from its own data exactly as the probe does (median and 10-90% range shown).
   The claim holds when the rejection rate is near 0.80 (accepted band 0.70-0.90).
5. For contrast, the power at the MDE the audit reported before (position: a fixed function
   of n, `mde_proportion(n, 0.5)`, 0.14 at n = 100 for every judge; shift probes: Connor's
   normal approximation `mde_paired_flip` at the observed discordance).
6. `--pipeline R`: the real `run_battery` (sim judge through the client, R seeds) at one
   setting, per probe, at its c*: its biased-or-p<alpha rate and median reported MDE, to
   show that the fast model in 2-4 is the probe's.

    python benchmarks/mde_power.py                 # writes results/mde_power.json (~2 min)
    python benchmarks/mde_power.py --reps 500 --out /tmp/m.json    # quick look
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import optimize

from judgeaudit.audit.paired import sign_test_mde
from judgeaudit.audit.probe import get_probe
from judgeaudit.audit.shift_probe import ShiftProbe, _target_side
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.perturb import perturb_items
from judgeaudit.stats import wilson
from judgeaudit.stats.power import (
    mde_paired_flip,
    mde_proportion,
    mde_sign_test,
    sign_test_critical,
)

ALPHA, POWER = 0.05, 0.8
QUALITY = 1.5
PROBES = {"position": "position", "verbosity": "length", "authority": "authority",
          "bandwagon": "bandwagon", "beauty": "markdown", "injection": "injection"}
SETTINGS = [(60, 0.5), (60, 1.0), (60, 2.0), (200, 0.5), (200, 1.0), (200, 2.0)]
BAND = (0.70, 0.90)
CREDITS = np.array([0.0, 0.5, 1.0])


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


class Design:
    """One probe on n items: per item and call, z = z0 + c * slope (slope = the planted
    covariate's difference, or 1 for the position bonus). Calls: before 12/21, after 12/21
    (shift probes) or 12/21 (position)."""

    def __init__(self, probe: str, n: int, seed: int = 1):
        self.probe = probe
        coef = PROBES[probe]
        items = load(f"builtin:facts?seed={seed}")[:n]
        judge = make_judge(f"sim?quality={QUALITY}&{coef}=1")
        sim = judge.client.provider
        pj = judge.pairwise

        def zs(it: Any) -> tuple[list[float], list[float]]:
            z0, sl = [], []
            for order in ("12", "21"):
                z, terms = sim.logit(pj.request(it, order).meta)
                s = terms.get(coef, 0.0) if coef != "position" else 1.0
                z0.append(z - s)
                sl.append(s)
            return z0, sl

        p = get_probe(probe)
        if isinstance(p, ShiftProbe):
            res = perturb_items(items, p.perturbation, target=p.target, seed=seed, **p.options)
            kept = [r for r in res if r.preserved]
            self.n_dropped = len(res) - len(kept)
            rows = [(zs(r.original), zs(r.item), _target_side(r)) for r in kept]
            self.z0 = np.array([[*b[0], *a[0]] for b, a, _ in rows])    # (n, 4)
            self.slope = np.array([[*b[1], *a[1]] for b, a, _ in rows])
            self.target = np.array([t for _, _, t in rows])
        else:
            self.n_dropped = 0
            rows = [zs(it) for it in items]
            self.z0 = np.array([r[0] for r in rows])                     # (n, 2)
            self.slope = np.array([r[1] for r in rows])
        self.n = len(self.z0)

    # --- exact distribution of each item's d --------------------------------------------

    def p_first(self, c: float, noise: float) -> np.ndarray:
        """P(the shown-first response wins) per item and call."""
        return _sigmoid((self.z0 + c * self.slope) / noise)

    def d_dist(self, c: float, noise: float) -> tuple[np.ndarray, np.ndarray]:
        """Support and per-item probabilities of d (n, k)."""
        pa = self.p_first(c, noise)
        if self.probe == "position":
            both_first = pa[:, 0] * pa[:, 1]
            both_second = (1 - pa[:, 0]) * (1 - pa[:, 1])
            probs = np.stack([both_second, 1 - both_first - both_second, both_first], axis=1)
            return np.array([-0.5, 0.0, 0.5]), probs

        def credit(p12: np.ndarray, p21: np.ndarray) -> np.ndarray:
            r1 = p12 * (1 - p21)          # both orders name response_1
            r2 = (1 - p12) * p21          # both name response_2
            tie = 1 - r1 - r2
            to_target = np.where(self.target == 1, r1, r2)
            return np.stack([1 - to_target - tie, tie, to_target], axis=1)  # credit 0, .5, 1

        before = credit(pa[:, 0], pa[:, 1])
        after = credit(pa[:, 2], pa[:, 3])
        support = (CREDITS[None, :] - CREDITS[:, None]).ravel()  # after - before
        joint = (before[:, :, None] * after[:, None, :]).reshape(self.n, -1)
        vals = np.unique(support)
        probs = np.stack([joint[:, support == v].sum(axis=1) for v in vals], axis=1)
        return vals, probs

    def population(self, c: float, noise: float) -> dict[str, float]:
        vals, probs = self.d_dist(c, noise)
        mean = probs @ vals
        moved = probs[:, vals != 0].sum(axis=1)
        abs_mean = probs @ np.abs(vals)
        psi = float(moved.mean())
        return {"effect": float(mean.mean()), "discordance": psi,
                "mean_change": float(abs_mean.mean() / psi) if psi > 0 else 1.0}

    def draw(self, c: float, noise: float, reps: int, rng: np.random.Generator) -> np.ndarray:
        """d for `reps` data sets (reps, n), verdicts drawn call by call."""
        pa = self.p_first(c, noise)
        first = rng.random((reps, *pa.shape)) < pa[None]          # shown-first wins
        if self.probe == "position":
            return (first.mean(axis=2) - 0.5)
        # canonical winner per order: 12: first -> 1; 21: first -> 2
        w = np.empty(first.shape, dtype=int)
        w[..., 0::2] = np.where(first[..., 0::2], 1, 2)
        w[..., 1::2] = np.where(first[..., 1::2], 2, 1)

        def credit(w12: np.ndarray, w21: np.ndarray) -> np.ndarray:
            cons = np.where(w12 == w21, w12, 0)
            return np.where(cons == 0, 0.5, (cons == self.target[None]).astype(float))

        return credit(w[..., 2], w[..., 3]) - credit(w[..., 0], w[..., 1])


def mde_at(design: Design, c: float, noise: float) -> float:
    """The reported MDE at the population discordance and distribution of moves (the exact
    sign test, `mde_sign_test`, which `sign_test_mde` calls with the data's psi and
    moves)."""
    vals, probs = design.d_dist(c, noise)
    pop = probs.mean(axis=0)
    moved = vals != 0
    unit = 0.5 if design.probe == "position" else 1.0
    return mde_sign_test(design.n, float(pop[moved].sum()), unit, alpha=ALPHA, power=POWER,
                         moves=vals[moved], move_weights=pop[moved])


def previous_mde_at(design: Design, c: float, noise: float) -> float:
    """What the audit reported before: position mde_proportion(n, 0.5) (n alone), shift
    probes mde_paired_flip(n, observed discordance) (Connor, normal, in flip units)."""
    if design.probe == "position":
        return mde_proportion(design.n, 0.5)
    pop = design.population(c, noise)
    return mde_paired_flip(design.n, max(pop["discordance"], 1.0 / design.n))


def solve_c(design: Design, noise: float, target) -> float | None:
    """c >= 0 with delta(c) = target(c); None when no planted coefficient up to 30 reaches
    it."""
    def g(c: float) -> float:
        t = target(c)
        return design.population(c, noise)["effect"] - (t if math.isfinite(t) else 9.0)

    hi = 0.25
    while g(hi) < 0:
        hi *= 2
        if hi > 30:
            return None
    return float(optimize.brentq(g, 0.0, hi, xtol=1e-6))


def power_at(design: Design, c: float, noise: float, reps: int, mde_reps: int,
             rng: np.random.Generator) -> dict[str, Any]:
    d = design.draw(c, noise, reps, rng)
    up, down = (d > 0).sum(axis=1), (d < 0).sum(axis=1)
    crit = sign_test_critical(design.n, ALPHA)
    reject = np.minimum(up, down) <= crit[up + down]
    k = int(reject.sum())
    lo, hi = wilson(k, reps)
    unit = 0.5 if design.probe == "position" else 1.0
    mdes = [sign_test_mde(d[i], alpha=ALPHA, unit=unit)[0] for i in range(min(mde_reps, reps))]
    mdes_f = np.array([x for x in mdes if x is not None])
    ses = d.std(axis=1, ddof=1) / math.sqrt(design.n)
    out = {"power": k / reps, "power_ci95": [lo, hi], "reps": reps,
           "se_median": float(np.median(ses))}
    if mdes_f.size:
        out["reported_mde"] = {"median": float(np.median(mdes_f)),
                               "p10": float(np.quantile(mdes_f, 0.1)),
                               "p90": float(np.quantile(mdes_f, 0.9)), "n_sets": len(mdes)}
    return out


def pipeline(design: Design, probe: str, noise: float, c: float, reps: int) -> dict[str, Any]:
    """The real audit (run_battery, sim judge through the client) at c, `reps` judge seeds."""
    from judgeaudit.audit.battery import run_battery

    items = load("builtin:facts?seed=1")[: design.n + design.n_dropped]
    coef = PROBES[probe]

    async def run() -> list[tuple[float | None, float | None]]:
        out = []
        for s in range(reps):
            judge = make_judge(f"sim?quality={QUALITY}&noise={noise}&{coef}={c}&seed={s}")
            res = await run_battery(judge, items, [probe], seed=1, alpha=ALPHA)
            p = res["probes"][probe]
            out.append((p["p"], p["mde"]))
        return out

    rows = asyncio.run(run())
    k = sum(p is not None and p < ALPHA for p, _ in rows)
    lo, hi = wilson(k, reps)
    mdes = [m for _, m in rows if m is not None]
    return {"probe": probe, "noise": noise, "n": design.n, "planted_coefficient": c,
            "reps": reps, "rejection_rate": k / reps, "rejection_ci95": [lo, hi],
            "reported_mde_median": float(np.median(mdes)) if mdes else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reps", type=int, default=4000)
    ap.add_argument("--mde-reps", type=int, default=150)
    ap.add_argument("--pipeline", type=int, default=40,
                    help="real run_battery seeds per probe at n=60, noise=1 (0: skip)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "mde_power.json")
    args = ap.parse_args()
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    cases, pipes = [], []
    t_pipe = 0.0
    for probe in PROBES:
        designs = {n: Design(probe, n) for n in sorted({n for n, _ in SETTINGS})}
        for n, noise in SETTINGS:
            ds = designs[n]
            c = solve_c(ds, noise, lambda c, ds=ds, noise=noise: mde_at(ds, c, noise))
            row: dict[str, Any] = {"probe": probe, "n_items": n, "n": ds.n,
                                   "n_dropped": ds.n_dropped, "noise": noise}
            if c is None:
                row["note"] = "no planted coefficient reaches the MDE"
                cases.append(row)
                continue
            pop = ds.population(c, noise)
            row.update(planted_coefficient=c, planted_effect=pop["effect"],
                       mde_reported_at_population=mde_at(ds, c, noise),
                       discordance=pop["discordance"], mean_change=pop["mean_change"],
                       null_discordance=ds.population(0.0, noise)["discordance"])
            row.update(power_at(ds, c, noise, args.reps, args.mde_reps, rng))
            row["within_band"] = BAND[0] <= row["power"] <= BAND[1]
            cp = solve_c(ds, noise, lambda c, ds=ds, noise=noise: previous_mde_at(ds, c, noise))
            if cp is not None:
                prev = power_at(ds, cp, noise, args.reps, 0, rng) if args.reps else {}
                row["previous_mde"] = {"value": previous_mde_at(ds, cp, noise),
                                       "power": prev.get("power")}
            cases.append(row)
            print(f"{probe:10s} n={ds.n:3d} noise={noise:3.1f}  MDE {row['planted_effect']:.3f}"
                  f" (psi {row['discordance']:.2f})  power {row['power']:.3f}"
                  + (f"  | previous MDE {row['previous_mde']['value']:.3f} power "
                     f"{row['previous_mde']['power']:.3f}" if "previous_mde" in row else ""),
                  flush=True)
        if args.pipeline:
            t1 = time.perf_counter()
            ds = designs[60]
            c = solve_c(ds, 1.0, lambda c, ds=ds: mde_at(ds, c, 1.0))
            if c is not None:
                pr = pipeline(ds, probe, 1.0, c, args.pipeline)
                pr["model_power"] = next(r["power"] for r in cases if r["probe"] == probe
                                         and r["n_items"] == 60 and r["noise"] == 1.0)
                pipes.append(pr)
                print(f"  pipeline {probe}: rejection {pr['rejection_rate']:.2f} "
                      f"{pr['rejection_ci95']} vs model {pr['model_power']:.3f}", flush=True)
            t_pipe += time.perf_counter() - t1
    powers = [r["power"] for r in cases if "power" in r]
    doc = {
        "benchmark": "mde_power",
        "claim": "the audit's MDE is the effect its probe's test detects with 80% power",
        "method": __doc__,
        "alpha": ALPHA, "power_target": POWER, "accepted_band": list(BAND),
        "sim": {"quality": QUALITY, "data": "builtin:facts?seed=1"},
        "settings": [{"n_items": n, "noise": s} for n, s in SETTINGS],
        "cases": cases,
        "pipeline": pipes,
        "summary": {
            "n_cases": len(powers), "min_power": min(powers), "max_power": max(powers),
            "mean_power": float(np.mean(powers)),
            "all_within_band": all(r.get("within_band") for r in cases if "power" in r),
            "pipeline_pooled_rejection": (
                sum(r["rejection_rate"] * r["reps"] for r in pipes) / sum(r["reps"] for r in pipes)
                if pipes else None),
            "previous_mde_power_range": [
                min(r["previous_mde"]["power"] for r in cases if "previous_mde" in r),
                max(r["previous_mde"]["power"] for r in cases if "previous_mde" in r)],
        },
        "seconds": time.perf_counter() - t0,
        "seconds_model": time.perf_counter() - t0 - t_pipe,
        "seconds_pipeline": t_pipe,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"power {doc['summary']['min_power']:.3f}-{doc['summary']['max_power']:.3f} over "
          f"{len(powers)} cases; all within {BAND}: {doc['summary']['all_within_band']}; "
          f"{doc['seconds']:.0f} s -> {args.out}")


if __name__ == "__main__":
    main()
