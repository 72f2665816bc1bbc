"""The real embedded judge's transformers backend, the 0.5B in fp32 (slow: loads the model
once; run with -m local_model). Its own module, so the suite never holds it beside the 1.5B
of test_local.py (the conftest unloads each module's models): peak memory is one model's."""

from __future__ import annotations

import asyncio

import pytest

from judgeaudit.llm import Client, Message, Request

pytestmark = pytest.mark.local_model

pytest.importorskip("torch")
pytest.importorskip("transformers")

from judgeaudit.llm.providers.local import LocalProvider  # noqa: E402

from .test_local import EASY_PAIRS, _provider, _reuse_vs_full, pair_request  # noqa: E402


@pytest.fixture(scope="module")
def small_fp32() -> LocalProvider:
    return _provider("qwen-0.5b", {"dtype": "fp32"})


def test_prefix_reuse_gives_the_same_probabilities_in_fp32(small_fp32):
    # fp32: the split computation is the same arithmetic up to summation order.
    worst, reused = _reuse_vs_full(small_fp32)
    assert reused >= 60  # at least the shared system prompt (~75 tokens) was reused
    assert worst < 1e-4


async def test_small_preset_gives_valid_probabilities(small_fp32):
    assert small_fp32.cache_identity()["dtype"] == "fp32"
    big = LocalProvider("qwen-1.5b", {"backend": "transformers"}).cache_identity()
    assert small_fp32.cache_identity()["weights"] != big["weights"]
    resp = await small_fp32.generate(pair_request(*EASY_PAIRS[0]))
    assert set(resp.probs) == {"A", "B"} and resp.text in {"A", "B"}
    assert 0.0 < resp.probs["A"] < 1.0
    assert sum(resp.probs.values()) == pytest.approx(1.0, abs=1e-9)
    score = Request(
        messages=(Message("user", "Rate the answer 'Paris' to 'What is the capital of France?' "
                                  "from 1 to 5."),),
        prefill="Score:", choices=("1", "2", "3", "4", "5"),
    )
    s = await small_fp32.generate(score)
    assert set(s.probs) == {"1", "2", "3", "4", "5"}
    assert sum(s.probs.values()) == pytest.approx(1.0, abs=1e-9)


async def test_prompt_lookup_decoding_gives_the_plain_greedy_text(small_fp32):
    """decode=lookup (the default) copies candidates from the prompt and keeps them only where
    they equal the model's greedy choice: a copy-heavy rewrite comes out as with plain
    decoding (fp32, so no bf16 rounding ties)."""
    from judgeaudit.llm.providers.local import generate_text

    text = ("The Eiffel Tower is in Paris. It was finished in 1889 for the World's Fair and is "
            "about 330 metres tall.")
    req = Request(messages=(Message("user", "Repeat this text exactly, then add one sentence "
                                            f"about its colour:\n{text}"),), max_tokens=60)
    lm = small_fp32.loaded()
    plain = generate_text(lm, req, decode="plain")
    fast = generate_text(lm, req, decode="lookup", lookup_k=10)
    assert fast.text == plain.text
    assert fast.usage.completion_tokens == plain.usage.completion_tokens > 10


async def test_batched_generation_gives_the_single_request_texts(small_fp32):
    """gen_batch: greedy requests in flight together are decoded as one padded batch; in
    fp32 each text is the one the request gets alone."""
    from judgeaudit.llm.providers.local import generate_batch, generate_text

    reqs = [Request(messages=(Message("user", q),), max_tokens=n) for q, n in (
        ("Write one sentence about the sea.", 24), ("Say hello in French.", 8),
        ("Name two prime numbers.", 16))]
    lm = small_fp32.loaded()
    alone = [generate_text(lm, r, decode="plain") for r in reqs]
    together = generate_batch(lm, reqs)
    assert [r.text for r in together] == [r.text for r in alone]
    assert [r.usage.completion_tokens for r in together] == [
        r.usage.completion_tokens for r in alone]
    # through the provider: concurrent calls are batched and each gets its own answer
    p = LocalProvider("qwen-0.5b", {"dtype": "fp32", "gen_batch": "3", "decode": "plain"})
    client = Client(p)
    assert client.concurrency == 3
    outs = await asyncio.gather(*(client.call(r) for r in reqs))
    assert [o.text for o in outs] == [r.text for r in alone]
    # sampled requests are batched too; a row's draw depends on its own seed only
    hot = [Request(messages=(Message("user", "Write one sentence about the sea."),),
                   max_tokens=16, temperature=1.0, repeat=k) for k in (1, 2)]
    solo = generate_batch(lm, hot[:1])[0].text
    mixed = generate_batch(lm, [reqs[1], hot[0], hot[1]])
    assert mixed[1].text == solo
    assert mixed[0].text == alone[1].text  # the greedy row beside them is unchanged
    assert mixed[2].text != solo  # another repeat, another draw


async def test_short_generation_is_sensible(small_fp32):
    # Here, not beside the 1.5B: generation reads the whole output matrix (another 0.47 GB of
    # the 1.5B's mapped weights), and the code path is the same for both presets.
    req = Request(
        messages=(Message("user", "What is the capital of France? Answer in one sentence."),),
        max_tokens=20,
    )
    resp = await small_fp32.generate(req)
    assert "Paris" in resp.text
    assert 0 < resp.usage.completion_tokens <= 20 and resp.probs is None
    # sampling is seeded from the request: the same request gives the same text
    hot = Request(messages=req.messages, max_tokens=8, temperature=0.9)
    assert (await small_fp32.generate(hot)).text == (await small_fp32.generate(hot)).text
