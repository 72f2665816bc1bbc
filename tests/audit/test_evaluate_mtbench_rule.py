"""The mtbench pair rule: MT-Bench's agreement "without tie" (FastChat's
compute_agreement.py), where orders that differ make a tie and ties are left out of n;
checked by hand and against FastChat's count on the 200 MT-Bench pairs of LLMBar."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from judgeaudit.audit.evaluate import PAIR_RULES, evaluate, mtbench_credit, summarize
from judgeaudit.cli.format import evaluate_table
from judgeaudit.data import PairwiseItem, load
from judgeaudit.judges import make_judge
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict


def _order(order: str, w: int | str) -> OrderVerdict:
    if w == "x":
        return OrderVerdict(order, "Both are fine", None, None)
    return OrderVerdict(order, str(w), "tie" if w == 0 else "A", w)  # type: ignore[arg-type]


# label, (winner in order 12, winner in order 21); "x" = unparseable
CASES = {
    "right": (1, (1, 1)),        # counted, right
    "wrong": (1, (2, 2)),        # counted, wrong
    "flip": (2, (1, 2)),         # orders differ: a tie, left out
    "tie": (1, (0, 0)),          # a tie, left out
    "half": (2, (2, "x")),       # one unreadable order: orders differ, left out
    "none": (1, ("x", "x")),     # no valid order: wrong (FastChat's "error" vote), counted
    "tielabel": (0, (0, 0)),     # tie label: left out whatever --ties says
}


def _case() -> tuple[list[PairwiseItem], list[PairwiseVerdict]]:
    items, verdicts = [], []
    for key, (label, ws) in CASES.items():
        items.append(PairwiseItem(id=key, prompt="p", response_1="a", response_2="b",
                                  label=label))
        verdicts.append(PairwiseVerdict(key, [_order(o, w) for o, w in zip(("12", "21"), ws,
                                                                            strict=True)]))
    return items, verdicts


def test_mtbench_rule_counts_by_hand():
    assert "mtbench" in PAIR_RULES
    items, verdicts = _case()
    got = {it.id: mtbench_credit(it.label, v.orders)  # type: ignore[arg-type]
           for it, v in zip(items, verdicts, strict=True)}
    assert got == {"right": 1.0, "wrong": 0.0, "flip": None, "tie": None, "half": None,
                   "none": 0.0, "tielabel": None}
    for ties in ("keep", "drop"):
        res = summarize(items, verdicts, pair_rule="mtbench", ties=ties, kappa_boot=0)
        assert res["accuracy"]["value"] == pytest.approx(1 / 3)
        assert res["accuracy"]["n"] == 3
        assert res["accuracy"]["ci95"][0] < 1 / 3 < res["accuracy"]["ci95"][1]
        # left out: flip, tie, half and (with ties keep, counted at first) the tie label
        assert res["accuracy"]["n_left_out"] == (4 if ties == "keep" else 3)
        # the pair with no verdict is counted (a disagreement) and said to be
        assert res["accuracy"]["n_no_verdict_unreadable"] == 1
        assert "mtbench (MT-Bench's agreement without tie" in res["conventions"]["description"]
    # every run carries it beside its own rule
    mean = summarize(items, verdicts, kappa_boot=0)
    assert mean["accuracy_by_rule"]["mtbench"]["n"] == 3


def test_the_terminal_shows_mtbench_agreement_with_its_n():
    items, verdicts = _case()
    res = summarize(items, verdicts, ties="drop", kappa_boot=0)
    res.update(judge="j", data="d")
    from rich.console import Console
    con = Console(width=200, record=True)
    con.print(evaluate_table(res))
    out = " ".join(con.export_text().split())
    assert "MT-Bench's agreement without tie (FastChat): 33.3%" in out
    assert ("(n = 3; 3 pairs left out: 1 one order without a verdict (orders differ), 1 a "
            "tie verdict, 1 orders that name different winners)") in out


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    root = Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
    if not (root / "mt_bench").is_dir() or not (root / "llmbar" / "judge_verdicts.csv").exists():
        pytest.skip(f"shared data absent: {root} (set JUDGEAUDIT_SHARED_DATA)")
    return root


async def test_gpt4_on_mtbench_gives_fastchats_149_of_174():
    root = _shared()
    items = load(f"mtbench:{root / 'mt_bench'}?ids=llmbar")
    judge = make_judge(f"replay:{root / 'llmbar' / 'judge_verdicts.csv'}?judge=GPT-4"
                       "&strategy=Vanilla_NoRules")
    res = await evaluate(judge, items, pair_rule="mtbench", kappa_boot=0)
    acc = res["accuracy"]
    assert (round(acc["value"] * acc["n"]), acc["n"], acc["n_left_out"]) == (149, 174, 26)
    assert acc["value"] == pytest.approx(0.856, abs=5e-4)
    assert acc["ci95"][0] < acc["value"] < acc["ci95"][1]
