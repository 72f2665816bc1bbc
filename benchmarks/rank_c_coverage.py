"""Coverage of `rank`'s 95% interval for the length bias c, over seeds, before and after the
bias terms were reported from a fit with a weak prior on c and kappa
(rank.fitting.TERMS_TAU; issue: "rank's length coefficient c is read low").

Settings (one `judgeaudit.rank` run per seed, default options: lam "auto", tau 1, rule topk
unless named, covariate length):
- ``tester``: the ranking tester's pool: 25 items of one prompt, quality 0-1.2 in even steps
  plus 1.6, 1.8, 2.0 (true top 3 clear), words log-uniform on 10-400 independently of
  quality (a per-seed pool, seed 1000 + s); judge ``sim?length=1.5&position=0.5&seed=s``
  (3 logits per quality step: theta sd ~1.6), k 3, budget 300.
- ``controlled``: ``builtin:controlled?seed=s`` (30 items, theta sd ~6), judge
  ``sim?length=3&seed=s``, k 5, budgets 200 and 800.

Mode ``before`` sets rank.fitting.TERMS_TAU to 0, which gives the previous terms_fit exactly
(the refit at the Laplace evidence's lam with the ranking's tau = 1); ``after`` is the code
as it is. Per run: c's estimate, se, interval, whether it covers the planted value, whether
it is marked mostly the prior (`from_prior`), kappa likewise, both lams, recall of the two
models (the ranking is not changed: compare them) and CPU seconds.

    python benchmarks/rank_c_coverage.py --mode before --seeds 40
    python benchmarks/rank_c_coverage.py --mode after --seeds 40
    python benchmarks/rank_c_coverage.py --mode before --settings controlled --budgets 50,100
    (and --mode after: small budgets, where the evidence's lam is least sure)

Each adds its rows to benchmarks/results/rank_c_coverage.json (keyed by mode, setting,
rule and budget), with the CPU flags and the load average while it ran.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import random
import tempfile
import time
from pathlib import Path

import numpy as np

import judgeaudit as ja
import judgeaudit.rank.fitting as F
from judgeaudit.stats.intervals import wilson

OUT = Path(__file__).parent / "results" / "rank_c_coverage.json"
VOCAB = ["river", "stone", "cloud", "apple", "engine", "garden", "window", "silver", "matter",
         "orbit", "signal", "harbor", "lantern", "meadow", "copper", "thread", "valley",
         "pencil", "marble", "canyon"]


def tester_pool(seed: int, n: int = 25) -> list[dict]:
    """The ranking tester's generator (/tmp/ranktest/gen.py): known quality, length drawn
    independently of it."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        q = round(1.2 * i / (n - 4), 4) if i < n - 3 else {n - 3: 1.6, n - 2: 1.8,
                                                              n - 1: 2.0}[i]
        w = int(round(math.exp(rng.uniform(math.log(10), math.log(400)))))
        text = " ".join(rng.choice(VOCAB) for _ in range(w)) + "."
        items.append({"id": f"cand-{i:02d}", "prompt": "Explain the water cycle.",
                      "response": text, "quality": q})
    rng.shuffle(items)
    return items


def one(setting: str, budget: int, seed: int, rule: str, tmp: Path) -> dict:
    if setting == "tester":
        path = tmp / f"pool_{seed}.jsonl"
        path.write_text("".join(json.dumps(x) + "\n" for x in tester_pool(1000 + seed)))
        judge, items, k, planted = (f"sim?length=1.5&position=0.5&seed={seed}",
                                    f"jsonl:{path}", 3, 1.5)
    else:
        judge, items, k, planted = (f"sim?length=3&seed={seed}",
                                    f"builtin:controlled?seed={seed}", 5, 3.0)
    t0 = time.process_time()
    r = ja.rank(judge=judge, items=items, k=k, budget=budget, rule=rule, covariates="length",
                seed=seed, cache=False, samples=200)
    cpu = time.process_time() - t0
    m = r["models"]["bias_aware"]
    c, kap = m["c"]["length"], m["kappa"]
    assert c["planted"] == planted
    return {"seed": seed, "estimate": c["estimate"], "se": c["se"], "lo": c["lo"],
            "hi": c["hi"], "covered": c["covered"], "from_prior": c["from_prior"],
            "prior_sd": c["prior_sd"], "kappa": kap["estimate"], "kappa_se": kap["se"],
            "kappa_covered": kap.get("covered"), "kappa_from_prior": kap["from_prior"],
            "lam": m["lam"], "lam_terms": m.get("lam_terms"), "tau_terms": m.get("tau_terms"),
            "recall": r["recall"], "topk": m["topk"], "cpu": cpu}


def _rate(k: int, n: int) -> dict:
    lo, hi = wilson(k, n) if n else (0.0, 1.0)
    return {"k": k, "n": n, "rate": k / n if n else None, "wilson95": [lo, hi]}


def summary(rows: list[dict], planted: float) -> dict:
    est = np.array([r["estimate"] for r in rows])
    un = [r for r in rows if not r["from_prior"]]
    kap = [r for r in rows if r["kappa_covered"] is not None]
    return {
        "n": len(rows), "planted": planted,
        "estimate_mean": float(est.mean()),
        "estimate_mean_se": float(est.std(ddof=1) / math.sqrt(len(est))),
        "estimate_sd": float(est.std(ddof=1)),
        "se_mean": float(np.mean([r["se"] for r in rows])),
        "coverage": _rate(sum(r["covered"] for r in rows), len(rows)),
        "from_prior": sum(r["from_prior"] for r in rows),
        "coverage_unmarked": _rate(sum(r["covered"] for r in un), len(un)),
        "kappa_coverage": _rate(sum(bool(r["kappa_covered"]) for r in kap), len(kap)),
        "recall_bias_aware_mean": float(np.mean([r["recall"]["bias_aware"] for r in rows])),
        "recall_naive_mean": float(np.mean([r["recall"]["naive"] for r in rows])),
        "lam_terms_median": float(np.median([r["lam_terms"] for r in rows
                                             if r["lam_terms"] is not None] or [math.nan])),
        "cpu_median": float(np.median([r["cpu"] for r in rows])),
    }


def machine() -> dict:
    """What a CPU figure holds for: the CPU's deciding flags and the load while it ran."""
    flags: list[str] = []
    with contextlib.suppress(OSError, StopIteration):
        flags = next(ln.split(":", 1)[1].split() for ln in
                     Path("/proc/cpuinfo").read_text().splitlines() if ln.startswith("flags"))
    return {"python": platform.python_version(),
            "cpu_flags": {f: f in flags for f in ("avx2", "avx512f", "avx512_bf16",
                                                  "amx_bf16")},
            "cores": os.cpu_count()}


SETTINGS = {"tester": [300], "controlled": [200, 800]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mode", choices=("before", "after"), required=True)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--settings", default="tester,controlled")
    ap.add_argument("--rules", default="topk", help="acquisition rules, comma separated")
    ap.add_argument("--budgets", default=None,
                    help="budgets, comma separated, instead of each setting's (tester 300; "
                         "controlled 200,800)")
    a = ap.parse_args()
    if a.mode == "before":
        F.TERMS_TAU = 0.0  # max(tau, 0) = tau: the previous terms_fit
    doc = json.loads(OUT.read_text()) if OUT.exists() else {}
    with tempfile.TemporaryDirectory() as td:
        for setting in a.settings.split(","):
            planted = 1.5 if setting == "tester" else 3.0
            for rule in a.rules.split(","):
                budgets = ([int(b) for b in a.budgets.split(",")] if a.budgets
                           else SETTINGS[setting])
                for budget in budgets:
                    load0, t0 = os.getloadavg(), time.process_time()
                    rows = [one(setting, budget, s, rule, Path(td)) for s in range(a.seeds)]
                    summ = summary(rows, planted)
                    key = f"{a.mode}/{setting}/{rule}/budget={budget}"
                    doc[key] = {"summary": summ, "cpu_seconds": time.process_time() - t0,
                                "machine": {**machine(), "loadavg_start": list(load0),
                                            "loadavg_end": list(os.getloadavg())},
                                "terms_tau": F.TERMS_TAU, "rows": rows}
                    OUT.write_text(json.dumps(doc, indent=1) + "\n")
                    cov, cu = summ["coverage"], summ["coverage_unmarked"]
                    print(f"{key}: c {summ['estimate_mean']:.3f} +- "
                          f"{summ['estimate_mean_se']:.3f} (planted {planted:g}), se "
                          f"{summ['se_mean']:.3f}, covered {cov['k']}/{cov['n']}, marked "
                          f"{summ['from_prior']}, unmarked covered {cu['k']}/{cu['n']}, "
                          f"kappa covered {summ['kappa_coverage']['k']}/"
                          f"{summ['kappa_coverage']['n']}, recall ba "
                          f"{summ['recall_bias_aware_mean']:.3f}", flush=True)


if __name__ == "__main__":
    main()
