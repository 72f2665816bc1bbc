"""Benchmark the embedded judge: load times, peak memory, seconds per pairwise judgment.

Run by hand:  PYTHONPATH=src python benchmarks/bench_local_judge.py [--models qwen-1.5b,qwen-0.5b]
Writes benchmarks/results/local_judge.json.

Each phase runs in its own subprocess so its peak RSS (getrusage ru_maxrss) is its own:
- cold: a fresh JUDGEAUDIT_MODEL_CACHE, so the load includes assembling the parts, verifying
  the sha256, the GGUF load and the safetensors conversion (the temporary cache is deleted);
- warm: the load from the existing safetensors cache (converted first if absent);
- judge: ~370-token pairwise judgments (6 items x 2 orders, the judge's pattern) without and
  with prefix KV reuse (interleaved), plus a batching experiment (2 prompts in one forward
  pass vs 2 passes).
The machine is shared; the load average around each phase is recorded next to its figures.
BENCH_THREADS=N fixes torch's thread count (default: the provider's auto choice).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "local_judge.json"

TOPICS = [
    ("a hash table", "keys are hashed to bucket indices", "collisions are resolved by chaining"),
    ("photosynthesis", "light energy is captured by chlorophyll", "glucose is built from CO2"),
    ("a bicycle gear", "the chainring drives the rear cog", "a larger cog makes pedalling easier"),
    ("compound interest", "interest is added to the principal", "growth is exponential over time"),
    ("a vaccine", "the body is shown a harmless antigen", "memory cells remain afterwards"),
    ("TCP", "bytes are numbered and acknowledged", "lost segments are retransmitted"),
]


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _item(i: int) -> tuple[str, str, str]:
    """An instruction and two ~130-token answers (one fuller, one with an error)."""
    name, fact1, fact2 = TOPICS[i % len(TOPICS)]
    q = (f"Explain how {name} works to a first-year student. Keep it under two paragraphs, "
         f"mention the two most important ideas, and give one everyday example. (case {i})")
    good = (f"In short, {name} works because {fact1}. This is the first key idea: once you see "
            f"that {fact1}, most of the behaviour follows. The second key idea is that {fact2}; "
            f"without it the system would break down quickly. An everyday example: think of "
            f"how a library shelves books so each can be found fast, then apply the same logic. "
            f"Both ideas matter together, and a student who remembers them can reason about "
            f"new cases on their own, which is the real goal of understanding {name}. "
            f"A common mistake is to memorise the terms without the mechanism.")
    bad = (f"{name.capitalize()} is a very important topic that many people study. It works in "
           f"a complex way that experts have analysed for years. Basically, {fact2}, and that "
           f"is essentially all there is to know, although {fact1} is sometimes said to be "
           f"false. An example would be something you see every day. To conclude, {name} is "
           f"useful and interesting, and students should read more about it in textbooks and "
           f"online resources to learn about the many details that this short answer could not "
           f"cover.")
    return q, good, bad


def _requests(n_items: int):
    from judgeaudit.judges.templates import load_template
    from judgeaudit.llm import Message, Request

    t = load_template("pairwise_v1")
    reqs = []
    for i in range(n_items):
        q, a, b = _item(i)
        for x, y in ((a, b), (b, a)):
            user = t.render_user(prompt=q, response_a=x, response_b=y)
            reqs.append(Request(messages=(Message("system", t.system), Message("user", user)),
                                prefill=t.prefill, choices=("A", "B"), max_tokens=8))
    return reqs


def phase_load(model: str, dtype: str | None) -> dict:
    from judgeaudit.llm import local_model as lm

    la0 = _load_avg()
    t0 = time.monotonic()
    loaded = lm.load(model, dtype)
    return {"seconds": round(time.monotonic() - t0, 2), "peak_rss_mb": round(_rss_mb()),
            "dtype": loaded.dtype, "load_avg_before": la0, "load_avg_after": _load_avg()}


def phase_judge(model: str, dtype: str | None, n_items: int) -> dict:
    import torch

    from judgeaudit.llm.providers.local import LocalProvider, PrefixCache, render_prompt
    from judgeaudit.llm.providers.local import score_choices as score

    params = {"dtype": dtype} if dtype else {}
    if os.environ.get("BENCH_THREADS"):
        params["threads"] = os.environ["BENCH_THREADS"]
    p = LocalProvider(model, params)
    lm = p.loaded()
    tok = lm.tokenizer
    reqs = _requests(n_items)
    ntoks = [len(tok.encode(render_prompt(lm, r), add_special_tokens=False)) for r in reqs]
    decoder = lm.model.get_decoder()
    n_params = sum(v.numel() for k, v in decoder.named_parameters() if "embed_tokens" not in k)
    la0 = _load_avg()
    score(lm, reqs[0], reuse=False)  # warm-up (first-call kernel setup)

    # Interleaved: each request is judged with reuse and without, back to back (alternating
    # which goes first), so both modes see the same load from other processes.
    lm.state["prefix_cache"] = PrefixCache()
    full, full_cpu, reuse, reuse_cpu = [], [], [], []
    for i, r in enumerate(reqs):
        for mode in ((True, False) if i % 2 else (False, True)):
            t, c = time.perf_counter(), time.process_time()
            score(lm, r, reuse=mode)
            (reuse if mode else full).append(time.perf_counter() - t)
            (reuse_cpu if mode else full_cpu).append(time.process_time() - c)
    pc = lm.state["prefix_cache"]
    # Batching experiment: two same-length prompts in one forward pass vs two single passes.
    ids = tok.encode(render_prompt(lm, reqs[0]), add_special_tokens=False)
    x = torch.tensor([ids, ids])
    single, batch = [], []
    with torch.inference_mode():
        for _ in range(3):
            t = time.perf_counter()
            decoder(input_ids=x[:1], use_cache=False)
            decoder(input_ids=x[:1], use_cache=False)
            single.append((time.perf_counter() - t) / 2)
            t = time.perf_counter()
            decoder(input_ids=x, use_cache=False)
            batch.append((time.perf_counter() - t) / 2)
    med_full = statistics.median(full)
    mean_tok = statistics.mean(ntoks)
    flops = 2 * n_params * mean_tok
    return {
        "judgments": len(reqs),
        "prompt_tokens_mean": round(mean_tok, 1),
        "prompt_tokens_range": [min(ntoks), max(ntoks)],
        "threads": torch.get_num_threads(),
        "no_reuse": {"median_s": round(med_full, 3), "mean_s": round(statistics.mean(full), 3),
                     "cpu_s_median": round(statistics.median(full_cpu), 3),
                     "prompt_tokens_per_s": round(mean_tok / med_full, 1)},
        "prefix_reuse": {
            "median_s": round(statistics.median(reuse), 3),
            "mean_s": round(statistics.mean(reuse), 3),
            "cpu_s_median": round(statistics.median(reuse_cpu), 3),
            "reused_tokens_per_judgment": round(pc.reused_tokens / len(reqs), 1),
            "effective_prompt_tokens_per_s": round(mean_tok / statistics.median(reuse), 1),
        },
        "batching_2": {"single_s_per_prompt": round(min(single), 3),
                       "batched_s_per_prompt": round(min(batch), 3),
                       "kept": False},
        "flops": {"non_embedding_params": n_params,
                  "tflop_per_judgment": round(flops / 1e12, 3),
                  "achieved_gflops_no_reuse": round(flops / med_full / 1e9, 1),
                  "gflops_needed_for_0.5s": round(flops / 0.5 / 1e9, 1)},
        "peak_rss_mb": round(_rss_mb()),
        "load_avg_before": la0,
        "load_avg_after": _load_avg(),
    }


def _child(args: list[str], env: dict[str, str] | None = None) -> dict:
    cmd = [sys.executable, __file__, *args]
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + e.get("PYTHONPATH", "")
    e.update(env or {})
    res = subprocess.run(cmd, env=e, capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stderr[-4000:])
        raise SystemExit(f"phase {args} failed (exit {res.returncode})")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="qwen-1.5b,qwen-0.5b")
    ap.add_argument("--dtype", default=None, help="fp32 | bf16 (default: auto)")
    ap.add_argument("--items", type=int, default=6, help="items; each judged in both orders")
    ap.add_argument("--skip-cold", action="store_true",
                    help="skip the cold (conversion) load; keep the figure of an earlier run")
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.phase:  # child process
        if a.phase == "load":
            out = phase_load(a.model, a.dtype)
        else:
            out = phase_judge(a.model, a.dtype, a.items)
        print(json.dumps(out))
        return

    extra = ["--dtype", a.dtype] if a.dtype else []
    results: dict = {
        "machine": {"cpu_count": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "models": {},
    }
    try:
        import torch
        import transformers

        results["machine"]["torch"] = torch.__version__
        results["machine"]["transformers"] = transformers.__version__
    except ImportError:
        pass
    previous = json.loads(OUT.read_text(encoding="utf-8")) if OUT.exists() else {}
    for model in a.models.split(","):
        r: dict = {}
        old_cold = previous.get("models", {}).get(model, {}).get("cold_load")
        if a.skip_cold and old_cold:  # keep the earlier cold figure, marked as such
            r["cold_load"] = {**old_cold, "from_previous_run": True}
        if not a.skip_cold:
            tmp = tempfile.mkdtemp(prefix="judgeaudit-bench-cache-")
            try:
                r["cold_load"] = _child(["--phase", "load", "--model", model, *extra],
                                        {"JUDGEAUDIT_MODEL_CACHE": tmp})
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
            print(model, "cold", r["cold_load"], flush=True)
        r["warm_load"] = _child(["--phase", "load", "--model", model, *extra])
        print(model, "warm", r["warm_load"], flush=True)
        r["judge"] = _child(["--phase", "judge", "--model", model, "--items", str(a.items),
                             *extra])
        print(model, "judge", json.dumps(r["judge"], indent=1), flush=True)
        results["models"][model] = r
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print("wrote", OUT)


if __name__ == "__main__":
    main()
