"""The trusted-anchor gate on simulated length pools (issue "Real data in, benchmark-true
numbers out", outcome 8): off where length legitimately tracks quality, on where the judge
prefers longer answers independent of quality.

Run by hand, in parts (each well under 3 minutes on a shared 2-core machine), then report:
    PYTHONPATH=src python benchmarks/rank_gate.py run --pool legitimate --seeds 0-14
    PYTHONPATH=src python benchmarks/rank_gate.py run --pool spurious --seeds 0-14
    ...
    PYTHONPATH=src python benchmarks/rank_gate.py report
`run` appends one record per seed to out/rank_gate/<pool>.jsonl (a seed already there is
skipped); `report` writes benchmarks/results/rank_gate.json from every record.

Per seed s (judgeaudit.rank.simulate.GATE_POOLS; --pool also takes the sensitivity pools):
- the controlled pool `builtin:controlled?seed=s&n=30&k=5&design=D` (quality = #true -
  #false statements, exact top-5). legitimate: the classic design, where longer answers
  carry more true statements (corr(quality, length) ~0.5); spurious: the balanced design,
  where length is unrelated to quality (|corr| < 0.12);
- the `sim` judge `sim?quality=1&length=L&position=0.3&seed=s` (1 logit per net true
  statement, L logits per log-ratio of word counts, 0.3 for the answer shown first) on
  every ordered pair (870 calls through judgeaudit.rank.live.full_matrix, no cache).
  legitimate: L = 0 (no length bias beyond what quality brings); spurious: L = 2;
- both models fitted as `judgeaudit rank` fits them by default (--lam auto: empirical-Bayes
  prior scale; tau = 1; covariates length,markdown, markdown constant and left out), on
  all 870 comparisons ("all") and on a random budget of 200 of them ("budget200");
- the gate (judgeaudit.rank.gate.anchor_gate) with n trusted pairs, n in 10, 20, 30, 50:
  random pairs of items with different true quality, labelled by it. For comparison the
  same fits under the old rule (on iff the corrected ranking orders at least as many trusted
  pairs correctly) and under "interval only" (trusted-pair interval, else the bias term's
  interval alone, without the lean condition).
The acceptance figure: n = 30 trusted pairs, all comparisons; rates with Wilson intervals.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse  # noqa: E402
import asyncio  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from judgeaudit.judges import make_judge  # noqa: E402
from judgeaudit.rank.fitting import fit_model  # noqa: E402
from judgeaudit.rank.gate import RULE, anchor_gate, trusted_agreement  # noqa: E402
from judgeaudit.rank.live import full_matrix, select_covariates  # noqa: E402
from judgeaudit.rank.membership import recall_at_k  # noqa: E402
from judgeaudit.rank.pool import load_pool  # noqa: E402
from judgeaudit.rank.simulate import (  # noqa: E402
    GATE_POOLS,
    gate_pool_spec,
    sim_judge_spec,
    trusted_pairs,
)
from judgeaudit.stats.intervals import wilson  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "rank_gate.json"
WORK = ROOT / "out" / "rank_gate"
N_ITEMS, K, BUDGET = 30, 5, 200
N_TRUSTED = (10, 20, 30, 50)
PRIMARY = {"data": "all", "n_trusted": 30}
COVARIATES = ("length", "markdown")  # the rank command's default
# the acceptance pools, and the sensitivity pools (weaker / stronger length bias, and a pool
# where length both tracks quality and is rewarded beyond it)
POOLS: dict[str, dict] = {
    **GATE_POOLS,
    "spurious_length1": {"design": "balanced", "length": 1.0},
    "spurious_length3": {"design": "balanced", "length": 3.0},
    "mixed": {"design": "classic", "length": 2.0},
}
TARGET = {"legitimate": ("off", 0.9), "spurious": ("on", 0.9)}


def parse_seeds(text: str) -> list[int]:
    if "-" in text:
        a, b = text.split("-", 1)
        return list(range(int(a), int(b) + 1))
    return [int(t) for t in text.split(",")]


async def _matrix(pool, spec: str):
    bundle = make_judge(spec, cache=None)
    try:
        return await full_matrix(bundle, pool)
    finally:
        await bundle.aclose()


def one_seed(name: str, seed: int) -> dict:
    cfg = POOLS[name]
    pool = load_pool(gate_pool_spec(cfg["design"], seed, N_ITEMS, K))
    judge = sim_judge_spec(cfg["length"], seed)
    mat = asyncio.run(_matrix(pool, judge))
    X, info, dropped = select_covariates(pool, COVARIATES)
    names = [c.name for c in info]
    allc = mat.comparisons()
    rng = np.random.default_rng(seed + 7000)
    data = {"all": allc, "budget200": allc[np.sort(rng.choice(len(allc), BUDGET,
                                                              replace=False))]}
    q = pool.quality
    true = pool.true_topk(K)
    li = names.index("length")
    rec: dict = {"pool": name, "seed": seed, "judge": judge, "items": gate_pool_spec(
        cfg["design"], seed, N_ITEMS, K), "covariates": names, "dropped": dropped,
        "corr_quality_length": float(np.corrcoef(q, X[:, li])[0, 1]),
        "n_invalid": mat.n_invalid, "data": {}}
    for dname, comps in data.items():
        fn = fit_model("naive", pool.n_items, comps, lam=1.0, eb_lam=True)
        fb = fit_model("bias_aware", pool.n_items, comps, X, lam=1.0, tau=1.0, eb_lam=True)
        lo, hi = fb.c_interval()[li]
        d: dict = {"n_comparisons": int(len(comps)), "lam": [fn.lam, fb.lam],
                   "c_length": {"estimate": float(fb.c[li]), "se": float(fb.c_se[li]),
                                "lo": float(lo), "hi": float(hi)},
                   "recall": {"naive": recall_at_k(fn.theta, true),
                              "corrected": recall_at_k(fb.theta, true)},
                   "gate": {}}
        for nt in N_TRUSTED:
            t = trusted_pairs(q, nt, seed=seed * 100 + nt)
            g = anchor_gate(fn, fb, t, names=names)
            diff = g.difference
            evident = any(b["excludes_zero"] for b in g.bias.values())
            ci_only = (diff["lo"] > 0) or (not diff["hi"] < 0 and evident)
            d["gate"][str(nt)] = {
                "decision": g.decision, "basis": g.basis,
                "difference": [diff["estimate"], diff["lo"], diff["hi"], diff["se"]],
                "favour": [diff["n_favour_corrected"], diff["n_favour_naive"]],
                "agreement": [g.agreement_naive["estimate"],
                              g.agreement_corrected["estimate"]],
                "old_rule_on": bool(trusted_agreement(fb.theta, t)
                                    >= trusted_agreement(fn.theta, t)),
                "interval_only_on": bool(ci_only),
                "recall_gated": recall_at_k(g.choose(fn, fb).theta, true),
                "reason": g.reason if nt == PRIMARY["n_trusted"] else None}
        rec["data"][dname] = d
    return rec


def run(args: argparse.Namespace) -> None:
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"{args.pool}.jsonl"
    done = set()
    if path.exists():
        done = {json.loads(ln)["seed"] for ln in path.read_text().splitlines() if ln.strip()}
    t0 = time.time()
    for seed in parse_seeds(args.seeds):
        if seed in done:
            continue
        t = time.time()
        rec = one_seed(args.pool, seed)
        rec["seconds"] = time.time() - t
        with path.open("a") as f:
            f.write(json.dumps(rec) + "\n")
        g = rec["data"]["all"]["gate"][str(PRIMARY["n_trusted"])]
        print(f"{args.pool} seed {seed}: {g['decision']} ({g['basis']}) "
              f"c = {rec['data']['all']['c_length']['estimate']:+.2f} "
              f"{rec['seconds']:.1f} s", flush=True)
    print(f"{time.time() - t0:.0f} s")


def _rate(flags: list[bool]) -> dict:
    n, s = len(flags), int(sum(flags))
    lo, hi = wilson(s, n)
    return {"rate": s / n if n else None, "lo": lo, "hi": hi, "k": s, "n": n}


def _mean(v: list[float]) -> dict:
    a = np.asarray(v, float)
    return {"mean": float(a.mean()), "se": float(a.std(ddof=1) / np.sqrt(a.size)),
            "n": int(a.size)}


def report(args: argparse.Namespace) -> None:
    recs: dict[str, list[dict]] = {}
    for path in sorted(WORK.glob("*.jsonl")):
        rows = {}
        for ln in path.read_text().splitlines():
            if ln.strip():
                r = json.loads(ln)
                rows[r["seed"]] = r
        recs[path.stem] = [rows[s] for s in sorted(rows)]
    pools: dict = {}
    for name, rows in recs.items():
        cfg = POOLS[name]
        out: dict = {"design": cfg["design"], "sim_length": cfg["length"],
                     "n_seeds": len(rows), "seeds": [r["seed"] for r in rows],
                     "corr_quality_length": _mean([r["corr_quality_length"] for r in rows]),
                     "data": {}}
        for dname in ("all", "budget200"):
            ds = [r["data"][dname] for r in rows]
            c = [d["c_length"] for d in ds]
            dd: dict = {
                "c_length": {"mean": float(np.mean([x["estimate"] for x in c])),
                             "se_mean": float(np.mean([x["se"] for x in c])),
                             "interval_excludes_zero": _rate([x["lo"] > 0 or x["hi"] < 0
                                                              for x in c])},
                "recall_naive": _mean([d["recall"]["naive"] for d in ds]),
                "recall_corrected": _mean([d["recall"]["corrected"] for d in ds]),
                "by_n_trusted": {}}
            for nt in N_TRUSTED:
                gs = [d["gate"][str(nt)] for d in ds]
                dd["by_n_trusted"][str(nt)] = {
                    "on": _rate([g["decision"] == "on" for g in gs]),
                    "basis": dict(Counter(f"{g['decision']}:{g['basis']}" for g in gs)),
                    "old_rule_on": _rate([g["old_rule_on"] for g in gs]),
                    "interval_only_on": _rate([g["interval_only_on"] for g in gs]),
                    "recall_gated": _mean([g["recall_gated"] for g in gs])}
            out["data"][dname] = dd
        prim = [(r["seed"], r["data"][PRIMARY["data"]]["c_length"],
                 r["data"][PRIMARY["data"]]["gate"][str(PRIMARY["n_trusted"])]) for r in rows]
        out["per_seed"] = [[s, g["decision"], g["basis"], *(round(v, 4) for v in g["difference"]),
                            *(round(c[k], 4) for k in ("estimate", "lo", "hi"))]
                           for s, c, g in prim]
        out["example_reasons"] = {f"seed {s}": g["reason"] for s, _, g in prim[:3]}
        pools[name] = out
    acceptance = {}
    for name, (want, target) in TARGET.items():
        if name not in pools:
            continue
        cell = pools[name]["data"][PRIMARY["data"]]["by_n_trusted"][str(PRIMARY["n_trusted"])]
        on = cell["on"]
        r = on if want == "on" else {**on, "rate": 1 - on["rate"], "lo": 1 - on["hi"],
                                     "hi": 1 - on["lo"], "k": on["n"] - on["k"]}
        acceptance[name] = {"correction": want, "rate": r, "target": f">= {target}",
                            "met": r["rate"] >= target, "n_seeds": on["n"]}
    doc = {
        "schema": "judgeaudit.rank_gate/1",
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {"python": platform.python_version(), "cores": os.cpu_count()},
        "settings": {
            "pool": f"builtin:controlled?seed=SEED&n={N_ITEMS}&k={K}&design=DESIGN",
            "judge": "sim?quality=1&length=L&position=0.3&seed=SEED, every ordered pair once "
                     f"({N_ITEMS * (N_ITEMS - 1)} calls), no cache",
            "pools": {n: {"design": c["design"], "sim_length": c["length"]}
                      for n, c in POOLS.items()},
            "fits": "judgeaudit rank defaults: --lam auto (empirical-Bayes prior scale), "
                    "tau 1, covariates length,markdown (markdown constant, left out)",
            "data": {"all": f"all {N_ITEMS * (N_ITEMS - 1)} comparisons",
                     "budget200": f"{BUDGET} of them at random (seed + 7000)"},
            "trusted": "judgeaudit.rank.simulate.trusted_pairs(quality, n, seed=100 * SEED + "
                       "n): random pairs with different true quality",
            "n_trusted": list(N_TRUSTED), "primary": PRIMARY, "level": 0.95,
            "per_seed": ["seed", "decision", "basis", "D", "D_lo", "D_hi", "D_se",
                         "c_length", "c_lo", "c_hi"],
            "rates": "Wilson 95% intervals; recall@5 means with standard errors",
            "old_rule": "on iff the corrected ranking orders at least as many trusted pairs "
                        "correctly as the naive one (ties go to the correction)",
            "interval_only": "trusted-pair interval decides when it excludes 0, else on iff "
                             "a bias term's 95% interval excludes 0 (no lean condition)"},
        "rule": RULE,
        "acceptance": acceptance,
        "pools": pools,
        "seconds": float(sum(r.get("seconds", 0.0) for rows in recs.values() for r in rows)),
    }
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({"acceptance": acceptance}, indent=1))
    for name, p in pools.items():
        for dname, d in p["data"].items():
            print(name, dname, " ".join(
                f"n={nt}: on {c['on']['rate']:.2f} (old {c['old_rule_on']['rate']:.2f}, "
                f"interval-only {c['interval_only_on']['rate']:.2f})"
                for nt, c in d["by_n_trusted"].items()))
    print(f"wrote {OUT}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--pool", choices=sorted(POOLS), required=True)
    r.add_argument("--seeds", required=True, help="a range 0-14 or a list 0,3,7")
    sub.add_parser("report")
    args = ap.parse_args()
    run(args) if args.cmd == "run" else report(args)


if __name__ == "__main__":
    main()
