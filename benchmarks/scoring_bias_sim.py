"""Acceptance 1 of issue 5 by simulation: planted scoring-prompt sensitivities are recovered,
and an untouched judge moves only as much as its own repeat noise.

For each seed, a sim rubric judge scores builtin:graded (300 items) under every template,
once with planted order_bias / id_bias / ref_pull (fresh noise per prompt, as a real judge)
and once untouched. Truth for the shifts is the sim's exact expected score difference (normal
noise, rounding and clipping integrated out), so the recovered shift is compared with the
number the planted model implies, not with the raw coefficient.

    python benchmarks/scoring_bias_sim.py --seeds 20   # writes benchmarks/results/...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path
from statistics import NormalDist

import numpy as np

from judgeaudit.data import load
from judgeaudit.judges.pointwise import RubricJudge
from judgeaudit.llm import Client, make_provider
from judgeaudit.scoring.perturbations import resolve
from judgeaudit.scoring.references import sibling_references
from judgeaudit.scoring.run import run_scoring_bias

PLANTED = {"quality": "6", "order_bias": "0.8", "id_bias": "-0.5", "ref_pull": "0.4"}
SHIFTED = ("order_desc", "ids_letters", "ids_roman", "ref_1", "ref_3", "ref_5")


def expected_score(mean: float, sd: float) -> float:
    cdf = NormalDist().cdf
    p_le = [cdf((j + 0.5 - mean) / sd) for j in range(1, 5)] + [1.0]
    probs = [p_le[0]] + [p_le[j] - p_le[j - 1] for j in range(1, 5)]
    return sum(k * p for k, p in zip(range(1, 6), probs, strict=True))


def exact_shift(judge: RubricJudge, items, refs, name: str) -> float:
    prov = judge.client.provider
    pert = {p.name: p for p in resolve(None)}
    sd = prov.values["score_noise"]
    d = [expected_score(prov.score_mean(judge.request(it, 0, pert[name].variant_for(it, refs))
                                        .meta), sd)
         - expected_score(prov.score_mean(judge.request(
             it, 0, pert["baseline"].variant_for(it, refs)).meta), sd) for it in items]
    return float(np.mean(d))


def implied_pull(judge: RubricJudge, items, refs) -> float:
    """The within-item slope on k of the exact expected scores under Ref-1..5: what the
    planted ref_pull amounts to after rounding and clipping to 1..5."""
    prov = judge.client.provider
    pert = {p.name: p for p in resolve(None)}
    sd = prov.values["score_noise"]
    ks = np.arange(1, 6, dtype=float)
    sxy = sxx = 0.0
    for it in items:
        e = np.array([expected_score(prov.score_mean(judge.request(
            it, 0, pert[f"ref_{k}"].variant_for(it, refs)).meta), sd) for k in range(1, 6)])
        sxy += float(((ks - ks.mean()) * (e - e.mean())).sum())
        sxx += float(((ks - ks.mean()) ** 2).sum())
    return sxy / sxx


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "scoring_bias_sim.json")
    args = ap.parse_args()
    items = load("builtin:graded")
    refs = sibling_references(items)
    perts = resolve(None)
    t0 = time.perf_counter()
    rows = []
    for seed in range(args.seeds):
        row: dict = {"seed": seed}
        for label, params in (("planted", PLANTED), ("untouched", {"quality": "6"})):
            judge = RubricJudge(Client(make_provider("sim", "default",
                                                     {**params, "seed": str(seed)})),
                                "pointwise_scoring_v1")
            res = asyncio.run(run_scoring_bias(judge, items, perts, references=refs,
                                               repeats=2, n_boot=1000, seed=seed))
            p = res["perturbations"]
            row[label] = {
                "repeat_fp": p["baseline"]["fp"]["value"],
                "mean_fp": float(np.mean([e["fp"]["value"] for n, e in p.items()
                                          if n != "baseline"])),
                "ref_pull": res["reference_pull"],
                "ref_pull_implied": implied_pull(judge, items, refs) if seed == 0 else None,
                "shifts": {n: {"estimate": p[n]["shift"], "truth": exact_shift(
                    judge, items, refs, n)} for n in SHIFTED},
            }
        rows.append(row)
    summary: dict = {}
    for label in ("planted", "untouched"):
        cover = {n: float(np.mean([
            r[label]["shifts"][n]["estimate"]["ci95"][0] <= r[label]["shifts"][n]["truth"]
            <= r[label]["shifts"][n]["estimate"]["ci95"][1] for r in rows])) for n in SHIFTED}
        summary[label] = {
            "mean_repeat_fp": float(np.mean([r[label]["repeat_fp"] for r in rows])),
            "mean_perturbed_fp": float(np.mean([r[label]["mean_fp"] for r in rows])),
            "ref_pull_mean": float(np.mean([r[label]["ref_pull"]["value"] for r in rows])),
            "ref_pull_implied": rows[0][label]["ref_pull_implied"],
            "ref_pull_ci_coverage": float(np.mean([
                r[label]["ref_pull"]["ci95"][0] <= rows[0][label]["ref_pull_implied"]
                <= r[label]["ref_pull"]["ci95"][1] for r in rows])),
            "shift_truth": {n: rows[0][label]["shifts"][n]["truth"] for n in SHIFTED},
            "shift_mean_estimate": {n: float(np.mean([r[label]["shifts"][n]["estimate"]["value"]
                                                      for r in rows])) for n in SHIFTED},
            "shift_ci_coverage": cover,
        }
    doc = {"planted": PLANTED, "n_items": len(items), "seeds": args.seeds,
           "seconds": time.perf_counter() - t0, "summary": summary, "runs": rows}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({"seconds": doc["seconds"], "summary": summary}, indent=1))


if __name__ == "__main__":
    main()
