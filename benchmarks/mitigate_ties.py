"""mitigate's estimates and standard errors with tie verdicts: the se methods before (the
model's), after (the model's widened to a sandwich clustered by query where that is larger:
se_method "larger", the default) and the rejected option (the sandwich alone). The marginal
fit's model is the one with each judge's dispersion kappa (the variance of a verdict over
p (1 - p), estimated per judge; `mitigate` section "dispersion of tie verdicts"); the
two-stage fit's is the binomial one.

Verdicts are drawn from the model (`judgeaudit.hubj.mitigate.simulate`), in three kinds:
  binary       one draw per verdict (no ties; kappa 1, the fit before kappa);
  ties         the mean of two independent draws, as a judge asked in both orders with fresh
               noise gives them (0.5 when the orders disagree): the mean is the model's, so the
               planted parameters stay the truth, and the variance is p (1 - p) / 2;
  overdispersed  ties, plus query effects the model gets wrong: heavier-tailed than normal
               (t with 3 df) and a second query effect (sd 1) that pushes half the judges one
               way and the other half the other, so verdicts of one query are more alike (or
               less) than one shared effect allows.
Per judge, over seeds: the sd of phi-hat, the mean se of phi by each method, the coverage of
the planted phi, BC and bias share (planted from the realised query effects) with Wilson
intervals, the mean error of phi-hat, the mean psi-hat (planted 1 for binary and ties) and
the mean kappa. `misspecified` is one judge (Stage II alone) whose verdicts are a coin flip
where the fitted p is near 0 or 1: there the model understates the spread and the sandwich is
larger; its truth is the slope the fit converges to (a fit on 200,000 verdicts).
`diagnosis` refits the ties kind with kappa held at 1 (each verdict's quasi-likelihood counted
once inside the integral over z: the marginal fit before kappa) and as shipped.

    nice -n 5 python benchmarks/mitigate_ties.py            # 100 seeds, about 14 minutes
    nice -n 5 python benchmarks/mitigate_ties.py --scenarios J4_N400 --skip-extras
    nice -n 5 python benchmarks/mitigate_ties.py --scenarios J3_N150   # the same in two runs
                                                            # (7 minutes each): each merges
                                                            # its part into
                                                            # benchmarks/results/mitigate_ties.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
from rank_c_interval import machine  # the CPU flags and load a CPU figure holds for

from judgeaudit.hubj import mitigate as M
from judgeaudit.stats import fit_logistic, rate

OUT = Path(__file__).parent / "results" / "mitigate_ties.json"
SCENARIOS: dict[str, dict[str, Any]] = {
    "J4_N400": {"n": 400, "theta": [-0.5, 0.3, 0.0, 0.4], "phi": [1.2, 0.0, -0.6, 0.5]},
    "J3_N150": {"n": 150, "theta": [-0.5, 0.3, 0.0], "phi": [1.2, 0.0, -0.6]},
}
KINDS = {"J4_N400": ("binary", "ties"), "J3_N150": ("binary", "ties", "overdispersed")}
METHODS = {"before": "model", "after": "larger", "sandwich_only": "sandwich"}


def draw(n: int, theta: list[float], phi: list[float], seed: int, kind: str
         ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Verdicts Y (J, n), the control, and the planted BC and bias share per judge."""
    rng = np.random.default_rng(seed)
    th, ph = np.asarray(theta), np.asarray(phi)
    d = np.tanh((rng.integers(1, 6, n) - rng.integers(1, 6, n)).astype(float))
    if kind == "overdispersed":
        load = np.where(np.arange(th.size) < th.size // 2, 1.0, -1.0)
        q = rng.standard_t(3, n) / np.sqrt(3.0) + load[:, None] * rng.normal(0.0, 1.0, n)
    else:
        q = np.broadcast_to(rng.normal(0.0, 1.0, n), (th.size, n))
    eta = th[:, None] + ph[:, None] * d[None] + q
    draws = 1 if kind == "binary" else 2
    Y = np.mean([rng.random(eta.shape) < M._p(eta) for _ in range(draws)], axis=0)
    bc = M._p(th[:, None] + q).mean(1)
    return Y, d, bc, M._p(eta).mean(1) - bc


def summarise(rows: list[dict[str, Any]], planted_phi: list[float]) -> dict[str, Any]:
    """rows: per seed, per method, per judge (phi, se, hit_phi, hit_bc, hit_share)."""
    n = len(rows)
    out: dict[str, Any] = {"n_seeds": n}
    phis = np.array([[j["phi"] for j in r["before"]] for r in rows])
    out["sd_phi_hat"] = np.std(phis, axis=0, ddof=1).round(4).tolist()
    out["mean_error_phi"] = (phis.mean(0) - np.asarray(planted_phi)).round(4).tolist()
    out["mean_psi_hat"] = np.mean([[j["psi"] for j in r["before"]] for r in rows], 0
                                  ).round(3).tolist()
    kap = [[j["kappa"] for j in r["before"]] for r in rows]
    out["mean_kappa"] = (np.mean(kap, 0).round(3).tolist()
                         if all(k is not None for ks in kap for k in ks) else None)
    for label in METHODS:
        se = np.array([[j["se"] for j in r[label]] for r in rows])
        hits = {k: np.array([[j[k] for j in r[label]] for r in rows]).sum(0)
                for k in ("hit_phi", "hit_bc", "hit_share")}
        out[label] = {
            "mean_se_phi": se.mean(0).round(4).tolist(),
            "se_over_sd": (se.mean(0) / out["sd_phi_hat"]).round(3).tolist(),
            **{f"coverage_{k[4:]}": [rate(int(h), n).as_dict() for h in v]
               for k, v in hits.items()},
            **{f"min_coverage_{k[4:]}": float(v.min() / n) for k, v in hits.items()}}
    return out


def run_kind(name: str, sc: dict[str, Any], kind: str, seeds: range,
             estimator: str) -> dict[str, Any]:
    J = len(sc["theta"])
    judges, qids = [f"j{i}" for i in range(J)], [str(i) for i in range(sc["n"])]
    rows = []
    t0 = time.perf_counter()
    for s in seeds:
        Y, d, bc, share = draw(sc["n"], sc["theta"], sc["phi"], 1000 + s, kind)
        row: dict[str, Any] = {}
        for label, se in METHODS.items():
            f = M.fit(Y, d, judges, qids, estimator=estimator, se=se)
            row[label] = []
            for j, jn in enumerate(judges):
                r = f.per_judge[jn].as_dict()
                hit = {k: bool(r[k]["ci95"][0] <= t <= r[k]["ci95"][1])
                       for k, t in (("phi", sc["phi"][j]), ("bc", bc[j]),
                                    ("bias_share", share[j]))}
                row[label].append({"phi": r["phi"]["value"], "se": r["phi"]["se"],
                                   "psi": r["psi"]["value"],
                                   "kappa": (r.get("kappa") or {}).get("value"),
                                   "hit_phi": hit["phi"], "hit_bc": hit["bc"],
                                   "hit_share": hit["bias_share"]})
        rows.append(row)
    out = summarise(rows, sc["phi"])
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"{name} {kind} {estimator}: error {out['mean_error_phi']} kappa "
          f"{out['mean_kappa']} sd {out['sd_phi_hat']} before "
          f"{out['before']['mean_se_phi']} after {out['after']['mean_se_phi']} sandwich "
          f"{out['sandwich_only']['mean_se_phi']}; min coverage of phi before "
          f"{out['before']['min_coverage_phi']:.2f} after {out['after']['min_coverage_phi']:.2f}"
          f" sandwich {out['sandwich_only']['min_coverage_phi']:.2f}", flush=True)
    return out


def misspecified(seeds: range, n: int = 400) -> dict[str, Any]:
    """One judge, Stage II with no query effect; verdicts a coin flip at the extreme controls
    (|Delta| > 0.9) where a logistic slope puts p near 0 or 1."""
    def verdicts(rng: np.random.Generator, size: int) -> tuple[np.ndarray, np.ndarray]:
        d = np.tanh(rng.choice([-3, -1, 0, 1, 3], size=size).astype(float))
        p = np.where(np.abs(d) > 0.9, 0.5, M._p(4 * d))
        return (rng.random(size) < p).astype(float), d

    y, d = verdicts(np.random.default_rng(0), 200_000)
    truth = float(fit_logistic(np.column_stack([np.ones(d.size), d]), y).coef[1])
    phis, rows = [], {label: [] for label in METHODS}
    for s in seeds:
        y, d = verdicts(np.random.default_rng(5000 + s), n)
        for label, se in METHODS.items():
            r = M.stage_two(y, d, np.zeros(n), se=se).as_dict()["phi"]
            rows[label].append((r["se"], r["ci95"][0] <= truth <= r["ci95"][1]))
        phis.append(r["value"])
    sd = float(np.std(phis, ddof=1))
    return {"n_seeds": len(seeds), "n_verdicts": n, "pseudo_true_phi": truth, "sd_phi_hat": sd,
            **{label: {"mean_se_phi": float(np.mean([x[0] for x in v])),
                       "se_over_sd": float(np.mean([x[0] for x in v]) / sd),
                       "coverage_phi": rate(sum(x[1] for x in v), len(v)).as_dict()}
               for label, v in rows.items()}}


def diagnosis(seeds: range) -> dict[str, Any]:
    """Mean error of the marginal phi-hat with ties, kappa held at 1 (every judge taken as
    binary: the fit before kappa) and estimated (as shipped), and psi-hat's mean."""
    sc = SCENARIOS["J4_N400"]
    judges, qids = [f"j{i}" for i in range(4)], [str(i) for i in range(sc["n"])]
    out: dict[str, Any] = {"scenario": "J4_N400", "kind": "ties", "n_seeds": len(seeds)}
    original = M._fractional
    try:
        for label in ("kappa_1", "kappa_estimated"):
            if label == "kappa_1":
                M._fractional = lambda Y, mask: np.zeros(Y.shape[0], dtype=bool)  # type: ignore[assignment]
            else:
                M._fractional = original  # type: ignore[assignment]
            ph, ps = [], []
            for s in seeds:
                Y, d, _, _ = draw(sc["n"], sc["theta"], sc["phi"], 1000 + s, "ties")
                f = M.fit(Y, d, judges, qids, se="model")
                ph.append([f.per_judge[j].phi for j in judges])
                ps.append([f.per_judge[j].psi for j in judges])
            out[label] = {
                "mean_error_phi": (np.mean(ph, 0) - sc["phi"]).round(4).tolist(),
                "sd_phi_hat": np.std(ph, 0, ddof=1).round(4).tolist(),
                "mean_psi_hat": np.mean(ps, 0).round(3).tolist(), "planted_psi": 1.0}
    finally:
        M._fractional = original  # type: ignore[assignment]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--diagnosis-seeds", type=int, default=40)
    ap.add_argument("--scenarios", default=",".join(SCENARIOS),
                    help="comma-separated; the others' results are kept from the file")
    ap.add_argument("--skip-extras", action="store_true",
                    help="keep misspecified and diagnosis from the file")
    a = ap.parse_args()
    names = [x for x in a.scenarios.split(",") if x]
    unknown = [x for x in names if x not in SCENARIOS]
    if unknown:
        ap.error(f"--scenarios: unknown {unknown}; expected some of {list(SCENARIOS)}")
    t0 = time.perf_counter()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    partial = set(names) != set(SCENARIOS) or a.skip_extras
    res: dict[str, Any] = (json.loads(OUT.read_text(encoding="utf-8"))
                           if partial and OUT.exists() else {"results": {}})
    res.update({
        "what": "mitigate's phi / BC / bias-share intervals by se method: before = the "
                "model's (marginal: with each judge's dispersion kappa; two-stage: "
                "binomial), after = se_method 'larger' (the model's widened to the "
                "query-clustered sandwich where larger; the default), sandwich_only = the "
                "rejected narrowing. Coverage of planted values with Wilson intervals.",
        "scenarios": SCENARIOS})
    res.setdefault("parts", {})
    for name in names:
        sc = SCENARIOS[name]
        t1 = time.perf_counter()
        for kind in KINDS[name]:
            for est in M.ESTIMATORS:
                res["results"][f"{name}/{kind}/{est}"] = run_kind(
                    name, sc, kind, range(a.seeds), est)
        res["parts"][name] = {"commit": commit, "seconds": round(time.perf_counter() - t1, 1),
                              "machine": machine()}
    if not a.skip_extras:
        t1 = time.perf_counter()
        res["misspecified"] = misspecified(range(2 * a.seeds))
        print("misspecified:", {k: v for k, v in res["misspecified"].items()
                                if k in ("sd_phi_hat", "before", "after")}, flush=True)
        res["diagnosis"] = diagnosis(range(a.diagnosis_seeds))
        print("diagnosis:", res["diagnosis"], flush=True)
        res["parts"]["extras"] = {"commit": commit,
                                  "seconds": round(time.perf_counter() - t1, 1),
                                  "machine": machine()}
    for k in ("commit", "seconds", "machine"):  # per part now
        res.pop(k, None)
    OUT.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
