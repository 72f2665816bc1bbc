"""Benchmark generation (rewriting) with the embedded model: plain greedy `generate` vs
prompt-lookup decoding vs assisted decoding with the 0.5B model as draft, side by side.

Run by hand:  PYTHONPATH=src nice -n 10 python benchmarks/bench_generation.py [--n 4]
    [--modes rewrite,append] [--ks 3,5,10] [--methods plain,lookup,assisted]
Writes benchmarks/results/generation.json.

The prompts are the HUB-J G_inj requests (judgeaudit.hubj.prompts) of rejected PandaLM
responses at several factor levels, i.e. the calls that dominate `quantify`, in both G_inj
modes: `rewrite` (the whole response rewritten: copies much of its input) and `append` (only
sentences to add: copies little, so prompt lookup has less to find). Every method goes through
the provider's own code path (`generate_text`); `lookup` runs once per k in --ks. Greedy
decoding is exact under both speed-ups (the verifier is the same model, a drafted token is kept
only where it equals the greedy one), so every method's text is compared with the plain
run and any difference is reported. Methods are interleaved per prompt so that load from other
jobs on the shared machine hits all of them alike; the load average is recorded.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
OUT = ROOT / "benchmarks" / "results" / "generation.json"
DATA = Path(os.environ.get("JUDGEAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _prompts(n: int, max_new: int, mode: str) -> list[tuple[str, object]]:
    from judgeaudit.data import load
    from judgeaudit.hubj import prompts as P
    from judgeaudit.hubj.baselines import PRE_DISCOVERED, criteria_for

    items = [it for it in load(f"pandalm:{DATA / 'pandalm_testset'}") if it.label in (1, 2)]
    short = [it for it in items if 25 <= len((it.response_2 if it.label == 1 else
                                              it.response_1).split()) <= 60]
    out = []
    factors = list(PRE_DISCOVERED)
    for i, it in enumerate(short[:n]):
        worse = it.response_2 if it.label == 1 else it.response_1
        f = PRE_DISCOVERED[factors[i % len(factors)]]
        level = 2 + (i % 3)
        crit = criteria_for(f) or P.default_criteria(f)
        out.append((f"{mode}:{it.id}:{f.name}:L{level}",
                    P.inject_request(it.prompt, worse, f, crit, level, max_tokens=max_new,
                                     mode=mode)))
    return out


def _run(lm, draft, request, method: str) -> dict:
    """One greedy generation through the provider's code path; `method` is plain, assisted
    or lookup_k<N>."""
    from judgeaudit.llm.providers.local import generate_text

    decode, k = (("lookup", int(method.removeprefix("lookup_k")))
                 if method.startswith("lookup_k") else (method, 10))
    t0 = time.perf_counter()
    r = generate_text(lm, request, decode=decode, lookup_k=k, draft=draft)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "new_tokens": r.usage.completion_tokens,
            "prompt_tokens": r.usage.prompt_tokens, "text": r.text}


def _summary(rows: list[dict], methods: list[str]) -> dict:
    out: dict = {}
    for m in methods:
        toks = sum(r[m]["new_tokens"] for r in rows)
        secs = sum(r[m]["seconds"] for r in rows)
        out[m] = {
            "tokens": toks, "seconds": round(secs, 2), "tokens_per_s": round(toks / secs, 3),
            "median_prompt_tokens_per_s": round(statistics.median(
                r[m]["new_tokens"] / r[m]["seconds"] for r in rows), 3),
            "identical_outputs": sum(r[m]["identical_to_plain"] for r in rows),
            "n": len(rows),
        }
    if "plain" in out:
        for m in methods:
            out[m]["speedup_vs_plain"] = round(
                out[m]["tokens_per_s"] / out["plain"]["tokens_per_s"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4, help="prompts per G_inj mode")
    ap.add_argument("--ks", default="10", help="prompt_lookup_num_tokens values, comma-separated")
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--modes", default="rewrite,append", help="G_inj modes")
    ap.add_argument("--methods", default="plain,lookup,assisted")
    args = ap.parse_args()
    import torch
    import transformers

    from judgeaudit.llm.base import Message, Request
    from judgeaudit.llm.local_model import load, set_threads
    from judgeaudit.llm.providers.local import DRAFT_PRESET

    set_threads(None)
    lm = load("qwen-1.5b")
    methods: list[str] = []
    for m in args.methods.split(","):
        methods += [f"lookup_k{k}" for k in args.ks.split(",")] if m == "lookup" else [m]
    draft = load(DRAFT_PRESET, lm.dtype) if "assisted" in methods else None
    warm = Request(messages=(Message("user", "Say hello."),), max_tokens=4)
    for m in methods:  # first calls pay one-off costs (allocations, kernels)
        _run(lm, draft, warm, m)
    prompts = [p for mode in args.modes.split(",") for p in _prompts(args.n, args.max_new, mode)]
    rows = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    for name, req in prompts:
        row: dict = {"prompt": name, "mode": name.split(":")[0]}
        for m in methods:
            r = _run(lm, draft, req, m)
            row[m] = r
            print(f"{name} {m}: {r['new_tokens']} tok in {r['seconds']:.1f}s "
                  f"({r['new_tokens'] / r['seconds']:.2f} tok/s) load {os.getloadavg()[0]:.2f}",
                  flush=True)
        base = row["plain"]["text"] if "plain" in row else None
        for m in methods:
            row[m]["identical_to_plain"] = base is not None and row[m]["text"] == base
        rows.append(row)
    load_after = [round(x, 2) for x in os.getloadavg()]
    summary = _summary(rows, methods)
    by_mode = {mode: _summary([r for r in rows if r["mode"] == mode], methods)
               for mode in args.modes.split(",")}
    per_prompt = []
    for r in rows:
        entry: dict = {"prompt": r["prompt"], "mode": r["mode"]}
        for m in methods:
            entry[m] = {k: v for k, v in r[m].items() if k != "text"}
            base_text = r.get("plain", {}).get("text")
            if base_text is not None and r[m]["text"] != base_text:  # what differs, to judge
                entry[m]["diff_vs_plain"] = list(difflib.unified_diff(
                    base_text.splitlines(), r[m]["text"].splitlines(), "plain", m,
                    lineterm=""))
        entry["plain_text"] = r.get("plain", {}).get("text")
        per_prompt.append(entry)
    doc = {
        "what": "greedy generation of G_inj requests (rewrite and append modes) with the "
                "embedded qwen-1.5b: plain generate vs prompt lookup vs assisted (0.5B draft)",
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "torch": torch.__version__, "transformers": transformers.__version__,
                    "dtype": lm.dtype, "threads": torch.get_num_threads()},
        "settings": {"n_prompts": len(rows), "modes": args.modes.split(","),
                     "prompt_lookup_num_tokens": [int(k) for k in args.ks.split(",")],
                     "max_new_tokens": args.max_new, "draft": DRAFT_PRESET,
                     "niceness": os.nice(0)},
        "load_avg_before": load_before, "load_avg_after": load_after,
        "summary": summary,
        "summary_by_mode": by_mode,
        "per_prompt": per_prompt,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(by_mode, indent=2))


if __name__ == "__main__":
    main()
