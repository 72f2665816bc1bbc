"""The ik backend of the local judge (ik_llama.cpp through its C API).

Unmarked: the engine (slots, prefix reuse, continuous batching, verdicts, greedy and seeded
generation, a full KV cache, errors) against a stand-in for the C library: a mock, because
the real library needs the 1 GB model; it keeps each sequence's KV cache as a token list and
refuses a position that does not continue it, so a wrong prefix reuse fails loudly. Marked
`local_model`: the real 1.5B judge through ik_llama.cpp, checked against the transformers
backend.
"""

from __future__ import annotations

import asyncio
import ctypes
import math
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from judgeaudit.llm import Message, Request
from judgeaudit.llm.base import FatalProviderError, RequestRejected
from judgeaudit.llm.gguf_tokenizer import GGUFTokenizer
from tests.llm.test_llamacpp_backend import (
    _pair_requests,
    integer_judge,
    tiny_meta,
    transformers_verdicts,
)

N_VOCAB = 300


class _Batch:
    def __init__(self, n: int):
        self.token, self.pos, self.n_seq_id = [0] * n, [0] * n, [0] * n
        self.seq_id = [[0] for _ in range(n)]
        self.logits = [0] * n
        self.n_tokens = 0


class FakeLib:
    """The C calls the engine makes. A sequence's next-token logits are a function of every
    token in its KV cache (so they come out right only if reuse kept the right prefix);
    generation follows a fixed successor table."""

    def __init__(self, kv_cells: int = 10_000, eog: int = 299):
        self.kv: dict[int, list[int]] = {}
        self.kv_cells = kv_cells
        self.eog = eog
        self.decoded: list[list[tuple[int, int]]] = []  # per call: (seq, token)
        self.fail_next = 0
        self.on_decode: Any = None  # called before each decode (a test's hook)
        self.out: dict[int, Any] = {}
        self._lib = self

    # -- the library's functions
    def llama_batch_init(self, n: int, _embd: int, _seqs: int) -> _Batch:
        return _Batch(n)

    def llama_batch_free(self, _b: _Batch) -> None:
        pass

    def llama_kv_cache_seq_rm(self, _ctx: Any, seq: int, p0: int, p1: int) -> bool:
        assert p1 == -1
        self.kv[seq] = self.kv.get(seq, [])[:p0]
        return True

    def llama_decode(self, _ctx: Any, b: _Batch) -> int:
        if self.on_decode:
            self.on_decode()
        if self.fail_next:
            self.fail_next -= 1
            return 1 if self.fail_next >= 0 else -1
        if sum(map(len, self.kv.values())) + b.n_tokens > self.kv_cells:
            return 1
        self.decoded.append([(b.seq_id[i][0], b.token[i]) for i in range(b.n_tokens)])
        self.out = {}
        for i in range(b.n_tokens):
            seq = self.kv.setdefault(b.seq_id[i][0], [])
            assert b.pos[i] == len(seq), "position does not continue the sequence"
            seq.append(b.token[i])
            if b.logits[i]:
                arr = (ctypes.c_float * N_VOCAB)(*_logits(seq))
                self.out[i] = arr
        return 0

    def llama_get_logits_ith(self, _ctx: Any, i: int) -> Any:
        return ctypes.cast(self.out[i], ctypes.POINTER(ctypes.c_float))


def _logits(tokens: list[int]) -> list[float]:
    """Logits that depend on the whole sequence: a favourite next token (a fixed successor
    of the last token, or the end token once the sequence is long) and noise from the sum."""
    h = sum((i + 1) * t for i, t in enumerate(tokens))
    lg = [((h * 31 + v * 17) % 97) / 97.0 for v in range(N_VOCAB)]
    nxt = 299 if len(tokens) >= 40 else (tokens[-1] * 7 + 3) % 290
    lg[nxt] += 5.0
    return lg


def _engine(lib: FakeLib, slots: int) -> Any:
    from judgeaudit.llm.ik_backend import _Engine

    return _Engine(lib, ctx=None, n_vocab=N_VOCAB, slots=slots, eog={lib.eog})


def _job(ids: list[int], reuse: bool = True, **kw: Any) -> Any:
    from judgeaudit.llm.ik_backend import _Job

    return _Job(ids=ids, future=Future(), reuse=reuse, **kw)


@pytest.fixture
def lib() -> FakeLib:
    return FakeLib()


def test_verdict_logits_are_those_of_the_whole_prompt_with_or_without_reuse(lib):
    eng = _engine(lib, 1)
    try:
        a = list(range(1, 30))
        b = a[:20] + [50, 51, 52]
        la = eng.submit(_job(a, choice_ids=[5, 6])).result(5)
        assert np.allclose(la, np.array(_logits(a), dtype=np.float32)[[5, 6]])
        job = _job(b, choice_ids=[5, 6])
        lb = eng.submit(job).result(5)
        assert np.allclose(lb, np.array(_logits(b), dtype=np.float32)[[5, 6]])
        assert job.reused == 20 and [t for _, t in lib.decoded[-1]] == [50, 51, 52]
        # the same prompt again: everything but the last token is reused
        job = _job(b, choice_ids=[5, 6])
        assert np.allclose(eng.submit(job).result(5), lb) and job.reused == len(b) - 1
        job = _job(b, reuse=False, choice_ids=[5, 6])
        assert np.allclose(eng.submit(job).result(5), lb) and job.reused == 0
        assert eng.reused_tokens == 20 + len(b) - 1
    finally:
        eng.close()


def test_a_request_takes_the_slot_sharing_the_longest_prefix(lib):
    eng = _engine(lib, 3)
    try:
        p1, p2 = [1, 2, 3, 4, 5, 6], [9, 8, 7, 6, 5, 4]
        for p in (p1, p2):
            eng.submit(_job(p, choice_ids=[1, 2])).result(5)
        job = _job(p2[:4] + [11], choice_ids=[1, 2])
        eng.submit(job).result(5)
        seq = lib.decoded[-1][0][0]
        assert job.reused == 4 and lib.kv[seq][:4] == p2[:4]
        assert lib.kv[seq] == p2[:4] + [11]
    finally:
        eng.close()


def test_requests_in_flight_together_share_decode_calls_and_keep_their_answers(lib):
    prompts = [[i, i + 1, i + 2, i + 3] for i in (10, 40, 70)]
    alone_eng = _engine(FakeLib(), 1)
    try:
        alone = [alone_eng.submit(_job(p, max_tokens=6)).result(5) for p in prompts]
    finally:
        alone_eng.close()
    eng = _engine(lib, 3)
    with eng.cond:  # hold the engine so all three are waiting when it next looks
        futs = [eng.submit(_job(p, max_tokens=6)) for p in prompts]
    together = [f.result(5) for f in futs]
    eng.close()
    assert together == alone
    assert eng.max_batch_sequences == 3
    assert len({s for s, _ in lib.decoded[0]}) == 3  # the three prompts in one call
    assert len(lib.decoded) == 1 + 5  # then one call per generated token, all three in it


def test_generation_stops_at_the_end_token_or_max_tokens(lib):
    eng = _engine(lib, 1)
    try:
        toks, finish = eng.submit(_job([1, 2, 3], max_tokens=4)).result(5)
        want, seq = [], [1, 2, 3]
        for _ in range(4):
            t = int(np.argmax(_logits(seq)))
            want.append(t)
            seq = seq + [t]
        assert toks == want and finish == "length"
        long = list(range(1, 39))  # the fake ends sequences of 40 tokens
        toks, finish = eng.submit(_job(long, max_tokens=10)).result(5)
        assert finish == "stop" and len(toks) == 2 and 299 not in toks
    finally:
        eng.close()


def test_sampling_is_seeded_by_the_request_and_independent_of_batch_mates(lib):
    eng = _engine(lib, 2)
    try:
        def draw(seed: int, mate: bool) -> list[int]:
            with eng.cond:
                f = eng.submit(_job([5, 6, 7], max_tokens=8, temperature=1.5, seed=seed))
                if mate:
                    eng.submit(_job([100, 101], max_tokens=8, temperature=1.5, seed=99))
            return f.result(5)[0]

        a, b = draw(1, False), draw(1, True)
        assert a == b and draw(2, False) != a
        greedy = eng.submit(_job([5, 6, 7], max_tokens=8)).result(5)[0]
        assert greedy != a  # temperature 1.5 over near-flat logits leaves the favourite
    finally:
        eng.close()


def test_a_full_kv_cache_frees_idle_slots_and_then_says_how_to_raise_it():
    lib = FakeLib(kv_cells=12)
    eng = _engine(lib, 2)
    try:
        eng.submit(_job(list(range(1, 9)), choice_ids=[1, 2])).result(5)  # 8 cells, idle
        eng.submit(_job(list(range(20, 28)), reuse=False, choice_ids=[1, 2])).result(5)
        assert sum(map(len, lib.kv.values())) == 8  # the idle slot's cells were dropped
        with pytest.raises(FatalProviderError, match=r"context is full.*local\?ctx=N"):
            eng.submit(_job(list(range(30, 50)), choice_ids=[1, 2])).result(5)
        # the engine survives its failures
        lib.fail_next = 2
        with pytest.raises(FatalProviderError, match="llama_decode failed"):
            eng.submit(_job([1, 2, 3], choice_ids=[1, 2])).result(5)
        assert eng.submit(_job([1, 2, 3], choice_ids=[1, 2])).result(5) is not None
    finally:
        eng.close()
    with pytest.raises(FatalProviderError, match="unloaded"):
        eng.submit(_job([1], choice_ids=[1, 2]))


def test_a_cancelled_request_leaves_its_slot_and_the_others_finish(lib):
    eng = _engine(lib, 2)
    try:
        with eng.cond:
            keep = eng.submit(_job([1, 2, 3], max_tokens=8))
            drop = eng.submit(_job([4, 5, 6], max_tokens=30))
        lib.on_decode = lambda: len(lib.decoded) == 3 and drop.cancel()
        toks, _ = keep.result(5)
        assert len(toks) == 8 and drop.cancelled()
        lib.on_decode = None
        # once dropped, the other request was decoded alone
        assert [len(d) for d in lib.decoded] == [6, 2, 2, 2] + [1] * 4  # 8 tokens: 8 calls
        assert eng.submit(_job([7, 8], max_tokens=2)).result(5)[1] == "length"
        assert not any(s.busy for s in eng.slots) and not eng.active
    finally:
        eng.close()


def _fake_model(lib: FakeLib, slots: int = 1, n_ctx: int = 48) -> Any:
    from judgeaudit.llm.ik_backend import IkModel, _Engine
    from judgeaudit.llm.local_model import resolve

    tok = GGUFTokenizer(tiny_meta())
    eog = {tok.convert_tokens_to_ids("<|im_end|>")}
    return IkModel(source=resolve("qwen-0.5b"), gguf=Path("x.gguf"), tokenizer=tok,
                   engine=_Engine(lib, None, N_VOCAB, slots, eog), slots=slots, n_ctx=n_ctx,
                   n_ctx_train=64, threads=1, load_seconds=0.0, system_info="test",
                   file_type="Q4_K_M", handles=(None, None))


def test_choice_probabilities_are_the_softmax_over_the_choice_logits(lib):
    from judgeaudit.llm.ik_backend import generate_text, score_choices

    lm = _fake_model(lib)
    try:
        tok = lm.tokenizer
        req = Request(messages=(Message("user", "hi"),), prefill="Response",
                      choices=("A", "B"))
        out = score_choices(lm, req)
        ids = tok.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nResponse")
        assert [t for _, t in lib.decoded[0]] == ids  # token ids, the shared template's
        a, b = tok.convert_tokens_to_ids("ĠA"), tok.convert_tokens_to_ids("ĠB")
        la, lb = np.array(_logits(ids), dtype=np.float32)[[a, b]].astype(float)
        assert out.probs["A"] == pytest.approx(1 / (1 + math.exp(lb - la)), abs=1e-9)
        assert sum(out.probs.values()) == pytest.approx(1, abs=1e-12)
        assert out.text == max(out.probs, key=out.probs.get) and out.raw["backend"] == "ik"
        score_choices(lm, req)
        assert lm.state["reused_tokens"] == len(ids) - 1
        # too long: this request fails alone (RequestRejected), the run goes on
        with pytest.raises(RequestRejected, match="model's context of 64 tokens"):
            generate_text(lm, Request(messages=(Message("user", "x" * 80),), max_tokens=4))
        with pytest.raises(RequestRejected, match=r"local\?ctx=N") as ei:
            generate_text(lm, Request(messages=(Message("user", "x" * 30),), max_tokens=8))
        assert ei.value.kind == "too_long" and not ei.value.retryable
        gen = generate_text(lm, Request(messages=(Message("user", "hi"),), max_tokens=3))
        assert gen.usage.completion_tokens == 3 and gen.raw["finish_reason"] == "length"
    finally:
        lm.engine.close()


# ---- the real model through ik_llama.cpp (slow) ------------------------------------------------


@pytest.fixture(scope="module")
def ik() -> Any:
    return integer_judge("ik_llama_cpp", "ik")


@pytest.mark.local_model
async def test_ab_probabilities_agree_with_transformers(request):
    """Both orders of easy builtin:facts pairs: the right answer, the transformers backend's
    choice, P(A) within 0.06 of it (bf16 on dequantized weights vs integer kernels on the
    quantized ones). One model in memory at a time."""
    reqs = _pair_requests(2)
    theirs = await transformers_verdicts(reqs)
    ik = request.getfixturevalue("ik")
    ours = [await ik.generate(r) for r in reqs]
    for r, a, b in zip(reqs, ours, theirs, strict=True):
        assert a.text == b.text == ("A" if (r.meta["order"] == "12") == (r.meta["label"] == 1)
                                    else "B")
        assert abs(a.probs["A"] - b.probs["A"]) < 0.06, (a.probs, b.probs)
        assert a.usage.prompt_tokens == b.usage.prompt_tokens  # the same token ids


@pytest.mark.local_model
async def test_prefix_reuse_gives_the_same_probabilities(ik):
    from judgeaudit.llm.ik_backend import score_choices

    lm = ik.loaded()
    before = lm.state.get("reused_tokens", 0)
    worst = 0.0
    for r in _pair_requests(2):
        reused = score_choices(lm, r, reuse=True).probs["A"]
        full = score_choices(lm, r, reuse=False).probs["A"]
        worst = max(worst, abs(reused - full))
    assert lm.state["reused_tokens"] - before >= 2 * 60  # at least the system prompt, twice
    assert worst < 0.03


@pytest.mark.local_model
async def test_generation_is_deterministic_and_concurrent_requests_keep_their_answers(ik):
    req = Request(messages=(Message("user", "What is the capital of France? Answer in one "
                                            "sentence."),), max_tokens=20)
    first, second = await ik.generate(req), await ik.generate(req)
    assert "Paris" in first.text and first.text == second.text
    assert 0 < first.usage.completion_tokens <= 20 and first.probs is None
    hot = Request(messages=req.messages, max_tokens=12, temperature=1.0)
    assert (await ik.generate(hot)).text == (await ik.generate(hot)).text
    qs = ["Say hello in French.", "Name two prime numbers.", "What colour is the sky?"]
    reqs = [Request(messages=(Message("user", q),), max_tokens=10) for q in qs]
    alone = [await ik.generate(r) for r in reqs]
    together = await asyncio.gather(*(ik.generate(r) for r in reqs))
    assert [t.text for t in together] == [a.text for a in alone]
