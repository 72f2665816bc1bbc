"""The panel's accuracy column scores a pair as evaluate's default mean rule does: a tie
verdict on a decisive label counts half. It counted a tie as wrong, so LLMBar's Rating
judges (equal scores read as ties) showed 72.1% in the panel where evaluate gave the paper's
81.3%."""

from __future__ import annotations

from judgeaudit.audit.evaluate import pair_credit
from judgeaudit.audit.panel import judge_row
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict, to_canonical


def _verdict(item_id: str, *choices: str | None) -> PairwiseVerdict:
    return PairwiseVerdict(item_id, [
        OrderVerdict(order=order, raw=choice or "?", choice=choice,
                     winner=to_canonical(choice, order))
        for order, choice in zip(("12", "21"), choices, strict=True)])


def test_a_tie_on_a_decisive_label_counts_half_as_in_evaluate() -> None:
    items = [PairwiseItem(id=f"i{k}", prompt="p", response_1="a", response_2="b", label=lab)
             for k, lab in enumerate([1, 2, 1, 1])]
    verdicts = [_verdict("i0", "tie", "tie"),  # tie in both orders: half
                _verdict("i1", "B", "A"),      # right in both
                _verdict("i2", "B", "A"),      # wrong in both
                _verdict("i3", "A", None)]     # right, then unreadable: half
    row = judge_row("j", items, verdicts, seed=0)
    want = sum(pair_credit(it.label, v.orders, "mean")
               for it, v in zip(items, verdicts, strict=True))
    assert want == 2.0
    assert row["accuracy"]["value"] == want / 4 and row["accuracy"]["n"] == 4
