"""The real embedded judge's transformers backend (slow: loads the models once per module;
run with -m local_model). The llamacpp backend: test_llamacpp_backend.py.

Easy pairs: a fixed list of plainly right vs plainly wrong answers, written in three batches
(6, then 7, then 1), each before the model was run on it; none was dropped or edited after
seeing a result. Measured with the 1.5B (bf16) on the first 13 pairs: 20 of 26 single
judgments right, 12 of 13 pairs right once both orders are averaged. The model prefers
"12 + 7 = 21" over "= 19" in both orders, so a perfect score is not expected. The thresholds
sit under the measured counts, far above chance (P(>= 11/14 pairs | coin) = 0.03) and far above
a judge whose A/B labels were mixed up (which would get ~2/14).
"""

from __future__ import annotations

import pytest

from judgeaudit.judges.templates import load_template
from judgeaudit.llm import Client, Message, Request

pytestmark = pytest.mark.local_model

pytest.importorskip("torch")
pytest.importorskip("transformers")

from judgeaudit.llm.local_model import ModelFilesError  # noqa: E402
from judgeaudit.llm.providers.local import LocalProvider, PrefixCache, score_choices  # noqa: E402

# (question, right answer, wrong answer)
EASY_PAIRS = [
    ("What is the capital of France?", "The capital of France is Paris.",
     "The capital of France is Berlin."),
    ("What is 12 + 7?", "12 + 7 = 19.", "12 + 7 = 21."),
    ("Translate 'thank you' into Spanish.", "Gracias.", "Bonjour."),
    ("Write a Python function that returns the square of x.",
     "def square(x):\n    return x * x", "def square(x):\n    return x + 2"),
    ("How many legs does a spider have?", "A spider has eight legs.", "A spider has six legs."),
    ("Which is the largest planet in the solar system?",
     "Jupiter is the largest planet in the solar system.",
     "Mercury is the largest planet in the solar system."),
    ("What is 2 + 2?", "2 + 2 = 4.", "2 + 2 = 5."),
    ("What is 12 + 7?", "The answer is 19.", "The answer is 25."),
    ("What is 10 times 3?", "10 times 3 is 30.", "10 times 3 is 13."),
    ("What is the boiling point of water at sea level in Celsius?",
     "Water boils at 100 degrees Celsius at sea level.",
     "Water boils at 50 degrees Celsius at sea level."),
    ("What color is the sky on a clear day?", "The sky is blue on a clear day.",
     "The sky is green on a clear day."),
    ("How many legs does a spider have?", "Spiders have 8 legs.", "Spiders have 6 legs."),
    ("Who wrote 'Romeo and Juliet'?", "William Shakespeare wrote 'Romeo and Juliet'.",
     "Charles Dickens wrote 'Romeo and Juliet'."),
    ("What is the chemical symbol for gold?", "The chemical symbol for gold is Au.",
     "The chemical symbol for gold is Ag."),
]

TEMPLATE = load_template("pairwise_v1")


def pair_request(question: str, shown_a: str, shown_b: str) -> Request:
    user = TEMPLATE.render_user(prompt=question, response_a=shown_a, response_b=shown_b)
    return Request(
        messages=(Message("system", TEMPLATE.system), Message("user", user)),
        prefill=TEMPLATE.prefill, choices=("A", "B"), max_tokens=8,
    )


def _provider(model: str, params: dict[str, str]) -> LocalProvider:
    try:
        p = LocalProvider(model, params)
        p.loaded()
    except ModelFilesError as exc:
        pytest.skip(f"local model {model} not available: {exc}")
    return p


@pytest.fixture(scope="module")
def judge() -> LocalProvider:
    # bf16 on every CPU: in fp32 the 1.5B needs ~7 GB (on CPUs without bf16 units torch
    # computes bf16 by conversion: slower, half the memory); the 0.5B fp32 tests are in
    # test_local_small.py, so the two models are never loaded together.
    return _provider("qwen-1.5b", {"backend": "transformers", "dtype": "bf16"})


async def test_easy_pairs_judged_correctly_in_both_orders(judge):
    reqs = []
    for q, good, bad in EASY_PAIRS:
        reqs += [pair_request(q, good, bad), pair_request(q, bad, good)]  # right: A, then B
    client = Client(judge, cache=None)
    out = await client.map(reqs)
    p_right = []
    for i, resp in enumerate(out):
        right = "A" if i % 2 == 0 else "B"
        assert set(resp.probs) == {"A", "B"}
        assert resp.probs["A"] + resp.probs["B"] == pytest.approx(1.0, abs=1e-9)
        assert resp.text == max(resp.probs, key=resp.probs.get)
        assert resp.usage.prompt_tokens > 60
        p_right.append(resp.probs[right])
    single = sum(p > 0.5 for p in p_right)
    averaged = [(p_right[i] + p_right[i + 1]) / 2 for i in range(0, len(p_right), 2)]
    debiased = sum(p > 0.5 for p in averaged)
    detail = [round(p, 3) for p in p_right]
    assert single >= 18, f"only {single}/28 single judgments right: {detail}"
    assert debiased >= 11, f"only {debiased}/14 pairs right over both orders: {detail}"
    # the plainest pair is right in both orders, confidently
    assert p_right[0] > 0.8 and p_right[1] > 0.8, detail
    assert client.stats.made == len(reqs) and client.stats.failed == 0


def _reuse_vs_full(provider: LocalProvider) -> tuple[float, int]:
    """Max |P(A) with prefix reuse - P(A) from one full pass| over two items in both orders,
    and how many prompt tokens came from stored prefixes."""
    lm = provider.loaded()
    lm.state["prefix_cache"] = PrefixCache()  # start empty: reuse must come from these calls
    worst = 0.0
    for q, good, bad in EASY_PAIRS[2:4]:
        for r in (pair_request(q, good, bad), pair_request(q, bad, good)):
            a = score_choices(lm, r, reuse=True).probs["A"]
            b = score_choices(lm, r, reuse=False).probs["A"]
            worst = max(worst, abs(a - b))
    return worst, lm.state["prefix_cache"].reused_tokens


def test_prefix_reuse_gives_the_same_probabilities_in_bf16(judge):
    # bf16 (the default): matmuls of other shapes round differently; measured up to 0.012,
    # the same size as the bf16-vs-fp32 difference of the full pass. (fp32, where the split
    # computation is the same arithmetic up to summation order: test_local_small.py.)
    worst, reused = _reuse_vs_full(judge)
    assert reused >= 60  # at least the shared system prompt (~75 tokens) was reused
    assert worst < 0.03
