"""How often does an audit say "not biased" when the judge is biased at the edge of the
no-bias range, and how often when it is not biased at all? The interval rule of the fixed-n
audit (`stats.paired_estimate`, `report.outcome.probe_verdict`) checked by simulation.

A probe's effect is the mean of per-item paired differences d (position: d = f - 1/2 in
{-1/2, 0, 1/2}; the shift probes: a difference of two credits, d in {-1, -1/2, 0, 1/2, 1}),
and "not biased" needs its 95% interval inside the no-bias range [-0.05, 0.05]. Read as a
test of equivalence, a planted effect of exactly 0.05 should be called "not biased" in at
most 2.5% of runs (the interval's upper limit under its effect); one of 0.1 almost never.

Scenarios (items moving independently, each with the share and size given):
- edge: the effect is 0.05, every move towards the bias (position: 10% of items pick the
  first-shown response in both orders; shift: 5% move by a whole credit, or 10% by half);
- twice the edge: the effect is 0.1, moves as above at twice the share;
- null: no bias, 10% of items move by half a credit each way (a noisy judge), or none move.
Each is run with the bootstrap interval alone (the rule before this benchmark) and with the
rule now (the exact interval of `stats.movers_ci` when fewer than `SPARSE_MOVERS` items
moved), on the same draws.

The same question for `judgeaudit compare` (`audit.compare.paired_change`, `classify`): how
often is a change of exactly the margin (0.05) called "no change", which needs the change's
95% interval inside [-0.05, 0.05]? There each item's change d = (value in B) - (value in A)
lies in [-(span A + span B), span A + span B], and the scenarios plant the changes directly
(position: 10% of items go from no preference to first-shown in both orders, +1/2 each; a
shift probe: 5% move by +1, or 10% by +1/2), with the same nulls. Before: the bootstrap
alone (results without `span`); now: both runs record their span.

    python benchmarks/not_biased_edge.py          # writes results/not_biased_edge.json (~10 min)
    python benchmarks/not_biased_edge.py --reps 200 --out /tmp/nb.json   # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from judgeaudit.audit.compare import classify, paired_change
from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.report.outcome import probe_verdict
from judgeaudit.stats import SPARSE_MOVERS, paired_estimate

NO_BIAS = (-0.05, 0.05)
NS = (10, 20, 40, 80, 200)
# name: (values of d, their probabilities, span of d, true effect)
SCENARIOS: dict[str, tuple[list[float], list[float], float, float]] = {
    "position edge (10% first-shown both times)": ([0.0, 0.5], [0.9, 0.1], 0.5, 0.05),
    "shift edge (5% move +1)": ([0.0, 1.0], [0.95, 0.05], 1.0, 0.05),
    "shift edge (10% move +1/2)": ([0.0, 0.5], [0.9, 0.1], 1.0, 0.05),
    "position twice the edge (20% first-shown both times)": ([0.0, 0.5], [0.8, 0.2], 0.5, 0.1),
    "shift twice the edge (20% move +1/2)": ([0.0, 0.5], [0.8, 0.2], 1.0, 0.1),
    "position null (10% move, both ways)": ([-0.5, 0.0, 0.5], [0.05, 0.9, 0.05], 0.5, 0.0),
    "shift null (10% move by 1/2, both ways)": ([-0.5, 0.0, 0.5], [0.05, 0.9, 0.05], 1.0, 0.0),
    "shift null (none move)": ([0.0], [1.0], 1.0, 0.0),
}


def not_biased_rates(values: list[float], probs: list[float], span: float, n: int,
                     reps: int, rng: np.random.Generator) -> dict[str, float]:
    """Share of `reps` draws called not_biased by the bootstrap alone and by the rule now."""
    before = now = 0
    for r in range(reps):
        d = rng.choice(values, size=n, p=probs)
        for key, s in (("before", None), ("now", span)):
            est = paired_estimate(d, seed=r, span=s)
            hit = probe_verdict(est.value, est.ci95, None, NO_BIAS, 0.05) == "not_biased"
            if key == "before":
                before += hit
            else:
                now += hit
    return {"before": before / reps, "now": now / reps}


def no_change_rates(values: list[float], probs: list[float], span: float, n: int,
                    reps: int, rng: np.random.Generator) -> dict[str, float]:
    """Share of `reps` draws of per-item changes that `compare` calls no_change, and improved
    or worse ("flagged"), without the runs' spans (before) and with them (now; the bound of
    a change is span A + span B = 2 x span)."""
    hits = {"before": 0, "now": 0, "flagged_before": 0, "flagged_now": 0}
    ids = [f"i{k}" for k in range(n)]
    va = dict.fromkeys(ids, 0.0)
    for r in range(reps):
        vb = dict(zip(ids, rng.choice(values, size=n, p=probs).tolist(), strict=True))
        for key, s in (("before", None), ("now", 2 * span)):
            ch = paired_change(va, vb, seed=r, span=s)
            verdict = classify(ch, ch["p"], 0.05, NO_BIAS[1])[0]  # one probe: q = p
            hits[key] += verdict == "no_change"
            hits[f"flagged_{key}"] += verdict in ("improved", "worse")
    return {k: v / reps for k, v in hits.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "not_biased_edge.json")
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    rows = []
    for name, (values, probs, span, effect) in SCENARIOS.items():
        for n in NS:
            r = not_biased_rates(values, probs, span, n, a.reps, rng)
            rows.append({"scenario": name, "effect": effect, "span": span, "n": n, **r})
            print(f"{name:55s} n={n:3d}  not biased: before {r['before']:.3f}  "
                  f"now {r['now']:.3f}", flush=True)
    compare_rows = []
    for name, (values, probs, span, effect) in SCENARIOS.items():
        for n in NS:
            r = no_change_rates(values, probs, span, n, a.reps, rng)
            compare_rows.append({"scenario": name, "change": effect, "span_each_run": span,
                                 "n": n, **r})
            print(f"compare {name:47s} n={n:3d}  no change: before {r['before']:.3f}  "
                  f"now {r['now']:.3f}  (flagged {r['flagged_before']:.3f} / "
                  f"{r['flagged_now']:.3f})", flush=True)
    doc = {
        "what": "share of runs whose probe verdict is not_biased (95% interval inside "
                f"{list(NO_BIAS)}), by the bootstrap interval alone (before) and by the rule "
                f"now (exact movers interval below {SPARSE_MOVERS} movers)",
        "reps": a.reps, "seed": a.seed, "sparse_movers": SPARSE_MOVERS,
        "mc_se_at_0.025": (0.025 * 0.975 / a.reps) ** 0.5,
        # The rates are seeded draws, the same on any CPU; only the seconds depend on it.
        "seconds": time.perf_counter() - t0, "python": platform.python_version(),
        "machine": {**cpu_summary(), "loadavg_start": load_start,
                    "loadavg_end": os.getloadavg()},
        "rows": rows,
        "compare_what": "share of runs that judgeaudit compare calls no_change (the change's "
                        f"95% interval inside {list(NO_BIAS)}) and improved/worse (flagged), "
                        "the planted per-item changes being the scenario's values; before: "
                        "no span recorded (bootstrap alone), now: both runs record theirs",
        "compare_rows": compare_rows,
    }
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
