"""`local?backend=llamacpp`: the embedded judge's GGUF run by llama.cpp, in this process.

Why: on a CPU without bfloat16 units the transformers backend computes in fp32 on weights
dequantized from the Q4_K_M GGUF (6 GB for the 1.5B, 7.9 GB peak RSS). llama.cpp keeps the
weights quantized and multiplies them as integers (Q4_K blocks against Q8_K activations),
reading a quarter of the bytes per token: issue 13 measured 2.0 s vs 3.0 s per verdict and
2 GB vs 10 GB on the 2-core AVX2 development machine, verdicts agreeing (P(A) within 0.03).
`local_model.choose_backend` decides when `auto` takes this backend;
benchmarks/local_backends.py measures both side by side.

The build: the prebuilt `xllamacpp` wheel from PyPI (no compiler; pinned in the `local`
extra), which wraps llama.cpp's server as `xllamacpp.Server`: a request dict in, the OpenAI
completion dict out, no HTTP. `get_system_info()` on the development machine (AMD EPYC, AVX2,
no AVX-512) reads "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 |
BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1": the x86_64 wheel is one AVX2 build (the
flags are compile-time, there are no per-CPU variants: it uses its AVX2 kernels on AVX-512
machines too and cannot run without AVX2, see `local_model.llamacpp_cpu_ok`); REPACK = 1:
Q4_K weights are rearranged at load into the interleaved layout of its AVX2 matrix kernels.
The aarch64 wheel carries NEON/dot-product kernels (not run here). `system_info()` returns
the string of the running machine; the benchmark records it.

The contract of the local provider holds here too:
- Prompts are the transformers backend's token ids: the GGUF's own tokenizer and chat template
  are rebuilt without torch (gguf_tokenizer.py, identical ids on 5,330 test strings) and the
  provider's `render_prompt` / `_choice_token_ids` are shared, so the choice tokens are the
  same ids too. llama.cpp receives ids, never text.
- Verdicts with `choices`: one evaluation, no generation. llama.cpp returns the top-n
  log-probabilities of the softmax over the whole vocabulary of the raw logits (before any
  sampler: post_sampling_probs off); the choices' values renormalised over the choices are
  softmax over the choice logits, as the transformers backend computes. A choice outside the
  top 20 is looked up in the top 1,000, then in the whole vocabulary.
- Prefix reuse (`prefix_cache=on`, llama.cpp's cache_prompt): the server keeps each slot's
  last prompt and the host-memory prompt cache keeps recent ones; a request is given the slot
  whose cached prompt shares most of it and runs only the tokens after the common prefix.
  llama.cpp picks its CPU matrix kernel by the number of tokens a pass evaluates, so a short
  re-run suffix rounds differently from the whole prompt: P(A) moved by up to 0.021 on the
  test pairs (0.7369 whole or with 72 tokens re-run, 0.7184 with 32 or 12, 0.7407 with 1),
  the size of the transformers backend's bf16-vs-fp32 difference
  (tests/llm/test_llamacpp_backend.py).
- Batching: the server has `slots` sequences (gen_batch, at least 4) and decodes the requests
  in flight in one batch (continuous batching); the provider's concurrency (`gen_batch=N`)
  decides how many are in flight. Calls block in llama.cpp without the GIL, on a thread pool
  of `slots` workers.
- Generation: greedy at temperature 0; otherwise the sampler chain is temperature alone
  (no top-k/top-p/min-p/penalties: a draw from softmax(logits / T), like the transformers
  backend), seeded from the request per slot, so a sample does not depend on its batch-mates.
  llama.cpp also ends a generation at the model's other end-of-generation tokens
  (<|endoftext|>), where the transformers backend stops at <|im_end|> only.
- Cache key: `local` adds backend=llamacpp beside the weights' sha256 (providers/local.py).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from judgeaudit.llm.base import FatalProviderError, ProviderError, Request, Response, Usage
from judgeaudit.llm.gguf_backend import (
    GGUFModel,
    already_loaded,
    check_length,
    context_size,
    file_type,
    open_gguf,
)
from judgeaudit.llm.local_model import (
    INSTALL_HINT,
    ModelFilesError,
    choose_threads,
    llamacpp_cpu_ok,
    resolve,
)

log = logging.getLogger("judgeaudit.llm.local")

DEFAULT_SLOTS = 4
PROMPT_CACHE_MIB = 256  # host-memory prompt cache (llama.cpp's default of 8 GB would grow RSS)
SLOT_SIMILARITY = 0.01  # least shared fraction of a prompt for a slot to be picked for reuse
TOP_N = (20, 1000)      # top log-probabilities fetched for a verdict, widened when a choice
                        # is missing; then the whole vocabulary
# The sampler settings that make llama.cpp's chain plain temperature sampling.
_PLAIN_SAMPLING = {"samplers": ["temperature"], "top_k": 0, "top_p": 1.0, "min_p": 0.0,
                   "typical_p": 1.0, "repeat_penalty": 1.0, "repeat_last_n": 0,
                   "presence_penalty": 0.0, "frequency_penalty": 0.0, "dry_multiplier": 0.0,
                   "xtc_probability": 0.0, "mirostat": 0, "dynatemp_range": 0.0}


def _xllamacpp() -> Any:
    if not llamacpp_cpu_ok():
        raise ModelFilesError(
            "backend=llamacpp: this CPU cannot run the prebuilt llama.cpp wheel (x86_64 needs "
            "AVX2, FMA, F16C and BMI2; aarch64 NEON); use backend=transformers")
    try:
        import xllamacpp
    except ImportError as exc:
        raise ModelFilesError(
            f"backend=llamacpp needs the xllamacpp package ({exc}); install it with: "
            f"{INSTALL_HINT} (or: pip install xllamacpp), or use backend=transformers"
        ) from None
    return xllamacpp


def system_info() -> dict[str, Any]:
    """What the installed wheel runs with on this machine: llama.cpp's get_system_info()
    (the CPU kernels it was built with and uses here), its version and build."""
    x = _xllamacpp()
    return {"system_info": x.get_system_info().strip(),
            "xllamacpp": getattr(x, "__version__", "?"),
            "build": dict(getattr(x, "BUILD_INFO", {}) or {})}


@dataclass(kw_only=True)
class LlamaCppModel(GGUFModel):
    """The GGUF served by an in-process llama.cpp server: the server and the thread pool
    its calls block on."""

    server: Any
    executor: ThreadPoolExecutor
    backend: str = "llamacpp"


_LOADED: dict[str, LlamaCppModel] = {}
_LOAD_LOCK = threading.Lock()


def load(model: str, slots: int = 1, threads: int | str | None = None,
         ctx: int | str | None = None) -> LlamaCppModel:
    """The llama.cpp server for a preset name or .gguf path, started at most once per
    process (the first load fixes its slots, threads and context; a later, larger request
    for slots queues in llama.cpp instead)."""
    source = resolve(model)
    with _LOAD_LOCK:
        lm = already_loaded(_LOADED, source, slots, "llama.cpp")
        if lm is not None:
            return lm
        x = _xllamacpp()
        t0 = time.monotonic()
        gguf, meta, tok = open_gguf(source, "llamacpp")
        arch = meta.get("general.architecture", "")
        n_train = int(meta.get(f"{arch}.context_length", 0) or 0)
        n_slots = max(DEFAULT_SLOTS, int(slots))
        n_ctx = context_size(ctx, n_slots)
        n_threads = choose_threads(threads)
        p = x.CommonParams()
        p.model.path = str(gguf)
        p.n_ctx = n_ctx
        p.n_parallel = n_slots
        p.kv_unified = True          # one KV buffer of n_ctx tokens shared by the slots
        p.cpuparams.n_threads = n_threads
        p.cpuparams_batch.n_threads = n_threads
        p.cache_prompt = True
        p.cache_ram_mib = PROMPT_CACHE_MIB
        # A request goes to the slot whose cached prompt shares the largest fraction of it,
        # if above this; else to the least recently used slot. llama.cpp's default, 0.1,
        # missed the shared system prompt (75 tokens) of 1,500-token judge prompts (5%).
        p.slot_prompt_similarity = SLOT_SIMILARITY
        p.ctx_shift = False          # never drop context silently
        p.verbosity = 0
        try:
            server = x.Server(p)
        except Exception as exc:  # the wheel raises plain RuntimeError/ValueError
            raise ModelFilesError(f"llama.cpp could not load {gguf}: {exc}") from exc
        info = x.get_system_info().strip()
        lm = LlamaCppModel(
            source=source, gguf=gguf, server=server, tokenizer=tok, slots=n_slots, n_ctx=n_ctx,
            n_ctx_train=n_train, threads=n_threads, load_seconds=time.monotonic() - t0,
            system_info=info,
            file_type=file_type(meta),
            executor=ThreadPoolExecutor(max_workers=n_slots,
                                        thread_name_prefix="judgeaudit-llamacpp"),
        )
        _LOADED[source.identity] = lm
        log.info("llama.cpp loaded %s (%s, %d slots, ctx %d, %d threads) in %.1fs; %s",
                 source.name, lm.file_type, n_slots, n_ctx, n_threads, lm.load_seconds, info)
        return lm


def unload_all() -> None:
    """Forget every loaded server (its memory is freed once no provider holds it)."""
    with _LOAD_LOCK:
        for lm in _LOADED.values():
            lm.executor.shutdown(wait=False)
        _LOADED.clear()


# ---------------------------------------------------------------------------------------------
# Calls (run on the model's thread pool; each blocks in llama.cpp without the GIL)


def _call(lm: LlamaCppModel, body: dict[str, Any]) -> dict[str, Any]:
    out = lm.server.handle_completions(body)
    if not isinstance(out, dict):
        raise ProviderError(f"llama.cpp returned {type(out).__name__}, not a completion",
                            retryable=True)
    err = out.get("error")
    if err:
        msg = err.get("message", err) if isinstance(err, dict) else err
        code = err.get("code") if isinstance(err, dict) else None
        if code is not None and 400 <= int(code) < 500:
            raise FatalProviderError(f"llama.cpp: {msg}")
        raise ProviderError(f"llama.cpp: {msg}", retryable=True)
    return out


def _top_logprobs(out: dict[str, Any]) -> dict[int, float]:
    content = out["choices"][0]["logprobs"]["content"]
    return {int(e["id"]): float(e["logprob"]) for e in content[0]["top_logprobs"]}


def score_choices(lm: LlamaCppModel, request: Request, reuse: bool = True) -> Response:
    """P(each choice) as the next token after the prompt (+ prefill): one evaluation."""
    from judgeaudit.llm.providers.local import _choice_token_ids, render_prompt

    tok = lm.tokenizer
    prompt = render_prompt(lm, request)  # type: ignore[arg-type]
    common, cids, notes = _choice_token_ids(tok, prompt, request.choices)
    ids = tok.encode(prompt, add_special_tokens=False) + common
    check_length(lm, ids, 1, "llama.cpp")
    top: dict[int, float] = {}
    cached = 0
    for n in (*TOP_N, tok.vocab_size):
        out = _call(lm, {"prompt": ids, "n_predict": 1, "n_probs": n, "temperature": 0.0,
                         "post_sampling_probs": False, "cache_prompt": reuse})
        top = _top_logprobs(out)
        cached = int(((out.get("usage") or {}).get("prompt_tokens_details") or {})
                     .get("cached_tokens", 0) or 0)
        if all(c in top for c in cids):
            break
    missing = [c for c in request.choices if cids[request.choices.index(c)] not in top]
    if missing:
        raise FatalProviderError(f"llama.cpp gave no probability for choice(s) {missing}")
    lps = [top[c] for c in cids]
    m = max(lps)
    if not math.isfinite(m):
        raise FatalProviderError(f"llama.cpp gave zero probability to every choice "
                                 f"{list(request.choices)}")
    ex = [math.exp(lp - m) for lp in lps]
    z = sum(ex)
    probs = {c: e / z for c, e in zip(request.choices, ex, strict=True)}
    best = max(request.choices, key=lambda c: probs[c])
    raw: dict[str, Any] = {"logprobs": dict(zip(request.choices, lps, strict=True)),
                           "backend": "llamacpp"}
    if notes:
        raw["notes"] = notes
    lm.state["reused_tokens"] = lm.state.get("reused_tokens", 0) + cached
    return Response(text=best, probs=probs, usage=Usage(prompt_tokens=len(ids)), raw=raw)


def generate_text(lm: LlamaCppModel, request: Request, reuse: bool = True) -> Response:
    """Greedy at temperature 0, else plain temperature sampling seeded from the request."""
    from judgeaudit.llm.providers.local import _seed, render_prompt

    tok = lm.tokenizer
    ids = tok.encode(render_prompt(lm, request), add_special_tokens=False)  # type: ignore[arg-type]
    check_length(lm, ids, request.max_tokens, "llama.cpp")
    body: dict[str, Any] = {"prompt": ids, "n_predict": request.max_tokens,
                            "cache_prompt": reuse, **_PLAIN_SAMPLING}
    if request.temperature > 0:
        body["temperature"] = float(request.temperature)
        body["seed"] = _seed(request) % 0xFFFFFFFF  # 0xFFFFFFFF would mean "random"
    else:
        body["temperature"] = 0.0
        body["seed"] = 0
    out = _call(lm, body)
    choice = out["choices"][0]
    usage = out.get("usage") or {}
    return Response(text=choice.get("text", ""),
                    usage=Usage(prompt_tokens=len(ids),
                                completion_tokens=int(usage.get("completion_tokens", 0))),
                    raw={"finish_reason": choice.get("finish_reason"), "backend": "llamacpp"})
