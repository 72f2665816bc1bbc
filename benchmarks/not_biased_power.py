"""Can an interval for the mean of bounded paired differences say "not biased" more often for
an unbiased judge while keeping the edge guarantee? Each candidate judged by exact
computation over the trinomial, not by simulation (except the betting sequence, whose
interval depends on the items' order).

The setting (`stats.paired_estimate`, `outcome.probe_verdict`): a probe's effect is the
mean of per-item differences d in {-m, 0, m}, every d bounded by a span s >= m, and "not
biased" needs the 95% interval inside [-0.05, 0.05]. Fewer than SPARSE_MOVERS items that moved
take `movers_ci`, every item alike `constant_ci`, the rest the candidate interval. Read as a
test of equivalence, "not biased" said of a judge whose effect is exactly on the edge (0.05)
must happen in at most 2.5% of runs, whatever the share of items moving the other way.

Every candidate is a test of mu0 = +-0.05 on the counts (items up, items down), so its
verdict on every outcome of n items is a table, and each share below is a sum of trinomial
probabilities over that table (outcomes of any probability, no cut-off). The tilted
distribution of the score interval is the one of `stats.intervals._tilted` (the empirical
likelihood over the observed values and both ends of [-s, s]), vectorised over outcomes; the
script first checks that its verdicts equal `bounded_mean_ci`'s on every outcome of a few n.

Candidates (z = 1.95996 unless a cutoff is named; "@z" is a calibrated cutoff):
- score: the score interval now used (`bounded_mean_ci`, "score-bounded");
- scas: the skewness-corrected score (Gart & Nam 1988; Laud 2017): reject mu0 when
  T - g/6 (T^2 - 1) < -z, T the score statistic and g the skewness of the tilted
  distribution's mean (mu3 / (V^1.5 sqrt n));
- lr: the signed root of the empirical likelihood ratio over the same support (r < -z);
- exact-unconditional (reference; three-point data only): the scas statistic's ordering with
  the cutoff set, for each n, so that the largest level over a grid of 400 nuisance values
  (the share moving down at the edge's mean) is at most 2.5% (Barnard-type test inversion),
  computed at n = 40, 80, 120, 200 only (a few seconds per n and mu0). It replaces every
  branch (no movers or constant interval), its guarantee covers laws on {-m, 0, m} only (not
  mass at +-s when s > m), and it is a test of +-0.05, not an interval: a bound on what any
  ordering by that statistic can reach, not a candidate for `bounded_mean_ci`;
- betting: the hedged-capital betting confidence sequence (`stats.betting_cs`) read at n,
  by simulation.

The grid of the edge guarantee: n = 10..200 (every n), (m, s) in {(1/2, 1/2) position,
(1/2, 1) a compare of position, (1, 1) a shift probe, (1, 2) a compare of shifts}, and the
share moving down at the edge from 0 (moves one way) to its largest, on 100 points plus the
sim judge's position model at the edge (11.6% / 1.6%) and the two-way scenarios of
tests/stats/test_not_biased_edge_exact.py. Power: an unbiased judge (p_up = p_down in
{4.52% (the sim judge, k = 0), 5%, 10%, 20%}) called not biased at n = 40, 80, 120, 200, and
the mean over n = 70..90 and 110..130 (a share at one n jumps with the discreteness of the
counts). Detection: an effect of 0.15 whose interval excludes 0 (lo > 0) at n = 40, 80.

    python benchmarks/not_biased_power.py          # results/not_biased_power.json (~4 min)
    python benchmarks/not_biased_power.py --quick  # every 10th n, for a look (~1 min)
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
from scipy import special, stats
from scipy.special import expit

from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.outcome import probe_verdict
from judgeaudit.stats import SPARSE_MOVERS, betting_cs, paired_estimate, wilson

NO_BIAS = (-0.05, 0.05)
EDGE = 0.05
Z = float(special.ndtri(0.975))
CONFIGS = ((0.5, 0.5), (0.5, 1.0), (1.0, 1.0), (1.0, 2.0))
_K = 0.9900550122304866  # the sim judge's position model at the edge
SIM_UP = float(expit(3 + _K) * expit(_K - 3))
SIM_DOWN = float((1 - expit(3 + _K)) * (1 - expit(_K - 3)))
SIM0 = float(expit(3.0) * expit(-3.0))  # the unbiased sim judge: 4.52% each way
NULL_P = (SIM0, 0.05, 0.10, 0.20)
POWER_N = (40, 80, 120, 200)
DETECT_N = (40, 80)
# name: candidate statistic at mu0 (rejects mu >= mu0 when below -cutoff), cutoff
CANDIDATES: dict[str, tuple[str, float]] = {
    "score (now)": ("score", Z), "score@1.98": ("score", 1.98),
    "scas": ("scas", Z), "scas@2.10": ("scas", 2.10),
    "lr": ("lr", Z), "lr@2.20": ("lr", 2.20),
}


def outcomes(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (items up, items down) of n items, as float arrays."""
    u, d = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = u + d <= n
    return u[keep].astype(float), d[keep].astype(float)


def mirror_index(u: np.ndarray, d: np.ndarray, n: int) -> np.ndarray:
    """Position of (d, u) for each (u, d): the lower end's test is the upper end's mirrored."""
    ui, di = u.astype(int), d.astype(int)
    key = ui * (n + 1) + di
    order = np.argsort(key)
    return order[np.searchsorted(key[order], di * (n + 1) + ui)]


def tilted_stats(u: np.ndarray, d: np.ndarray, n: int, m: float, s: float, mu0: float
                 ) -> dict[str, np.ndarray]:
    """Per outcome: the score statistic T, the tilted mean's skewness g and the signed root r
    of the likelihood ratio at mu0, from the distribution of largest likelihood with mean mu0
    on the observed values and the ends -s, s (`stats.intervals._tilted`, vectorised: the
    tilt's lam by bisection; where no lam keeps every weight positive it stops at its bound
    and the rest of the mass sits on the unobserved end)."""
    if s == m:
        y = np.array([-m, 0.0, m])
        w = np.stack([d, n - u - d, u], 1)
    else:
        y = np.array([-s, -m, 0.0, m, s])
        w = np.stack([0 * d, d, n - u - d, u, 0 * u], 1)
    mean = m * (u - d) / n
    c = y - mu0
    up = mean < mu0  # lam < 0: mass moves up
    lo_b = np.where(up, -1.0 / (s - mu0), 0.0)
    hi_b = np.where(up, 0.0, 1.0 / (s + mu0))

    def g(lam: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            t = w * c / (1.0 + lam[:, None] * c)
        return np.where(w > 0, t, 0.0).sum(1)

    stuck = np.where(up, (w[:, -1] == 0) & (g(lo_b) <= 0), (w[:, 0] == 0) & (g(hi_b) >= 0))
    a, b = lo_b * (1 - 1e-13), hi_b * (1 - 1e-13)
    for _ in range(80):
        mid = 0.5 * (a + b)
        pos = g(mid) > 0
        a, b = np.where(pos, mid, a), np.where(pos, b, mid)
    lam = np.where(stuck, np.where(up, lo_b, hi_b), 0.5 * (a + b))
    lam = np.where(mean == mu0, 0.0, lam)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(w > 0, w / (n * (1.0 + lam[:, None] * c)), 0.0)
    rest = np.clip(1.0 - p.sum(1), 0.0, None)
    p[:, -1] += np.where(stuck & up, rest, 0.0)
    p[:, 0] += np.where(stuck & ~up, rest, 0.0)
    v = (p * c**2).sum(1)
    mu3 = (p * c**3).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (mean - mu0) / np.sqrt(v / n)
        gam = mu3 / (v**1.5 * np.sqrt(n))
        ll = np.where(w > 0, w * np.log(np.where(w > 0, w / n, 1.0)), 0.0).sum(1) - \
            np.where(w > 0, w * np.log(np.where(p > 0, p, 1e-300)), 0.0).sum(1)
    r = np.sign(mean - mu0) * np.sqrt(np.clip(2.0 * ll, 0.0, None))
    scas = np.where(t < 0, t - gam / 6.0 * (t * t - 1.0), t)
    return {"score": t, "scas": scas, "lr": r, "mean": mean}


def sparse_below(u: np.ndarray, d: np.ndarray, n: int, m: float, s: float, mu0: float
                 ) -> np.ndarray:
    """paired_estimate's other branches: 1 where their upper end is below mu0, 0 where not,
    NaN where the candidate interval applies (SPARSE_MOVERS movers or more, not all alike)."""
    few = u + d < SPARSE_MOVERS
    up = np.where(u >= n, 1.0, stats.beta.ppf(0.975, u + 1, np.maximum(n - u, 1)))
    hi = np.where(few, s * up, np.nan)
    alike = ~few & ((u == n) | (d == n))
    p = 0.025 ** (1.0 / n)
    hi = np.where(alike, np.minimum(s, np.where(u == n, m, -m) * p + s * (1 - p)), hi)
    return np.where(np.isnan(hi), np.nan, (hi < mu0).astype(float))


def trinom_pmf(u: np.ndarray, d: np.ndarray, n: int, pu: float, pd: float) -> np.ndarray:
    lp = (special.gammaln(n + 1) - special.gammaln(u + 1) - special.gammaln(d + 1)
          - special.gammaln(n - u - d + 1) + special.xlogy(u, pu) + special.xlogy(d, pd)
          + special.xlogy(n - u - d, 1.0 - pu - pd))
    return np.exp(lp)


def below_tables(n: int, m: float, s: float, mu0: float) -> dict[str, np.ndarray]:
    """Per candidate: on every outcome, is the interval's upper end below mu0?"""
    u, d = outcomes(n)
    st = tilted_stats(u, d, n, m, s, mu0)
    sp = sparse_below(u, d, n, m, s, mu0)
    out = {}
    for name, (stat, cut) in CANDIDATES.items():
        rej = (st[stat] < -cut) & (st["mean"] < mu0)
        out[name] = np.where(np.isnan(sp), rej, sp > 0)
    return out


def exact_unconditional(n: int, m: float, s: float, mu0: float, npd: int = 400
                        ) -> np.ndarray:
    """The reference test of mu >= mu0 on three-point data: reject the outcomes of smallest
    scas statistic while the largest level over `npd` nuisance values (the share moving
    down, the share up being it plus mu0 / m) stays at most 2.5%; ties go in together."""
    u, d = outcomes(n)
    st = tilted_stats(u, d, n, m, s, mu0)
    v = np.where(st["mean"] >= mu0, np.inf, st["scas"])
    q = mu0 / m
    top = (1.0 - q) / 2.0
    pds = np.r_[np.linspace(0.0, top, npd + 1)[:-1], top - 1e-9]
    order = np.argsort(v, kind="stable")
    vs = v[order]
    cum = np.max([np.cumsum(trinom_pmf(u[order], d[order], n, pd + q, pd)) for pd in pds], 0)
    ends = np.r_[vs[1:] != vs[:-1], True]
    ok = (cum <= 0.025) & ends & np.isfinite(vs)
    k = int(np.nonzero(ok)[0].max()) + 1 if ok.any() else 0
    rej = np.zeros(u.size, bool)
    rej[order[:k]] = True
    return rej


def check_against_library() -> int:
    """The vectorised score verdicts equal bounded_mean_ci's (via paired_estimate) on every
    outcome of a few (n, m, s); returns the outcomes checked."""
    checked = 0
    for n, m, s in ((40, 0.5, 0.5), (40, 0.5, 1.0), (60, 1.0, 2.0), (30, 1.0, 1.0)):
        u, d = outcomes(n)
        mine = below_tables(n, m, s, EDGE)["score (now)"]
        for i in range(u.size):
            x = np.r_[np.full(int(u[i]), m), np.full(int(d[i]), -m),
                      np.zeros(n - int(u[i]) - int(d[i]))]
            hi = paired_estimate(x, span=s).ci95[1]
            if (hi < EDGE) != bool(mine[i]):
                raise AssertionError(f"vectorised score differs from bounded_mean_ci at n={n}"
                                     f", m={m}, s={s}, up={u[i]:.0f}, down={d[i]:.0f}")
            checked += 1
    return checked


def edge_nuisance(m: float) -> np.ndarray:
    """Shares moving down at the edge (mean 0.05): 0 (one way) to the largest, 100 points,
    plus the named scenarios' (the sim model at m = 1/2, 5% and 2.5%)."""
    q = EDGE / m
    return np.unique(np.r_[np.linspace(0.0, (1.0 - q) / 2.0 * 0.999, 100),
                           SIM_DOWN if m == 0.5 else 0.0, 0.05, 0.025])


def detection_laws(m: float) -> list[tuple[str, float, float]]:
    q = 0.15 / m
    laws = [(f"one way ({q:.0%} up)", q, 0.0)]
    if q + 0.1 < 1:
        laws.append((f"two ways ({q + 0.05:.0%} up, 5% down)", q + 0.05, 0.05))
    return laws


def run_grid(ns: list[int]) -> dict[str, object]:
    names = [*CANDIDATES, "exact-unconditional (reference)"]
    edge: dict[str, list[dict[str, object]]] = {k: [] for k in CANDIDATES}
    power: dict[str, list[dict[str, object]]] = {k: [] for k in names}
    detect: dict[str, list[dict[str, object]]] = {k: [] for k in names}
    for m, s in CONFIGS:
        pds = edge_nuisance(m)
        for n in sorted(set(ns) | set(POWER_N) | set(range(70, 91)) | set(range(110, 131))):
            u, d = outcomes(n)
            mir = mirror_index(u, d, n)
            tabs = below_tables(n, m, s, EDGE)
            nb = {k: t & t[mir] for k, t in tabs.items()}
            if n in POWER_N:
                eu = exact_unconditional(n, m, s, EDGE)
                nb["exact-unconditional (reference)"] = eu & eu[mir]
            if n in ns:
                pe = np.stack([trinom_pmf(u, d, n, pd + EDGE / m, pd) for pd in pds])
                for k in CANDIDATES:
                    share = pe @ nb[k]
                    i = int(share.argmax())
                    edge[k].append({"m": m, "span": s, "n": n, "max_share": float(share[i]),
                                    "at_p_down": float(pds[i]),
                                    "one_way": float(share[pds == 0.0][0])})
            pn = np.stack([trinom_pmf(u, d, n, p, p) for p in NULL_P])
            for k, t in nb.items():
                power[k].append({"m": m, "span": s, "n": n,
                                 "not_biased": [round(float(x), 6) for x in pn @ t]})
            if n in DETECT_N:
                low = below_tables(n, m, s, 0.0)  # hi < 0 at (d, u) is lo > 0 at (u, d)
                low["exact-unconditional (reference)"] = exact_unconditional(n, m, s, 0.0)
                for k, t in low.items():
                    above = t[mir]
                    detect[k].append({"m": m, "span": s, "n": n, "lo_above_0": {
                        name: round(float(trinom_pmf(u, d, n, pu, pd) @ above), 6)
                        for name, pu, pd in detection_laws(m)}})
        print(f"  m={m} span={s} done", flush=True)
    return {"edge": edge, "power": power, "detect": detect}


def betting_mc(reps: int, seed: int) -> list[dict[str, object]]:
    """The betting sequence's interval at n (order-dependent: simulated), m = s = 1/2:
    not biased for the unbiased sim judge at n = 80, 120, and at the edge (sim model)."""
    rng = np.random.default_rng(seed)
    rows = []
    for label, pu, pd, n in (("unbiased sim", SIM0, SIM0, 80), ("unbiased sim", SIM0, SIM0, 120),
                             ("edge, sim model", SIM_UP, SIM_DOWN, 120),
                             ("edge, one way (10% up)", 0.1, 0.0, 120)):
        hits = 0
        for _ in range(reps):
            x = rng.choice([-0.5, 0.0, 0.5], size=n, p=[pd, 1 - pu - pd, pu])
            lo, hi = betting_cs(x, -0.5, 0.5)
            hits += probe_verdict(float(x.mean()), (float(lo[-1]), float(hi[-1])), None,
                                  NO_BIAS, 0.05) == "not_biased"
        w = wilson(hits, reps)
        rows.append({"scenario": label, "n": n, "reps": reps, "not_biased": hits / reps,
                     "wilson95": [round(w[0], 4), round(w[1], 4)]})
    return rows


def summarise(grid: dict[str, object]) -> dict[str, object]:
    """Per candidate: the largest edge share over the grid (and where), the n over 2.5%, the
    power at n = 80 and 120 and the means over n = 70..90 and 110..130."""
    out: dict[str, object] = {}
    power = grid["power"]
    for k, rows in power.items():  # type: ignore[union-attr]
        e = grid["edge"].get(k, [])  # type: ignore[union-attr]
        worst = max(e, key=lambda r: r["max_share"]) if e else None
        per = {}
        for m, s in CONFIGS:
            sub = [r for r in rows if r["m"] == m and r["span"] == s]
            at = {r["n"]: r["not_biased"] for r in sub}
            per[f"m={m} span={s}"] = {
                **{f"n={n}": at[n] for n in POWER_N if n in at},
                "mean n=70..90": [round(float(np.mean([at[n][i] for n in range(70, 91)
                                                       if n in at])), 4)
                                  if any(n in at for n in range(70, 91)) else None
                                  for i in range(len(NULL_P))],
                "mean n=110..130": [round(float(np.mean([at[n][i] for n in range(110, 131)
                                                         if n in at])), 4)
                                    if any(n in at for n in range(110, 131)) else None
                                    for i in range(len(NULL_P))]}
        out[k] = {"max_edge_share": worst and worst["max_share"],
                  "max_edge_at": worst and {x: worst[x] for x in ("m", "span", "n",
                                                                  "at_p_down")},
                  "edge_cells_over_2.5%": e and [
                      {x: r[x] for x in ("m", "span", "n", "max_share", "at_p_down")}
                      for r in e if r["max_share"] > 0.025],
                  "power": per}
    return out


def dumps(doc: dict[str, object]) -> str:
    """JSON with the grid's rows one to a line (indented, it was 92,000 lines)."""
    grid = doc["grid"]
    parts = []
    for part, by in grid.items():  # type: ignore[union-attr]
        rows = ",\n".join(
            f'  {json.dumps(k)}: [\n' + ",\n".join(f"   {json.dumps(r)}" for r in v) + "]"
            for k, v in by.items())
        parts.append(f' {json.dumps(part)}: {{\n{rows}}}')
    rest = json.dumps({k: v for k, v in doc.items() if k != "grid"}, indent=1)
    return rest[:-2] + ',\n "grid": {\n' + ",\n".join(parts) + "}\n}\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="edge grid on every 10th n")
    ap.add_argument("--reps", type=int, default=1000, help="betting simulation draws")
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "not_biased_power.json")
    a = ap.parse_args()
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    checked = check_against_library()
    print(f"vectorised score = bounded_mean_ci on {checked} outcomes", flush=True)
    ns = list(range(10, 201, 10 if a.quick else 1))
    grid = run_grid(ns)
    bet = betting_mc(a.reps, 0)
    summary = summarise(grid)
    for k, v in summary.items():
        head = (f"max edge share {v['max_edge_share']:.4f} at {v['max_edge_at']}, "
                f"{len(v['edge_cells_over_2.5%'])} (m, span, n) cells over 2.5%"
                if v["max_edge_share"] is not None else "level <= 2.5% by construction")
        print(f"{k}: {head}")
        for cfg, p in v["power"].items():
            print(f"    {cfg}: not biased (p each way {', '.join(f'{x:.3f}' for x in NULL_P)})"
                  f" n=80 {p.get('n=80')} n=120 {p.get('n=120')}")
    for r in bet:
        print(f"betting {r['scenario']} n={r['n']}: not biased {r['not_biased']:.3f} "
              f"{r['wilson95']}")
    doc = {
        "what": "share of runs called not_biased (95% interval inside [-0.05, 0.05]) computed "
                "exactly over the trinomial of (items up, items down), d in {-m, 0, m}, span "
                "s; edge: true mean 0.05, the largest share over the share moving down "
                "(0 = one way); power: an unbiased judge (p_up = p_down in null_p); detect: "
                "an effect of 0.15 whose interval's lower end is above 0",
        "null_p": list(NULL_P), "edge_grid_n": [ns[0], ns[-1], len(ns)],
        "configs": [list(c) for c in CONFIGS], "sparse_movers": SPARSE_MOVERS,
        "candidates": {k: {"statistic": v[0], "cutoff": v[1]} for k, v in CANDIDATES.items()},
        "summary": summary, "grid": grid, "betting_simulated": bet,
        "score_checked_outcomes": checked,
        "seconds": round(time.perf_counter() - t0, 1),
        "python": platform.python_version(),
        "machine": {**cpu_summary(), "loadavg_start": load_start,
                    "loadavg_end": os.getloadavg()},
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(dumps(doc), encoding="utf-8")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
