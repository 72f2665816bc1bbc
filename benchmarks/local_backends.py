"""The embedded judge's backends side by side: transformers, ik_llama.cpp and llama.cpp on this CPU.

Run by hand, on a quiet machine (the full run takes one to two hours on 2 cores):
    python benchmarks/local_backends.py                       # 5 runs, 8 items per run
    python benchmarks/local_backends.py --record              # ... and let `auto` follow it
Smoke test while developing:  python benchmarks/local_backends.py --runs 1 --items 4
Writes benchmarks/results/local_backends.json (--out to change).

Every run of every configuration is its own subprocess, one after the other (one model in
memory at a time), so its peak RSS (getrusage ru_maxrss) is its own and the llama.cpp one
shows whether torch was ever imported; the runs of the configurations are interleaved in
alternating order (A B, B A, ...), so a change in the machine's other load hits all alike.
Configurations: `ik` and `llamacpp` (the integer backends), `transformers` (dtype auto: bf16
where the CPU has bf16 units, else fp32) and, when that is bf16, `transformers-fp32`, the
reference for agreement, and `transformers-fp32-avx2`, the AVX2-only kind emulated (below).
Per configuration:
- load: the provider's load from the model cache, every run (the GGUF assembly and the
  safetensors conversion are done once beforehand, in a `prepare` subprocess, timed there);
- verdicts: pairwise_v1 judgments of builtin:facts pairs (~130 prompt tokens) and of the same
  pairs after ~1,350 tokens of reference notes (~1,500 tokens), each item in both orders one
  after the other as the judge asks them, with prefix reuse on (the default). Run k uses its
  own items; a figure is the median over runs of the run's mean seconds per verdict. New
  prompt tokens = prompt tokens - tokens reused;
- generation: a greedy answer of up to 64 tokens to an open question per run (tokens/s over
  the call);
- the FLOP bound of each verdict figure: 2 x N x new prompt tokens (N = 1.31e9 non-embedding
  parameters of the 1.5B, 0.36e9 of the 0.5B) over its seconds, against the fp32 FMA peak of
  the cores used (threads x MHz from /proc/cpuinfo x 32 FLOP/cycle with AVX2, 64 with
  AVX-512);
  ik_llama.cpp and llama.cpp compute int8 dot products, whose peak is higher, so their fraction
  can exceed what fp32 would allow.
Agreement: each configuration's verdicts (P(A) and the chosen label) against the reference's
on the same requests, with the requests where the choice differs listed. The machine: CPU
model and the deciding flags, load average before and after every phase, the integer
libraries' system info, library versions, threads used; `auto`'s choice here and with the
AVX2-only kind emulated.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "local_backends.json"
N_PARAMS = {"qwen-1.5b": 1.31e9, "qwen-0.5b": 0.36e9}  # non-embedding parameters
LONG_TOKENS = 1500
GEN_TOKENS = 64
GEN_PROMPTS = ["Explain in one paragraph how a refrigerator keeps food cold.",
               "Describe in one paragraph how a bill becomes a law.",
               "Explain in one paragraph why the sky is blue.",
               "Describe in one paragraph how vaccines train the immune system.",
               "Explain in one paragraph how a hash table finds a key.",
               "Describe in one paragraph how bread rises.",
               "Explain in one paragraph what causes the seasons.",
               "Describe in one paragraph how a bicycle stays upright."]


# The other CPU kind, emulated on a CPU with AVX-512/AMX: torch's own kernels, oneDNN and MKL
# are held to AVX2 by their ISA settings, so the fp32 path runs the code an AVX2-only CPU runs
# (same cores and clock). The xllamacpp wheel is built for AVX2 only (get_system_info lists no
# AVX-512), so its figure is already the AVX2 kernels' on either kind.
EMULATED_AVX2 = "transformers-fp32-avx2"
AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2"}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def _load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


INTEGER = ("ik", "llamacpp")


def _params(config: str) -> dict[str, str]:
    if config in INTEGER:
        return {"backend": config}
    if config == "transformers":
        return {"backend": "transformers"}
    if config in ("transformers-fp32", EMULATED_AVX2):
        return {"backend": "transformers", "dtype": "fp32"}
    raise SystemExit(f"unknown configuration {config!r}")


# ---- requests (built identically in every child) ----------------------------------------------

def short_requests(first: int, n: int) -> list[Any]:
    from judgeaudit.data import load
    from judgeaudit.judges.pairwise import PairwiseJudge

    judge = PairwiseJudge(None)  # type: ignore[arg-type]  # builds requests only
    items = load("builtin:facts")
    return [judge.request(items[i % len(items)], order)
            for i in range(first, first + n) for order in ("12", "21")]


def long_requests(first: int, n: int, count_tokens: Any) -> list[Any]:
    """The facts pairs of `short_requests`, asked after reference notes (true statements of
    other facts items) that bring the prompt to ~LONG_TOKENS tokens."""
    from dataclasses import replace

    from judgeaudit.data import load
    from judgeaudit.llm import Message

    items = load("builtin:facts")
    facts = [it.response_1 if it.label == 1 else it.response_2 for it in items]
    out = []
    for base in short_requests(first, n):
        k = int(base.meta["item_id"].rsplit(":", 1)[1])
        user = base.messages[1].content
        notes: list[str] = []
        j = k + 1
        while True:
            head = ("Reference notes (background; the question below is about one fact):\n"
                    + " ".join(notes) + "\n\n")
            req = replace(base, messages=(base.messages[0], Message("user", head + user)))
            if count_tokens(req) >= LONG_TOKENS or len(notes) > 400:
                break
            notes.append(facts[j % len(facts)])
            j += 1
        out.append(req)
    return out


# ---- one configuration (child process) --------------------------------------------------------

def phase_prepare(model: str, configs: list[str]) -> dict:
    from judgeaudit.llm import local_model as lm

    t0 = time.monotonic()
    src = lm.resolve(model)
    lm.ensure_gguf(src)
    gguf_s = time.monotonic() - t0
    conv_s = None
    if any(c.startswith("transformers") for c in configs):
        t1 = time.monotonic()
        lm.ensure_converted(src)
        conv_s = round(time.monotonic() - t1, 1)
    return {"gguf_ready_s": round(gguf_s, 1), "conversion_ready_s": conv_s,
            "peak_rss_mb": round(_rss_mb())}


def phase_run(model: str, config: str, k: int, items: int, threads: str | None) -> dict:
    """Run k of one configuration, in a fresh process: load, warm up, then the short and the
    long verdicts of run k's own items and one generation."""
    from judgeaudit.llm import Message, Request
    from judgeaudit.llm.providers.local import LocalProvider, render_prompt

    la0 = _load_avg()
    t0 = time.monotonic()
    params = _params(config) | ({"threads": threads} if threads else {})
    p = LocalProvider(model, params)
    lm = p.loaded()
    load_s = time.monotonic() - t0
    rss_load = _rss_mb()
    loop = asyncio.new_event_loop()
    tok = lm.tokenizer

    def reused() -> int:
        if p.backend in INTEGER:
            return int(lm.state.get("reused_tokens", 0))
        pc = lm.state.get("prefix_cache")
        return int(pc.reused_tokens) if pc is not None else 0

    def verdicts(reqs: list[Any]) -> dict:
        la, rows = _load_avg(), []
        for r in reqs:
            before = reused()
            t = time.perf_counter()
            out = loop.run_until_complete(p.generate(r))
            s = time.perf_counter() - t
            rows.append({"item": r.meta["item_id"], "order": r.meta["order"], "s": round(s, 4),
                         "p_a": out.probs["A"], "choice": out.text,
                         "prompt_tokens": out.usage.prompt_tokens,
                         "new_tokens": out.usage.prompt_tokens - (reused() - before)})
        return {"load_avg_before": la, "load_avg_after": _load_avg(), "verdicts": rows}

    def count(req: Any) -> int:
        return len(tok.encode(render_prompt(lm, req), add_special_tokens=False))

    # warm-up on an item no run uses (first-call kernel set-up, page faults)
    t = time.perf_counter()
    loop.run_until_complete(p.generate(short_requests(200, 1)[0]))
    first_s = time.perf_counter() - t
    result: dict[str, Any] = {"config": config, "run": k, "backend": p.backend,
                              "dtype": getattr(lm, "dtype", None), "load_s": round(load_s, 2),
                              "rss_after_load_mb": round(rss_load),
                              "first_verdict_s": round(first_s, 2), "load_avg_before": la0}
    result["short"] = verdicts(short_requests(k * items, items))
    result["long"] = verdicts(long_requests(k * items, items, count))
    for kind in ("short", "long"):
        rows = result[kind]["verdicts"]
        print(f"  {config} run {k + 1} {kind}: {statistics.mean(r['s'] for r in rows):.2f} "
              "s/verdict", file=sys.stderr, flush=True)
    req = Request(messages=(Message("user", GEN_PROMPTS[k % len(GEN_PROMPTS)]),),
                  max_tokens=GEN_TOKENS)
    la = _load_avg()
    t = time.perf_counter()
    out = loop.run_until_complete(p.generate(req))
    s = time.perf_counter() - t
    result["generation"] = {"s": round(s, 3), "tokens": out.usage.completion_tokens,
                            "prompt_tokens": out.usage.prompt_tokens,
                            "tokens_per_s": round(out.usage.completion_tokens / s, 2),
                            "load_avg_before": la, "text": out.text}
    result["decode"] = f"{p.backend} greedy" if p.backend in INTEGER else p.decode_identity()
    if p.backend == "transformers":
        import torch

        result["threads"] = torch.get_num_threads()
        result["torch_cpu_capability"] = torch.backends.cpu.get_cpu_capability()
        result["isa_env"] = {k: os.environ[k] for k in AVX2_ENV if k in os.environ}
        result["torch"] = torch.__version__
    else:
        import importlib

        info = importlib.import_module(f"judgeaudit.llm.{p.backend}_backend").system_info()
        result["threads"] = lm.threads
        result[p.backend] = {**info, "slots": lm.slots, "n_ctx": lm.n_ctx,
                             "file_type": lm.file_type}
    result["torch_imported"] = "torch" in sys.modules
    result["peak_rss_mb"] = round(_rss_mb())
    result["load_avg_after"] = _load_avg()
    return result


# ---- the parent: summaries ---------------------------------------------------------------------

def _peak_gflops_per_core(cpu: dict) -> float | None:
    mhz = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("cpu MHz"):
                mhz = float(line.split(":")[1])
                break
    except (OSError, ValueError):
        return None
    if not mhz:
        return None
    per_cycle = 64 if cpu["flags"].get("avx512f") else 32 if cpu["flags"].get("avx2") else 16
    if per_cycle == 64 and _amd_family() == 0x19:
        per_cycle = 32  # Zen 4 runs AVX-512 on its two 256-bit FMA units (double-pumped)
    return round(mhz * 1e-3 * per_cycle, 1)


def _amd_family() -> int | None:
    """The CPU family of an AMD CPU (0x19: Zen 3/4), else None."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    if "AuthenticAMD" not in info:
        return None
    for line in info.splitlines():
        if line.startswith("cpu family"):
            return int(line.split(":")[1])
    return None


def cpu_kind(flags: dict[str, bool]) -> str:
    """The CPU kinds whose backend order can differ: AMX tiles, AVX-512-BF16 without AMX
    (AMD Zen 4), AVX2 only."""
    if flags.get("amx_bf16"):
        return "bf16_amx"
    if flags.get("avx512_bf16"):
        return "bf16_avx512"
    return "avx2" if flags.get("avx2") else "other"


def summarize(runs: list[dict], n_params: float, core_peak: float | None) -> dict:
    """Medians over runs of each run's figure (a run = one process: load, verdicts, one
    generation). The FLOP fraction is of the fp32 peak of the cores the runs computed on
    (their threads)."""
    out: dict[str, Any] = {"runs": len(runs)}
    threads = statistics.median(run["threads"] for run in runs)
    peak = core_peak * threads if core_peak else None
    for kind in ("short", "long"):
        means = [statistics.mean(r["s"] for r in run[kind]["verdicts"]) for run in runs]
        rows = [r for run in runs for r in run[kind]["verdicts"]]
        new = statistics.mean(r["new_tokens"] for r in rows)
        med = statistics.median(means)
        flops = 2 * n_params * new
        out[kind] = {
            "s_per_verdict_median": round(med, 3),
            "s_per_verdict_runs": [round(m, 3) for m in means],
            "prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"] for r in rows), 1),
            "new_prompt_tokens_mean": round(new, 1),
            "gflop_per_verdict": round(flops / 1e9, 1),
            "achieved_gflops": round(flops / med / 1e9, 1),
            "fraction_of_fp32_peak_of_threads": (round(flops / med / 1e9 / peak, 3) if peak
                                                 else None),
        }
    out["generation_tokens_per_s_median"] = statistics.median(
        run["generation"]["tokens_per_s"] for run in runs)
    for k in ("load_s", "first_verdict_s", "rss_after_load_mb"):
        out[f"{k}_median"] = statistics.median(run[k] for run in runs)
    out["peak_rss_mb_max"] = max(run["peak_rss_mb"] for run in runs)
    out["threads"] = sorted({run["threads"] for run in runs})
    out["torch_imported"] = any(run["torch_imported"] for run in runs)
    out["dtype"] = runs[0]["dtype"]
    return out


def speedups(summary: dict) -> dict:
    """Each configuration's median s/verdict over the fp32 reference's of the same CPU kind:
    `transformers-fp32` here (or `transformers` when that already is fp32), and the emulated
    AVX2 kind's `transformers-fp32-avx2` for llama.cpp (whose kernels are AVX2 on both)."""
    ref = next((c for c in ("transformers-fp32", EMULATED_AVX2) if c in summary),
               "transformers")
    out: dict[str, Any] = {}
    for c, s in summary.items():
        for r in {ref, EMULATED_AVX2} & set(summary):
            if c != r and not (c.startswith("transformers") and r.startswith("transformers-")):
                out[f"{c} vs {r}"] = {k: round(summary[r][k]["s_per_verdict_median"]
                                               / s[k]["s_per_verdict_median"], 2)
                                      for k in ("short", "long")}
    return out


def agreement(runs: list[dict], ref: list[dict]) -> dict:
    pairs = []
    for kind in ("short", "long"):
        a = [r for run in runs for r in run[kind]["verdicts"]]
        b = [r for run in ref for r in run[kind]["verdicts"]]
        pairs += list(zip(a, b, strict=True))
    same = sum(x["choice"] == y["choice"] for x, y in pairs)
    diffs = [abs(x["p_a"] - y["p_a"]) for x, y in pairs]
    differ = [{"item": x["item"], "order": x["order"], "p_a": round(x["p_a"], 4),
               "reference_p_a": round(y["p_a"], 4)}
              for x, y in pairs if x["choice"] != y["choice"]]
    return {"verdicts": len(pairs), "same_choice": same, "differ": differ,
            "same_choice_rate": round(same / len(pairs), 4) if pairs else None,
            "p_a_abs_diff_max": round(max(diffs), 4) if diffs else None,
            "p_a_abs_diff_mean": round(statistics.mean(diffs), 4) if diffs else None}


def write_merged(out: Path, kind: str, results: dict) -> None:
    """One file for every CPU kind: `by_cpu_kind[kind]` is this run; the other kinds' runs
    (taken on other machines) are kept, each filed under the kind its own flags give."""
    merged: dict[str, Any] = {"about": "benchmarks/local_backends.py, one run per CPU kind "
                                       "(bf16_amx: AMX tiles; bf16_avx512: AVX-512-BF16 "
                                       "without AMX; avx2: AVX2 only); see each run's method "
                                       "and machine",
                              "by_cpu_kind": {}}
    if out.exists():
        old = json.loads(out.read_text(encoding="utf-8"))
        for run in (old["by_cpu_kind"].values() if "by_cpu_kind" in old else [old]):
            merged["by_cpu_kind"][cpu_kind(run["machine"]["cpu"]["flags"])] = run
    merged["by_cpu_kind"][kind] = results
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(merged, indent=1) + "\n", encoding="utf-8")


def run_phase(script: str, args: list[str], extra_env: dict[str, str]) -> dict:
    """Run ``script`` with ``args`` in a fresh process (its own memory peak, its own CPU-kind
    environment ``extra_env``) and return the JSON of its last output line."""
    env = dict(os.environ) | extra_env
    env["PYTHONPATH"] = str(ROOT / "src") + os.pathsep + env.get("PYTHONPATH", "")
    res = subprocess.run([sys.executable, script, *args], env=env, stdout=subprocess.PIPE,
                         text=True)
    if res.returncode != 0:
        raise SystemExit(f"phase {args} failed (exit {res.returncode})")
    return json.loads(res.stdout.strip().splitlines()[-1])


def _child(args: list[str], config: str | None = None) -> dict:
    return run_phase(__file__, args, AVX2_ENV if config == EMULATED_AVX2 else {})


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument("--configs", default="ik,llamacpp,transformers",
                    help="ik, llamacpp, transformers, transformers-fp32, transformers-fp32-avx2 "
                         "(both fp32 ones are added when transformers runs in bf16 and neither "
                         "is named)")
    ap.add_argument("--runs", type=int, default=5, help="runs per figure (median; >= 5)")
    ap.add_argument("--items", type=int, default=8, help="facts items per run, both orders")
    ap.add_argument("--threads", help="threads for every configuration (default: auto, the "
                                      "cores not busy when each run loads)")
    ap.add_argument("--record", action="store_true",
                    help="record the faster backend in the model cache: `auto` follows it on "
                         "this machine (needs --runs >= 5)")
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--run", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.phase == "auto":  # what `auto` picks in this process's CPU-kind environment
        from judgeaudit.llm import local_model as lm

        b, why = lm.choose_backend("auto", lm.resolve(a.model))
        print(json.dumps({"backend": b, "why": why, "env": {k: os.environ.get(k)
                                                            for k in AVX2_ENV}}))
        return
    if a.phase == "prepare":
        print(json.dumps(phase_prepare(a.model, a.configs.split(","))))
        return
    if a.phase == "run":
        print(json.dumps(phase_run(a.model, a.config, a.run, a.items, a.threads)))
        return
    if a.runs * a.items > 200:
        raise SystemExit("--runs x --items must stay <= 200 (builtin:facts has 212 items)")

    from judgeaudit.llm import local_model as lm

    configs = a.configs.split(",")
    if "transformers" in configs and lm.resolve_dtype(None) == "bf16" \
            and not {"transformers-fp32", EMULATED_AVX2} & set(configs):
        # the fp32 reference, and the AVX2-only kind emulated (see EMULATED_AVX2)
        configs += ["transformers-fp32", EMULATED_AVX2]
    ref_name = next((c for c in ("transformers-fp32", EMULATED_AVX2) if c in configs),
                    "transformers")
    cpu = lm.cpu_summary()
    core_peak = _peak_gflops_per_core(cpu)
    auto, why = lm.choose_backend("auto", lm.resolve(a.model))
    results: dict[str, Any] = {
        "model": a.model, "runs": a.runs, "items_per_run": a.items,
        "smoke": a.runs < 5,
        "machine": {"cpu": cpu, "fp32_peak_gflops_per_core_estimate": core_peak,
                    "fp32_peak_gflops_estimate": (round(core_peak * (cpu["cores"] or 1), 1)
                                                  if core_peak else None),
                    "platform": platform.platform(), "python": platform.python_version(),
                    "load_avg_start": _load_avg()},
        "auto_choice_here": {"backend": auto, "why": why},
        "auto_choice_avx2_emulated": run_phase(__file__, ["--phase", "auto", "--model", a.model],
                                               AVX2_ENV),
        "method": __doc__,
    }
    print(f"prepare {a.model}", file=sys.stderr, flush=True)
    results["prepare"] = _child(["--phase", "prepare", "--model", a.model,
                                 "--configs", ",".join(configs)])
    raw: dict[str, list[dict]] = {c: [] for c in configs}
    for k in range(a.runs):
        # Interleaved, in alternating order, so every configuration sees the same drift in
        # what else the machine is doing.
        for c in (configs if k % 2 == 0 else configs[::-1]):
            print(f"run {k + 1}/{a.runs}: {c}", file=sys.stderr, flush=True)
            raw[c].append(_child(["--phase", "run", "--model", a.model, "--config", c,
                                  "--run", str(k), "--items", str(a.items)]
                                 + (["--threads", a.threads] if a.threads else []),
                                 config=c))
    n_params = N_PARAMS.get(a.model, 1.31e9)
    avx2_peak = _peak_gflops_per_core({"flags": {"avx2": True}})  # the emulated kind's
    results["summary"] = {c: summarize(r, n_params, avx2_peak if c == EMULATED_AVX2 else core_peak)
                          for c, r in raw.items()}
    results["speedup_over_fp32"] = speedups(results["summary"])
    if ref_name in raw:
        results["agreement_with"] = ref_name
        results["agreement"] = {c: agreement(r, raw[ref_name]) for c, r in raw.items()
                                if c != ref_name}
    backends = {c: s for c, s in results["summary"].items()
                if c in (*INTEGER, "transformers")}
    if len(backends) >= 2:
        faster = min(backends, key=lambda c: backends[c]["short"]["s_per_verdict_median"])
        results["faster_short_verdicts"] = faster
        if a.record and a.runs >= 5:
            evidence = {c: {"short_s": s["short"]["s_per_verdict_median"],
                            "long_s": s["long"]["s_per_verdict_median"],
                            "peak_rss_mb": s["peak_rss_mb_max"]} for c, s in backends.items()}
            results["recorded"] = str(lm.record_backend_choice(faster, evidence))
    results["machine"]["load_avg_end"] = _load_avg()
    results["raw"] = raw
    kind = cpu_kind(cpu["flags"])
    results["cpu_kind"] = kind
    write_merged(a.out, kind, results)
    print(json.dumps({k: results[k] for k in ("summary", "agreement", "speedup_over_fp32",
                                              "auto_choice_here")
                      if k in results}, indent=1))
    print("wrote", a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
