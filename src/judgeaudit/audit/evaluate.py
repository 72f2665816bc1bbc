"""`evaluate`: a judge on labelled pairwise data — accuracy, position consistency, agreement
with the labels — each with its n and a 95% interval.

Conventions (they reproduce LLMBar's published statistics exactly):
- accuracy: per item, the mean over the asked orders of 1[verdict == label]; so a tie between
  orders counts half and an unparseable or failed verdict counts as wrong. Items with a tie
  label (0) or no label are left out of accuracy (their count is reported).
- position_consistency: share of items whose two orders give the same outcome (the same
  winner, or both unparseable); items where a call failed (no answer at all) are left out,
  so a run whose calls failed never reads as consistent. `position_consistency_valid` uses
  only items with both orders valid.
- warnings: accuracy significantly below chance, or kappa below 0 with an interval that
  excludes 0, says the labels may be inverted.
Intervals: Wilson score intervals on item-level credit (conservative when credit is
fractional); kappa by a bootstrap over items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.pairwise import PairwiseVerdict
from judgeaudit.report.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID, assess
from judgeaudit.stats import cohen_kappa, kappa_ci, wilson


def _estimate(successes: float, n: int) -> dict[str, Any]:
    if n == 0:
        return {"value": None, "ci95": [None, None], "n": 0}
    lo, hi = wilson(successes, n)
    return {"value": successes / n, "ci95": [lo, hi], "n": n}


def summarize(items: Sequence[PairwiseItem], verdicts: Sequence[PairwiseVerdict],
              seed: int = 0, kappa_boot: int = 2000) -> dict[str, Any]:
    """Metrics of one judge's verdicts on items (aligned by position)."""
    if len(items) != len(verdicts):
        raise ValueError("items and verdicts differ in length")
    by_order_calls = [o for v in verdicts for o in v.orders]
    n_failed = sum(o.error is not None for o in by_order_calls)
    n_invalid = sum(not o.valid for o in by_order_calls)
    invalid_examples = [
        {"item_id": v.item_id, "order": o.order, "raw": o.raw[:200], "error": o.error}
        for v in verdicts for o in v.orders if not o.valid
    ][:20]

    labelled = [(it, v) for it, v in zip(items, verdicts, strict=True) if it.label in (1, 2)]
    credit = [float(np.mean([o.winner == it.label for o in v.orders])) for it, v in labelled]
    valid_both = [(it, v) for it, v in labelled if all(o.valid for o in v.orders)]
    credit_valid = [float(np.mean([o.winner == it.label for o in v.orders]))
                    for it, v in valid_both]

    asked_two = any(len(v.orders) == 2 for v in verdicts)
    two = [v for v in verdicts
           if len(v.orders) == 2 and all(o.error is None for o in v.orders)]
    same = sum(v.orders[0].winner == v.orders[1].winner for v in two)
    two_valid = [v for v in two if all(o.valid for o in v.orders)]
    same_valid = sum(v.orders[0].winner == v.orders[1].winner for v in two_valid)
    first_pref = [o for v in verdicts for o in v.orders if o.valid and o.winner != 0]
    first_wins = sum((o.winner == 1) == (o.order == "12") for o in first_pref)

    out: dict[str, Any] = {
        "n": len(items),
        "n_labelled": len(labelled),
        "n_calls_planned": len(by_order_calls),
        "n_invalid": n_invalid,
        "n_failed_calls": n_failed,
        "invalid_rate": _estimate(n_invalid, len(by_order_calls)),
        "invalid_examples": invalid_examples,
        "accuracy": _estimate(sum(credit), len(credit)),
        "accuracy_valid": _estimate(sum(credit_valid), len(credit_valid)),
        "position_consistency": _estimate(same, len(two)) if asked_two else None,
        "position_consistency_valid": (_estimate(same_valid, len(two_valid)) if asked_two
                                       else None),
        # Share of decisive verdicts that went to the response shown first (0.5 = no bias).
        "first_position_rate": _estimate(first_wins, len(first_pref)),
        "per_order_accuracy": {
            order: _estimate(sum(hits), len(hits))
            for order in ("12", "21")
            for hits in [[o.winner == it.label for it, v in labelled for o in v.orders
                          if o.order == order]]
        },
    }
    # Agreement with labels: Cohen's kappa between the consensus verdict (1/2/tie) and the
    # label, on items where both are known.
    pairs = [(it.label, v.winner) for it, v in zip(items, verdicts, strict=True)
             if it.label is not None and v.winner is not None]
    if len(pairs) >= 2:
        arr = np.array(pairs, dtype=float)
        labels = [0, 1, 2]
        k = cohen_kappa(arr[:, 0], arr[:, 1], labels=labels)
        if kappa_boot:
            est = kappa_ci(arr[:, 0], arr[:, 1], labels=labels, n_boot=kappa_boot, seed=seed)
            ci = list(est.ci95)
        else:
            ci = [None, None]
        out["cohen_kappa"] = {"value": float(k), "ci95": ci, "n": len(pairs)}
    else:
        out["cohen_kappa"] = None
    out["n_valid"] = sum(any(o.valid for o in v.orders) for v in verdicts)
    out["warnings"] = label_warnings(out["accuracy"], out["cohen_kappa"])
    return out


def label_warnings(accuracy: dict[str, Any] | None, kappa: dict[str, Any] | None) -> list[str]:
    """A judge that is reliably *worse* than chance is far likelier to meet inverted labels
    (a file whose 1 means the second response, A/B swapped) than to be that bad."""
    below = (accuracy and accuracy.get("value") is not None
             and (accuracy.get("ci95") or [None, None])[1] is not None
             and accuracy["ci95"][1] < 0.5)
    neg = (kappa and kappa.get("value") is not None
           and (kappa.get("ci95") or [None, None])[1] is not None and kappa["ci95"][1] < 0)
    if not (below or neg):
        return []
    why = []
    if below:
        why.append(f"accuracy {accuracy['value']:.1%} with its 95% interval below 50%")
    if neg:
        why.append(f"kappa {kappa['value']:+.2f} with its 95% interval below 0")
    return [f"labels may be inverted (A/B or 1/2 swapped?): {' and '.join(why)}"]


async def evaluate(bundle: Any, items: Sequence[PairwiseItem], *, on_done=None,
                   data_spec: str = "", seed: int = 0, kappa_boot: int = 2000,
                   min_valid: int = DEFAULT_MIN_VALID, max_failed: float = DEFAULT_MAX_FAILED
                   ) -> dict[str, Any]:
    """Judge `items` with a `JudgeBundle` and return the results document (not yet written).
    Its `run` section says whether the run judged enough (`min_valid` items with a valid
    verdict, at most `max_failed` of calls failed); a failed run's numbers are not results."""
    import time

    import judgeaudit

    pairwise = [it for it in items if isinstance(it, PairwiseItem)]
    if len(pairwise) != len(items):
        raise ValueError(f"evaluate needs pairwise items; {data_spec or 'the data'} has "
                         f"{len(items) - len(pairwise)} pointwise ones")
    t0 = time.perf_counter()
    verdicts = await bundle.pairwise.judge(pairwise, on_done=on_done)
    elapsed = time.perf_counter() - t0
    stats = bundle.client.stats
    calls = stats.as_dict()
    summary = summarize(pairwise, verdicts, seed=seed, kappa_boot=kappa_boot)
    return {
        "command": "evaluate",
        "version": judgeaudit.__version__,
        "judge": bundle.public_spec,
        "data": data_spec,
        "template": {"name": bundle.pairwise.template.name,
                     "sha256": bundle.pairwise.template.sha256},
        "prompt_hash": bundle.pairwise.template.sha256,
        "both_orders": bundle.pairwise.both_orders,
        **summary,
        "calls": calls,
        "run": assess(n_valid=summary["n_valid"], n_planned=len(pairwise), calls=calls,
                      min_valid=min_valid, max_failed=max_failed),
        "seconds": elapsed,
        "verdicts": [v.as_dict() for v in verdicts],
    }
