"""`audit --length-control` on simulated judges with planted biases, across seeds.

The probes that add text to a response (authority, injection, distraction, fallacy,
sycophancy, the sentiments, diversity) lengthen it, so a judge that only prefers longer
answers moves toward them: the CALM shift alone calls it biased on each. For each seed S the
same builtin:facts?seed=S items (first 150 usable per probe) are audited with the control by

- length only: `sim?length=1&seed=S` (truth: no cue bias; only length);
- length and authority: `sim?length=1&authority=1&seed=S` (truth: authority beyond length);
- nothing planted: `sim?seed=S`.

Per judge and probe: the share of seeds called biased (the CALM shift, as before), the
share whose effect beyond length (`beyond_length`) has its 95% interval above 0 or below 0,
the share where it is shown (`beyond_shown`: that interval excludes 0 and its p survives
Benjamini-Hochberg across the run's controls), and the share named by the length note ("may
be length": biased, not shown). Goals: for the length-only judge
the beyond-length interval excludes 0 in about 5% of seeds (per probe), though the shift is
"biased" in many; for the authority judge it is above 0 in most seeds.

    python benchmarks/length_control_sim.py --seeds 50

writes benchmarks/results/length_control_sim.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from judgeaudit.audit.battery import run_battery
from judgeaudit.audit.length_control import beyond_shown
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.stats import wilson

PROBES = ["verbosity", "authority", "injection", "distraction", "fallacy", "sycophancy",
          "sentiment_cheerful", "sentiment_angry", "sentiment_fearful", "diversity"]
JUDGES = {"length_only": "sim?length=1&seed={s}",
          "length_and_authority": "sim?length=1&authority=1&seed={s}",
          "nothing_planted": "sim?seed={s}"}
N = 150


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {"count": k, "of": n, "rate": k / n, "ci95": [lo, hi]}


async def one_seed(seed: int) -> dict[str, Any]:
    items = load(f"builtin:facts?seed={seed}")
    out: dict[str, Any] = {"seed": seed}
    for key, spec in JUDGES.items():
        res = await run_battery(make_judge(spec.format(s=seed)), items, PROBES, seed=seed,
                                limit=N, length_control=True)
        shown = beyond_shown(res["probes"], 0.05)
        rows = {}
        for name, p in res["probes"].items():
            lc = (p.get("rates") or {}).get("length_control")
            if lc is None:
                continue
            lo, hi = lc["beyond_length"]["ci95"]
            rows[name] = {"verdict": p["verdict"], "effect": p["effect"]["value"],
                          "beyond": lc["beyond_length"]["value"], "beyond_ci95": [lo, hi],
                          "alone": lc["shift"]["value"],
                          "words": lc["words_added"]["mean"],
                          "shown": name in shown,
                          "named": any(n.startswith("length:") for n in p["notes"])}
        out[key] = rows
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {}
    for key in JUDGES:
        per = {}
        for name in rows[0][key]:
            r = [row[key][name] for row in rows]
            per[name] = {
                "biased": rate(sum(x["verdict"] == "biased" for x in r), n),
                "beyond_above_0": rate(sum(x["beyond_ci95"][0] > 0 for x in r), n),
                "beyond_below_0": rate(sum(x["beyond_ci95"][1] < 0 for x in r), n),
                "shown_beyond_length": rate(sum(x["shown"] for x in r), n),
                "named_may_be_length": rate(sum(x["named"] for x in r), n),
                "mean_effect": sum(x["effect"] for x in r) / n,
                "mean_beyond": sum(x["beyond"] for x in r) / n,
                "mean_alone": sum(x["alone"] for x in r) / n,
                "mean_words_added": sum(x["words"] for x in r) / n,
            }
        out[key] = {"spec": JUDGES[key].format(s="S"), "probes": per}
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "length_control_sim.json")
    args = ap.parse_args()
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    rows = []
    for seed in range(args.seeds):
        rows.append(asyncio.run(one_seed(seed)))
        if len(rows) % 10 == 0:
            print(f"{len(rows)}/{args.seeds} seeds, {time.perf_counter() - t0:.0f} s", flush=True)
    doc = {
        "benchmark": "length_control_sim",
        "command": "python benchmarks/length_control_sim.py " + " ".join(sys.argv[1:]),
        "data": f"builtin:facts?seed=S, the first {N} usable pairs per probe",
        "probes": PROBES, "alpha": 0.05,
        "summary": summarise(rows),
        "per_seed": rows,
        "seconds": time.perf_counter() - t0,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    **cpu_summary(), "loadavg_start": load_start,
                    "loadavg_end": os.getloadavg()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(doc["summary"], indent=1)[:6000])


if __name__ == "__main__":
    main()
