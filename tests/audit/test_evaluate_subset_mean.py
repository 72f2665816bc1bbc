"""A pairwise run whose pairs span several subsets (llmbar `subset=LLMBar/Adversarial`: four)
prints the pooled accuracy as pooled and the unweighted mean of the subsets beside it, as
LLMBar's "Average" (GPT-4 Vanilla: 81.0 pooled over 319 pairs, 80.8 the mean of four)."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

from judgeaudit.audit.evaluate import evaluate, summarize
from judgeaudit.cli.format import evaluate_table
from judgeaudit.data import PairwiseItem, load
from judgeaudit.judges import make_judge
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict
from judgeaudit.report import render_report
from tests.conftest import shared_data_dir


def _case(per_subset: dict[str, tuple[int, int]]):
    """(right, n) per subset; every right pair right in both orders."""
    items, verdicts = [], []
    for sub, (right, n) in per_subset.items():
        for k in range(n):
            iid = f"{sub}:{k}"
            items.append(PairwiseItem(id=iid, prompt="p", response_1="a", response_2="b",
                                      label=1, metadata={"subset": sub}))
            w = 1 if k < right else 2
            verdicts.append(PairwiseVerdict(iid, [OrderVerdict("12", "x", "A" if w == 1 else "B",
                                                               w),
                                                  OrderVerdict("21", "x", "B" if w == 1 else "A",
                                                               w)]))
    return items, verdicts


def test_the_unweighted_subset_mean_sits_beside_the_pooled_accuracy():
    items, verdicts = _case({"S/a": (9, 10), "S/b": (10, 40)})
    res = summarize(items, verdicts, kappa_boot=0)
    assert res["accuracy"]["value"] == pytest.approx(19 / 50)  # pooled
    spread = res["accuracy_subset_mean"]
    assert spread["value"] == pytest.approx((0.9 + 0.25) / 2)
    assert spread["n"] == 2 and spread["n_items"] == 50
    assert spread["ci95"][0] < spread["value"] < spread["ci95"][1]
    assert [s["subset"] for s in spread["subsets"]] == ["S/a", "S/b"]
    res.update(judge="j", data="d")
    con = Console(width=250, record=True)
    con.print(evaluate_table(res))
    out = con.export_text()
    assert "accuracy above pools 2 subsets (n = 50, each pair weighing the same)" in out
    assert "unweighted mean of the subsets (as LLMBar's 'Average'): 57.5%" in out


def test_one_subset_gives_no_mean():
    items, verdicts = _case({"S/a": (9, 10)})
    assert "accuracy_subset_mean" not in summarize(items, verdicts, kappa_boot=0)


def test_the_report_has_the_subset_mean_row():
    from judgeaudit import __version__
    items, verdicts = _case({"S/a": (9, 10), "S/b": (10, 40)})
    res = summarize(items, verdicts, kappa_boot=0)
    doc = {"schema_version": 1, "command": "evaluate", "version": __version__, "judge": "j",
           "data": "d", "selection": {"kind": "all", "n": 50, "of": 50}, "calls": {},
           "seconds": 0.0, "verdicts": [], **res}
    page = render_report(doc)
    assert "Accuracy, unweighted mean of 2 subsets" in page


def _llmbar() -> Path:
    d = shared_data_dir() / "llmbar"
    if not (d / "judge_verdicts.csv").exists():
        pytest.skip(f"shared data absent: {d / 'judge_verdicts.csv'} (set JUDGEAUDIT_SHARED_DATA)")
    return d


async def test_llmbar_adversarial_gpt4_pooled_81_0_and_average_80_8():
    d = _llmbar()
    judge = make_judge(f"replay:{d / 'judge_verdicts.csv'}?judge=GPT-4&strategy=Vanilla")
    res = await evaluate(judge, load(f"llmbar:{d}?subset=LLMBar/Adversarial"), kappa_boot=0)
    assert round(100 * res["accuracy"]["value"], 1) == 81.0 and res["accuracy"]["n"] == 319
    spread = res["accuracy_subset_mean"]
    assert round(100 * spread["value"], 1) == 80.8 and spread["n"] == 4
