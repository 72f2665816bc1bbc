"""HUB-J mitigate's length control (AlpacaEval-style tanh of the standardised length
difference) counts words with `features.word_count`, the package's one length measure. It
counted `len(text.split())`, so every Chinese or Japanese answer (no spaces) was 1 word: every
zh/ja pair had a length difference of 0 and the control no length signal at all. The
simulated scorer's `score_from=length` levels and quantify's `max_words` filter count the
same way."""

from __future__ import annotations

import math
import random

import numpy as np

import judgeaudit
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj import mitigate as M
from judgeaudit.hubj.gmodules import g_score
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor
from judgeaudit.hubj.run import mitigation_inputs
from judgeaudit.llm import Client
from judgeaudit.llm.registry import make_provider

BASE = ("北京是中国的首都位于华北平原北部是全国的政治中心文化中心国际交往中心和科技创新中心"
        "有三千多年的建城史和八百多年的建都史故宫天坛长城都在这里")


def _zh(n: int, off: int = 0) -> str:
    """n Chinese characters in one clause (no space, no comma), then a full stop."""
    return (BASE * 20)[off:off + n] + "。"


def test_a_chinese_pair_of_different_lengths_gets_a_length_difference():
    items = [PairwiseItem(id="zh-0", prompt="中国的首都是哪里？", response_1=_zh(40),
                          response_2=_zh(6), label=1),
             PairwiseItem(id="zh-1", prompt="水的沸点是多少？", response_1=_zh(8, 5),
                          response_2=_zh(24, 9), label=2)]
    winners = {"j": {"zh-0": 1, "zh-1": 2}}
    scores = {"zh-0": (3, 1), "zh-1": (2, 2)}
    _, ctl, qids, _ = mitigation_inputs(items, winners, scores, "rejected")
    assert qids == ["zh-0", "zh-1"]
    # the candidate is the rejected response: zh-0's 6 characters against 40, zh-1's 8
    # against 24 (the old split() count: 1 against 1 in both)
    assert list(ctl.len_candidate) == [6, 8] and list(ctl.len_other) == [40, 24]
    d = M.CONTROLS["length"](ctl)
    assert np.all(d < -0.5), d


async def test_the_length_scorer_bins_a_chinese_answer_by_its_characters():
    c = Client(make_provider("simhubj", "default", {"score_from": "length"}))
    f = Factor("length", "how long the response is")
    crit = {k: f"level {k}" for k in range(1, 6)}
    st = JSONStats()
    got = [await g_score(c, "i", "问题？", _zh(n), f, crit, st) for n in (5, 50, 100, 200, 400)]
    assert got == [1, 2, 3, 4, 5] and st.failed == 0


def test_mitigate_on_chinese_pairs_fits_a_length_control_with_a_length_signal(tmp_path):
    """End to end with simulated judges (one length-biased): the per-query length
    differences of the Chinese pairs vary, and the length control is fitted on them."""
    rng = random.Random(0)
    items = [{"id": f"zh-{i}", "prompt": f"问题{i}？", "response_1": _zh(rng.randint(3, 120), i),
              "response_2": _zh(rng.randint(3, 120), 2 * i), "label": rng.choice((1, 2))}
             for i in range(60)]
    res = judgeaudit.mitigate(
        ["sim?length=2&seed=1", "sim:unbiased?seed=3"], items, factor="length",
        scorer="simhubj?score_from=length", limit=None, cache=tmp_path / "c.sqlite")
    assert res.ok, res.reason
    doc = res.to_dict()
    ld = [x for x in doc["per_query"]["length_difference"] if x is not None]
    assert len(ld) == 60 and len(set(ld)) > 30 and np.std(ld) > 20, ld[:10]
    lc = doc["other_controls"]["length"]["sim?length=2&seed=1"]
    assert math.isfinite(lc["phi"]["value"]) and lc["phi"]["value"] > 0, lc["phi"]
