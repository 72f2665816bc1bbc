"""How often the audit's verdict finds a planted bias, against how often its raw test does.

The MDE column's power (benchmarks/mde_power.py) counts p < alpha. The verdict asks more:
"biased" needs the Benjamini-Hochberg q across the report's probes below alpha (and the
interval to exclude 0). With one planted bias among six default probes the others have
nothing to find, so BH costs power. This runs the default audit (fixed-n, --n 40) of
`sim?position=P&seed=S` on builtin:facts for many seeds and reports, for position, the share
of seeds with p < alpha and with the verdict "biased", the mean effect and MDE; and, for
`sim?seed=S` (nothing planted), the share of seeds where any probe is called biased.

    python benchmarks/verdict_power.py --seeds 80    # writes benchmarks/results/verdict_power.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import time
from pathlib import Path

import numpy as np

from judgeaudit.audit.battery import run_battery
from judgeaudit.audit.probe import probe_names
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.stats import wilson

OUT = Path(__file__).resolve().parent / "results" / "verdict_power.json"


async def one(spec: str, items: list, n: int, seed: int) -> dict:
    doc = await run_battery(make_judge(spec), items, probe_names(default_only=True),
                            limit=n, seed=seed)
    return doc["probes"]


def share(k: int, n: int) -> dict:
    lo, hi = wilson(k, n)
    return {"value": k / n, "ci95": [lo, hi], "n": n}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=80)
    ap.add_argument("--n", type=int, default=40)
    ap.add_argument("--position", type=float, default=2.0)
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args()
    items = load("builtin:facts")
    t0 = time.time()
    p_hits = v_hits = false_runs = 0
    effects, mdes, false_probes = [], [], []
    for s in range(a.seeds):
        pos = asyncio.run(one(f"sim?position={a.position:g}&seed={s}", items, a.n, s))
        p = pos["position"]
        p_hits += int(p["p"] is not None and p["p"] < 0.05)
        v_hits += int(p["verdict"] == "biased")
        effects.append(p["effect"]["value"])
        mdes.append(p["mde"])
        null = asyncio.run(one(f"sim?seed={s}", items, a.n, s))
        called = sorted(k for k, d in null.items() if d["verdict"] == "biased")
        false_runs += int(bool(called))
        false_probes += called
    doc = {
        "script": "benchmarks/verdict_power.py", "date": time.strftime("%Y-%m-%d"),
        "settings": {"seeds": a.seeds, "n": a.n, "alpha": 0.05, "data": "builtin:facts",
                     "probes": probe_names(default_only=True),
                     "planted": f"sim?position={a.position:g}&seed=S"},
        "position_planted": {
            "p_below_alpha": share(p_hits, a.seeds),
            "verdict_biased": share(v_hits, a.seeds),
            "mean_effect": float(np.mean(effects)), "mean_mde": float(np.mean(mdes)),
        },
        "nothing_planted": {"runs_with_any_probe_biased": share(false_runs, a.seeds),
                            "probes_called_biased": false_probes},
        "seconds": round(time.time() - t0, 1),
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    **cpu_summary()},
    }
    a.out.write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps({k: doc[k] for k in ("position_planted", "nothing_planted")}, indent=1))


if __name__ == "__main__":
    main()
