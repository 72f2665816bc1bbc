"""Issue 4, acceptance 2 at the quality scale where acceptance 1 holds (0.25 logits per net
true statement: naive recall plateaus near 0.5, benchmarks/rank_plateau.py): recall@5 of the
acquisition rules at B = 60, 120, 200 for both models, with paired tests, and the 2x2
(model x acquisition) ablation with its interaction (super-additivity) per budget.

Run by hand:  PYTHONPATH=src python benchmarks/rank_efficiency_scale.py [--seeds 100]
Writes benchmarks/results/rank_efficiency_scale.json.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from judgeaudit.rank.evaluate import controlled_sim_case, rank_eval  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BUDGETS = [60, 120, 200]
RULES = ["topk", "global", "roundrobin"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--rules", default=",".join(RULES))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" /
                                         "rank_efficiency_scale.json"))
    args = ap.parse_args()
    t0 = time.time()
    case = controlled_sim_case(c=1.0, kappa=0.3, scale=args.scale)
    rules = args.rules.split(",")
    res = rank_eval({f"sim(c=1,kappa=0.3,scale={args.scale})": case}, BUDGETS, rules,
                    list(range(args.seeds)))
    doc = {"benchmark": "rank_efficiency_scale",
           "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "setup": {"scale": args.scale, "c": 1.0, "kappa": 0.3, "seeds": args.seeds,
                     "rules": rules, "budgets": BUDGETS},
           **{k: res[k] for k in ("recall", "ablation", "full_data") if k in res},
           "paired_tests": res["tests"],
           "elapsed_s": time.time() - t0}
    out = Path(args.out)
    out.write_text(json.dumps(doc, indent=1, default=float) + "\n")
    for m, rules in res["recall"].items():
        for rule, cells in rules.items():
            print(f"{m:10s} {rule:10s} " + "  ".join(
                f"B={b}: {cells[b]['mean']:.3f}±{cells[b]['se']:.3f}" for b in BUDGETS))
    for b, a in res["ablation"].items():
        print(f"B={b}: interaction {a['interaction']['mean']:+.3f} "
              f"(p={a['interaction_test']['p_t']:.3g})")
    print(f"wrote {out} in {doc['elapsed_s']:.0f} s")


if __name__ == "__main__":
    main()
