"""How often the default audit calls a planted bias "biased": `sim:biased` (every default
probe's bias planted) at n = 40 over 20 judge seeds, with the bounded score interval's cutoff
at 1.96 and at the current 1.98 (`stats.intervals.SCORE_WIDEN`), side by side. Writes
benchmarks/results/biased_detection.json. About a minute on two cores (sim judge, no cache).

    python benchmarks/biased_detection.py
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import judgeaudit
from judgeaudit.stats import intervals

SEEDS = range(20)
OUT = Path(__file__).parent / "results" / "biased_detection.json"


def count(widen: float) -> dict:
    intervals.SCORE_WIDEN = widen
    per: collections.Counter[str] = collections.Counter()
    n_probes = 0
    for s in SEEDS:
        res = judgeaudit.audit(f"sim:biased?seed={s}", "builtin:facts", n=40, cache=False)
        per.update(res.summary()["biased"])
        n_probes += len(res["probes"])
    return {"biased": sum(per.values()), "of": n_probes, "per_probe": dict(sorted(per.items()))}


def main() -> None:
    current = intervals.SCORE_WIDEN
    rows = {"1.96": count(1.0), "1.98": count(current)}
    intervals.SCORE_WIDEN = current
    doc = {"what": "biased verdicts of sim:biased (all default probes planted), builtin:facts, "
                   "n = 40, judge seeds 0-19, by the bounded score interval's cutoff",
           "rows": rows}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
