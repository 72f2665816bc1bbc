"""c's 95% interval in `rank` as the budget grows, and how often it misses the planted c
when the term is not marked "mostly the prior" (issue: "rank's c interval widens as the
budget grows").

Per budget and seed: `judgeaudit.rank` with the sim judge `sim?length=L` (quality 3 logits
per step) on `builtin:controlled?seed=S` (30 items, length nearly uncorrelated with quality,
true theta sd ~6, i.e. lam ~0.03), covariate length, seed S, k = 5. Recorded: the
learned lam (EB, `--lam auto`) and tau, c's estimate, se, interval, coverage of the planted
L and `from_prior`. Mode `auto` is rank's default: the ranking's lam the Laplace-EM fixed
point, c from a refit at the lam maximising the Laplace evidence (rank.fitting.terms_fit;
`lam` is the ranking's, `lam_terms` the refit's, `terms_cpu` its CPU seconds); the default's
rows before that refit (c from the Laplace-EM fit, commit 9c96a9d) are kept under
`auto_em_terms`. Mode `ev_lam` runs rank with lam maximising the Laplace evidence (the option
rank.fitting.EB_METHOD = "auto": acquisition and fits), `ev_lam_hier` the same with
--hierarchical. Mode `evidence` refits the comparisons of a default run with lam maximising
the Laplace evidence (stats.bradley_terry.evidence_lam).

    python benchmarks/rank_c_interval.py --mode auto --length 3     (also --length 1)
    python benchmarks/rank_c_interval.py --mode ev_lam --length 3   (also --length 1)
    python benchmarks/rank_c_interval.py --mode hier --length 3
    python benchmarks/rank_c_interval.py --mode lam1 --length 3
    python benchmarks/rank_c_interval.py --mode evidence --length 3   (also --length 1)

each adds its rows to benchmarks/results/rank_c_interval.json (keyed by mode and length).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import time
from pathlib import Path

import numpy as np

import judgeaudit as ja
from judgeaudit.rank.summary import PRIOR_DOMINATED
from judgeaudit.stats.bradley_terry import evidence_lam

OUT = Path(__file__).parent / "results" / "rank_c_interval.json"


class _Timed:
    """rank.live.terms_fit with its CPU seconds (the thread it runs in) added up."""

    def __init__(self) -> None:
        import judgeaudit.rank.live as L

        self.inner, self.cpu = L.terms_fit, 0.0
        L.terms_fit = self

    def __call__(self, *a, **k):
        t = time.thread_time()
        try:
            return self.inner(*a, **k)
        finally:
            self.cpu += time.thread_time() - t


TIMED: _Timed | None = None


def one(budget: int, seed: int, mode: str, length: float) -> dict:
    global TIMED
    TIMED = TIMED or _Timed()
    lam = "1" if mode == "lam1" else "auto"
    cpu0, t0 = TIMED.cpu, time.process_time()
    r = ja.rank(judge=f"sim?length={length}", items=f"builtin:controlled?seed={seed}", k=5,
                budget=budget, covariates="length", seed=seed,
                hierarchical=mode in ("hier", "ev_lam_hier"),
                lam=lam, cache=False, samples=200)
    m = r["models"]["bias_aware"]
    c = m["c"]["length"]
    row = {"budget": budget, "seed": seed, "lam": m["lam"], "tau": m["tau"],
           "estimate": c["estimate"], "se": c["se"], "lo": c["lo"], "hi": c["hi"],
           "covered": c["covered"], "from_prior": c["from_prior"],
           "cpu": time.process_time() - t0, "terms_cpu": TIMED.cpu - cpu0}
    if "lam_terms" in m:
        row.update(lam_terms=m["lam_terms"], tau_terms=m["tau_terms"],
                   lam_terms_method=m["lam_terms_method"])
    if mode == "evidence":
        info = r["covariates"][0]
        ids = [row["id"] for row in r["ranking"]]
        order = {it: n for n, it in enumerate(r["models"]["bias_aware"]["theta"])}
        x = np.zeros(len(order))
        for rr in r["ranking"]:
            x[order[rr["id"]]] = rr["covariates"]["length"] - info["mean"]
        assert len(ids) == len(order)
        comps = np.array([[v["first"], v["second"], v["y"]] for v in r["comparisons"]
                          if not v["invalid"]], dtype=float)
        lam_ev, fit = evidence_lam(len(order), comps, X=x[:, None], tau=m["tau"])
        lo, hi = fit.c_interval()[0]
        se = float(fit.c_se[0])
        row["rank_lam_em"] = row.pop("lam")
        row.update(lam=lam_ev, estimate=float(fit.c[0]), se=se, lo=float(lo), hi=float(hi),
                   covered=bool(lo <= length <= hi), from_prior=bool(se > PRIOR_DOMINATED))
    return row


def _median(rows: list[dict], key: str) -> float | None:
    return float(np.median([r[key] for r in rows])) if all(key in r for r in rows) else None


def table(rows: list[dict]) -> list[dict]:
    out = []
    for b in sorted({r["budget"] for r in rows}):
        rs = [r for r in rows if r["budget"] == b]
        un = [r for r in rs if not r["from_prior"]]
        out.append({"budget": b, "n": len(rs),
                    "lam_median": float(np.median([r["lam"] for r in rs])),
                    "lam_terms_median": _median(rs, "lam_terms"),
                    "cpu_median": _median(rs, "cpu"),
                    "terms_cpu_median": _median(rs, "terms_cpu"),
                    "tau_median": float(np.median([r["tau"] for r in rs])),
                    "estimate_mean": float(np.mean([r["estimate"] for r in rs])),
                    "se_mean": float(np.mean([r["se"] for r in rs])),
                    "width_mean": float(np.mean([r["hi"] - r["lo"] for r in rs])),
                    "covered": sum(r["covered"] for r in rs),
                    "from_prior": sum(r["from_prior"] for r in rs),
                    "unmarked": len(un), "unmarked_covered": sum(r["covered"] for r in un)})
    return out


def machine() -> dict:
    """What a CPU figure holds for: the CPU's deciding flags and the load while it ran."""
    flags: list[str] = []
    with contextlib.suppress(OSError, StopIteration):
        flags = next(ln.split(":", 1)[1].split() for ln in
                     Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags"))
    return {"cpu_flags": {f: f in flags for f in ("avx2", "avx512_bf16", "amx_bf16")},
            "cores": os.cpu_count(), "loadavg_end": list(os.getloadavg())}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", default="auto",
                    choices=("auto", "hier", "lam1", "evidence", "ev_lam", "ev_lam_hier"))
    ap.add_argument("--length", type=float, default=3.0)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budgets", default="50,100,200,400,800")
    a = ap.parse_args()
    if a.mode.startswith("ev_lam"):
        import judgeaudit.rank.fitting as F

        F.EB_METHOD = "auto"
    t0 = time.process_time()
    rows = [one(b, s, a.mode, a.length) for b in map(int, a.budgets.split(","))
            for s in range(a.seeds)]
    tab = table(rows)
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    doc[f"{a.mode}/length={a.length:g}"] = {
        "cpu_seconds": time.process_time() - t0, "seeds": list(range(a.seeds)),
        "machine": machine(), "table": tab, "rows": rows}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"{a.mode}, planted c = {a.length:g}")
    print("budget  lam    lam_c  tau    est    se     width  covered  marked  "
          "unmarked(covered)  cpu   refit cpu")
    for t in tab:
        lt = t["lam_terms_median"]
        print(f"{t['budget']:6d} {t['lam_median']:.3f} "
              f"{'  -  ' if lt is None else format(lt, '.3f')} {t['tau_median']:.3f} "
              f"{t['estimate_mean']:6.2f} {t['se_mean']:.3f} {t['width_mean']:6.2f}   "
              f"{t['covered']}/{t['n']}      {t['from_prior']}/{t['n']}     "
              f"{t['unmarked']} ({t['unmarked_covered']})            "
              f"{t['cpu_median']:.2f}  {t['terms_cpu_median']:.3f}")


if __name__ == "__main__":
    main()
