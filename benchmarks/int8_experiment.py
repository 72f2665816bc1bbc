"""Issue 13, point 4: can an integer backend be the embedded judge's >= 2x backend on an
AVX2-only CPU? A measured experiment: CTranslate2 int8 and ik_llama.cpp (a llama.cpp fork
with its own CPU matrix kernels) against the transformers fp32 path, with llama.cpp itself
(the llamacpp backend) beside them. ik_llama.cpp has since become the `ik` backend
(llm/ik_backend.py), measured beside the others by benchmarks/local_backends.py.

How it was taken (run by hand, e.g. `python benchmarks/int8_experiment.py --configs
fp32,llamacpp,ik --out benchmarks/results/ik_experiment.json`; the CTranslate2 run,
`--configs fp32,ct2-mkl,ct2-dnnl`, took 55 min on 2 shared cores and wrote
benchmarks/results/ct2_experiment.json):
- Model: for ct2, the cached qwen-1.5b conversion (the bf16 safetensors directory local_model
  builds from the Q4_K_M GGUF), converted once with ctranslate2's TransformersConverter,
  quantization int8 (per-row weight scales), into --ct2-dir (default /work/runs/ct2_15b).
  ctranslate2's CPU int8 compute type is int8_float32 (int8 GEMMs with per-token activation
  scales, u8s8 -> int32; everything else fp32): asking for "int8" selects it (CT2_VERBOSE=1
  reports "Selected compute type: int8_float32"), so the two are one configuration. For ik
  and llamacpp: the verified Q4_K_M GGUF itself. ik loads it with repack_tensors (its
  run-time repacking into the row-interleaved Q4_K_R4 layout of its AVX2 kernels), flash
  attention on, n_batch 2048, n_ubatch 512: the fastest of the settings screened by hand
  (Q4_K_M without repacking, Q8_0 repacked, Q8_K_R8 and Q4_0_R8 requantized with its
  llama-quantize, n_ubatch 256/512/1024, flash attention off were 3-25% slower on long
  prompts). ik_llama.cpp comes from the prebuilt `ik-llama-cpp-python` wheel (0.1.5,
  manylinux x86_64, built for AVX2: its system info reads "AVX2 = 1 | AVX512 = 0 | FMA = 1
  | F16C = 1"), driven here through its ctypes API directly (llama_decode on token ids, one
  sequence) to screen its settings.
- The AVX2-only CPU is emulated on an AVX-512/AMX Xeon, every configuration in its own
  subprocess with ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2
  MKL_ENABLE_INSTRUCTIONS=AVX2 CT2_FORCE_CPU_ISA=AVX2 (ctranslate2 then reports
  "Selected ISA: AVX2"; both llama.cpp wheels are AVX2 builds whatever the CPU), 2 threads
  (torch threads; ctranslate2 intra_threads=2, inter_threads=1; llama.cpp threads=2).
- Configurations: `fp32`: the transformers fp32 path exactly as benchmarks/local_backends.py
  runs it (LocalProvider backend=transformers dtype=fp32, prefix reuse on); `llamacpp`: the
  llamacpp backend (LocalProvider backend=llamacpp, prefix reuse on); `ik`: ik_llama.cpp,
  one sequence whose KV cache keeps the previous prompt, so a request runs only the tokens
  after the prefix it shares with the one before (the system prompt for every item, the
  instruction, and for long pairs the notes and question, for an item's second order: what
  fp32's prefix cache reuses in this sequence of requests); `ct2-mkl`: ctranslate2 int8 with
  its default GEMM backend on an Intel CPU (MKL s8u8s32 GEMM); `ct2-dnnl`: the same with
  CT2_USE_MKL=0 (oneDNN s8 GEMM), the backend ctranslate2 picks on non-Intel CPUs such as the
  AMD EPYC AVX2 development machine.
- Requests: pairwise_v1 prompts of builtin:facts pairs built by local_backends.short_requests
  / long_requests (both orders, one after the other; long = the same pairs after ~1,350
  tokens of reference notes, ~1,500 tokens). ctranslate2 and ik receive the transformers
  tokenizer's token ids of render_prompt(...) + the choices' common tokens, exactly the fp32
  path's ids; P(A) = softmax over the two choice tokens' next-token logits (ct2:
  generate_batch max_length=1, include_prompt_in_result=False, return_logits_vocab=True: the
  prompt is forwarded at once, logits of one position only; ik: the logits of the last
  position of llama_decode).
- Prefix reuse: fp32 keeps the KV caches of recent requests and runs only the tokens after the
  longest shared prefix (the system prompt for every item, the instruction and, for long
  pairs, the notes too for an item's second order). ctranslate2 reuses only a `static_prompt`
  whose decoder state it caches (cache_static_prompt) under that exact token list: one
  static prompt per call (no chaining: a cached pair prefix cannot start from the cached
  system prompt) and no eviction API (entries live as long as the model; a ~1,450-token
  pair prefix is ~80 MB of fp32 K/V). Measured with the best reuse that allows (Ct2Judge):
  static_prompt = the prefix every judge prompt shares (chat template + system prompt, up
  to the user's text), cached once (warmed on the warm-up item, as fp32's prefix cache is);
  and when an item's two orders share >= PAIR_MIN tokens more than that (the long pairs:
  notes + question), that shared prefix instead, so the second order runs only its tail as
  fp32's does. The pair entries would grow without bound in a real run: this is an upper
  bound on what ctranslate2's reuse gives, not a usable design as is.
- Runs: --runs (>= 3) interleaved in alternating order (A B C, C B A, ...), each its own
  process (one model in memory at a time); run k uses its own items; a figure is the median
  over runs of the run's mean seconds per verdict. New tokens = prompt tokens - tokens
  reused. The load average before/after every phase and the CPU's flags are recorded.
- Agreement: one more process per configuration judges --agree-items facts pairs (both
  orders; items 100..) and the chosen side and |dP(A)| are compared with fp32's on the same
  requests; the timed runs' verdicts are compared too.
Writes --out (default benchmarks/results/int8_experiment.json).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "int8_experiment.json"
sys.path.insert(0, str(ROOT / "benchmarks"))

AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
            "MKL_ENABLE_INSTRUCTIONS": "AVX2", "CT2_FORCE_CPU_ISA": "AVX2"}
CONFIG_ENV = {"fp32": {}, "llamacpp": {}, "ik": {}, "ct2-mkl": {"CT2_USE_MKL": "1"},
              "ct2-dnnl": {"CT2_USE_MKL": "0"}}
THREADS = 2


def _load_avg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _flags() -> dict[str, bool]:
    from judgeaudit.llm import local_model as lm

    return lm.cpu_summary()["flags"]


# ---- a judge per configuration ----------------------------------------------------------------

class ProviderJudge:
    """A `local` provider configuration as judgeaudit runs it (fp32: transformers in fp32;
    llamacpp: the llamacpp backend), each with its own prefix reuse."""

    PARAMS = {"fp32": {"backend": "transformers", "dtype": "fp32"},
              "llamacpp": {"backend": "llamacpp"}}

    def __init__(self, model: str, config: str):
        import asyncio

        from judgeaudit.llm.providers.local import LocalProvider

        self.loop = asyncio.new_event_loop()
        self.p = LocalProvider(model, self.PARAMS[config] | {"threads": str(THREADS)})
        self.lm = self.p.loaded()
        self.tokenizer = self.lm.tokenizer

    def reused(self) -> int:
        if self.p.backend == "llamacpp":
            return int(self.lm.state.get("reused_tokens", 0))
        pc = self.lm.state.get("prefix_cache")
        return int(pc.reused_tokens) if pc is not None else 0

    def __call__(self, req: Any) -> tuple[float, str, int]:
        out = self.loop.run_until_complete(self.p.generate(req))
        return out.probs["A"], out.text, out.usage.prompt_tokens

    def info(self) -> dict:
        if self.p.backend == "llamacpp":
            from judgeaudit.llm.llamacpp_backend import system_info

            return system_info()
        import torch

        return {"torch": torch.__version__, "threads": torch.get_num_threads(),
                "torch_cpu_capability": torch.backends.cpu.get_cpu_capability()}


def _ids(judge: Any, req: Any) -> tuple[list[int], list[int]]:
    """The fp32 path's token ids of a request (prompt + the choices' common tokens) and the
    choices' token ids, from the transformers tokenizer in `judge.tokenizer`."""
    from judgeaudit.llm.providers.local import _choice_token_ids, render_prompt

    prompt = render_prompt(judge, req)  # type: ignore[arg-type]  # needs .tokenizer only
    common, cids, _ = _choice_token_ids(judge.tokenizer, prompt, req.choices)
    return judge.tokenizer.encode(prompt, add_special_tokens=False) + common, cids


def _p_a(logits: Any, cids: list[int]) -> float:
    import math

    lg = [float(logits[c]) for c in cids]
    m = max(lg)
    ex = [math.exp(x - m) for x in lg]
    return ex[0] / sum(ex)


class IkJudge:
    """ik_llama.cpp on the Q4_K_M GGUF through its ctypes API: one sequence whose KV cache
    holds the previous prompt; a request drops the cache after the prefix it shares with that
    prompt and decodes the rest (at least its last token), P(A) from the last logits."""

    N_BATCH = 2048

    def __init__(self, model: str):
        import ctypes

        from ik_llama_cpp import _ctypes_api as C
        from transformers import AutoTokenizer

        from judgeaudit.llm import local_model as lm

        self.C, src = C, lm.resolve(model)
        self.tokenizer = AutoTokenizer.from_pretrained(str(lm.ensure_converted(src)))
        C._lib.llama_kv_cache_seq_rm.argtypes = [ctypes.c_void_p, ctypes.c_int32,
                                                 ctypes.c_int32, ctypes.c_int32]
        C._lib.llama_kv_cache_seq_rm.restype = ctypes.c_bool
        C._lib.llama_print_system_info.restype = ctypes.c_char_p
        C.llama_backend_init()
        mp = C.llama_model_default_params()
        mp.repack_tensors, mp.use_mmap = True, True
        self.model = C.llama_model_load_from_file(str(lm.ensure_gguf(src)).encode(), mp)
        cp = C.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch = 4096, self.N_BATCH, 512
        cp.n_threads = cp.n_threads_batch = THREADS
        cp.flash_attn = True
        self.ctx = C.llama_init_from_model(self.model, cp)
        self.batch = C.llama_batch_init(self.N_BATCH, 0, 1)
        self.n_vocab = C.llama_vocab_n_tokens(C.llama_model_get_vocab(self.model))
        self.cur: list[int] = []
        self._reused = 0

    def reused(self) -> int:
        return self._reused

    def _decode(self, ids: list[int], start: int) -> Any:
        b, C = self.batch, self.C
        for lo in range(0, len(ids), self.N_BATCH):
            chunk = ids[lo:lo + self.N_BATCH]
            b.n_tokens = len(chunk)
            for i, t in enumerate(chunk):
                b.token[i], b.pos[i], b.n_seq_id[i] = t, start + lo + i, 1
                b.seq_id[i][0] = 0
                b.logits[i] = int(lo + i == len(ids) - 1)
            if C.llama_decode(self.ctx, b) != 0:
                raise RuntimeError("llama_decode failed")
        return C.llama_get_logits_ith(self.ctx, len(ids) - 1 - lo)

    def __call__(self, req: Any) -> tuple[float, str, int]:
        ids, cids = _ids(self, req)
        n = 0
        while n < min(len(ids) - 1, len(self.cur)) and ids[n] == self.cur[n]:
            n += 1
        self.C._lib.llama_kv_cache_seq_rm(self.ctx, 0, n, -1)
        logits = self._decode(ids[n:], n)
        self.cur, self._reused = ids, self._reused + n
        pa = _p_a(logits, cids)
        return pa, ("A" if pa >= 1 - pa else "B"), len(ids)

    def info(self) -> dict:
        from importlib.metadata import version

        return {"ik-llama-cpp-python": version("ik-llama-cpp-python"),
                "system_info": self.C._lib.llama_print_system_info().decode().strip(),
                "repack_tensors": True, "flash_attn": True, "n_batch": self.N_BATCH,
                "n_ubatch": 512, "threads": THREADS}


PAIR_MIN = 256  # a pair's shared prefix is cached when it extends the template this much


class Ct2Judge:
    """ctranslate2 int8: P(A) from the next-token logits after the prompt. Reuse: a cached
    static_prompt, the best ctranslate2 allows with one static prompt per call: the prefix
    every judge prompt shares (chat template + system prompt), or, when an item's two orders
    share PAIR_MIN more tokens than that (long pairs: the notes and the question), that
    shared prefix (one cache entry per such pair, never evicted)."""

    def __init__(self, model: str, ct2_dir: str):
        import ctranslate2
        from transformers import AutoTokenizer

        from judgeaudit.llm import local_model as lm

        self.ct2 = ctranslate2
        d = lm.ensure_converted(lm.resolve(model))
        self.tokenizer = AutoTokenizer.from_pretrained(str(d))
        self.g = ctranslate2.Generator(ct2_dir, device="cpu", compute_type="int8",
                                       intra_threads=THREADS, inter_threads=1)
        self.template: list[int] = []
        self.cached: dict[tuple[int, ...], int] = {}
        self._reused = 0
        self._static: list[int] = []

    def reused(self) -> int:
        return self._reused

    def ids(self, req: Any) -> tuple[list[int], list[int]]:
        return _ids(self, req)

    def set_template(self, req: Any) -> None:
        """The token prefix every judge prompt shares: the prompt up to the user's text."""
        from dataclasses import replace

        from judgeaudit.llm import Message

        a, _ = self.ids(replace(req, messages=(req.messages[0], Message("user", "x"))))
        b, _ = self.ids(replace(req, messages=(req.messages[0], Message("user", "y"))))
        n = 0
        while n < min(len(a), len(b)) - 1 and a[n] == b[n]:
            n += 1
        self.template = a[:n]

    def prepare(self, req: Any, other: Any) -> None:
        """Untimed: the static prompt for `req` (needs the other order's ids)."""
        ids, _ = self.ids(req)
        o, _ = self.ids(other)
        n = 0
        while n < min(len(ids), len(o)) - 1 and ids[n] == o[n]:
            n += 1
        t = self.template
        if n - len(t) >= PAIR_MIN:
            self._static = ids[:n]
        elif ids[:len(t)] == t and len(ids) > len(t):
            self._static = t
        else:
            self._static = []

    def __call__(self, req: Any) -> tuple[float, str, int]:
        import numpy as np

        ids, cids = self.ids(req)
        static = self._static if ids[:len(self._static)] == self._static else []
        conv = self.tokenizer.convert_ids_to_tokens
        res = self.g.generate_batch(
            [conv(ids[len(static):])], static_prompt=conv(static) if static else None,
            cache_static_prompt=True, max_length=1, include_prompt_in_result=False,
            return_logits_vocab=True, beam_size=1)
        key = tuple(static)
        if static and key in self.cached:
            self._reused += len(static)
        self.cached[key] = len(static)
        pa = _p_a(np.asarray(res[0].logits[0], dtype=np.float64).reshape(-1), cids)
        return pa, ("A" if pa >= 1 - pa else "B"), len(ids)

    def info(self) -> dict:
        return {"ctranslate2": self.ct2.__version__, "compute_type": self.g.compute_type,
                "intra_threads": THREADS, "inter_threads": 1,
                "template_tokens": len(self.template),
                "static_prompts_cached": len(self.cached),
                "static_prompt_tokens_cached": sum(self.cached.values())}


def make_judge(config: str, model: str, ct2_dir: str) -> Any:
    if config in ProviderJudge.PARAMS:
        return ProviderJudge(model, config)
    if config == "ik":
        return IkJudge(model)
    return Ct2Judge(model, ct2_dir)


# ---- child phases -----------------------------------------------------------------------------

def _verdicts(judge: Any, reqs: list[Any]) -> dict:
    la, rows = _load_avg(), []
    for i, r in enumerate(reqs):
        before = judge.reused()
        if isinstance(judge, Ct2Judge):  # the pair's other order decides the static prompt
            judge.prepare(r, reqs[i + 1] if r.meta["order"] == "12" else reqs[i - 1])
        t = time.perf_counter()
        pa, choice, n = judge(r)
        s = time.perf_counter() - t
        rows.append({"item": r.meta["item_id"], "order": r.meta["order"], "s": round(s, 4),
                     "p_a": pa, "choice": choice, "prompt_tokens": n,
                     "new_tokens": n - (judge.reused() - before)})
    return {"load_avg_before": la, "load_avg_after": _load_avg(), "verdicts": rows}


def phase_run(config: str, k: int, items: int, long_items: int, model: str,
              ct2_dir: str) -> dict:
    from local_backends import long_requests, short_requests

    from judgeaudit.llm.providers.local import render_prompt

    la0 = _load_avg()
    t0 = time.monotonic()
    judge = make_judge(config, model, ct2_dir)
    load_s = time.monotonic() - t0
    tok = judge.tokenizer
    warm = short_requests(200, 1)
    if isinstance(judge, Ct2Judge):
        judge.set_template(warm[0])
        judge.prepare(warm[0], warm[1])
    t = time.perf_counter()
    judge(warm[0])
    first_s = time.perf_counter() - t

    def count(req: Any) -> int:
        return len(tok.encode(render_prompt(judge, req), add_special_tokens=False))

    out: dict[str, Any] = {"config": config, "run": k, "load_s": round(load_s, 2),
                           "first_verdict_s": round(first_s, 2), "load_avg_before": la0}
    out["short"] = _verdicts(judge, short_requests(k * items, items))
    out["long"] = _verdicts(judge, long_requests(k * long_items, long_items, count))
    for kind in ("short", "long"):
        rows = out[kind]["verdicts"]
        print(f"  {config} run {k + 1} {kind}: {statistics.mean(r['s'] for r in rows):.2f} "
              f"s/verdict (load {_load_avg()})", file=sys.stderr, flush=True)
    out["info"] = judge.info()
    out["env"] = {k: os.environ[k] for k in (*AVX2_ENV, "CT2_USE_MKL") if k in os.environ}
    out["load_avg_after"] = _load_avg()
    return out


def phase_agree(config: str, n: int, model: str, ct2_dir: str) -> dict:
    from local_backends import short_requests

    judge = make_judge(config, model, ct2_dir)
    if isinstance(judge, Ct2Judge):
        judge.set_template(short_requests(200, 1)[0])
    return {"config": config, **_verdicts(judge, short_requests(100, n))}


# ---- parent -----------------------------------------------------------------------------------

def _child(args: list[str], config: str) -> dict:
    from local_backends import run_phase

    return run_phase(__file__, args, AVX2_ENV | CONFIG_ENV[config])


def _summary(runs: list[dict]) -> dict:
    out: dict[str, Any] = {"runs": len(runs)}
    for kind in ("short", "long"):
        means = [statistics.mean(r["s"] for r in run[kind]["verdicts"]) for run in runs]
        rows = [r for run in runs for r in run[kind]["verdicts"]]
        out[kind] = {"s_per_verdict_median": round(statistics.median(means), 3),
                     "s_per_verdict_runs": [round(m, 3) for m in means],
                     "prompt_tokens_mean": round(statistics.mean(r["prompt_tokens"]
                                                                 for r in rows), 1),
                     "new_tokens_mean": round(statistics.mean(r["new_tokens"] for r in rows), 1)}
    out["load_s_median"] = statistics.median(r["load_s"] for r in runs)
    return out


def _ratios(raw: dict[str, list[dict]], ref: str = "fp32") -> dict:
    """Per configuration: the ratio of medians, and the median of the per-run ratios (run k of
    both configurations ran back to back, so each run's ratio shares its load)."""
    out = {}
    for c, runs in raw.items():
        if c == ref:
            continue
        d = {}
        for kind in ("short", "long"):
            per_run = [statistics.mean(r["s"] for r in a[kind]["verdicts"])
                       / statistics.mean(r["s"] for r in b[kind]["verdicts"])
                       for a, b in zip(raw[ref], runs, strict=True)]
            d[kind] = {"speedup_per_run": [round(x, 2) for x in per_run],
                       "speedup_median_of_runs": round(statistics.median(per_run), 2)}
        out[c] = d
    return out


def _agreement(rows: list[dict], ref: list[dict]) -> dict:
    pairs = list(zip(rows, ref, strict=True))
    assert all(a["item"] == b["item"] and a["order"] == b["order"] for a, b in pairs)
    same = sum(a["choice"] == b["choice"] for a, b in pairs)
    d = [abs(a["p_a"] - b["p_a"]) for a, b in pairs]
    return {"verdicts": len(pairs), "same_choice": same,
            "same_choice_rate": round(same / len(pairs), 4),
            "p_a_abs_diff_mean": round(statistics.mean(d), 4),
            "p_a_abs_diff_median": round(statistics.median(d), 4),
            "p_a_abs_diff_max": round(max(d), 4)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="qwen-1.5b")
    ap.add_argument("--ct2-dir", default="/work/runs/ct2_15b")
    ap.add_argument("--configs", default="fp32,ct2-mkl,ct2-dnnl")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--items", type=int, default=6, help="short facts pairs per run")
    ap.add_argument("--long-items", type=int, default=2, help="long pairs per run")
    ap.add_argument("--agree-items", type=int, default=30)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--phase", help=argparse.SUPPRESS)
    ap.add_argument("--config", help=argparse.SUPPRESS)
    ap.add_argument("--run", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.phase == "run":
        print(json.dumps(phase_run(a.config, a.run, a.items, a.long_items, a.model,
                                   a.ct2_dir)))
        return
    if a.phase == "agree":
        print(json.dumps(phase_agree(a.config, a.agree_items, a.model, a.ct2_dir)))
        return
    from judgeaudit.llm import local_model as lm

    configs = a.configs.split(",")
    result: dict[str, Any] = {
        "about": "issue 13 point 4: integer backends (" + ", ".join(
            c for c in configs if c != "fp32") + ") vs the transformers fp32 path on an "
            "emulated AVX2-only CPU (see method)",
        "method": __doc__, "model": a.model, "ct2_dir": a.ct2_dir,
        "runs": a.runs, "short_pairs_per_run": a.items, "long_pairs_per_run": a.long_items,
        "machine": {"cpu": lm.cpu_summary(), "load_avg_start": _load_avg(),
                    "emulation_env": AVX2_ENV, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ",
                                                                         time.gmtime())},
    }
    raw: dict[str, list[dict]] = {c: [] for c in configs}
    for k in range(a.runs):
        for c in (configs if k % 2 == 0 else configs[::-1]):
            print(f"run {k + 1}/{a.runs}: {c} (load {_load_avg()})", file=sys.stderr,
                  flush=True)
            raw[c].append(_child(["--phase", "run", "--config", c, "--run", str(k),
                                  "--items", str(a.items), "--long-items", str(a.long_items),
                                  "--model", a.model, "--ct2-dir", a.ct2_dir], c))
    result["summary"] = {c: _summary(r) for c, r in raw.items()}
    result["speedup_over_fp32"] = _ratios(raw)
    agree_raw: dict[str, dict] = {}
    if a.agree_items:
        for c in configs:
            print(f"agreement: {c} (load {_load_avg()})", file=sys.stderr, flush=True)
            agree_raw[c] = _child(["--phase", "agree", "--config", c, "--agree-items",
                                   str(a.agree_items), "--model", a.model,
                                   "--ct2-dir", a.ct2_dir], c)
    result["agreement_with_fp32"] = {}
    for c in configs:
        if c == "fp32":
            continue
        d: dict[str, Any] = {}
        if c in agree_raw:
            d["facts_pairs_both_orders"] = _agreement(agree_raw[c]["verdicts"],
                                                      agree_raw["fp32"]["verdicts"])
        for kind in ("short", "long"):
            d[f"timed_runs_{kind}"] = _agreement(
                [r for run in raw[c] for r in run[kind]["verdicts"]],
                [r for run in raw["fp32"] for r in run[kind]["verdicts"]])
        result["agreement_with_fp32"][c] = d
    result["machine"]["load_avg_end"] = _load_avg()
    result["raw"] = raw
    result["raw_agreement"] = agree_raw
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: result[k] for k in ("summary", "speedup_over_fp32",
                                             "agreement_with_fp32")}, indent=1))
    print("wrote", a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
