"""rank --covariates length on a Chinese pool, judged through a real loopback server by a
judge with a planted length bias: P(A) = sigmoid(q_A - q_B + 3 * (log(1 + chars_A) -
log(1 + chars_B))), chars = Han characters. Each answer is one clause without a comma, so
the old word count (letter runs) gave every answer 1 word: the length covariate was
constant, dropped, and the bias-aware top-2 was the naive one, which the judge's length bias
fills with the longest answer (6th of 16 by quality) in every seed. Now the covariate counts
characters: c[length] comes out on the planted scale (its 95% interval holds 3 in every
seed) and the bias-aware top-2 mostly leaves the longest answer out."""

from __future__ import annotations

import hashlib
import math
import random
import re

from fakeserver import FakeLLMServer

import judgeaudit

C = 3.0
N = 16
BASE = ("北京是中国的首都位于华北平原北部是全国的政治中心文化中心国际交往中心和科技创新中心"
        "有三千多年的建城史和八百多年的建都史故宫天坛长城都在这里")


def _pool() -> list[dict]:
    """16 answers of 3-45 characters; quality 0-3 drawn independently of length."""
    rng = random.Random(7)
    lens = [round(3 * 15 ** (i / (N - 1))) for i in range(N)]
    qs = [3.0 * i / (N - 1) for i in range(N)]
    rng.shuffle(qs)
    return [{"id": f"zh{i}", "prompt": "中国的首都是哪里？",
             "response": (BASE * 3)[3 * i:3 * i + n] + "。", "quality": q}
            for i, (n, q) in enumerate(zip(lens, qs, strict=True))]


def _han(text: str) -> int:
    return len(re.findall(r"[\u4e00-\u9fff]", text))


def _judge(quality: dict[str, float], salt: str):
    def answer(prompt: str) -> str:
        m = re.search(r"Response A:\n(.*?)\n\nResponse B:\n(.*?)\n\n", prompt, re.S)
        assert m, prompt[:300]
        a, b = m.group(1).strip(), m.group(2).strip()
        z = quality[a] - quality[b] + C * (math.log1p(_han(a)) - math.log1p(_han(b)))
        u = int.from_bytes(hashlib.sha256((salt + prompt).encode()).digest()[:8], "big")
        return "A" if u / 2**64 < 1 / (1 + math.exp(-z)) else "B"
    return answer


def test_a_length_biased_judge_on_a_chinese_pool_is_corrected_on_the_planted_scale():
    pool = _pool()
    quality = {r["response"]: r["quality"] for r in pool}
    longest = pool[-1]["id"]
    assert sorted(r["quality"] for r in pool).index(pool[-1]["quality"]) == N - 6  # 6th best of 16
    picked_longest = {"naive": 0, "bias_aware": 0}
    for seed in range(4):
        with FakeLLMServer(answer=_judge(quality, str(seed))) as srv:
            r = judgeaudit.rank(f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off",
                                pool, k=2, budget=N * (N - 1), covariates="length", seed=seed,
                                samples=300, cache=False, retry=0).to_dict()
        assert r["n_comparisons"] == N * (N - 1) and r["n_invalid"] == 0
        assert not r.get("covariates_dropped"), r.get("covariates_dropped")
        c = r["models"]["bias_aware"]["c"]["length"]
        assert c["lo"] <= C <= c["hi"], (seed, c)
        for model in picked_longest:
            picked_longest[model] += longest in r["models"][model]["topk"]
    assert picked_longest["naive"] == 4
    assert picked_longest["bias_aware"] <= 1, picked_longest
