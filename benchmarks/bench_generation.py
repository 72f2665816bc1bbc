"""Benchmark generation (rewriting) with the embedded model: plain greedy `generate` vs
prompt-lookup decoding vs assisted decoding with the 0.5B model as draft, side by side.

Run by hand:  PYTHONPATH=src nice -n 10 python benchmarks/bench_generation.py [--n 4]
Writes benchmarks/results/generation.json.

The prompts are the HUB-J G_inj rewrite requests (judgeaudit.hubj.prompts) of rejected
PandaLM responses at several factor levels, i.e. the calls that dominate `quantify`. Greedy
decoding is exact under both speed-ups (the verifier is the same model, a drafted token is kept
only where it equals the greedy one), so every method's text is compared with the plain
run and any difference is reported. Methods are interleaved per prompt so that load from other
jobs on the shared machine hits all of them alike; the load average is recorded.
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
OUT = ROOT / "benchmarks" / "results" / "generation.json"
DATA = Path(os.environ.get("JUDGEAUDIT_SHARED_DATA", ROOT.parent / "shared" / "data"))


def _prompts(n: int, max_new: int) -> list[tuple[str, object]]:
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
        out.append((f"{it.id}:{f.name}:L{level}",
                    P.inject_request(it.prompt, worse, f, crit, level, max_tokens=max_new)))
    return out


def _run(lm, draft, request, method: str, k: int) -> dict:
    """One greedy generation. plain/lookup go through the provider's own code path
    (`generate_text`); assisted calls transformers directly with the 0.5B as draft."""
    import torch
    from transformers import GenerationConfig

    from judgeaudit.llm.providers.local import generate_text, render_prompt

    tok = lm.tokenizer
    t0 = time.perf_counter()
    if method in ("plain", "lookup"):
        r = generate_text(lm, request, decode=method, lookup_k=k)
        dt = time.perf_counter() - t0
        return {"seconds": dt, "new_tokens": r.usage.completion_tokens,
                "prompt_tokens": r.usage.prompt_tokens, "text": r.text}
    ids = tok.encode(render_prompt(lm, request), add_special_tokens=False)
    eos = sorted({tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>")})
    cfg = GenerationConfig(max_new_tokens=request.max_tokens, do_sample=False, temperature=None,
                           top_k=None, top_p=None, repetition_penalty=None, eos_token_id=eos,
                           pad_token_id=eos[0])
    x = torch.tensor([ids])
    with torch.inference_mode():
        out = lm.model.generate(input_ids=x, attention_mask=torch.ones_like(x),
                                generation_config=cfg, assistant_model=draft.model)
    dt = time.perf_counter() - t0
    new = out[0, len(ids):].tolist()
    return {"seconds": dt, "new_tokens": len(new), "prompt_tokens": len(ids),
            "text": tok.decode(new, skip_special_tokens=True)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=4, help="prompts")
    ap.add_argument("--k", type=int, default=10, help="prompt_lookup_num_tokens")
    ap.add_argument("--max-new", type=int, default=128)
    ap.add_argument("--methods", default="plain,lookup,assisted")
    args = ap.parse_args()
    import torch
    import transformers

    from judgeaudit.llm.local_model import load, set_threads

    set_threads(None)
    lm = load("qwen-1.5b")
    methods = args.methods.split(",")
    draft = load("qwen-0.5b") if "assisted" in methods else None
    prompts = _prompts(args.n, args.max_new)
    rows = []
    load_before = [round(x, 2) for x in os.getloadavg()]
    for name, req in prompts:
        row: dict = {"prompt": name}
        for m in methods:
            r = _run(lm, draft, req, m, args.k)
            row[m] = r
            print(f"{name} {m}: {r['new_tokens']} tok in {r['seconds']:.1f}s "
                  f"({r['new_tokens'] / r['seconds']:.2f} tok/s)", flush=True)
        base = row["plain"]["text"] if "plain" in row else None
        for m in methods:
            row[m]["identical_to_plain"] = base is not None and row[m]["text"] == base
        rows.append(row)
    load_after = [round(x, 2) for x in os.getloadavg()]
    summary = {}
    for m in methods:
        toks = sum(r[m]["new_tokens"] for r in rows)
        secs = sum(r[m]["seconds"] for r in rows)
        summary[m] = {
            "tokens": toks, "seconds": round(secs, 2), "tokens_per_s": round(toks / secs, 3),
            "median_prompt_tokens_per_s": round(statistics.median(
                r[m]["new_tokens"] / r[m]["seconds"] for r in rows), 3),
            "identical_outputs": sum(r[m]["identical_to_plain"] for r in rows),
        }
    if "plain" in summary:
        for m in methods:
            summary[m]["speedup_vs_plain"] = round(
                summary[m]["tokens_per_s"] / summary["plain"]["tokens_per_s"], 3)
    doc = {
        "what": "greedy generation of G_inj rewrite requests with the embedded qwen-1.5b",
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "torch": torch.__version__, "transformers": transformers.__version__,
                    "dtype": lm.dtype, "threads": torch.get_num_threads()},
        "settings": {"n_prompts": len(rows), "prompt_lookup_num_tokens": args.k,
                     "max_new_tokens": args.max_new, "draft": "qwen-0.5b"},
        "load_avg_before": load_before, "load_avg_after": load_after,
        "summary": summary,
        "per_prompt": [{"prompt": r["prompt"], **{m: {k: v for k, v in r[m].items()
                                                      if k != "text"} for m in methods},
                        "plain_text": r.get("plain", {}).get("text")} for r in rows],
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
