"""`evaluate`: a judge on labelled data, each number with its n and a 95% interval.

Pairwise data (two responses, a label 1/2 or 0 = tie): accuracy under a named pair rule,
position consistency, agreement with the labels. Pointwise data (one response, a gold
score): the rubric judge's scores against the gold ones, as Pearson, Spearman and Kendall
correlations at item, group and system level, exact agreement and mean absolute error.
Every results document has a `conventions` section saying which rule and tie handling its
numbers follow.

Pair rules (`pair_rule`), per item over the orders the judge was asked (both by default; an
item judged in one order is scored on that order alone):
- mean (LLMBar's rule, the default; reproduces its published statistics exactly): the mean
  over the asked orders of 1[verdict == label]; orders that disagree count half, an
  unparseable or failed order counts as wrong. On two-way accuracy (no tie label counted) a
  tie verdict counts half too: LLMBar's Rating strategies record equal scores as one order
  right and one wrong, which replay reads as a tie in both orders; on three-way accuracy a
  tie verdict on a decisive label is wrong.
- sum (JudgeBench's rule): each order scores +1 when right, -1 when it names the other
  response, 0 when it says tie or gives no answer (unparseable or failed); the pair is right
  when the sum is > 0.
- both: the pair is right only when every asked order is right.
- mtbench (MT-Bench's agreement "without tie", FastChat's compute_agreement.py): the pair's
  verdict is the winner every asked order names; orders that differ (one unreadable
  included) make it a tie, and ties are left out, as are tie-labelled pairs (FastChat bans
  ties on both sides). A pair with no verdict in any order (every call failed, was refused
  or answered unreadably) counts as a disagreement, as FastChat's "error" vote (its judge
  call gave up or its answer did not parse) disagrees with the human one. Its estimate
  carries `n_left_out` and `left_out` (count per reason, `MTBENCH_LEFT_OUT`). Every rule
  keeps a pair whose order has no verdict in n (mtbench: when no order has one) with no
  credit for that order, and counts such pairs (`n_no_verdict_failed`,
  `n_no_verdict_unreadable`), so a number built on refusals says so.
Tie labels (`ties`): keep (the default when the data has tie labels; three-way accuracy): a
tie-labelled pair counts, and an order is right on it when it says tie (under `sum` an order
naming a winner there scores -1); drop: tie-labelled pairs are left out of accuracy and kappa
(their count is reported). Unlabelled pairs are always left out of accuracy.

Other pairwise numbers:
- position_consistency: share of items whose two orders give the same outcome (the same
  winner, or both unparseable); items where a call failed (no answer at all) are left out,
  so a run whose calls failed never reads as consistent. `position_consistency_valid` uses
  only items with both orders valid.
- decisive_accuracy: among orders that named a winner on pairs with a decisive label, the
  share naming the labelled one (chance = 0.5 whatever the tie rate).
- warnings: labels may be inverted when decisive_accuracy is significantly below 0.5 (with
  no tie labels the message names accuracy when it is below too; verdicts that failed or
  could not be read are no evidence), or kappa is below 0 with an interval that excludes 0.
Intervals: Wilson score intervals on item-level credit (conservative when credit is
fractional); rates over verdicts (decisive_accuracy, first_position_rate, invalid_rate)
Wilson's at the effective n of `clustered_rate` (an item's two orders are one cluster);
kappa by a bootstrap over items.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np

from judgeaudit.audit.metrics import estimate, text_vs_probs
from judgeaudit.data.schema import PairwiseItem, PointwiseItem
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict
from judgeaudit.llm.base import EMPTY_ANSWER
from judgeaudit.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID, assess
from judgeaudit.stats import cohen_kappa, kappa_ci, mean_ci
from judgeaudit.stats.correlation import (
    correlations,
    group_correlations,
    system_correlations,
)
from judgeaudit.stats.intervals import clustered_rate
from judgeaudit.stats.types import Estimate

PAIR_RULES = ("mean", "sum", "both", "mtbench")
TIE_MODES = ("keep", "drop")
RULE_TEXT = {
    "mean": "mean (LLMBar): per pair, the mean over the asked orders of [verdict = label]; "
            "orders that disagree count half, an unparseable or failed order counts as wrong",
}
# Added to the mean rule's text on two-way accuracy (no tie label counted).
MEAN_TIE_HALF = ("; a tie verdict counts half (as LLMBar's Rating counts equal scores: one "
                 "order right, one wrong)")
RULE_TEXT |= {
    "sum": "sum (JudgeBench): each asked order scores +1 when right, -1 when it names the "
           "other response, 0 when it says tie or gives no answer (unparseable or failed); "
           "the pair is right when the sum is > 0",
    "both": "both: the pair is right only when every asked order is right (an unparseable or "
            "failed order is not right)",
    "mtbench": "mtbench (MT-Bench's agreement without tie, FastChat): the pair's verdict is the "
               "winner every asked order names; orders that differ (one unreadable included) "
               "make a tie, and ties and tie-labelled pairs are left out of n, each counted by "
               "reason; a pair with no verdict in any order (every call failed, refused or "
               "unreadable) counts as a disagreement, as FastChat's 'error' vote does",
}
SINGLE_ORDER_TEXT = "a pair judged in one order is scored on that order alone"
MISSING = "(missing)"


# ---------------------------------------------------------------- shared helpers

def _finite(x: float) -> float | None:
    return float(x) if x is not None and math.isfinite(x) else None


def field_value(item: PairwiseItem | PointwiseItem, name: str) -> Any:
    """An item field (`label`, `score`, ...) or, failing that, a metadata key; MISSING when
    the item has neither (or its value is None)."""
    if name != "metadata" and name in type(item).model_fields:
        v = getattr(item, name)
    else:
        v = item.metadata.get(name)
    return MISSING if v is None else v


def field_key(item: PairwiseItem | PointwiseItem, name: str) -> str:
    """`field_value` as a category name (lists and objects as compact JSON)."""
    v = field_value(item, name)
    if isinstance(v, str):
        return v
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, list | tuple | dict):
        return json.dumps(v, sort_keys=True, ensure_ascii=False, default=str)
    return str(v)


def check_field(items: Sequence[PairwiseItem | PointwiseItem], name: str, option: str) -> None:
    """Refuse a field no item has, naming the fields and metadata keys that exist."""
    if any(field_value(it, name) != MISSING for it in items):
        return
    fields = sorted({f for it in items for f in type(it).model_fields
                     if f != "metadata" and getattr(it, f) is not None})
    keys = sorted({k for it in items for k in it.metadata})
    raise ValueError(f"{option} {name}: no item has a field or metadata key {name!r}; item "
                     f"fields: {', '.join(fields) or 'none'}; metadata keys: "
                     f"{', '.join(keys) or 'none'}")


# How `select_items` (--sample) and the adaptive audit's order (`adaptive.seeded_order`) draw
# items: by a seeded hash of each item's id, recorded as the selection's "by".
SAMPLE_BY = "id_hash"


def item_identity(item: Any) -> str:
    """What an item is drawn by: its `id` (a loaded item's, unique in its data) in NFC, so
    the same ids saved by a tool that writes NFD draw alike (as the data fingerprint reads
    them), else its repr (plain values in tests)."""
    ident = getattr(item, "id", None)
    return unicodedata.normalize("NFC", str(ident)) if ident is not None else repr(item)


def id_hash_order(items: Sequence[Any], seed: int) -> list[int]:
    """The items' positions in ascending order of sha256(f"{seed}\\0{id}") (equal ids by
    position). An item's key depends on its own id and the seed alone, so adding, removing
    or reordering other rows never moves it relative to the rest: a sample (the first N of
    this order) changes only by those rows' own membership, and a reviewer who re-runs on
    the same items in another row order draws the same ones."""
    keys = [hashlib.sha256(f"{seed}\0{item_identity(it)}".encode()).digest() for it in items]
    return sorted(range(len(keys)), key=lambda i: (keys[i], i))


def select_items(items: Sequence[Any], *, limit: int | None = None, sample: int | None = None,
                 seed: int = 0) -> tuple[list[Any], dict[str, Any]]:
    """`limit`: the first N items; `sample`: the N items of smallest seeded id hash
    (`id_hash_order`: a seeded random draw without replacement that does not depend on the
    rows' positions), kept in the data's order. Not both. Returns the items and the
    `selection` section of the results (what was taken out of how many, and how)."""
    items = list(items)
    if limit is not None and sample is not None:
        raise ValueError("--limit and --sample both choose the items; give one of them")
    total = len(items)
    if sample is not None:
        if sample < 1:
            raise ValueError(f"--sample: expected an integer >= 1, got {sample}")
        k = min(sample, total)
        keep = sorted(id_hash_order(items, seed)[:k])
        return ([items[i] for i in keep],
                {"kind": "sample", "n": k, "requested": sample, "seed": seed, "by": SAMPLE_BY,
                 "of": total})
    if limit is not None:
        if limit < 1:
            raise ValueError(f"--limit: expected an integer >= 1, got {limit}")
        return items[:limit], {"kind": "first", "n": min(limit, total), "requested": limit,
                               "of": total}
    return items, {"kind": "all", "n": total, "of": total}


# ---------------------------------------------------------------- pairwise rules

def order_right(o: OrderVerdict, label: int) -> bool:
    """This order's verdict equals the label (for a tie label: the order says tie)."""
    return o.winner is not None and o.winner == label


def order_points(o: OrderVerdict, label: int) -> int:
    """The sum rule's score of one order: +1 right, -1 wrong, 0 for no answer and for a tie
    verdict on a decisive label."""
    if o.winner is None:
        return 0
    if o.winner == label:
        return 1
    if o.winner == 0 and label != 0:
        return 0
    return -1


def order_credit(o: OrderVerdict, label: int, three_way: bool = False) -> float:
    """The mean rule's credit of one order: 1 right; on two-way accuracy a tie verdict on a
    decisive label 0.5 (no preference, as LLMBar credits equal Rating scores); else 0."""
    if order_right(o, label):
        return 1.0
    if not three_way and o.winner == 0 and label in (1, 2):
        return 0.5
    return 0.0


def mtbench_credit(label: int, orders: Sequence[OrderVerdict]) -> float | None:
    """The mtbench rule's credit: 1 or 0 when every asked order names the same winner, 0
    when no order has a verdict (FastChat's "error" vote: a judge call that gave up or an
    answer that did not parse disagrees with the human vote; counted apart by
    `no_verdict_counted`), None (left out) for a tie label, a tie or orders that differ.
    `mtbench_reason` says why a pair is left out."""
    return None if mtbench_reason(label, orders) else _mtbench_right(label, orders)


def _mtbench_right(label: int, orders: Sequence[OrderVerdict]) -> float:
    return float({o.winner for o in orders} == {label})


# Why the mtbench rule leaves a pair out, in the order they are checked; shown by name.
MTBENCH_LEFT_OUT = {
    "tie_label": "a tie label",
    "no_order": "no order asked",
    "one_order_without_verdict": "one order without a verdict (orders differ)",
    "tie": "a tie verdict",
    "orders_differ": "orders that name different winners",
}


def mtbench_reason(label: int | None, orders: Sequence[OrderVerdict]) -> str | None:
    """Why the mtbench rule leaves this pair out (a `MTBENCH_LEFT_OUT` key), None when it
    counts (a pair with no verdict in any order counts, as a disagreement)."""
    if label == 0 or not orders:
        return "tie_label" if label == 0 else "no_order"
    if not any(o.valid for o in orders):
        return None
    named = {o.winner for o in orders}
    if None in named:
        return "one_order_without_verdict"
    if len(named) != 1:
        return "orders_differ"
    if 0 in named:
        return "tie"
    return None


def pair_credit(label: int, orders: Sequence[OrderVerdict], rule: str,
                three_way: bool = False) -> float:
    """One pair's credit in [0, 1] under `rule` (see the module docstring). `three_way`:
    tie labels are counted, so a tie verdict is a class of its own (wrong on a decisive
    label) rather than no preference (half under the mean rule)."""
    if rule not in PAIR_RULES:
        raise ValueError(f"pair rule must be one of {', '.join(PAIR_RULES)}, got {rule!r}")
    if not orders:
        return 0.0
    if rule == "mean":
        return float(np.mean([order_credit(o, label, three_way) for o in orders]))
    if rule == "sum":
        return 1.0 if sum(order_points(o, label) for o in orders) > 0 else 0.0
    if rule == "mtbench":
        got = mtbench_credit(label, orders)
        if got is None:
            raise ValueError("the mtbench rule leaves this pair out; use mtbench_credit")
        return got
    return 1.0 if all(order_right(o, label) for o in orders) else 0.0


KAPPA_CONSTANT = {"consensus": "the consensus is one answer throughout",
                  "labels": "the labels are one answer throughout",
                  "both": "the labels and the consensus are each one answer throughout"}


def conventions(pair_rule: str, ties: str, *, ties_default: bool, n_tie_labels: int,
                n_single_order: int = 0, kappa_constant: str | None = None
                ) -> dict[str, Any]:
    """The `conventions` section of a pairwise results document. `kappa_constant` names the
    side that gave one answer throughout ("consensus", "labels" or "both") when kappa got no
    interval for it (`kappa_ci`); only then does the description say so (it said so of
    every run, one whose kappa had an interval too)."""
    if n_tie_labels == 0:
        tie_text = "no pair has a tie label (keep and drop agree)"
    elif ties == "keep":
        tie_text = (f"ties keep{' (the default: the data has tie labels)' if ties_default else ''}"
                    f": the {n_tie_labels} tie-labelled pairs count (three-way accuracy); an "
                    "order is right on them when it says tie"
                    + (", and one naming a winner scores -1" if pair_rule == "sum" else ""))
    else:
        tie_text = (f"ties drop: the {n_tie_labels} tie-labelled pairs are left out of accuracy "
                    "and kappa")
    three_way = ties == "keep" and n_tie_labels > 0
    if pair_rule == "mtbench" and n_tie_labels:
        tie_text = (f"the {n_tie_labels} tie-labelled pairs are left out of accuracy whatever "
                    f"--ties says (the rule drops ties; kappa follows ties {ties})")
    rule_text = RULE_TEXT[pair_rule] + (MEAN_TIE_HALF if pair_rule == "mean" and not three_way
                                         else "")
    if pair_rule == "mean" and three_way:
        tie_text += ", and a tie verdict on a decisive label is wrong"
    parts = [rule_text, tie_text, "unlabelled pairs are left out",
             "kappa compares the pair's consensus with the label (orders that disagree make "
             "a tie, so a flip on a tie-labelled pair agrees with it"
             + (f"; no interval: {KAPPA_CONSTANT[kappa_constant]}, which makes kappa 0 by "
                "construction" if kappa_constant else "") + ")"]
    if n_single_order:
        parts.append(f"{SINGLE_ORDER_TEXT} ({n_single_order} such pairs)")
    return {"pair_rule": pair_rule, "ties": ties, "ties_default": ties_default,
            "n_tie_labels": n_tie_labels, "description": "; ".join(parts) + "."}


def resolve_ties(ties: str | None) -> tuple[str, bool]:
    """The tie handling to use and whether it is the default: keep (which on data without
    tie labels is the same as drop)."""
    if ties is None:
        return "keep", True
    if ties not in TIE_MODES:
        raise ValueError(f"ties must be one of {', '.join(TIE_MODES)}, got {ties!r}")
    return ties, False


def _counted(items: Sequence[PairwiseItem], verdicts: Sequence[PairwiseVerdict], ties: str
             ) -> list[tuple[PairwiseItem, PairwiseVerdict]]:
    ok = (0, 1, 2) if ties == "keep" else (1, 2)
    return [(it, v) for it, v in zip(items, verdicts, strict=True) if it.label in ok]


def _accuracy(pairs: Sequence[tuple[PairwiseItem, PairwiseVerdict]], rule: str,
              three_way: bool = False) -> dict[str, Any]:
    if rule == "mtbench":
        got = [mtbench_credit(it.label, v.orders) for it, v in pairs]  # type: ignore[arg-type]
        kept = [c for c in got if c is not None]
        reasons: dict[str, int] = {}
        for it, v in pairs:
            why = mtbench_reason(it.label, v.orders)
            if why:
                reasons[why] = reasons.get(why, 0) + 1
        counted = [pv for pv, c in zip(pairs, got, strict=True) if c is not None]
        return {**estimate(sum(kept), len(kept)), "n_left_out": len(got) - len(kept),
                "left_out": {k: reasons[k] for k in MTBENCH_LEFT_OUT if k in reasons},
                **no_verdict_counted(counted)}
    credit = [pair_credit(it.label, v.orders, rule, three_way)  # type: ignore[arg-type]
              for it, v in pairs]
    return {**estimate(sum(credit), len(credit)), **no_verdict_counted(pairs)}


def no_verdict_counted(pairs: Sequence[tuple[PairwiseItem, PairwiseVerdict]]
                       ) -> dict[str, int]:
    """Every rule keeps a pair whose order gave no verdict in n (mtbench: when no order gave
    one) and gives that order no credit (wrong; sum: 0 points): how many counted pairs had
    such an order, split
    into a failed or refused call (no answer) and an unreadable answer, so a number built on
    refusals says so. An answer (cut, empty, unreadable) is no failed call: its `error` says
    why it gave no verdict, `failed` is None."""
    failed = sum(any(o.failed is not None for o in v.orders) for _, v in pairs)
    unreadable = sum(not any(o.failed is not None for o in v.orders)
                     and any(not o.valid for o in v.orders) for _, v in pairs)
    return {"n_no_verdict_failed": failed, "n_no_verdict_unreadable": unreadable}


def no_verdict_kinds(verdicts: Sequence[Any]) -> dict[str, int]:
    """Of the answers that gave no verdict (`verdicts`: order or score verdicts; valid ones
    and failed calls are skipped), how many were cut at the token limit (`n_cut`: a larger
    max_tokens may give a verdict) and how many were empty (`n_empty`). A cut answer was
    recorded with no reason, so nine cut answers of a run read as plain unreadable ones."""
    answered = [v for v in verdicts if getattr(v, "failed", None) is None
                and (v.score is None if hasattr(v, "score") else not v.valid)]
    return {"n_cut": sum(bool(getattr(v, "cut", False)) for v in answered),
            "n_empty": sum(v.error == EMPTY_ANSWER for v in answered)}


def summarize(items: Sequence[PairwiseItem], verdicts: Sequence[PairwiseVerdict],
              seed: int = 0, kappa_boot: int = 2000, *, pair_rule: str = "mean",
              ties: str | None = None, by: str | None = None) -> dict[str, Any]:
    """Metrics of one judge's verdicts on items (aligned by position)."""
    if len(items) != len(verdicts):
        raise ValueError("items and verdicts differ in length")
    if pair_rule not in PAIR_RULES:
        raise ValueError(f"pair rule must be one of {', '.join(PAIR_RULES)}, got {pair_rule!r}")
    ties, ties_default = resolve_ties(ties)
    by_order_calls = [o for v in verdicts for o in v.orders]
    # failed calls gave no answer; an answer with no verdict (cut, empty) has an error too
    # but is an answer: counting it failed left it out of run.answers (14 of 20 answers read)
    n_failed = sum(o.failed is not None for o in by_order_calls)
    n_invalid = sum(not o.valid for o in by_order_calls)
    # answers with no verdict first, then failed calls (no answer to show): twenty failed
    # calls at the top hid every unreadable answer from the report
    invalid_examples = sorted((
        {"item_id": v.item_id, "order": o.order, "raw": o.raw[:200], "error": o.error,
         "failed": o.failed}
        for v in verdicts for o in v.orders if not o.valid
    ), key=lambda x: x["failed"] is not None)[:20]

    n_tie_labels = sum(it.label == 0 for it in items)
    three_way = ties == "keep" and n_tie_labels > 0
    counted = _counted(items, verdicts, ties)
    valid_all = [(it, v) for it, v in counted if v.orders and all(o.valid for o in v.orders)]

    asked_two = any(len(v.orders) == 2 for v in verdicts)
    two = [v for v in verdicts
           if len(v.orders) == 2 and all(o.failed is None for o in v.orders)]
    same = sum(v.orders[0].winner == v.orders[1].winner for v in two)
    two_valid = [v for v in two if all(o.valid for o in v.orders)]
    same_valid = sum(v.orders[0].winner == v.orders[1].winner for v in two_valid)
    # Rates over verdicts, clustered by item (its two orders are not independent draws):
    # (successes, verdicts) per item, for `clustered_rate`.
    first_by_item = [(sum((o.winner == 1) == (o.order == "12") for o in named), len(named))
                     for v in verdicts
                     for named in [[o for o in v.orders if o.valid and o.winner != 0]]]
    decisive_by_item = [(sum(o.winner == it.label for o in named), len(named))
                        for it, v in zip(items, verdicts, strict=True) if it.label in (1, 2)
                        for named in [[o for o in v.orders if o.winner in (1, 2)]]]
    invalid_by_item = [(sum(not o.valid for o in v.orders), len(v.orders)) for v in verdicts]

    out: dict[str, Any] = {
        "n": len(items),
        "n_labelled": sum(it.label is not None for it in items),
        "n_tie_labels": n_tie_labels,
        "n_counted": len(counted),
        "n_single_order": sum(len(v.orders) == 1 for v in verdicts),
        "n_calls_planned": len(by_order_calls),
        "n_invalid": n_invalid,
        "n_failed_calls": n_failed,
        **no_verdict_kinds(by_order_calls),
        "invalid_rate": clustered_rate(invalid_by_item).as_dict(),
        "invalid_examples": invalid_examples,
        # how often probabilities decided against the answer's own text (the verdict stays)
        "text_vs_probs": text_vs_probs(verdicts),
        "accuracy": _accuracy(counted, pair_rule, three_way),
        "accuracy_valid": _accuracy(valid_all, pair_rule, three_way),
        "accuracy_by_rule": {r: _accuracy(counted, r, three_way) for r in PAIR_RULES},
        "decisive_accuracy": clustered_rate(decisive_by_item).as_dict(),
        "position_consistency": estimate(same, len(two)) if asked_two else None,
        "position_consistency_valid": (estimate(same_valid, len(two_valid)) if asked_two
                                       else None),
        # Share of decisive verdicts that went to the response shown first (0.5 = no bias).
        "first_position_rate": clustered_rate(first_by_item).as_dict(),
        "per_order_accuracy": {
            order: estimate(sum(hits), len(hits))
            for order in ("12", "21")
            for hits in [[order_right(o, it.label) for it, v in counted for o in v.orders
                          if o.order == order]]
        },
    }
    # Agreement with labels: Cohen's kappa between the consensus verdict (1/2/tie) and the
    # label, on items where both are known (tie labels only when they are kept).
    keep_labels = (0, 1, 2) if ties == "keep" else (1, 2)
    pairs = [(it.label, v.winner) for it, v in zip(items, verdicts, strict=True)
             if it.label in keep_labels and v.winner is not None]
    kappa_constant = None  # the side one answer throughout, when kappa has no interval for it
    if len(pairs) >= 2:
        arr = np.array(pairs, dtype=float)
        labels = [0, 1, 2]
        if kappa_boot:  # the same kappa, with a bootstrap interval
            est = kappa_ci(arr[:, 0], arr[:, 1], labels=labels, n_boot=kappa_boot, seed=seed)
            one = [bool(np.ptp(arr[:, j]) == 0) for j in (0, 1)]
            if math.isnan(est.ci95[0]) and any(one):
                kappa_constant = ("both" if all(one) else "labels" if one[0]
                                  else "consensus")
        else:
            est = Estimate(cohen_kappa(arr[:, 0], arr[:, 1], labels=labels),
                           (math.nan, math.nan), len(pairs))
        out["cohen_kappa"] = est.as_dict()
    else:
        out["cohen_kappa"] = None
    out["conventions"] = conventions(pair_rule, ties, ties_default=ties_default,
                                     n_tie_labels=n_tie_labels,
                                     n_single_order=out["n_single_order"],
                                     kappa_constant=kappa_constant)
    out["n_valid"] = sum(any(o.valid for o in v.orders) for v in verdicts)
    out["warnings"] = label_warnings(out["accuracy"], out["cohen_kappa"],
                                     decisive=out["decisive_accuracy"], three_way=three_way)
    spread = subset_mean(items, verdicts, pair_rule, ties, three_way, seed=seed)
    if spread is not None:
        out["accuracy_subset_mean"] = spread
    if by is not None:
        out["breakdown"] = pairwise_breakdown(items, verdicts, by, pair_rule, ties, three_way)
    return out


SUBSET_KEY = "subset"


def subset_mean(items: Sequence[PairwiseItem], verdicts: Sequence[PairwiseVerdict],
                pair_rule: str, ties: str, three_way: bool, *, seed: int = 0,
                n_boot: int = 2000) -> dict[str, Any] | None:
    """When the counted pairs span several subsets (metadata `subset`, as the llmbar loader
    sets it: `subset=LLMBar/Adversarial` is four), the unweighted mean of the subsets'
    accuracies, as LLMBar's papers report an "Average" (the pooled accuracy weighs each pair
    the same, so the largest subset counts most). Its interval: a percentile bootstrap
    resampling pairs within each subset. None for one subset."""
    groups: dict[str, list[tuple[PairwiseItem, PairwiseVerdict]]] = {}
    for it, v in _counted(items, verdicts, ties):
        key = it.metadata.get(SUBSET_KEY)
        if key is None:
            return None
        groups.setdefault(str(key), []).append((it, v))
    if len(groups) < 2:
        return None
    credits: dict[str, np.ndarray] = {}
    for key in sorted(groups):
        if pair_rule == "mtbench":
            got = [mtbench_credit(it.label, v.orders) for it, v in groups[key]]  # type: ignore[arg-type]
            c = np.array([x for x in got if x is not None], dtype=float)
        else:
            c = np.array([pair_credit(it.label, v.orders, pair_rule, three_way)  # type: ignore[arg-type]
                          for it, v in groups[key]], dtype=float)
        if c.size == 0:
            return None
        credits[key] = c
    value = float(np.mean([c.mean() for c in credits.values()]))
    rng = np.random.default_rng(seed)
    boot = np.mean([c[rng.integers(0, c.size, size=(n_boot, c.size))].mean(axis=1)
                    for c in credits.values()], axis=0)
    lo, hi = (float(q) for q in np.percentile(boot, [2.5, 97.5]))
    return {"value": value, "ci95": [lo, hi], "n": len(credits),
            "n_items": int(sum(c.size for c in credits.values())),
            "method": f"percentile bootstrap resampling pairs within each subset ({n_boot} "
                      f"resamples, seed {seed})",
            "subsets": [{"subset": k, "n": int(c.size), "accuracy": float(c.mean())}
                        for k, c in credits.items()]}


def pairwise_breakdown(items: Sequence[PairwiseItem], verdicts: Sequence[PairwiseVerdict],
                       by: str, pair_rule: str, ties: str, three_way: bool = False
                       ) -> dict[str, Any]:
    """Accuracy (under the same rule and tie handling) per value of `by`."""
    groups: dict[str, list[int]] = {}
    for i, it in enumerate(items):
        groups.setdefault(field_key(it, by), []).append(i)
    rows = []
    for key in sorted(groups):
        idx = groups[key]
        its = [items[i] for i in idx]
        vs = [verdicts[i] for i in idx]
        calls = [o for v in vs for o in v.orders]
        rows.append({"value": key, "n_items": len(idx),
                     "accuracy": _accuracy(_counted(its, vs, ties), pair_rule, three_way),
                     "n_invalid": sum(not o.valid for o in calls), "n_calls": len(calls)})
    return {"by": by, "metric": "accuracy", "rows": rows}


def _hi_below(est: dict[str, Any] | None, bound: float) -> bool:
    if not est or est.get("value") is None:
        return False
    hi = (est.get("ci95") or [None, None])[1]
    return hi is not None and hi < bound


def label_warnings(accuracy: dict[str, Any] | None, kappa: dict[str, Any] | None, *,
                   decisive: dict[str, Any] | None = None, three_way: bool = False
                   ) -> list[str]:
    """A judge that is reliably *worse* than chance is far likelier to meet inverted labels
    (a file whose 1 means the second response, A/B swapped) than to be that bad.

    Chance for accuracy is 0.5 only on two-way data: with tie labels kept (`three_way`) a
    good judge that seldom says tie can sit below 0.5, so there the test is on
    `decisive` (decisive verdicts on decisive labels, chance 0.5 whatever the tie rate).
    Accuracy counts an invalid or failed verdict (and a tie verdict) as wrong, so a judge that
    answered little sits below 0.5 without any inverted label: accuracy is named only when
    the decisive verdicts are below 0.5 too."""
    dec = _hi_below(decisive, 0.5)
    below = not three_way and dec and _hi_below(accuracy, 0.5)
    neg = _hi_below(kappa, 0.0)
    why = []
    if below and accuracy:
        why.append(f"accuracy {accuracy['value']:.1%} with its 95% interval below 50%")
    if dec and decisive and (three_way or not below):
        why.append(f"decisive verdicts name the labelled response {decisive['value']:.1%} of "
                   "the time, 95% interval below 50%")
    if neg and kappa:
        why.append(f"kappa {kappa['value']:+.2f} with its 95% interval below 0")
    if not why:
        return []
    return [f"labels may be inverted (A/B or 1/2 swapped?): {' and '.join(why)}; unless the "
            "set is adversarial, built to pull judges below chance (as LLMBar's Adversarial "
            "subsets are), where such numbers are expected and the labels are right"]


# ---------------------------------------------------------------- pointwise

# ASCII digits only ([0-9], not \d): a score is one of the rubric's ids, which are the ASCII
# numerals "1".."K"; \d with float() read "५" (Devanagari 5) as 5.0, an answer the judge layer
# (`parse_score`) counts unreadable, so the two disagreed on what the judge said.
_NUMBER = re.compile(
    r"^\s*+(?:score\s*+[:=]?\s*+)?\**+\s*+([0-9]+(?:\.[0-9]+)?|\.[0-9]+)\s*+\**+\s*+"
    r"(?:/\s*+([0-9]+))?\s*+[.)]?\s*+$",  # possessive: a run of spaces cannot make it backtrack
    re.I)


def numeric_ids(score_ids: Sequence[str]) -> bool:
    return list(score_ids) == [str(k) for k in range(1, len(score_ids) + 1)]


def decimal_score(raw: str | None, score_ids: Sequence[str]) -> float | None:
    """A decimal answer (e.g. "3.5", "Score: 3.5", "3.5/5") within the rubric's range 1..K,
    for judges that average or give half points; None when the ids are not the numerals
    1..K, the first line is not one number in ASCII digits, or the number is outside 1..K.
    Not used to count: the judge layer (`parse_score`) reads decimals itself, and reads the
    whole answer (a first line "3.5" the judge revises later is no score)."""
    if not raw or not raw.strip() or not numeric_ids(score_ids):
        return None
    m = _NUMBER.match(raw.strip().splitlines()[0])
    if not m:
        return None
    k = len(score_ids)
    if m.group(2) is not None and int(m.group(2)) != k:
        return None
    v = float(m.group(1))
    return v if 1.0 <= v <= k else None


def judge_score(verdict: Any, score_ids: Sequence[str]) -> tuple[float | None, bool]:
    """(score, decimal): the judge layer's score as it read it (`parse_score` reads half
    points itself), decimal when it is not a whole number; (None, False) when it read none.
    The raw answer is not read again: a second reader (`decimal_score` on the first line)
    took answers the judge layer had refused ("५", "3.5" then "Score: 2") as scores, so
    evaluate said "0 of 20 answers unreadable" where the client had stopped after 16
    unreadable ones, and counted a whole "५" as a decimal score. `score_ids`: unused, kept
    for callers (the judge layer has applied them)."""
    if verdict.score is None:
        return None, False
    v = float(verdict.score)
    return v, not v.is_integer()


def _mae(diff: np.ndarray) -> dict[str, Any]:
    """Mean absolute error with its t interval (none below 2 items), clipped at 0: an
    absolute error is never negative (3 items gave [-1.1, 1.8])."""
    if diff.size == 0:
        return Estimate(math.nan, (math.nan, math.nan), 0).as_dict()
    lo, hi = mean_ci(diff)
    return Estimate(float(diff.mean()), (max(0.0, lo) if lo == lo else lo, hi),
                    int(diff.size), method="t" if diff.size >= 2 else None).as_dict()


def pointwise_conventions(k: int, decimals: bool) -> dict[str, Any]:
    dec = (f"decimal answers within 1..{k} (e.g. 3.5) are accepted as given" if decimals
           else "the score ids are not the numerals 1..K, so only ids are accepted")
    return {
        "pair_rule": None, "ties": None, "task": "pointwise",
        "description": (f"pointwise: the rubric judge's score on 1..{k} against each item's "
                        f"gold score; {dec}; an unparseable or failed score is counted "
                        "(n_invalid) and left out of every statistic; items without a gold "
                        "score are left out (n_unscored); exact agreement = judge score equal "
                        "to the gold score, over items whose gold score is an integer (as "
                        "prometheus-eval: a mean of several ratings such as 3.67 no integer "
                        "score can equal; n_gold_non_integer says how many are left out); "
                        "MAE = mean |judge - gold| (t interval)."),
    }


def summarize_pointwise(items: Sequence[PointwiseItem], verdicts: Sequence[Any], *,
                        score_ids: Sequence[str] = ("1", "2", "3", "4", "5"), seed: int = 0,
                        n_boot: int = 2000, group_by: str | None = None,
                        system_field: str | None = None, by: str | None = None
                        ) -> dict[str, Any]:
    """Agreement of the judge's scores (`ScoreVerdict`s aligned with `items`) with the
    items' gold scores."""
    if len(items) != len(verdicts):
        raise ValueError("items and verdicts differ in length")
    k = len(score_ids)
    scored = [judge_score(v, score_ids) for v in verdicts]
    judge = [s for s, _ in scored]
    n_failed = sum(v.failed is not None for v in verdicts)
    invalid = [v for v, s in zip(verdicts, judge, strict=True) if s is None]
    ok = [i for i, (it, s) in enumerate(zip(items, judge, strict=True))
          if s is not None and it.score is not None]
    x = np.array([judge[i] for i in ok], dtype=float)
    y = np.array([items[i].score for i in ok], dtype=float)
    whole = np.equal(np.mod(y, 1), 0)
    levels: dict[str, Any] = {
        "item": correlations(x, y, n_boot=n_boot, seed=seed).as_dict(),
        "group": None, "system": None,
    }
    if group_by is not None:
        keep = [j for j, i in enumerate(ok) if field_value(items[i], group_by) != MISSING]
        g = group_correlations(x[keep], y[keep], [field_key(items[ok[j]], group_by)
                                                  for j in keep], n_boot=n_boot, seed=seed)
        levels["group"] = {**g.as_dict(), "field": group_by,
                           "n_items_missing_field": len(ok) - len(keep)}
    if system_field is not None:
        keep = [j for j, i in enumerate(ok) if field_value(items[i], system_field) != MISSING]
        sc = system_correlations(x[keep], y[keep], [field_key(items[ok[j]], system_field)
                                                    for j in keep], n_boot=n_boot, seed=seed)
        levels["system"] = {**sc.as_dict(), "field": system_field,
                            "n_items_missing_field": len(ok) - len(keep),
                            **small_systems(sc.extra.get("systems") or [])}
    counts: dict[str, int] = {}
    for s in judge:
        if s is not None:
            key = f"{s:g}"
            counts[key] = counts.get(key, 0) + 1
    out: dict[str, Any] = {
        "task": "pointwise",
        "n": len(items),
        "n_scored": sum(it.score is not None for it in items),
        "n_unscored": sum(it.score is None for it in items),
        "n_calls_planned": len(verdicts),
        "n_invalid": len(invalid),
        "n_failed_calls": n_failed,
        **no_verdict_kinds(invalid),
        "n_decimal": sum(d for _, d in scored),
        "invalid_rate": estimate(len(invalid), len(verdicts)),
        "invalid_examples": sorted(({"item_id": v.item_id, "raw": (v.raw or "")[:200],
                                     "error": v.error, "failed": v.failed} for v in invalid),
                                   key=lambda x: x["failed"] is not None)[:20],
        "score_range": [1, k],
        "correlation": levels,
        # on integer gold scores only, as prometheus-eval's eval/utils.py: a gold score that
        # is a mean of ratings (3.67) no integer answer can equal
        "exact_agreement": {**estimate(int((x == y)[whole].sum()), int(whole.sum())),
                            "n_gold_non_integer": int((~whole).sum())},
        "mae": _mae(np.abs(x - y)),
        "mean_judge_score": _finite(float(x.mean())) if x.size else None,
        "mean_gold_score": _finite(float(y.mean())) if y.size else None,
        "score_counts": dict(sorted(counts.items(), key=lambda kv: float(kv[0]))),
        "n_valid": sum(s is not None for s in judge),
        "conventions": pointwise_conventions(k, numeric_ids(score_ids)),
    }
    item_p = levels["item"]["pearson"]
    out["warnings"] = []
    if _hi_below(item_p, 0.0):
        out["warnings"].append(
            f"the judge's scores fall as the gold scores rise (Pearson {item_p['value']:+.2f}, "
            "95% interval below 0): is one of the scales reversed?")
    off = sorted({float(it.score) for it in items
                  if it.score is not None and not 1 <= float(it.score) <= k})
    if off:  # the judge's own scores outside 1..k are invalid; the gold ones are the data's
        n_off = sum(it.score is not None and not 1 <= float(it.score) <= k for it in items)
        out["warnings"].append(
            f"{n_off} gold score(s) lie outside the rubric's 1..{k} (e.g. "
            f"{', '.join(f'{x:g}' for x in off[:3])}): exact agreement and the mean absolute "
            "error compare them as they are; is the data on another scale?")
    system = levels.get("system") or {}
    if system.get("small_systems"):
        out["warnings"].append(small_systems_warning(system))
    if by is not None:
        groups: dict[str, list[int]] = {}
        for j, i in enumerate(ok):
            groups.setdefault(field_key(items[i], by), []).append(j)
        all_by: dict[str, int] = {}
        for it in items:
            key = field_key(it, by)
            all_by[key] = all_by.get(key, 0) + 1
        rows = []
        for key in sorted(all_by):
            idx = groups.get(key, [])
            c = correlations(x[idx], y[idx], n_boot=n_boot, seed=seed)
            rows.append({"value": key, "n_items": all_by[key], **c.as_dict(),
                         "n_invalid": sum(judge[i] is None for i, it in enumerate(items)
                                          if field_key(it, by) == key)})
        out["breakdown"] = {"by": by, "metric": "correlation", "rows": rows}
    return out


# A system with fewer than this share of the median system's items is named: its mean is
# noisier than the others', yet each system's mean weighs the same in the system level.
SMALL_SYSTEM_SHARE = 0.5
SMALL_SYSTEM_RULE = (f"a system with fewer than {SMALL_SYSTEM_SHARE:.0%} of the median "
                     "system's items")


def small_systems(systems: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The systems whose item count is small beside the others' (SMALL_SYSTEM_RULE), with
    the median count they were compared with."""
    ns = [int(s.get("n", 0)) for s in systems]
    if len(ns) < 2:
        return {"small_systems": [], "median_system_n": float(ns[0]) if ns else None}
    med = float(np.median(ns))
    small = [{"system": s.get("system"), "n": int(s.get("n", 0))} for s in systems
             if int(s.get("n", 0)) < SMALL_SYSTEM_SHARE * med]
    return {"small_systems": small, "median_system_n": med, "small_system_rule":
            SMALL_SYSTEM_RULE}


def small_systems_warning(system: dict[str, Any]) -> str:
    names = ", ".join(f"{s['system']} (n = {s['n']})" for s in system["small_systems"][:5])
    more = len(system["small_systems"]) - 5
    if more > 0:
        names += f" and {more} more"
    return (f"system level ({system.get('field')}): {names}"
            f" {'has' if len(system['small_systems']) == 1 else 'have'} fewer than "
            f"{SMALL_SYSTEM_SHARE:.0%} of the median system's {system['median_system_n']:g} "
            "items; every system's mean weighs the same in the system-level correlation, so a "
            "mean of a few items moves it as much as one of many (see the item level, or leave "
            "such systems out)")


def _verdict_doc(v: Any, item: PointwiseItem, score: float | None) -> dict[str, Any]:
    return {"item_id": v.item_id, "score": score, "gold": item.score,
            "judge_score_id": v.score, "raw": (v.raw or "")[:500], "error": v.error}


# ---------------------------------------------------------------- run

async def evaluate(bundle: Any, items: Sequence[PairwiseItem | PointwiseItem], *,
                   on_done=None, data_spec: str = "", seed: int = 0, kappa_boot: int = 2000,
                   min_valid: int = DEFAULT_MIN_VALID, max_failed: float = DEFAULT_MAX_FAILED,
                   pair_rule: str = "mean", ties: str | None = None, by: str | None = None,
                   group_by: str | None = None, system_field: str | None = None,
                   n_boot: int = 2000, selection: dict[str, Any] | None = None
                   ) -> dict[str, Any]:
    """Judge `items` with a `JudgeBundle` and return the results document (not yet written).

    Pairwise items go to the bundle's pairwise judge (`pair_rule`, `ties`); pointwise items
    to its rubric judge (`group_by`, `system_field` add the group and system levels). `by`
    breaks accuracy or correlation down by an item field or metadata key. Its `run` section
    says whether the run judged enough (`min_valid` items with a valid verdict, at most
    `max_failed` of calls failed); a failed run's numbers are not results."""
    import time

    import judgeaudit

    pairwise = [it for it in items if isinstance(it, PairwiseItem)]
    pointwise = [it for it in items if isinstance(it, PointwiseItem)]
    if pairwise and pointwise:
        raise ValueError(f"{data_spec or 'the data'} mixes {len(pairwise)} pairwise and "
                         f"{len(pointwise)} pointwise items; evaluate one kind at a time")
    for name, option in ((by, "--by"), (group_by, "--group-by"),
                         (system_field, "--system-field")):
        if name is not None:
            check_field(items, name, option)
    t0 = time.perf_counter()
    if pointwise:
        if pair_rule != "mean" or ties is not None:
            raise ValueError("--pair-rule and --ties apply to pairwise data; "
                             f"{data_spec or 'the data'} is pointwise")
        rubric = bundle.rubric
        verdicts = await rubric.score(pointwise, on_done=on_done)
        elapsed = time.perf_counter() - t0
        calls = bundle.client.stats.as_dict()
        summary = summarize_pointwise(pointwise, verdicts, score_ids=rubric.score_ids,
                                      seed=seed, n_boot=n_boot, group_by=group_by,
                                      system_field=system_field, by=by)
        scores = [judge_score(v, rubric.score_ids)[0] for v in verdicts]
        head = {"template": {"name": rubric.template.name, "sha256": rubric.template.sha256},
                "prompt_hash": rubric.template.sha256}
        docs = [_verdict_doc(v, it, s)
                for v, it, s in zip(verdicts, pointwise, scores, strict=True)]
        what, reading = "items", "a score"
    else:
        if group_by is not None or system_field is not None:
            raise ValueError("--group-by and --system-field apply to pointwise data (a gold "
                             f"score per response); {data_spec or 'the data'} is pairwise")
        pverdicts = await bundle.pairwise.judge(pairwise, on_done=on_done)
        elapsed = time.perf_counter() - t0
        calls = bundle.client.stats.as_dict()
        summary = summarize(pairwise, pverdicts, seed=seed, kappa_boot=kappa_boot,
                            pair_rule=pair_rule, ties=ties, by=by)
        head = {"template": {"name": bundle.pairwise.template.name,
                             "sha256": bundle.pairwise.template.sha256},
                "prompt_hash": bundle.pairwise.template.sha256,
                "both_orders": bundle.pairwise.both_orders, "task": "pairwise"}
        docs = [v.as_dict() for v in pverdicts]
        what, reading = "items", "a verdict"
    n_planned = len(items)
    return {
        "command": "evaluate",
        "version": judgeaudit.__version__,
        "judge": bundle.public_spec,
        "data": data_spec,
        **head,
        "selection": selection or {"kind": "all", "n": n_planned, "of": n_planned},
        **summary,
        "calls": calls,
        "run": assess(n_valid=summary["n_valid"], n_planned=n_planned, calls=calls,
                      min_valid=min_valid, max_failed=max_failed, what=what, reading=reading,
                      answers=summary["n_calls_planned"] - summary["n_failed_calls"],
                      unreadable=summary["n_invalid"] - summary["n_failed_calls"]),
        "seconds": elapsed,
        "verdicts": docs,
    }
