"""mitigate's standard errors with tie verdicts: before (the binomial model's), after (the
model's widened to a sandwich clustered by query where that is larger: se_method "larger",
the default) and the rejected option (the sandwich alone, narrower with ties).

Verdicts are drawn from the model (`judgeaudit.hubj.mitigate.simulate`), in three kinds:
  binary       one draw per verdict (no ties);
  ties         the mean of two independent draws, as a judge asked in both orders with fresh
               noise gives them (0.5 when the orders disagree): the mean is the model's, so the
               planted parameters stay the truth, and the variance is p (1 - p) / 2;
  overdispersed  ties, plus query effects the model gets wrong: heavier-tailed than normal
               (t with 3 df) and a second query effect (sd 1) that pushes half the judges one
               way and the other half the other, so verdicts of one query are more alike (or
               less) than one shared effect allows.
Per judge, over seeds: the sd of phi-hat, the mean se of phi by each method, the coverage of
the planted phi, BC and bias share (planted from the realised query effects) with Wilson
intervals, and the mean error of phi-hat. `misspecified` is one judge (Stage II alone) whose
verdicts are a coin flip where the fitted p is near 0 or 1: there the model understates the
spread and the sandwich is larger; its truth is the slope the fit converges to (a fit on
200,000 verdicts). `diagnosis` refits the ties kind with each verdict's quasi-likelihood
counted twice inside the integral over z (the two draws' likelihood): it shows where the
ties' bias in phi comes from; it is not what mitigate does.

    nice -n 5 python benchmarks/mitigate_ties.py            # 100 seeds, about 9 minutes;
                                                            # writes
                                                            # benchmarks/results/mitigate_ties.json
"""

from __future__ import annotations

import argparse
import json
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from rank_c_interval import machine  # the CPU flags and load a CPU figure holds for
from scipy import special

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
                                   "hit_phi": hit["phi"], "hit_bc": hit["bc"],
                                   "hit_share": hit["bias_share"]})
        rows.append(row)
    out = summarise(rows, sc["phi"])
    out["seconds"] = round(time.perf_counter() - t0, 1)
    print(f"{name} {kind} {estimator}: sd {out['sd_phi_hat']} before "
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


def _weighted_terms(k: float) -> Callable[..., Any]:
    """`mitigate._marginal_terms` with each verdict's quasi-likelihood counted k times."""
    def terms(params: np.ndarray, Y: np.ndarray, mask: np.ndarray, d: np.ndarray,
              z: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        J = Y.shape[0]
        th, ph, ps = params[:J], params[J:2 * J], params[2 * J:]
        eta = th[:, None, None] + ph[:, None, None] * d[None, :, None] \
            + ps[:, None, None] * z[None, None, :]
        y, m = Y[:, :, None], mask[:, :, None]
        ll = k * np.where(m, y * -np.logaddexp(0.0, -eta) + (1 - y) * -np.logaddexp(0.0, eta),
                          0.0)
        a = ll.sum(0) + np.log(w)[None]
        lse = special.logsumexp(a, axis=1)
        post = np.exp(a - lse[:, None])
        r = k * np.where(m, y - special.expit(eta), 0.0) * post[None]
        grad = M._query_scores(r, d, z).sum(0)
        l2 = 1.0 / M.PRIOR_SD**2
        return -(float(lse.sum()) - 0.5 * l2 * float(params @ params)), \
            -(grad - l2 * params), post
    return terms


def diagnosis(seeds: range) -> dict[str, Any]:
    """Mean error of the marginal phi-hat with ties, the quasi-likelihood counted once (as
    mitigate does) and twice (the likelihood of the two draws), and psi-hat's mean."""
    sc = SCENARIOS["J4_N400"]
    judges, qids = [f"j{i}" for i in range(4)], [str(i) for i in range(sc["n"])]
    out: dict[str, Any] = {"scenario": "J4_N400", "kind": "ties", "n_seeds": len(seeds)}
    original = M._marginal_terms
    try:
        for k in (1.0, 2.0):
            M._marginal_terms = _weighted_terms(k)  # type: ignore[assignment]
            ph, ps = [], []
            for s in seeds:
                Y, d, _, _ = draw(sc["n"], sc["theta"], sc["phi"], 1000 + s, "ties")
                f = M.fit(Y, d, judges, qids, se="model")
                ph.append([f.per_judge[j].phi for j in judges])
                ps.append([f.per_judge[j].psi for j in judges])
            out[f"counted_{int(k)}x"] = {
                "mean_error_phi": (np.mean(ph, 0) - sc["phi"]).round(4).tolist(),
                "sd_phi_hat": np.std(ph, 0, ddof=1).round(4).tolist(),
                "mean_psi_hat": np.mean(ps, 0).round(3).tolist(), "planted_psi": 1.0}
    finally:
        M._marginal_terms = original  # type: ignore[assignment]
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--diagnosis-seeds", type=int, default=40)
    a = ap.parse_args()
    t0 = time.perf_counter()
    res: dict[str, Any] = {
        "what": "mitigate's phi / BC / bias-share intervals by se method: before = the "
                "binomial model's, after = se_method 'larger' (the model's widened to the "
                "query-clustered sandwich where larger; the default), sandwich_only = the "
                "rejected narrowing. Coverage of planted values with Wilson intervals.",
        "commit": subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                 text=True, check=False).stdout.strip(),
        "scenarios": SCENARIOS, "results": {}}
    for name, sc in SCENARIOS.items():
        for kind in KINDS[name]:
            for est in M.ESTIMATORS:
                res["results"][f"{name}/{kind}/{est}"] = run_kind(
                    name, sc, kind, range(a.seeds), est)
    res["misspecified"] = misspecified(range(2 * a.seeds))
    print("misspecified:", {k: v for k, v in res["misspecified"].items()
                            if k in ("sd_phi_hat", "before", "after")}, flush=True)
    res["diagnosis"] = diagnosis(range(a.diagnosis_seeds))
    print("diagnosis:", res["diagnosis"], flush=True)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    res["machine"] = machine()
    OUT.write_text(json.dumps(res, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
