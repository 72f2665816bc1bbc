"""`judgeaudit compare` on simulated judges with planted changes, across seeds.

For each seed S, two audits (the default probes) of the same builtin:facts?seed=S items (all
212) are compared, paired by item id as audits write them (each probe's per-item
differences, `per_item`, checked to average to every stored effect, and their bound, `span`)
and unpaired (the per-item values removed, as in results from before they were written).

- planted drop: sim position 1.0 (A) -> 0.2 (B), same sim seed S (the same random draws, so
  only the planted term moves verdicts). Truth: position effect (sigmoid(3 + k) +
  sigmoid(k - 3)) / 2 - 0.5 = +0.051 -> +0.009; nothing else changes. Reported: the share
  of seeds where position is "improved", and any other verdict of "improved"/"worse".
- identical judges: sim:biased (position, length, markdown, authority, bandwagon, injection
  planted) with seed 2S (A) and 2S + 1 (B): the same judge, fresh draws. Nothing changes, so
  any "improved" or "worse" is a false flag; the goal is no flag in >= 95% of seeds.

    python benchmarks/compare_sim.py --seeds 100     # writes benchmarks/results/compare_sim.json

`--adaptive` audits both runs with `audit --adaptive` (default settings) instead: each probe
stops at a data-dependent n, so compare matches the items both runs used (a prefix of the
same seeded order) and its fixed-n paired test meets optional stopping. The same two goals
are checked (writes benchmarks/results/compare_sim_adaptive.json):

    python benchmarks/compare_sim.py --seeds 200 --adaptive
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from judgeaudit.audit import battery
from judgeaudit.audit.adaptive import run_adaptive
from judgeaudit.audit.compare import compare
from judgeaudit.audit.probe import probe_names
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.stats import wilson

PROBES = probe_names(default_only=True)
DROP = ("sim?position=1.0&seed={s}", "sim?position=0.2&seed={s}")
SAME = ("sim:biased?seed={a}", "sim:biased?seed={b}")


def sigmoid(x: float) -> float:
    return 1 / (1 + math.exp(-x))


def position_truth(kappa: float, quality: float = 3.0) -> float:
    """Expected position effect of a sim judge on items with a better response (noise 1)."""
    return (sigmoid(quality + kappa) + sigmoid(kappa - quality)) / 2 - 0.5


ADAPTIVE = False  # --adaptive: audit with run_adaptive (each probe stops on its own)


async def audit(spec: str, items, seed: int) -> dict[str, Any]:
    data_spec = f"builtin:facts?seed={seed}"
    if ADAPTIVE:
        res = await run_adaptive(make_judge(spec), items, PROBES, seed=seed,
                                 data_spec=data_spec)
    else:
        res = await battery.run_battery(make_judge(spec), items, PROBES, seed=seed,
                                        data_spec=data_spec)
    for name, p in res["probes"].items():
        vals = p["per_item"]
        assert len(vals) == p["n"], (name, len(vals), p["n"])
        if vals:
            mean = sum(vals.values()) / len(vals)
            assert abs(mean - p["effect"]["value"]) < 1e-9, (name, mean, p["effect"])
    return res


def unpaired(doc: dict[str, Any]) -> dict[str, Any]:
    doc = json.loads(json.dumps(doc))
    for p in doc["probes"].values():
        p.pop("per_item", None)
    return doc


def rate(k: int, n: int) -> dict[str, Any]:
    lo, hi = wilson(k, n)
    return {"count": k, "of": n, "rate": k / n, "ci95": [lo, hi]}


async def one_seed(seed: int, parts: list[str]) -> dict[str, Any]:
    items = load(f"builtin:facts?seed={seed}")
    out: dict[str, Any] = {"seed": seed}
    if "drop" in parts:
        a = await audit(DROP[0].format(s=seed), items, seed)
        b = await audit(DROP[1].format(s=seed), items, seed)
        out["drop"] = {}
        for how, pair in (("paired", (a, b)), ("unpaired", (unpaired(a), unpaired(b)))):
            res = compare(*pair, seed=seed)
            pos = res["probes"]["position"]
            assert pos["pairing"] == how
            out["drop"][how] = {
                "position": {k: pos[k] for k in ("verdict", "p", "q")} | {
                    "change": pos["change"]["value"], "ci95": pos["change"]["ci95"]},
                "other_flags": {n: p["verdict"] for n, p in res["probes"].items()
                                if n != "position" and p["verdict"] in ("improved", "worse")},
            }
    if "same" in parts:
        a = await audit(SAME[0].format(a=2 * seed), items, seed)
        b = await audit(SAME[1].format(b=2 * seed + 1), items, seed)
        out["same"] = {}
        for how, pair in (("paired", (a, b)), ("unpaired", (unpaired(a), unpaired(b)))):
            res = compare(*pair, seed=seed)
            out["same"][how] = {
                "matched": {n: p.get("items", {}).get("n_matched")
                            for n, p in res["probes"].items()},
                "flags": {n: p["verdict"] for n, p in res["probes"].items()
                          if p["verdict"] in ("improved", "worse")},
                "verdicts": {n: p["verdict"] for n, p in res["probes"].items()},
                "ci_width": {n: p["change"]["ci95"][1] - p["change"]["ci95"][0]
                             for n, p in res["probes"].items()
                             if None not in p["change"]["ci95"]},
            }
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    drop = [r["drop"] for r in rows if "drop" in r]
    if drop:
        n = len(drop)
        out["planted_drop"] = {
            "a": DROP[0].format(s="S"), "b": DROP[1].format(s="S"), "seeds": n,
            "truth": {"position_a": position_truth(1.0), "position_b": position_truth(0.2),
                      "change": position_truth(0.2) - position_truth(1.0),
                      "other_probes": "no change"},
        }
        for how in ("paired", "unpaired"):
            pos = [d[how]["position"] for d in drop]
            counts = {v: sum(p["verdict"] == v for p in pos)
                      for v in ("improved", "worse", "no_change", "underpowered")}
            out["planted_drop"][how] = {
                "position_improved": rate(counts["improved"], n),
                "position_verdicts": counts,
                "mean_change": sum(p["change"] for p in pos) / n,
                "mean_ci_width": sum(p["ci95"][1] - p["ci95"][0] for p in pos) / n,
                "seeds_with_another_probe_flagged": rate(
                    sum(bool(d[how]["other_flags"]) for d in drop), n),
            }
    same = [r["same"] for r in rows if "same" in r]
    if same:
        n = len(same)
        out["identical_judges"] = {"a": SAME[0].format(a="2S"), "b": SAME[1].format(b="2S+1"),
                                   "seeds": n, "goal": "no flag in >= 95% of seeds"}
        for how in ("paired", "unpaired"):
            flags: dict[str, int] = {}
            for d in same:
                for name in d[how]["flags"]:
                    flags[name] = flags.get(name, 0) + 1
            widths = {name: sum(d[how]["ci_width"].get(name, 0.0) for d in same) / n
                      for name in PROBES}
            out["identical_judges"][how] = {
                "seeds_without_flag": rate(sum(not d[how]["flags"] for d in same), n),
                "flags_by_probe": flags,
                "mean_ci_width_by_probe": widths,
            }
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=100)
    ap.add_argument("--first-seed", type=int, default=0)
    ap.add_argument("--parts", default="drop,same", help="drop, same or both (comma-separated)")
    ap.add_argument("--adaptive", action="store_true",
                    help="audit both runs adaptively (audit --adaptive's defaults)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    global ADAPTIVE
    ADAPTIVE = args.adaptive
    name = "compare_sim_adaptive.json" if args.adaptive else "compare_sim.json"
    args.out = args.out or Path(__file__).parent / "results" / name
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    load_start = os.getloadavg()
    t0 = time.perf_counter()
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        rows.append(asyncio.run(one_seed(seed, parts)))
        done = len(rows)
        if done % 10 == 0 or done == args.seeds:
            print(f"{done}/{args.seeds} seeds, {time.perf_counter() - t0:.0f} s", flush=True)
    doc = {
        "benchmark": "compare_sim",
        "command": "python benchmarks/compare_sim.py " + " ".join(sys.argv[1:]),
        "data": "builtin:facts?seed=S (all 212 items), the same items in A and B",
        "audits": ("adaptive (run_adaptive, default max_n and round_size): each probe's "
                   "items a data-dependent prefix of the same seeded order" if ADAPTIVE
                   else "fixed-n (run_battery)"),
        "probes": PROBES,
        "alpha": 0.05,
        "note": ("paired: the per-item differences (per_item) and their bound (span) as "
                 "audits write them; unpaired: per_item removed, as in results from before "
                 "audits wrote them"),
        "summary": summarise(rows),
        "seeds": [r["seed"] for r in rows],
        "per_seed": rows,
        "seconds": time.perf_counter() - t0,
        "machine": {"python": platform.python_version(), "platform": platform.platform(),
                    **cpu_summary(), "loadavg_start": load_start,
                    "loadavg_end": os.getloadavg()},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(doc["summary"], indent=1))


if __name__ == "__main__":
    main()
