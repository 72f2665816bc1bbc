"""The llamacpp backend of the local judge.

Unmarked: the GGUF header reader, the torch-free tokenizer and chat template on a tiny
byte-level vocabulary, and the verdict / generation logic against a scripted stand-in for
the llama.cpp server (no model). Marked `local_model`: the real 1.5B judge through llama.cpp
(one server per process), checked against the transformers backend.
"""

from __future__ import annotations

import asyncio
import math
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from judgeaudit.llm import Message, Request
from judgeaudit.llm.base import FatalProviderError, ProviderError, RequestRejected
from judgeaudit.llm.gguf_meta import GGUFError, read_metadata, write_gguf
from judgeaudit.llm.gguf_tokenizer import GGUFTokenizer, UnsupportedTokenizer

CHATML = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
          "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def _byte_chars() -> list[str]:
    """GPT-2's byte -> printable character table (byte-level BPE vocabularies use it)."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs, strict=True))
    return [chr(table[b]) for b in range(256)]


def tiny_meta() -> dict[str, Any]:
    """Every byte, a few merges ("Ġ" is the byte-level space) and two control tokens."""
    chars = _byte_chars()
    merges = ["Ġ A", "Ġ B", "h i"]
    tokens = chars + [m.replace(" ", "") for m in merges] + ["<|im_start|>", "<|im_end|>"]
    types = [1] * (len(tokens) - 2) + [3, 3]
    return {"tokenizer.ggml.model": "gpt2", "tokenizer.ggml.pre": "qwen2",
            "tokenizer.ggml.tokens": tokens, "tokenizer.ggml.token_type": types,
            "tokenizer.ggml.merges": merges, "tokenizer.ggml.eos_token_id": len(tokens) - 1,
            "tokenizer.ggml.bos_token_id": len(tokens) - 2, "tokenizer.chat_template": CHATML,
            "general.architecture": "qwen2", "qwen2.context_length": 64}


# ---- GGUF header and tokenizer -----------------------------------------------------------------


def test_gguf_header_round_trip_and_refusals(tmp_path):
    meta = {"general.name": "x", "n": 7, "neg": -3, "f": 0.5, "ok": True,
            "list": ["a", "bb"], "ints": [1, 2, 3]}
    p = write_gguf(tmp_path / "m.gguf", meta, payload=b"\0" * 64)
    got = read_metadata(p)
    assert {k: got[k] for k in meta} == meta and got["GGUF.version"] == 3
    (tmp_path / "bad.gguf").write_bytes(b"GGML" + b"\0" * 20)
    with pytest.raises(GGUFError, match="not a GGUF file"):
        read_metadata(tmp_path / "bad.gguf")
    (tmp_path / "short.gguf").write_bytes(p.read_bytes()[:30])
    with pytest.raises(GGUFError, match="truncated"):
        read_metadata(tmp_path / "short.gguf")


def test_tokenizer_from_gguf_metadata_encodes_decodes_and_renders_the_chat():
    tok = GGUFTokenizer(tiny_meta())
    ids = tok.encode("hi A")
    assert tok.decode(ids) == "hi A" and len(ids) == 2  # "hi" and " A" merged
    im_start = tok.convert_tokens_to_ids("<|im_start|>")
    assert tok.encode("<|im_start|>hi")[0] == im_start  # control tokens parsed in text
    assert tok.decode(tok.encode("<|im_end|>x"), skip_special_tokens=True) == "x"
    assert tok.encode("e\u0301") == tok.encode("\u00e9")  # NFC, as transformers' Qwen2
    assert tok.encode(" 1") == [tok.convert_tokens_to_ids("Ġ"), tok.convert_tokens_to_ids("1")]
    assert tok.eos_token_id == im_start + 1 and tok.eos_token == "<|im_end|>"
    text = tok.apply_chat_template([{"role": "user", "content": "hi"}],
                                   add_generation_prompt=True)
    assert text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    with pytest.raises(UnsupportedTokenizer, match="'llama'"):
        GGUFTokenizer({**tiny_meta(), "tokenizer.ggml.model": "llama"})
    with pytest.raises(UnsupportedTokenizer, match="'falcon'"):
        GGUFTokenizer({**tiny_meta(), "tokenizer.ggml.pre": "falcon"})


# ---- verdicts and generation against a scripted server -----------------------------------------


class ScriptedServer:
    """Answers handle_completions like llama.cpp's OpenAI completion dict: next-token
    log-probs from a fixed table (token id -> logit), truncated to the top n_probs."""

    def __init__(self, logits: dict[int, float], error: dict | None = None):
        self.logits = logits
        self.error = error
        self.bodies: list[dict] = []

    def handle_completions(self, body: dict) -> dict:
        self.bodies.append(body)
        if self.error:
            return {"error": self.error}
        z = math.log(sum(math.exp(v) for v in self.logits.values()) + 1000.0)  # + the rest
        top = sorted(self.logits.items(), key=lambda kv: -kv[1])[:body.get("n_probs", 0)]
        entries = [{"id": i, "token": str(i), "logprob": v - z} for i, v in top]
        return {"choices": [{"text": "xy", "finish_reason": "stop",
                             "logprobs": {"content": [{"top_logprobs": entries}]}}],
                "usage": {"completion_tokens": 2,
                          "prompt_tokens_details": {"cached_tokens": 5}}}


def _model(server: ScriptedServer) -> Any:
    from judgeaudit.llm.llamacpp_backend import LlamaCppModel
    from judgeaudit.llm.local_model import resolve

    return LlamaCppModel(source=resolve("qwen-0.5b"), gguf=Path("x.gguf"), server=server,
                         tokenizer=GGUFTokenizer(tiny_meta()), slots=1, n_ctx=48,
                         n_ctx_train=64, threads=1, load_seconds=0.0, system_info="test",
                         file_type="Q4_K_M", executor=ThreadPoolExecutor(1))


def _ab(prefill: str = "Response") -> Request:
    return Request(messages=(Message("user", "hi"),), prefill=prefill, choices=("A", "B"))


def test_choice_probabilities_are_the_softmax_over_the_choice_logits():
    from judgeaudit.llm.llamacpp_backend import score_choices

    lm = _model(ScriptedServer({}))
    tok = lm.tokenizer
    a, b = tok.convert_tokens_to_ids("ĠA"), tok.convert_tokens_to_ids("ĠB")
    lm.server.logits = {a: 2.0, b: 0.5, 7: 3.0}
    out = score_choices(lm, _ab())
    want = 1 / (1 + math.exp(0.5 - 2.0))
    assert out.probs["A"] == pytest.approx(want, abs=1e-12)
    assert sum(out.probs.values()) == pytest.approx(1.0, abs=1e-12) and out.text == "A"
    body = lm.server.bodies[0]
    assert body["n_predict"] == 1 and body["post_sampling_probs"] is False
    assert body["prompt"] == tok.encode(
        "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nResponse")  # ids, not text
    assert body["cache_prompt"] is True and lm.state["reused_tokens"] == 5
    score_choices(lm, _ab(), reuse=False)
    assert lm.server.bodies[-1]["cache_prompt"] is False


def test_a_choice_outside_the_top_list_is_looked_up_in_a_wider_one():
    from judgeaudit.llm.llamacpp_backend import score_choices

    lm = _model(ScriptedServer({}))
    a, b = lm.tokenizer.convert_tokens_to_ids("ĠA"), lm.tokenizer.convert_tokens_to_ids("ĠB")
    logits = {i: 10.0 for i in range(30)}  # 30 tokens above both choices
    logits.update({a: 1.0, b: -1.0})
    lm.server.logits = logits
    out = score_choices(lm, _ab())
    assert [bd["n_probs"] for bd in lm.server.bodies] == [20, 1000]
    assert out.probs["A"] == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_digit_choices_share_the_space_token_as_the_transformers_backend_does():
    """" 1" and " 2" are " " + digit here (as in Qwen): the shared " " joins the prompt and
    the digits are the choice tokens."""
    from judgeaudit.llm.llamacpp_backend import score_choices

    lm = _model(ScriptedServer({}))
    tok = lm.tokenizer
    one, two = tok.convert_tokens_to_ids("1"), tok.convert_tokens_to_ids("2")
    lm.server.logits = {one: 1.0, two: 0.0}
    out = score_choices(lm, Request(messages=(Message("user", "s"),), prefill="Score:",
                                    choices=("1", "2")))
    assert lm.server.bodies[-1]["prompt"][-1] == tok.convert_tokens_to_ids("Ġ")
    assert out.probs["1"] == pytest.approx(1 / (1 + math.exp(-1.0)))
    lm.server.logits = {one: 1.0}  # "2" nowhere: asked in the whole vocabulary, then refused
    with pytest.raises(FatalProviderError, match=r"no probability for choice\(s\) \['2'\]"):
        score_choices(lm, Request(messages=(Message("user", "s"),), prefill="Score:",
                                  choices=("1", "2")))
    assert [b["n_probs"] for b in lm.server.bodies[-3:]] == [20, 1000, tok.vocab_size]


def test_errors_and_context_limits():
    from judgeaudit.llm.llamacpp_backend import generate_text, score_choices

    lm = _model(ScriptedServer({}, error={"code": 400, "message": "Prompt contains invalid"}))
    with pytest.raises(FatalProviderError, match="Prompt contains invalid"):
        score_choices(lm, _ab())
    lm.server.error = {"code": 503, "message": "busy"}
    with pytest.raises(ProviderError) as ei:
        score_choices(lm, _ab())
    assert ei.value.retryable
    lm.server.error = None
    long = Request(messages=(Message("user", "x" * 80),), max_tokens=4)
    # too long: this request fails alone (RequestRejected), the run goes on
    with pytest.raises(RequestRejected, match="model's context of 64 tokens"):
        generate_text(lm, long)
    mid = Request(messages=(Message("user", "x" * 30),), max_tokens=8)
    with pytest.raises(RequestRejected, match="local\\?ctx=N") as ei:
        generate_text(lm, mid)
    assert ei.value.kind == "too_long" and not ei.value.retryable


def test_generation_is_greedy_at_zero_and_plain_seeded_sampling_above():
    from judgeaudit.llm.llamacpp_backend import generate_text
    from judgeaudit.llm.providers.local import _seed

    lm = _model(ScriptedServer({}))
    req = Request(messages=(Message("user", "hi"),), max_tokens=5)
    out = generate_text(lm, req)
    assert out.text == "xy" and out.usage.completion_tokens == 2
    body = lm.server.bodies[-1]
    assert body["temperature"] == 0.0 and body["n_predict"] == 5
    assert body["samplers"] == ["temperature"] and body["top_k"] == 0
    hot = Request(messages=req.messages, max_tokens=5, temperature=0.7, repeat=3)
    generate_text(lm, hot)
    body = lm.server.bodies[-1]
    assert body["temperature"] == 0.7 and body["seed"] == _seed(hot) % 0xFFFFFFFF
    assert body["seed"] != _seed(req) % 0xFFFFFFFF


def test_cache_identity_differs_by_backend():
    from judgeaudit.llm.providers.local import LocalProvider

    a = LocalProvider("qwen-1.5b", {"backend": "llamacpp"}).cache_identity()
    b = LocalProvider("qwen-1.5b", {"backend": "transformers"}).cache_identity()
    assert a != b and a["weights"] == b["weights"]
    assert a["backend"] == "llamacpp" and a["weights"].startswith("sha256:")


# ---- the real model through llama.cpp (slow) ---------------------------------------------------

FACTS = 2  # builtin:facts items judged in both orders


def _pair_requests(n: int) -> list[Request]:
    from judgeaudit.data import load
    from judgeaudit.judges.pairwise import PairwiseJudge

    judge = PairwiseJudge(None)  # type: ignore[arg-type]  # only builds requests
    return [judge.request(item, order) for item in load("builtin:facts")[:n]
            for order in ("12", "21")]


def integer_judge(package: str, backend: str) -> Any:
    """The 1.5B judge on an integer backend, loaded, or a skip saying why it cannot be."""
    pytest.importorskip(package)
    from judgeaudit.llm.local_model import ModelFilesError
    from judgeaudit.llm.providers.local import LocalProvider

    p = LocalProvider("qwen-1.5b", {"backend": backend})
    try:
        p.loaded()
    except ModelFilesError as exc:
        pytest.skip(f"{backend} model not available: {exc}")
    return p


async def transformers_verdicts(reqs: list[Request]) -> list[Any]:
    """The transformers backend's bf16 verdicts on `reqs`, its model unloaded afterwards:
    one model in memory at a time."""
    pytest.importorskip("torch")
    import gc

    from judgeaudit.llm import local_model
    from judgeaudit.llm.providers.local import LocalProvider

    torch_judge = LocalProvider("qwen-1.5b", {"backend": "transformers", "dtype": "bf16"})
    out = [await torch_judge.generate(r) for r in reqs]
    del torch_judge
    local_model.unload_all()
    gc.collect()
    return out


@pytest.fixture(scope="module")
def llama() -> Any:
    return integer_judge("xllamacpp", "llamacpp")


@pytest.mark.local_model
async def test_ab_probabilities_sum_to_one_and_agree_with_transformers(request):
    """Both orders of easy builtin:facts pairs: valid probabilities, the right answer, and
    the transformers backend's choice (P(A) within 0.06 of it; it runs bf16 on dequantized
    weights, llama.cpp on the quantized ones with 8-bit activations). The transformers
    model is unloaded before the llama.cpp one loads: one model in memory at a time."""
    reqs = _pair_requests(FACTS)
    theirs = await transformers_verdicts(reqs)
    llama = request.getfixturevalue("llama")
    ours = [await llama.generate(r) for r in reqs]
    for r, a, b in zip(reqs, ours, theirs, strict=True):
        assert set(a.probs) == {"A", "B"} and sum(a.probs.values()) == pytest.approx(1, abs=1e-9)
        assert a.text == max(a.probs, key=a.probs.get) == b.text
        right = "A" if (r.meta["order"] == "12") == (r.meta["label"] == 1) else "B"
        assert a.text == right
        assert abs(a.probs["A"] - b.probs["A"]) < 0.06, (a.probs, b.probs)
        assert a.usage.prompt_tokens == b.usage.prompt_tokens  # the same token ids


@pytest.mark.local_model
async def test_prefix_reuse_gives_the_same_probabilities(llama):
    """Up to the kernels: llama.cpp picks its CPU matrix kernel by the number of tokens a
    pass evaluates, so a suffix of a few dozen tokens after a reused prefix rounds
    differently from the whole prompt (measured: P(A) 0.7369 whole, the same with 72 tokens
    re-run, 0.7184 with 32 or 12, 0.7407 with 1; at most 0.021 apart over these pairs), the
    size of transformers' bf16-vs-fp32 difference."""
    from judgeaudit.llm.llamacpp_backend import score_choices

    lm = llama.loaded()
    before = lm.state.get("reused_tokens", 0)
    worst = 0.0
    for r in _pair_requests(FACTS):
        reused = score_choices(lm, r, reuse=True).probs["A"]
        full = score_choices(lm, r, reuse=False).probs["A"]
        worst = max(worst, abs(reused - full))
    assert lm.state["reused_tokens"] - before >= 2 * 60  # at least the system prompt, twice
    assert worst < 0.03


@pytest.mark.local_model
async def test_generation_greedy_is_deterministic_and_sampling_is_seeded(llama):
    req = Request(messages=(Message("user", "What is the capital of France? Answer in one "
                                            "sentence."),), max_tokens=20)
    first, second = await llama.generate(req), await llama.generate(req)
    assert "Paris" in first.text and first.text == second.text
    assert 0 < first.usage.completion_tokens <= 20 and first.probs is None
    hot = Request(messages=req.messages, max_tokens=12, temperature=1.0)
    assert (await llama.generate(hot)).text == (await llama.generate(hot)).text


@pytest.mark.local_model
async def test_concurrent_requests_run_in_one_batch_and_keep_their_answers(llama):
    """Requests in flight together are decoded by the server's slots as one batch; greedy
    answers are those each request gets alone."""
    from judgeaudit.llm.providers.local import LocalProvider

    qs = ["Say hello in French.", "Name two prime numbers.", "What colour is the sky?"]
    reqs = [Request(messages=(Message("user", q),), max_tokens=10) for q in qs]
    alone = [await llama.generate(r) for r in reqs]
    batched = LocalProvider("qwen-1.5b", {"backend": "llamacpp", "gen_batch": "3"})
    assert batched.loaded() is llama.loaded()  # one server per process
    together = await asyncio.gather(*(batched.generate(r) for r in reqs))
    assert [t.text for t in together] == [a.text for a in alone]


@pytest.mark.local_model
def test_an_openai_style_chat_with_assistant_prefill_gives_the_same_verdict(llama):
    """What `openai:...&prefill=assistant` sends a llama.cpp server (the chat messages with
    the prefill as a final assistant turn; the server renders the GGUF's template and
    continues that turn) gives this backend's P(A): the documented way to serve the
    embedded judge elsewhere (docs/local-judge.md). Both evaluate the whole prompt (no
    prefix reuse), so equal prompts give equal numbers."""
    from judgeaudit.llm.providers.openai import choice_probs

    lm = llama.loaded()
    for r in _pair_requests(1):
        mine = llama_score(lm, r)  # without prefix reuse
        msgs = [{"role": m.role, "content": m.content} for m in r.messages]
        msgs.append({"role": "assistant", "content": r.prefill})
        out = lm.server.handle_chat_completions({"messages": msgs, "max_tokens": 1,
                                                 "temperature": 0, "logprobs": True,
                                                 "top_logprobs": 20, "cache_prompt": False})
        first = out["choices"][0]["logprobs"]["content"][0]
        theirs = choice_probs([(t["token"], t["logprob"]) for t in first["top_logprobs"]],
                              r.choices, sampled=first["token"])
        assert theirs is not None and abs(theirs["A"] - mine["A"]) < 1e-4, (theirs, mine)


def llama_score(lm: Any, r: Request) -> dict[str, float]:
    from judgeaudit.llm.llamacpp_backend import score_choices

    return score_choices(lm, r, reuse=False).probs
