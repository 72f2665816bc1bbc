"""replay reads a wide file's score_1/score_2 (LLMBar's Rating strategies) instead of its
winner columns: equal scores are a tie in both orders, an unreadable score an invalid verdict
(counted and shown), where LLMBar's evaluate.py recorded a win of the output shown second
and a first-shown pick, which read as position bias."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgeaudit.audit.evaluate import evaluate
from judgeaudit.data import PairwiseItem, load
from judgeaudit.judges import make_judge
from judgeaudit.llm import Cache, Request
from judgeaudit.llm.providers.replay import ReplayFileError, ReplayProvider
from tests.conftest import shared_data_dir

HEADER = ("subset,idx,judge,strategy,sample,label,winner_original_order,winner_swapped_order,"
          "score_1,score_2\n")
# As LLMBar's evaluate.py writes them: equal scores -> "2" then "1" (the output shown second
# both times); an unreadable score -> "1" then "2" (the output shown first both times).
RATING_CSV = HEADER + """\
S,0,J,Rating,0,1,1,1,9,7
S,1,J,Rating,0,2,2,2,3,8
S,2,J,Rating,0,1,2,1,8,8
S,3,J,Rating,0,2,1,2,,0
"""


def req(item: str, order: str) -> Request:
    return Request(messages=(), meta={"task": "pairwise", "item_id": item, "order": order})


def _file(tmp_path: Path, text: str = RATING_CSV) -> Path:
    p = tmp_path / "verdicts.csv"
    p.write_text(text, encoding="utf-8")
    return p


async def test_equal_scores_are_a_tie_in_both_orders(tmp_path):
    p = ReplayProvider(str(_file(tmp_path)), {"judge": "J", "strategy": "Rating"})
    # the winner columns say "2" then "1": the output shown second in both orders
    assert (await p.generate(req("S:2", "12"))).text == "tie"
    assert (await p.generate(req("S:2", "21"))).text == "tie"


async def test_an_unreadable_score_is_no_verdict_and_says_why(tmp_path):
    p = ReplayProvider(str(_file(tmp_path)), {"judge": "J", "strategy": "Rating"})
    for order in ("12", "21"):
        text = (await p.generate(req("S:3", order))).text
        assert text.startswith("no readable recorded scores") and "score_1=''" in text


async def test_different_scores_keep_the_higher_as_winner(tmp_path):
    p = ReplayProvider(str(_file(tmp_path)), {"judge": "J", "strategy": "Rating"})
    assert [(await p.generate(req("S:0", o))).text for o in ("12", "21")] == ["A", "B"]
    assert [(await p.generate(req("S:1", o))).text for o in ("12", "21")] == ["B", "A"]


def test_the_reading_is_noted_and_changes_the_cache_identity(tmp_path):
    p = ReplayProvider(str(_file(tmp_path)), {"judge": "J", "strategy": "Rating"})
    assert any("1 with equal scores are ties and 1 with an unreadable score invalid" in n
               for n in p.index.notes)
    assert "reading" in p.cache_identity()
    plain = _file(tmp_path, HEADER.replace(",score_1,score_2", "") + "S,0,J,V,0,1,1,1\n")
    assert "reading" not in ReplayProvider(str(plain), {}).cache_identity()


def test_a_winner_column_against_the_scores_is_refused(tmp_path):
    path = _file(tmp_path, HEADER + "S,0,J,Rating,0,1,2,2,9,7\n")
    with pytest.raises(ReplayFileError, match=r"verdicts.csv:2: field 'winner_original_order'"
                       r".*make output 1 the winner"):
        ReplayProvider(str(path), {})


async def test_evaluate_counts_the_tie_half_and_the_unreadable_invalid(tmp_path):
    items = [PairwiseItem(id=f"S:{k}", prompt=f"q{k}", response_1="a", response_2="b",
                          label=label) for k, label in enumerate([1, 2, 1, 2])]
    judge = make_judge(f"replay:{_file(tmp_path)}?judge=J", cache=Cache(tmp_path / "c.sqlite"))
    res = await evaluate(judge, items, kappa_boot=0)
    # S:0 and S:1 right in both orders, S:2 a tie (half), S:3 invalid (wrong)
    assert res["accuracy"]["value"] == pytest.approx(2.5 / 4)
    assert res["n_invalid"] == 2
    assert {e["item_id"] for e in res["invalid_examples"]} == {"S:3"}
    # no order preference left: the ties name no position, the rest agree across orders
    assert res["first_position_rate"]["value"] == pytest.approx(0.5)
    assert res["position_consistency"]["value"] == 1.0


# ---- the recorded LLMBar file --------------------------------------------------------------

def _llmbar() -> Path:
    d = shared_data_dir() / "llmbar"
    if not (d / "judge_verdicts.csv").exists():
        pytest.skip(f"shared data absent: {d / 'judge_verdicts.csv'} (set JUDGEAUDIT_SHARED_DATA)")
    return d


async def test_llmbar_gpt4_rating_has_no_position_preference_and_the_papers_accuracy():
    d = _llmbar()
    spec = f"replay:{d / 'judge_verdicts.csv'}?judge=GPT-4&strategy=Rating"
    natural = await evaluate(make_judge(spec), load(f"llmbar:{d}?subset=LLMBar/Natural"),
                             kappa_boot=0)
    assert natural["accuracy"]["value"] == pytest.approx(0.92)  # the published 92.0
    adv = await evaluate(make_judge(spec), load(f"llmbar:{d}?subset=LLMBar/Adversarial"),
                         kappa_boot=0)
    # read from the winner columns the first-position rate was 0.41 (the 'bias' of LLMBar's
    # tie-break); 2 pairs have an unreadable score, invalid in both orders
    assert adv["first_position_rate"]["value"] == pytest.approx(0.5)
    assert adv["n_invalid"] == 4
    assert all(e["raw"].startswith("no readable recorded scores")
               for e in adv["invalid_examples"])
