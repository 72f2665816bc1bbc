"""`local`: the embedded judge, a small model run on the CPU with no network.

Spec: `local` (= `local:qwen-1.5b`), `local:qwen-0.5b`, `local:/path/model.gguf`,
`local:/path/hf_model_dir`; parameters `backend=auto|transformers|ik|llamacpp` (default auto,
see below), `dtype=bf16|fp32` (transformers; default: bf16 where the CPU has bf16 units),
`threads=N|auto` (default auto: the cores not kept busy by other processes),
`prefix_cache=on|off` (default on), `decode=lookup|plain|assisted` (default lookup) and
`lookup_k=N` (default 10) for transformers generation, `gen_batch=N` (requests decoded
together) and `ctx=N` (ik, llamacpp: tokens of context shared by its slots).

Three backends run the same verified GGUF weights. `transformers` dequantizes them to
bf16/fp32 and runs torch: the fast one where the CPU has AMX tiles. `ik` (llm/ik_backend.py)
runs the quantized weights as integers with ik_llama.cpp's AVX2 kernels (the prebuilt
ik-llama-cpp-python wheel, Linux x86_64), never loading torch: the fast one on other x86 CPUs
(2.2-3.5x transformers fp32 on short verdicts, 1.6-2.1x on ~1,500-token ones; as fast as
transformers bf16 on AVX512-BF16 without AMX, in a third of the memory;
benchmarks/results/local_backends.json). `llamacpp` (llm/llamacpp_backend.py) does the
same with llama.cpp's AVX2/NEON kernels through the prebuilt xllamacpp wheel (Linux x86_64
and aarch64): slower than ik on x86 (1.4x / 1.1x), the integer backend on ARM. `auto` chooses as
`local_model.choose_backend` says (this machine's recorded measurement, else the CPU flags;
a transformers-only setting, dtype=, decode= or lookup_k=, means transformers). The backend
is part of the cache key, so verdicts of different backends are never confused. What follows
describes the transformers backend; ik_backend.py and llamacpp_backend.py say how they keep
the same contract.

Generation (rewrites, references) is greedy at temperature 0 and, by default, uses
prompt-lookup decoding: candidate continuations are copied from n-gram matches in the prompt
and verified by the model in one forward pass, so text that copies its input (a rewrite keeps
most of the original) costs fewer passes. The verifier is the same model and a candidate
token is kept only where it equals the model's own greedy choice, so the output is the plain
greedy output up to floating-point near-ties. In bf16 those ties do occur where the text is
new rather than copied: benchmarks/bench_generation.py (side by side, G_inj prompts) found
whole rewrites identical and 2 of 4 appended texts different from plain (equally fluent
alternatives, e.g. "to make it" for "to make the text"), at about 3x plain tokens/s on
rewrites and 1.5x on appends. So the decode mode and lookup_k are part of the cache key (the
default adds nothing to it). `decode=assisted` drafts with the 0.5B preset instead (the same
verification; slower than lookup here: 1.6x on rewrites, 0.8x on appends). Sampling
(temperature > 0) always decodes plainly: prompt lookup with sampling keeps the
distribution but not the seeded plain sample. With `gen_batch=N` sampled requests are
batched too, each row drawing from its own request-seeded generator (Gumbel-max).

Verdicts with `choices` cost one forward pass and no generation: the probability of each
choice's token after the prompt (+ prefill), renormalised over the choices. Judge prompts
share long prefixes (the system prompt for every item; the instruction text too for the two
presentation orders of one item), so the key/value caches of recent requests are kept and a
new request runs only the tokens after its longest common prefix with one of them.

All model work runs on one dedicated thread per loaded model: torch already uses every core
for one forward pass, so running two at once would only make both slower, and the event loop
stays free meanwhile. Batching several requests into one forward pass was measured on the
2-core development machine and did not help (see benchmarks/bench_local_judge.py: the
forward pass over a ~370-token prompt is already compute-bound), so it is not done.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import json
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, ClassVar

from judgeaudit.llm.base import (
    FatalProviderError,
    Provider,
    ProviderError,
    Request,
    RequestRejected,
    Response,
    Usage,
)
from judgeaudit.llm.local_model import (
    DEFAULT_PRESET,
    GGUF_BACKENDS,
    LoadedModel,
    MissingExtraError,
    ModelFilesError,
    choose_backend,
    choose_threads,
    cpu_summary,
    load,
    require_backend,
    resolve,
    resolve_dtype,
    set_threads,
)
from judgeaudit.llm.registry import register

# Parameters that change speed, not outputs: kept out of the cache key.
_RUNTIME_PARAMS = frozenset({"threads", "prefix_cache", "ctx"})
# In the cache key in a normalised form (`cache_identity`): in bf16, verifying several drafted
# tokens in one pass rounds differently from one token per pass, so greedy texts can differ
# between decode modes and lookup_k values (benchmarks/results/generation.json).
DEFAULT_DECODE = "lookup:k=10"
_DECODE_PARAMS = frozenset({"decode", "lookup_k", "gen_batch"})
_KNOWN_PARAMS = _RUNTIME_PARAMS | _DECODE_PARAMS | {"dtype", "backend"}
# The spec parameters, with their meaning and default (anything else is refused).
KNOWN_PARAMS: dict[str, str] = {
    "dtype": "bf16 | fp32 (default bf16 where the CPU has bf16 units, else fp32)",
    "threads": "N | auto: threads the model runs on, every backend (default auto, the cores "
               "not busy right now)",
    "prefix_cache": "on | off: reuse key/value caches of shared prompt prefixes (default on)",
    "decode": "lookup | plain | assisted: how greedy text is decoded (default lookup)",
    "lookup_k": "tokens drafted per prompt-lookup step, 1-64 (default 10)",
    "gen_batch": "N: decode up to N generation requests as one batch, 1-32 (default 1)",
    "backend": "auto | transformers | ik | llamacpp: what runs the model (default auto: "
               "the fastest for this CPU, see local_model.choose_backend)",
    "ctx": "N: ik/llamacpp context in tokens, shared by its slots (default 8192, or 2048 "
           "per slot beyond 4)",
}
assert set(KNOWN_PARAMS) == _KNOWN_PARAMS
DECODE_MODES = ("lookup", "plain", "assisted")
DRAFT_PRESET = "qwen-0.5b"  # decode=assisted: the draft model (same tokenizer as qwen-1.5b)
_EXECUTORS: dict[int, ThreadPoolExecutor] = {}
_EXECUTORS_LOCK = threading.Lock()


def _gguf_backend(name: str) -> Any:
    """The module of an integer backend (ik_backend, llamacpp_backend), imported on use."""
    import importlib

    return importlib.import_module(f"judgeaudit.llm.{name}_backend")


def _executor_for(lm: LoadedModel) -> ThreadPoolExecutor:
    """One worker thread per loaded model, shared by every provider using it."""
    with _EXECUTORS_LOCK:
        ex = _EXECUTORS.get(id(lm))
        if ex is None:
            ex = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgeaudit-local")
            _EXECUTORS[id(lm)] = ex
        return ex


# ---------------------------------------------------------------------------------------------
# Prefix key/value cache


def _prefix_view(cache: Any, n: int) -> Any:
    """A DynamicCache holding the first `n` positions of `cache`, sharing its storage (safe:
    layers grow by torch.cat into new tensors, never in place)."""
    new = copy.copy(cache)
    new.layers = [copy.copy(layer) for layer in cache.layers]
    for layer in new.layers:
        layer.keys = layer.keys[..., :n, :]
        layer.values = layer.values[..., :n, :]
    return new


@dataclass
class _Entry:
    ids: tuple[int, ...]
    cache: Any  # transformers DynamicCache holding exactly len(ids) positions


class PrefixCache:
    """Key/value caches of recent requests (LRU, at most `max_entries` and `max_tokens` in
    all). A new request runs only the tokens after its longest common prefix with any stored
    request (when that prefix is at least `min_len` tokens): the judge's system prompt for
    every item, and the instruction too for the second presentation order of an item.
    Not thread-safe: used under the model's lock."""

    def __init__(self, min_len: int = 16, max_entries: int = 8, max_tokens: int = 16384):
        self.min_len = min_len
        self.max_entries = max_entries
        self.max_tokens = max_tokens
        self.entries: OrderedDict[tuple[int, ...], _Entry] = OrderedDict()
        self.hits = 0
        self.reused_tokens = 0

    def longest_shared(self, ids: tuple[int, ...]) -> tuple[_Entry | None, int]:
        """The stored request sharing the longest prefix with `ids`, and that length (capped so
        at least one token of `ids` is left to run)."""
        best, best_n = None, 0
        for e in self.entries.values():
            n = min(len(e.ids), len(ids) - 1)
            i = 0
            while i < n and e.ids[i] == ids[i]:
                i += 1
            if i > best_n:
                best, best_n = e, i
        if best is None or best_n < self.min_len:
            return None, 0
        self.entries.move_to_end(best.ids)
        return best, best_n

    def store(self, entry: _Entry) -> None:
        self.entries[entry.ids] = entry
        self.entries.move_to_end(entry.ids)
        while len(self.entries) > self.max_entries or (
            len(self.entries) > 1 and sum(len(k) for k in self.entries) > self.max_tokens
        ):
            self.entries.popitem(last=False)


# ---------------------------------------------------------------------------------------------
# The model work (runs on the worker thread)


def _choice_token_ids(
    tok: Any, prompt: str, choices: tuple[str, ...]
) -> tuple[list[int], list[int], list[str]]:
    """Token ids that distinguish the choices as the continuation of `prompt`.

    A choice is continued with a leading space unless the prompt ends in whitespace (" A"
    after "...Response"). Where all choices begin with the same tokens (Qwen writes " 1" as
    " " + "1"), those tokens are appended to the prompt and the next token decides. A choice
    still longer than one token is represented by its first distinguishing token (noted)."""
    sep = "" if (not prompt or prompt[-1].isspace()) else " "
    seqs = [tok.encode(sep + c, add_special_tokens=False) for c in choices]
    common: list[int] = []
    while all(len(s) > len(common) + 1 for s in seqs) and len({s[len(common)] for s in seqs}) == 1:
        common.append(seqs[0][len(common)])
    ids = [s[len(common)] for s in seqs]
    notes = [
        f"choice {c!r} is {len(s) - len(common)} tokens; scored by its first, {tok.decode([i])!r}"
        for c, s, i in zip(choices, seqs, ids, strict=True)
        if len(s) - len(common) > 1
    ]
    if len(set(ids)) != len(ids):
        raise FatalProviderError(
            f"choices {list(choices)} do not start with distinct tokens for this tokenizer; "
            "the local provider cannot tell them apart in one forward pass"
        )
    return common, ids, notes


def render_prompt(lm: LoadedModel, request: Request) -> str:
    """The chat prompt as text: the model's chat template (with the assistant turn opened)
    followed by the prefill."""
    msgs = [{"role": m.role, "content": m.content} for m in request.messages]
    tok = lm.tokenizer
    if getattr(tok, "chat_template", None):
        text = tok.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
    else:  # a base model without a template: a plain transcript
        text = "".join(f"{m['role'].capitalize()}: {m['content']}\n\n" for m in msgs)
        text += "Assistant: "
    return text + request.prefill


def last_hidden(lm: LoadedModel, ids: list[int], reuse: bool) -> Any:
    """Final-layer (normed) hidden state at the last position of `ids`, shape [hidden]."""
    import torch
    from transformers import DynamicCache

    base = lm.model.get_decoder()
    if not reuse:
        out = base(input_ids=torch.tensor([ids]), use_cache=False)
        return out.last_hidden_state[0, -1]
    pc: PrefixCache = lm.state.setdefault("prefix_cache", PrefixCache())
    key = tuple(ids)
    entry, start = pc.longest_shared(key)
    if entry is not None:
        pc.hits += 1
        pc.reused_tokens += start
        cache = _prefix_view(entry.cache, start)
    else:
        cache = DynamicCache(config=lm.model.config)
    out = base(input_ids=torch.tensor([ids[start:]]), past_key_values=cache, use_cache=True)
    pc.store(_Entry(key, cache))
    return out.last_hidden_state[0, -1]


def score_choices(lm: LoadedModel, request: Request, reuse: bool = True) -> Response:
    """One forward pass: probabilities of the choices as the next token."""
    import torch

    prompt = render_prompt(lm, request)
    tok = lm.tokenizer
    common, cids, notes = _choice_token_ids(tok, prompt, request.choices)
    ids = tok.encode(prompt, add_special_tokens=False) + common
    _check_length(lm, ids)
    with lm.lock, torch.inference_mode():
        h = last_hidden(lm, ids, reuse)
        w = lm.model.get_output_embeddings().weight[cids]
        logits = (h.float() @ w.float().T).tolist()
    t = torch.tensor(logits, dtype=torch.float64)
    p = torch.softmax(t, dim=0).tolist()
    probs = {c: float(x) for c, x in zip(request.choices, p, strict=True)}
    best = max(request.choices, key=lambda c: probs[c])
    raw: dict[str, Any] = {"logits": dict(zip(request.choices, logits, strict=True))}
    if notes:
        raw["notes"] = notes
    return Response(text=best, probs=probs, usage=Usage(prompt_tokens=len(ids)), raw=raw)


def _seed(request: Request) -> int:
    blob = json.dumps(request.key_material(True), sort_keys=True, default=str)
    return int(hashlib.sha256(blob.encode()).hexdigest()[:8], 16)


def _as_provider_error(exc: Exception, model: str) -> ProviderError:
    """A generation's exception as the client sees it: ours as they are, anything else a
    FatalProviderError naming the model."""
    if isinstance(exc, ProviderError):
        return exc
    return FatalProviderError(f"local model {model}: {type(exc).__name__}: {exc}")


def _check_length(lm: LoadedModel, ids: list[int], extra: int = 0) -> None:
    """Refuse (this request only) a prompt longer than the model's context."""
    limit = getattr(lm.model.config, "max_position_embeddings", None)
    if limit and len(ids) + extra > limit:
        raise RequestRejected(
            f"prompt of {len(ids)} tokens (+{extra} to generate) exceeds the model's context "
            f"of {limit} tokens"
        )


def _eos_ids(lm: LoadedModel) -> list[int]:
    """Tokens that end a generation: the tokenizer's and config's EOS and the chat turn end."""
    tok = lm.tokenizer
    eos = {tok.eos_token_id, lm.model.config.eos_token_id}
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    if isinstance(im_end, int) and im_end != tok.unk_token_id:
        eos.add(im_end)
    return sorted(e for e in eos if isinstance(e, int))


def generate_text(lm: LoadedModel, request: Request, decode: str = "plain",
                  lookup_k: int = 10, draft: LoadedModel | None = None) -> Response:
    """Greedy at temperature 0 (prompt-lookup decoding when `decode="lookup"`, drafts from
    `draft` when `decode="assisted"`), else sampling seeded from the request."""
    if decode not in DECODE_MODES:
        raise ValueError(f"decode={decode!r}: expected one of {DECODE_MODES}")
    if decode == "assisted" and (draft is None or draft is lm):
        raise ValueError("decode='assisted' needs a draft model other than the model itself")
    import torch
    from transformers import GenerationConfig

    prompt = render_prompt(lm, request)
    tok = lm.tokenizer
    ids = tok.encode(prompt, add_special_tokens=False)
    _check_length(lm, ids, request.max_tokens)
    eos_ids = _eos_ids(lm)
    sample = request.temperature > 0
    cfg = GenerationConfig(
        max_new_tokens=request.max_tokens,
        do_sample=sample,
        temperature=request.temperature if sample else None,
        top_k=None,
        top_p=None,
        repetition_penalty=None,
        eos_token_id=eos_ids,
        pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else eos_ids[0],
    )
    x = torch.tensor([ids])
    kwargs: dict[str, Any] = {}
    if decode == "lookup" and not sample:
        cfg.prompt_lookup_num_tokens = lookup_k
    assisted = decode == "assisted" and not sample and draft is not None
    if assisted:
        kwargs["assistant_model"] = draft.model
    # The draft's lock too: transformers adapts its generation_config between calls, and it
    # may be another provider's model (the draft is never the model itself, so no self-wait).
    draft_lock = draft.lock if assisted and draft is not None else contextlib.nullcontext()
    with lm.lock, draft_lock, torch.inference_mode():
        if sample:
            torch.manual_seed(_seed(request))
        out = lm.model.generate(input_ids=x, attention_mask=torch.ones_like(x),
                                generation_config=cfg, **kwargs)
    new = out[0, len(ids):].tolist()
    text = tok.decode(new, skip_special_tokens=True)
    return Response(text=text, usage=Usage(prompt_tokens=len(ids), completion_tokens=len(new)))


class _RowSampler:
    """Logits processor that turns greedy decoding into per-row seeded sampling: a row with
    temperature t > 0 gets logits / t plus Gumbel noise from its own generator, so the argmax
    is a draw from softmax(logits / t) (the Gumbel-max trick), and a row's draws depend on
    its own request's seed only, never on what else shares the batch. Rows at t = 0 stay
    greedy."""

    def __init__(self, temperatures: list[float], seeds: list[int]):
        import torch

        self.temps = temperatures
        self.gens = [None if t <= 0 else torch.Generator().manual_seed(s)
                     for t, s in zip(temperatures, seeds, strict=True)]

    def __call__(self, input_ids: Any, scores: Any) -> Any:
        import torch

        for row, (t, g) in enumerate(zip(self.temps, self.gens, strict=True)):
            if g is None:
                continue
            u = torch.rand(scores.shape[1], generator=g).clamp_(1e-10, 1.0 - 1e-7)
            scores[row] = scores[row].float() / t - torch.log(-torch.log(u))
        return scores


def generate_batch(lm: LoadedModel, requests: list[Request]) -> list[Response]:
    """Generation of several requests in one padded batch (left padding). On this CPU a
    decoding step costs about the same for a few sequences as for one (the per-step overhead
    dominates), so throughput grows with the batch (benchmarks/bench_generation.py).
    Each sequence stops at its own EOS or max_tokens; greedy decoding is prefix-consistent, so
    running longer and cutting is the same as stopping there. Requests with temperature > 0
    are sampled, each from its own seed (`_RowSampler`). bf16 matmuls of batch shape round
    differently at near-ties, hence `gen_batch` is part of the cache key."""
    import torch
    from transformers import GenerationConfig

    tok = lm.tokenizer
    ids = [tok.encode(render_prompt(lm, r), add_special_tokens=False) for r in requests]
    for r, i in zip(requests, ids, strict=True):
        _check_length(lm, i, r.max_tokens)
    eos_ids = _eos_ids(lm)
    pad = tok.pad_token_id if tok.pad_token_id is not None else eos_ids[0]
    width = max(len(i) for i in ids)
    x = torch.full((len(ids), width), pad, dtype=torch.long)
    mask = torch.zeros((len(ids), width), dtype=torch.long)
    for row, i in enumerate(ids):
        x[row, width - len(i):] = torch.tensor(i)
        mask[row, width - len(i):] = 1
    cfg = GenerationConfig(max_new_tokens=max(r.max_tokens for r in requests), do_sample=False,
                           temperature=None, top_k=None, top_p=None, repetition_penalty=None,
                           eos_token_id=eos_ids, pad_token_id=pad)
    temps = [max(r.temperature, 0.0) for r in requests]
    extra: dict[str, Any] = {}
    if any(t > 0 for t in temps):
        from transformers import LogitsProcessorList

        extra["logits_processor"] = LogitsProcessorList(
            [_RowSampler(temps, [_seed(r) for r in requests])])
    with lm.lock, torch.inference_mode():
        out = lm.model.generate(input_ids=x, attention_mask=mask, generation_config=cfg,
                                **extra)
    responses = []
    for row, r in enumerate(requests):
        new = out[row, width:].tolist()[:r.max_tokens]
        for k, t in enumerate(new):
            if t in eos_ids:
                new = new[:k + 1]
                break
        text = tok.decode(new, skip_special_tokens=True)
        responses.append(Response(text=text, usage=Usage(prompt_tokens=len(ids[row]),
                                                         completion_tokens=len(new))))
    return responses


# ---------------------------------------------------------------------------------------------
# The provider


@register
class LocalProvider(Provider):
    """The embedded CPU judge (see the module docstring for the spec and parameters)."""

    name: ClassVar[str] = "local"
    secret_params: ClassVar[frozenset[str]] = frozenset()
    # One worker thread does all model work; more concurrency would only queue up there.
    default_concurrency: ClassVar[int] = 1
    # Logits at one pass, greedy or request-seeded sampling: the same request, the same output.
    deterministic: ClassVar[bool] = True
    price_per_mtok: ClassVar[tuple[float, float] | None] = (0.0, 0.0)
    known_params: ClassVar[dict[str, str] | None] = KNOWN_PARAMS

    def __init__(self, model: str, params: dict[str, str] | None = None):
        super().__init__(model or DEFAULT_PRESET, params)
        unknown = set(self.params) - _KNOWN_PARAMS
        if unknown:
            raise ValueError(
                f"local provider: unknown parameter(s) {sorted(unknown)}; "
                f"known: {sorted(_KNOWN_PARAMS)}"
            )
        try:  # fails now, clearly, for a bad name or path: bad input (exit 2), not a bug
            self.source = resolve(self.model)
        except ModelFilesError as exc:
            raise ValueError(str(exc)) from None
        # Decided now: the backend is part of the cache key.
        torch_only = tuple(k for k in ("dtype", "decode", "lookup_k") if k in self.params
                           and (k, self.params[k]) != ("decode", "plain"))
        self.backend, self.backend_reason = choose_backend(
            self.params.get("backend"), self.source, torch_only)
        if self.backend in GGUF_BACKENDS and torch_only:
            k = torch_only[0]
            raise ValueError(
                f"local provider: {k}={self.params[k]!r} is a transformers setting; "
                f"backend={self.backend} runs the GGUF's quantized weights and decodes "
                "plainly (use backend=transformers for it)")
        self.dtype = resolve_dtype(self.params.get("dtype"))
        pc = self.params.get("prefix_cache", "on")
        if pc not in {"on", "off"}:
            raise ValueError(f"local provider: prefix_cache={pc!r}: expected on or off")
        self.prefix_reuse = pc == "on"
        self.decode = self.params.get("decode", "lookup")
        if self.decode not in DECODE_MODES:
            raise ValueError(f"local provider: decode={self.decode!r}: expected one of "
                             f"{', '.join(DECODE_MODES)}")
        if self.decode == "assisted" and self.source.identity == resolve(DRAFT_PRESET).identity:
            raise ValueError(f"local provider: decode=assisted drafts with {DRAFT_PRESET}, "
                             "which is this model itself; use decode=lookup")
        k = self.params.get("lookup_k", "10")
        if not k.isdigit() or not 1 <= int(k) <= 64:
            raise ValueError(f"local provider: lookup_k={k!r}: expected a whole number 1-64")
        self.lookup_k = int(k)
        gb = self.params.get("gen_batch", "1")
        if not gb.isdigit() or not 1 <= int(gb) <= 32:
            raise ValueError(f"local provider: gen_batch={gb!r}: expected a whole number 1-32")
        self.gen_batch = int(gb)
        # checked now, not when the model loads: the run had begun (its folder said
        # "unfinished, run again to resume", which cannot help)
        if self.params.get("threads") not in (None, "", "auto"):
            choose_threads(self.params["threads"])
        if self.params.get("ctx") not in (None, "", "auto"):
            from judgeaudit.llm.gguf_backend import context_size

            context_size(self.params["ctx"], self.gen_batch)
        # What the backend needs installed is checked at the first call the cache does not
        # answer (`prepare`), not here: a run whose every answer is cached replays on a
        # machine without the backend (ac3d160 refused it here, exit 2).
        self._extra_checked = False
        if self.gen_batch > 1:
            # requests must be in flight together to be batched
            self.default_concurrency = self.gen_batch  # type: ignore[misc]
        self._pending: list[tuple[Request, asyncio.Future[Response]]] = []
        self._pending_lock = threading.Lock()
        self._draining = False
        self._lm: LoadedModel | None = None
        self._draft: LoadedModel | None = None

    def run_identity(self) -> dict[str, Any]:
        """The cache identity (weights; dtype or integer backend) with the backend `auto`
        resolved to and why, and the CPU (its timings, and its verdicts at near-ties, hold
        for that CPU and backend)."""
        return {**self.cache_identity(), "backend": self.backend,
                "backend_reason": self.backend_reason, "cpu": cpu_summary()}

    def cache_identity(self) -> dict[str, Any]:
        ident = super().cache_identity()
        ident["params"] = {
            k: v for k, v in ident["params"].items()
            if k not in _RUNTIME_PARAMS | _DECODE_PARAMS and k not in ("dtype", "backend")
        }
        ident["weights"] = self.source.identity
        if self.backend in GGUF_BACKENDS:
            # The resolved backend (auto and an explicit one key alike). An identity
            # without "backend" is the transformers backend's: keys made before backends
            # existed stay valid, and every ik or llamacpp key differs from them.
            ident["backend"] = self.backend
            if self.gen_batch > 1:  # batched decoding rounds differently at near-ties
                ident["gen_batch"] = self.gen_batch
            return ident
        ident["dtype"] = self.dtype
        if self.gen_batch > 1:
            ident["gen_batch"] = self.gen_batch
        if (decode := self.decode_identity()) != DEFAULT_DECODE:
            # The default adds nothing, so keys made since it became the default (and every
            # verdict key: verdicts do not decode) stay valid; any other mode keys apart.
            ident["decode"] = decode
        return ident

    def decode_identity(self) -> str:
        """How greedy text is found, normalised (a default given explicitly keys the same)."""
        if self.decode == "lookup":
            return f"lookup:k={self.lookup_k}"
        if self.decode == "assisted":
            return f"assisted:{DRAFT_PRESET}"
        return "plain"

    def loaded(self) -> Any:
        """Load (or fetch the already loaded) model: a LoadedModel (transformers) or a
        LlamaCppModel (llamacpp) or IkModel (ik); blocking, so call it off the loop."""
        if self._lm is None and self.backend in GGUF_BACKENDS:
            self._lm = _gguf_backend(self.backend).load(  # type: ignore[assignment]
                self.model, slots=self.gen_batch, threads=self.params.get("threads"),
                ctx=self.params.get("ctx"))
        if self._lm is None:
            set_threads(self.params.get("threads"))
            self._lm = load(self.model, self.dtype)
        if self.decode == "assisted" and self._draft is None:
            self._draft = load(DRAFT_PRESET, self.dtype)
        return self._lm

    def require_extra(self) -> None:
        """Raise `MissingExtraError` (an ImportError and a ValueError: the CLI's usage error,
        exit 2) when the backend, or decode=assisted's draft model, lacks a module it needs
        (`require_backend`): without the [local] extra the first model load died of "No
        module named 'torch'" (a traceback, exit 3, "a bug in judgeaudit"). Once it passed,
        it is not checked again."""
        if self._extra_checked:
            return
        require_backend(self.backend, self.source, self.backend_reason)
        if self.decode == "assisted":
            require_backend("transformers", resolve(DRAFT_PRESET), "decode=assisted drafts "
                            f"with {DRAFT_PRESET}")
        self._extra_checked = True

    async def prepare(self) -> None:
        """Before the first call the cache does not answer (the client runs this only for
        a call it is about to make, after the cache and the planner): the missing-extra
        check (`require_extra`), so nothing is computed without the backend, and a fully
        cached run, or a plan (--plan-only), never needs it."""
        self.require_extra()

    async def generate(self, request: Request) -> Response:
        self.require_extra()  # a caller without a Client (which runs `prepare` first)
        try:
            lm = self._lm or await asyncio.to_thread(self.loaded)
        except (ModelFilesError, MissingExtraError) as exc:
            raise FatalProviderError(str(exc)) from exc
        if self.backend in GGUF_BACKENDS:
            return await self._gguf(lm, request)
        if request.choices:
            fn, args = score_choices, (lm, request, self.prefix_reuse)
        elif self.gen_batch > 1:
            return await self._batched(lm, request)
        else:
            fn, args = generate_text, (lm, request, self.decode, self.lookup_k, self._draft)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(_executor_for(lm), fn, *args)
        except FatalProviderError:
            raise
        except (RuntimeError, ValueError, IndexError) as exc:
            raise FatalProviderError(f"local model {self.model}: {type(exc).__name__}: {exc}") \
                from exc

    async def _gguf(self, lm: Any, request: Request) -> Response:
        """A call on an integer backend: it batches the requests in flight itself."""
        mod = _gguf_backend(self.backend)
        fn = mod.score_choices if request.choices else mod.generate_text
        try:
            if self.backend == "ik":  # its engine thread answers a future: no thread waits
                submit = mod.submit_choices if request.choices else mod.submit_generation
                return await asyncio.wrap_future(submit(lm, request, self.prefix_reuse))
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(lm.executor, fn, lm, request, self.prefix_reuse)
        except (RuntimeError, ValueError, IndexError, KeyError, TypeError) as exc:
            raise FatalProviderError(f"local model {self.model} ({self.backend}): "
                                     f"{type(exc).__name__}: {exc}") from exc

    async def _batched(self, lm: LoadedModel, request: Request) -> Response:
        """Queue a generation; the model's worker thread drains the queue in batches of up to
        `gen_batch` (a greedy batch of one decodes as `decode` says; sampled requests are
        always drawn by `generate_batch`, so a request's sample never depends on how it was
        batched)."""
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[Response] = loop.create_future()
        with self._pending_lock:
            self._pending.append((request, fut))
            start = not self._draining
            self._draining = True
        if start:
            loop.run_in_executor(_executor_for(lm), self._drain, lm, loop)
        return await fut

    def _drain(self, lm: LoadedModel, loop: asyncio.AbstractEventLoop) -> None:
        time.sleep(0.02)  # let requests issued together arrive
        while True:
            with self._pending_lock:
                batch = self._pending[:self.gen_batch]
                del self._pending[:self.gen_batch]
                if not batch:
                    self._draining = False
                    return
            reqs = [r for r, _ in batch]
            try:
                if len(reqs) == 1 and reqs[0].temperature == 0:
                    outs = [generate_text(lm, reqs[0], self.decode, self.lookup_k, self._draft)]
                else:
                    outs = generate_batch(lm, reqs)
            except RequestRejected:  # a prompt too long: the others of the batch go alone
                for r, f in batch:
                    try:
                        one = generate_batch(lm, [r])[0]
                    except Exception as exc:
                        loop.call_soon_threadsafe(_settle, f, None, _as_provider_error(
                            exc, self.model))
                    else:
                        loop.call_soon_threadsafe(_settle, f, one, None)
                continue
            except Exception as exc:  # every waiter must hear of it, whatever it is
                err = _as_provider_error(exc, self.model)
                for _, f in batch:
                    loop.call_soon_threadsafe(_settle, f, None, err)
                continue
            for (_, f), out in zip(batch, outs, strict=True):
                loop.call_soon_threadsafe(_settle, f, out, None)


def _settle(fut: asyncio.Future[Response], out: Response | None,
            err: BaseException | None) -> None:
    if fut.done():
        return
    if err is not None:
        fut.set_exception(err)
    else:
        fut.set_result(out)  # type: ignore[arg-type]

