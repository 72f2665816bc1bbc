"""Batched greedy generation (`local?gen_batch=N`) against plain and prompt-lookup decoding,
side by side, on the G_inj requests quantify sends (append and rewrite modes) with the
embedded qwen-1.5b.

Run by hand:  PYTHONPATH=src nice -n 5 python benchmarks/bench_generation_batch.py [--n 8]
Writes benchmarks/results/generation_batch.json.

Each round runs the same n prompts three ways, one after the other: plain one by one, prompt
lookup one by one (the provider's default for a lone request), and all n in batches of
`--batch` (`generate_batch`, the provider's path when requests are in flight together). The
rounds are repeated and medians reported; texts are compared with plain.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
OUT = ROOT / "benchmarks" / "results" / "generation_batch.json"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8, help="prompts per mode")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--modes", default="append,rewrite")
    args = ap.parse_args()
    import torch
    from bench_generation import _prompts

    from judgeaudit.llm.local_model import load, set_threads
    from judgeaudit.llm.providers.local import generate_batch, generate_text

    threads = set_threads(None)
    lm = load("qwen-1.5b")
    out: dict = {"machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                             "torch": torch.__version__, "dtype": lm.dtype, "threads": threads},
                 "settings": vars(args), "load_avg_before": list(os.getloadavg()), "modes": {}}
    for mode in args.modes.split(","):
        reqs = [r for _n, r in _prompts(args.n, args.max_new, mode)]
        runs: dict[str, list[dict]] = {"plain": [], "lookup": [], "batch": []}
        texts: dict[str, list[str]] = {}
        for _round in range(args.rounds):
            for method in runs:
                t0 = time.perf_counter()
                if method == "batch":
                    res = []
                    for i in range(0, len(reqs), args.batch):
                        res += generate_batch(lm, reqs[i:i + args.batch])
                else:
                    res = [generate_text(lm, r, decode=method) for r in reqs]
                dt = time.perf_counter() - t0
                toks = sum(r.usage.completion_tokens for r in res)
                runs[method].append({"seconds": dt, "tokens": toks})
                texts[method] = [r.text for r in res]
                print(f"{mode} {method}: {toks} tok in {dt:.1f}s ({toks / dt:.2f} tok/s) "
                      f"load {os.getloadavg()[0]:.2f}", flush=True)
        plain_tps = statistics.median(r["tokens"] / r["seconds"] for r in runs["plain"])
        out["modes"][mode] = {
            m: {"tokens_per_s_median": statistics.median(r["tokens"] / r["seconds"]
                                                         for r in v),
                "speedup_vs_plain": statistics.median(r["tokens"] / r["seconds"]
                                                      for r in v) / plain_tps,
                "identical_to_plain": sum(a == b for a, b in zip(texts[m], texts["plain"],
                                                                  strict=True)),
                "n": len(reqs), "runs": v}
            for m, v in runs.items()}
    out["load_avg_after"] = list(os.getloadavg())
    OUT.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({m: {k: round(v["speedup_vs_plain"], 2) for k, v in d.items()}
                      for m, d in out["modes"].items()}, indent=1))


if __name__ == "__main__":
    main()
