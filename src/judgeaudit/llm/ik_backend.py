"""`local?backend=ik`: the embedded judge's GGUF run by ik_llama.cpp, in this process.

Why: on a CPU without bfloat16 units (AVX2 only) the transformers backend computes in fp32,
and llama.cpp (llamacpp_backend.py) gains 1.4x on short verdicts. ik_llama.cpp, a llama.cpp
fork with its own CPU matrix kernels, repacks the Q4_K_M weights at load into a
row-interleaved layout and runs them as integers: on 2 AVX2 cores it judged ~130-token pairs
2.1x and ~1,500-token pairs 1.5x faster than transformers fp32, with the same choice on
140/140 verdicts (benchmarks/results/ik_experiment.json; local_backends.json has the
backends side by side). `local_model.choose_backend` decides when `auto` takes it.

The build: the prebuilt `ik-llama-cpp-python` wheel from PyPI (no compiler; in the `local`
extra on Linux x86_64), whose x86_64 build has AVX2 kernels ("AVX2 = 1 | AVX512 = 0": it
runs them on AVX-512 CPUs too and needs AVX2, FMA and F16C, see
`local_model.llamacpp_cpu_ok`). We drive its C API through ctypes (its own Python layer
serves one sequence); the library releases the GIL in every call.

The contract of the local provider holds:
- Prompts are the transformers backend's token ids (the GGUF's tokenizer and chat template
  rebuilt without torch, gguf_tokenizer.py) and the choice tokens are the same ids
  (`render_prompt` / `_choice_token_ids` are shared): ik_llama.cpp receives ids, never text.
- Verdicts with `choices`: one evaluation; the choices' probabilities are the softmax over
  their next-token logits, as the transformers backend computes.
- Prefix reuse (`prefix_cache=on`): the engine has `slots` sequences in one KV cache (one by
  default, `gen_batch=N` gives N); each keeps the tokens of its last prompt. A request takes
  the free slot whose tokens share the longest prefix with it, drops the rest of that slot's
  cache and evaluates only the tokens after the common prefix (at least the last one). The
  judge asks an item's two orders one after the other, so the second reuses the first's
  template and system prompt.
- Batching: one engine thread runs every evaluation. Requests in flight together (up to
  `gen_batch`) are put into the same llama_decode call, each as its own sequence (continuous
  batching: a request joins at the next step, a finished one leaves). Flash attention is on
  for one slot only (see FLASH_ATTN), so batched verdicts round slightly differently.
- Generation: greedy at temperature 0; above it a draw from softmax(logits / T) with a
  generator seeded from the request, so a sample never depends on its batch-mates. It stops
  at the model's end-of-generation tokens or after max_tokens.
- Cache key: `local` adds backend=ik beside the weights' sha256 (providers/local.py).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, InvalidStateError
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgeaudit.llm.base import FatalProviderError, Request, Response, Usage
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

N_BATCH = 2048          # tokens one llama_decode call takes (over all sequences)
N_UBATCH = 512          # tokens per matrix pass inside it: the fastest of 256/512/1024 here
# Flash attention: 3-25% faster on long prompts (ik_experiment.json), but the wheel's kernel
# aborts the process (GGML_ASSERT(S > 0) in iqk_fa_templates.h) when a second sequence has
# cells in the KV cache, so it is on only for a single slot, the default (gen_batch=1).
FLASH_ATTN = True


def _api() -> Any:
    """ik_llama_cpp's ctypes module, with the few functions it leaves undeclared declared."""
    if not llamacpp_cpu_ok():
        raise ModelFilesError(
            "backend=ik: this CPU cannot run the prebuilt ik_llama.cpp wheel (x86_64 needs "
            "AVX2, FMA, F16C and BMI2); use backend=transformers")
    try:
        from ik_llama_cpp import _ctypes_api as api
    except (ImportError, OSError) as exc:
        raise ModelFilesError(
            f"backend=ik needs the ik-llama-cpp-python package ({exc}); install it with: "
            f"{INSTALL_HINT} (or: pip install ik-llama-cpp-python), or use "
            "backend=llamacpp or backend=transformers") from None
    lib = api._lib
    if not getattr(lib, "_judgeaudit_declared", False):
        vp, i32 = ctypes.c_void_p, ctypes.c_int32
        lib.llama_kv_cache_seq_rm.argtypes = [vp, i32, i32, i32]
        lib.llama_kv_cache_seq_rm.restype = ctypes.c_bool
        lib.llama_print_system_info.argtypes = []
        lib.llama_print_system_info.restype = ctypes.c_char_p
        lib.llama_n_ctx_train.argtypes = [vp]
        lib.llama_n_ctx_train.restype = i32
        lib.llama_log_set.argtypes = [_LOG_CB, vp]
        lib.llama_log_set.restype = None
        lib._judgeaudit_declared = True
    return api


_LOG_CB = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


@_LOG_CB
def _log_line(level: int, text: bytes | None, _user: Any) -> None:
    """ik_llama.cpp's log lines go to our logger at debug level (it prints hundreds at load)."""
    if text:
        log.debug("ik_llama.cpp: %s", text.decode("utf-8", "replace").rstrip())


def system_info() -> dict[str, Any]:
    """What the installed wheel runs with on this machine: its CPU kernels and version."""
    from importlib.metadata import version

    api = _api()
    return {"system_info": api._lib.llama_print_system_info().decode().strip(),
            "ik-llama-cpp-python": version("ik-llama-cpp-python")}


# ---------------------------------------------------------------------------------------------
# The engine: one thread, `slots` sequences in one KV cache, continuous batching


@dataclass
class _Slot:
    seq: int
    tokens: list[int] = field(default_factory=list)  # what its KV cache holds, in order
    busy: bool = False
    used: float = 0.0


@dataclass
class _Job:
    ids: list[int]
    future: Future  # the caller's; cancelling it drops the job at the next step
    reuse: bool
    make: Callable[[Any], Any] = lambda raw: raw  # raw result (logits, tokens) -> the answer
    choice_ids: list[int] | None = None       # a verdict; else a generation
    max_tokens: int = 0
    temperature: float = 0.0
    seed: int = 0
    slot: _Slot | None = None
    pending: list[int] = field(default_factory=list)  # tokens still to evaluate
    reused: int = 0
    out: list[int] = field(default_factory=list)
    finish: str = ""
    rng: Any = None


class _Engine:
    """Runs every llama_decode of one model on its own thread (the library is not safe to
    call from two threads on one context)."""

    def __init__(self, api: Any, ctx: Any, n_vocab: int, slots: int, eog: set[int]):
        self.api, self.ctx, self.n_vocab, self.eog = api, ctx, n_vocab, eog
        self.batch = api.llama_batch_init(N_BATCH, 0, 1)
        self.slots = [_Slot(i) for i in range(slots)]
        self.waiting: deque[_Job] = deque()
        self.active: list[_Job] = []
        self.cond = threading.Condition()
        self.closed = False
        self.reused_tokens = 0
        self.steps = 0
        self.max_batch_sequences = 0
        self.thread = threading.Thread(target=self._run, name="judgeaudit-ik", daemon=True)
        self.thread.start()

    def submit(self, job: _Job) -> Future:
        with self.cond:
            if self.closed:
                raise FatalProviderError("ik_llama.cpp model was unloaded")
            self.waiting.append(job)
            self.cond.notify()
        return job.future

    def close(self) -> None:
        with self.cond:
            self.closed = True
            self.cond.notify()
        self.thread.join()
        self.api.llama_batch_free(self.batch)

    # -- engine thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.closed and not self.waiting and not self.active:
                    self.cond.wait()
                if self.closed:
                    for job in [*self.waiting, *self.active]:
                        _fail(job, FatalProviderError("ik_llama.cpp model was unloaded"))
                    return
                self._admit()
            try:
                self._step()
            except Exception as exc:  # every waiter must hear of it
                err = exc if isinstance(exc, FatalProviderError) else FatalProviderError(
                    f"ik_llama.cpp: {type(exc).__name__}: {exc}")
                for job in self.active:
                    _fail(job, err)
                    self._release(job)
                self.active = []

    def _admit(self) -> None:
        """Give waiting jobs free slots: the one sharing the longest prefix, else the least
        recently used; drop the slot's cache after the shared prefix."""
        while self.waiting:
            free = [s for s in self.slots if not s.busy]
            if not free:
                return
            job = self.waiting.popleft()
            if job.future.cancelled():
                continue
            best, n = min(free, key=lambda s: s.used), 0
            if job.reuse:
                for s in free:
                    k = _common(s.tokens, job.ids)
                    if k > n:
                        best, n = s, k
            n = min(n, len(job.ids) - 1)  # evaluate at least the last token: its logits
            self.api._lib.llama_kv_cache_seq_rm(self.ctx, best.seq, n, -1)
            best.tokens = best.tokens[:n]
            best.busy, best.used = True, time.monotonic()
            job.slot, job.pending, job.reused = best, job.ids[n:], n
            self.reused_tokens += n
            if job.choice_ids is None and job.temperature > 0:
                job.rng = np.random.default_rng(job.seed)
            self.active.append(job)

    def _step(self) -> None:
        """One llama_decode over the pending tokens of the active jobs (up to N_BATCH), then
        the next-token logits of every job whose pending tokens are all in."""
        b, room, outs = self.batch, N_BATCH, []
        n = 0
        for job in self.active:
            if room == 0:
                break
            chunk, job.pending = job.pending[:room], job.pending[room:]
            slot = job.slot
            assert slot is not None
            start = len(slot.tokens)
            for i, t in enumerate(chunk):
                b.token[n], b.pos[n], b.n_seq_id[n] = t, start + i, 1
                b.seq_id[n][0] = slot.seq
                b.logits[n] = 0
                n += 1
            slot.tokens.extend(chunk)
            room -= len(chunk)
            if not job.pending:
                b.logits[n - 1] = 1
                outs.append((job, n - 1))
        if n == 0:
            return
        b.n_tokens = n
        self.steps += 1
        self.max_batch_sequences = max(self.max_batch_sequences,
                                       sum(1 for j in self.active if j.slot is not None))
        rc = self.api.llama_decode(self.ctx, b)
        if rc == 1:  # no room in the KV cache: free the idle slots' cells and try once more
            for s in self.slots:
                if not s.busy and s.tokens:
                    self.api._lib.llama_kv_cache_seq_rm(self.ctx, s.seq, 0, -1)
                    s.tokens = []
            rc = self.api.llama_decode(self.ctx, b)
        if rc != 0:  # what the failed call left in these sequences' cache is unknown: drop it
            for job in self.active:
                if job.slot is not None:
                    self.api._lib.llama_kv_cache_seq_rm(self.ctx, job.slot.seq, 0, -1)
                    job.slot.tokens = []
            raise FatalProviderError(
                f"ik_llama.cpp llama_decode failed ({rc}) on {n} tokens"
                + ("; the context is full: raise it with local?ctx=N" if rc == 1 else ""))
        for job, i in outs:
            ptr = self.api.llama_get_logits_ith(self.ctx, i)
            logits = np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))
            if job.choice_ids is not None:
                self._finish(job, np.array(logits[job.choice_ids], dtype=np.float64))
            elif self._next_token(job, logits):
                self._finish(job, (job.out, job.finish))
        for job in self.active:
            if job.future.cancelled():  # the caller gave up: free its slot
                self._release(job)
        self.active = [j for j in self.active if j.slot is not None]

    def _finish(self, job: _Job, raw: Any) -> None:
        self._release(job)
        try:
            answer = job.make(raw)
        except Exception as exc:  # a bad answer fails this job only
            _fail(job, exc)
            return
        with contextlib.suppress(InvalidStateError):  # cancelled meanwhile
            job.future.set_result(answer)

    def _next_token(self, job: _Job, logits: Any) -> bool:
        """Pick the next token of a generation; True when it is finished."""
        if job.rng is None:
            tok = int(np.argmax(logits))
        else:
            z = logits.astype(np.float64) / job.temperature
            p = np.exp(z - z.max())
            tok = int(job.rng.choice(self.n_vocab, p=p / p.sum()))
        if tok in self.eog:
            job.finish = "stop"
            return True
        job.out.append(tok)
        if len(job.out) >= job.max_tokens:
            job.finish = "length"
            return True
        job.pending = [tok]
        return False

    def _release(self, job: _Job) -> None:
        if job.slot is not None:
            job.slot.busy, job.slot = False, None


def _common(a: list[int], b: list[int]) -> int:
    n, m = 0, min(len(a), len(b))
    while n < m and a[n] == b[n]:
        n += 1
    return n


def _fail(job: _Job, err: BaseException) -> None:
    with contextlib.suppress(InvalidStateError):  # already answered or cancelled
        job.future.set_exception(err)


# ---------------------------------------------------------------------------------------------
# Loading


@dataclass(kw_only=True)
class IkModel(GGUFModel):
    """The GGUF loaded by ik_llama.cpp: its engine and the C handles unload_all frees."""

    engine: _Engine
    handles: tuple[Any, Any]  # (model, context) pointers
    backend: str = "ik"


_LOADED: dict[str, IkModel] = {}
_LOAD_LOCK = threading.Lock()
_BACKEND_READY = False


def load(model: str, slots: int = 1, threads: int | str | None = None,
         ctx: int | str | None = None) -> IkModel:
    """The model for a preset name or .gguf path, loaded at most once per process (the first
    load fixes its slots, threads and context; more requests than slots wait their turn)."""
    global _BACKEND_READY
    source = resolve(model)
    with _LOAD_LOCK:
        lm = already_loaded(_LOADED, source, slots, "ik_llama.cpp")
        if lm is not None:
            return lm
        api = _api()
        t0 = time.monotonic()
        gguf, meta, tok = open_gguf(source, "ik")
        if not _BACKEND_READY:
            api._lib.llama_log_set(_log_line, None)
            api.llama_backend_init()
            _BACKEND_READY = True
        n_slots = max(1, int(slots))
        n_ctx = context_size(ctx, n_slots)
        n_threads = choose_threads(threads)
        mp = api.llama_model_default_params()
        mp.repack_tensors, mp.use_mmap = True, True  # its interleaved AVX2 layout, at load
        model_p = api.llama_model_load_from_file(str(gguf).encode(), mp)
        if not model_p:
            raise ModelFilesError(f"ik_llama.cpp could not load {gguf} (see the debug log)")
        cp = api.llama_context_default_params()
        cp.n_ctx, cp.n_batch, cp.n_ubatch, cp.n_seq_max = n_ctx, N_BATCH, N_UBATCH, n_slots
        cp.n_threads = cp.n_threads_batch = n_threads
        cp.flash_attn = FLASH_ATTN and n_slots == 1
        ctx_p = api.llama_init_from_model(model_p, cp)
        if not ctx_p:
            api.llama_free_model(model_p)
            raise ModelFilesError(f"ik_llama.cpp could not make a context of {n_ctx} tokens "
                                  f"for {gguf}")
        vocab = api.llama_model_get_vocab(model_p)
        n_vocab = api.llama_vocab_n_tokens(vocab)
        types = meta.get("tokenizer.ggml.token_type") or []
        eog = {i for i, t in enumerate(types) if t == 3 and api.llama_token_is_eog(model_p, i)}
        eog |= {t for t in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_end|>"))
                if isinstance(t, int)}
        lm = IkModel(
            source=source, gguf=gguf, tokenizer=tok,
            engine=_Engine(api, ctx_p, n_vocab, n_slots, eog), slots=n_slots, n_ctx=n_ctx,
            n_ctx_train=int(api._lib.llama_n_ctx_train(model_p)), threads=n_threads,
            load_seconds=time.monotonic() - t0,
            system_info=api._lib.llama_print_system_info().decode().strip(),
            file_type=file_type(meta),
            handles=(model_p, ctx_p))
        _LOADED[source.identity] = lm
        log.info("ik_llama.cpp loaded %s (%s, %d slots, ctx %d, %d threads) in %.1fs; %s",
                 source.name, lm.file_type, n_slots, n_ctx, n_threads, lm.load_seconds,
                 lm.system_info)
        return lm


def unload_all() -> None:
    """Stop every engine and free its context and weights."""
    with _LOAD_LOCK:
        for lm in _LOADED.values():
            lm.engine.close()
            api = lm.engine.api
            api.llama_free(lm.handles[1])
            api.llama_free_model(lm.handles[0])
        _LOADED.clear()


# ---------------------------------------------------------------------------------------------
# Calls (each blocks until the engine has answered; run them off the event loop)


def submit_choices(lm: IkModel, request: Request, reuse: bool = True) -> Future:
    """Queue a verdict; the future gives its Response."""
    from judgeaudit.llm.providers.local import _choice_token_ids, render_prompt

    tok = lm.tokenizer
    prompt = render_prompt(lm, request)  # type: ignore[arg-type]
    common, cids, notes = _choice_token_ids(tok, prompt, request.choices)
    ids = tok.encode(prompt, add_special_tokens=False) + common
    check_length(lm, ids, 1, "ik_llama.cpp")

    def make(logits: Any) -> Response:
        p = np.exp(logits - logits.max())
        p /= p.sum()
        probs = {c: float(x) for c, x in zip(request.choices, p, strict=True)}
        raw: dict[str, Any] = {"logits": dict(zip(request.choices, logits.tolist(),
                                                  strict=True)), "backend": "ik"}
        if notes:
            raw["notes"] = notes
        lm.state["reused_tokens"] = lm.state.get("reused_tokens", 0) + job.reused
        return Response(text=max(request.choices, key=lambda c: probs[c]), probs=probs,
                        usage=Usage(prompt_tokens=len(ids)), raw=raw)

    job = _Job(ids=ids, future=Future(), reuse=reuse, make=make, choice_ids=cids)
    return lm.engine.submit(job)


def submit_generation(lm: IkModel, request: Request, reuse: bool = True) -> Future:
    """Queue a generation (greedy at temperature 0, else seeded sampling); the future gives
    its Response."""
    from judgeaudit.llm.providers.local import _seed, render_prompt

    tok = lm.tokenizer
    ids = tok.encode(render_prompt(lm, request), add_special_tokens=False)  # type: ignore[arg-type]
    check_length(lm, ids, request.max_tokens, "ik_llama.cpp")

    def make(raw: tuple[list[int], str]) -> Response:
        toks, finish = raw
        lm.state["reused_tokens"] = lm.state.get("reused_tokens", 0) + job.reused
        return Response(text=tok.decode(toks),
                        usage=Usage(prompt_tokens=len(ids), completion_tokens=len(toks)),
                        raw={"finish_reason": finish, "backend": "ik"})

    job = _Job(ids=ids, future=Future(), reuse=reuse, make=make,
               max_tokens=max(1, request.max_tokens), temperature=float(request.temperature),
               seed=_seed(request))
    return lm.engine.submit(job)


def score_choices(lm: IkModel, request: Request, reuse: bool = True) -> Response:
    """P(each choice) as the next token after the prompt (+ prefill); blocking."""
    return submit_choices(lm, request, reuse).result()


def generate_text(lm: IkModel, request: Request, reuse: bool = True) -> Response:
    """A generation; blocking."""
    return submit_generation(lm, request, reuse).result()
