"""Judge panel: several judges on the same items. Agreement (Fleiss' kappa, or Cohen's for
two), the disagreements kept for review, and the judges ranked by position bias."""

from __future__ import annotations

from typing import Any

import numpy as np

from judgeaudit.audit.evaluate import pair_credit
from judgeaudit.audit.metrics import estimate, position, text_vs_probs
from judgeaudit.audit.probe import AuditContext
from judgeaudit.data.spec import parse_spec
from judgeaudit.judges.factory import JudgeBundle
from judgeaudit.judges.pairwise import PairwiseVerdict
from judgeaudit.stats import fleiss_kappa_ci, kappa_ci

MAX_DISAGREEMENTS = 500


def judge_label(bundle: JudgeBundle) -> str:
    """A short name for tables: file paths cut to their base name."""
    sp = parse_spec(bundle.public_spec)
    name = sp.name.rsplit("/", 1)[-1] if "/" in sp.name else sp.name
    params = "&".join(f"{k}={v}" for k, v in sp.params.items())
    return sp.kind + (f":{name}" if name else "") + (f"?{params}" if params else "")


def consistency_any(verdicts: list[PairwiseVerdict]) -> dict[str, Any]:
    """Same outcome in both orders (same winner, or both unparseable): LLMBar's positional
    agreement, over every item asked in both orders."""
    two = [v for v in verdicts if len(v.orders) == 2]
    return estimate(sum(v.orders[0].winner == v.orders[1].winner for v in two), len(two))


def judge_row(label: str, items, verdicts: list[PairwiseVerdict], seed: int) -> dict[str, Any]:
    m = position(verdicts, seed=seed)
    credit = [pair_credit(it.label, v.orders, "mean")  # evaluate's rule: a tie counts half
              for it, v in zip(items, verdicts, strict=True) if it.label in (1, 2)]
    return {
        "judge": label,
        "position_effect": m["estimate"].as_dict(),
        "first_slot_rate": m.get("first_rate"),
        "position_consistency": consistency_any(verdicts),
        "accuracy": estimate(sum(credit), len(credit)),
        "n_invalid": sum(not o.valid for v in verdicts for o in v.orders),
        "text_vs_probs": text_vs_probs(verdicts),
    }


async def panel_section(ctx: AuditContext) -> dict[str, Any]:
    bundles = [ctx.bundle, *ctx.panel]
    labels = [judge_label(b) for b in bundles]
    if len(set(labels)) != len(labels):
        labels = [f"{i + 1}:{lab}" for i, lab in enumerate(labels)]
    per_judge = await ctx.ask(*(ctx.judge(ctx.items, bundle=b) for b in bundles))
    rows = [judge_row(lab, ctx.items, v, ctx.seed) for lab, v in zip(labels, per_judge,
                                                                       strict=True)]
    ranking = sorted(rows, key=lambda r: -abs(r["position_effect"]["value"] or 0.0))
    winners = [[v.winner for v in vs] for vs in per_judge]  # judges x items
    valid = [i for i in range(len(ctx.items)) if all(w[i] is not None for w in winners)]
    table = np.array([[winners[j][i] for j in range(len(bundles))] for i in valid])
    agree = sum(len(set(row)) == 1 for row in table.tolist())
    out: dict[str, Any] = {
        "judges": labels,
        "agreement": estimate(agree, len(valid)),
        "ranking": ranking,
        "ranked_by": "|position effect| (first-slot preference - 0.5), largest first",
    }
    if len(valid) >= 2:
        if len(bundles) == 2:
            out["cohen_kappa"] = kappa_ci(table[:, 0], table[:, 1], labels=[0, 1, 2],
                                          seed=ctx.seed).as_dict()
        else:
            out["fleiss_kappa"] = fleiss_kappa_ci(table, labels=[0, 1, 2],
                                                  seed=ctx.seed).as_dict()
    elif len(bundles) == 2:
        out["cohen_kappa"] = None
    dis = []
    for i in valid:  # as the agreement counts them: an invalid verdict is no disagreement
        it, ws = ctx.items[i], [w[i] for w in winners]
        if len(set(ws)) > 1:
            dis.append({"item_id": it.id, "prompt": it.prompt, "response_1": it.response_1,
                        "response_2": it.response_2, "label": it.label,
                        "verdicts": dict(zip(labels, ws, strict=True))})
    out["n_disagreements"] = len(dis)  # 30 agreeing + 70 "disagreeing" of n = 98 before
    out["n_incomplete"] = len(ctx.items) - len(valid)  # some judge's verdict invalid
    out["disagreements"] = dis[:MAX_DISAGREEMENTS]
    return out
