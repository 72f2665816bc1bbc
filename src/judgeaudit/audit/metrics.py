"""Per-probe metrics on verdicts: signed shift toward a perturbed response, robustness and
consistency rates, position preference. Each returns its n, interval and p-value."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from judgeaudit.audit.paired import paired_stats
from judgeaudit.judges.pairwise import PairwiseVerdict
from judgeaudit.stats import rate
from judgeaudit.stats.intervals import clustered_rate
from judgeaudit.stats.types import Estimate

# The reasons an invalid verdict leaves an item out, most upstream first (`why_invalid`).
INVALID_REASONS: tuple[str, ...] = ("not_sent", "call_failed", "cut", "unparseable")


def _failures(verdict: Any) -> set[str]:
    """How the invalid parts of one verdict failed: a pairwise verdict's invalid orders, a
    binary or score verdict itself ("not_sent", "call_failed", "cut" for an answer cut at
    max_tokens with no verdict, or "unparseable" for another answer with none). A valid
    verdict gives none."""
    orders = getattr(verdict, "orders", None)
    if orders is not None:
        return {o.failed or ("cut" if getattr(o, "cut", False) else "unparseable")
                for o in orders if not o.valid}
    if getattr(verdict, "passed", 0) is None or getattr(verdict, "score", 0) is None:
        return {getattr(verdict, "failed", None)
                or ("cut" if getattr(verdict, "cut", False) else "unparseable")}
    return set()


def why_invalid(*verdicts: Any) -> str:
    """The left-out reason of an item because a verdict it needs is invalid: "not_sent"
    when a call of it was never sent, else "call_failed" when one failed, else
    "unparseable" (an answer came back with no readable verdict)."""
    found: set[str] = set().union(*(_failures(v) for v in verdicts))
    return next((r for r in INVALID_REASONS if r in found), "unparseable")


def rate_estimate(successes: float, n: int) -> Estimate:
    """successes / n with its Wilson interval; n = 0 -> no value and no interval (null in
    the results, not rate()'s uninformative (0, 1))."""
    if n == 0:
        return Estimate(math.nan, (math.nan, math.nan), 0)
    return rate(successes, n)


def estimate(successes: float, n: int) -> dict[str, Any]:
    """`rate_estimate` as its results-file dict."""
    return rate_estimate(successes, n).as_dict()


def credit(v: PairwiseVerdict, target: int) -> float | None:
    """1 if the consensus picks `target` (1/2), 0.5 for a tie, 0 otherwise; None if invalid."""
    w = v.winner
    if w is None:
        return None
    return 0.5 if w == 0 else float(w == target)


def text_vs_probs(verdicts: Sequence[PairwiseVerdict]) -> dict[str, Any]:
    """Order verdicts read from probabilities (`n`) whose answer text named another choice
    (`n_disagree`), their rate clustered by item (an item's two orders are not independent),
    and up to 20 examples. The verdict stays the probabilities'; a judge whose text often
    says otherwise (a sampled minority token, logprobs and text from different passes) is
    worth a look, so the count is shown, not hidden."""
    by_item = [(sum(o.text_disagrees for o in read), len(read)) for v in verdicts
               for read in [[o for o in v.orders if o.p_first is not None]]]
    return {
        "n_disagree": sum(k for k, _ in by_item),
        "n": sum(m for _, m in by_item),
        "rate": clustered_rate(by_item).as_dict(),
        "examples": [{"item_id": v.item_id, "order": o.order, "choice": o.choice,
                      "text_choice": o.text_choice, "p_first": o.p_first, "raw": o.raw[:200]}
                     for v in verdicts for o in v.orders if o.text_disagrees][:20],
    }


def shift(
    before: Sequence[PairwiseVerdict], after: Sequence[PairwiseVerdict], targets: Sequence[int],
    seed: int = 0, alpha: float = 0.05,
) -> dict[str, Any]:
    """Signed shift of preference toward the perturbed response: mean(credit_after -
    credit_before) over items valid in both. p: exact sign test on items that moved toward
    vs away (ties in the change are uninformative). Under no bias the shift is symmetric
    around 0 whatever the judge's noise, so the test is valid against repeat noise. The MDE is
    that test's at this n and discordance (`paired.sign_test_mde`). `valid` / `invalid`:
    positions used / left out for an invalid verdict; `d`: the per-item shifts."""
    pairs = [(credit(b, t), credit(a, t)) for b, a, t in zip(before, after, targets, strict=True)]
    valid = [i for i, (b, a) in enumerate(pairs) if b is not None and a is not None]
    d = np.array([pairs[i][1] - pairs[i][0] for i in valid], dtype=float)  # type: ignore[operator]
    out = paired_stats(d, seed=seed, alpha=alpha, unit=1.0, span=1.0)
    ok = set(valid)
    out.update(n_invalid=len(pairs) - len(valid), valid=valid, d=d.tolist(),
               invalid=[i for i in range(len(pairs)) if i not in ok])
    return out


def same_winner_rate(a: Sequence[PairwiseVerdict], b: Sequence[PairwiseVerdict]) -> dict[str, Any]:
    """Share of items whose consensus verdict is the same in both lists (valid in both)."""
    pairs = [(x.winner, y.winner) for x, y in zip(a, b, strict=True)
             if x.winner is not None and y.winner is not None]
    return estimate(sum(x == y for x, y in pairs), len(pairs))


def position(verdicts: Sequence[PairwiseVerdict], seed: int = 0,
             alpha: float = 0.05) -> dict[str, Any]:
    """First-slot preference from both-order verdicts. Per item, f = share of its two
    decisive verdicts that went to the response shown first; effect = mean(f) - 0.5.
    p: exact sign test of items choosing first-shown in both orders vs second-shown in both
    (items consistent across orders carry no position information); the MDE is that test's
    at this n and discordance. Needs no label. Items left out, by reason (positions):
    `dropped` = {single_order, not_sent, call_failed, unparseable, tie_verdict}; the three
    invalid-verdict reasons as `why_invalid` tells them apart."""
    f: list[float] = []
    valid: list[int] = []
    dropped: dict[str, list[int]] = {"single_order": [],
                                     **{r: [] for r in INVALID_REASONS}, "tie_verdict": []}
    for i, v in enumerate(verdicts):
        if len(v.orders) != 2:
            dropped["single_order"].append(i)
        elif not all(o.valid for o in v.orders):
            dropped[why_invalid(v)].append(i)
        elif any(o.winner == 0 for o in v.orders):
            dropped["tie_verdict"].append(i)
        else:
            firsts = [(o.winner == 1) == (o.order == "12") for o in v.orders]
            f.append(sum(firsts) / 2)
            valid.append(i)
    n = len(f)
    arr = np.array(f, dtype=float)
    out = paired_stats(arr - 0.5, seed=seed, alpha=alpha, unit=0.5, span=0.5)
    out.update(n_invalid=len(verdicts) - n, valid=valid, dropped=dropped,
               d=(arr - 0.5).tolist())
    if n == 0:
        out["first_rate"] = None
        return out
    eff = out["estimate"]
    both_first, both_second = out["up"], out["down"]
    # Item-level first-slot rate with the same (item-bootstrap) interval as the effect:
    # the two orders of one item are paired, so a verdict-level binomial interval would be
    # far too wide for judges that are mostly consistent.
    out["first_rate"] = Estimate(float(arr.mean()), (eff.ci95[0] + 0.5, eff.ci95[1] + 0.5),
                                 n, method=eff.method).as_dict()
    out["both_first"], out["both_second"] = both_first, both_second
    out["consistency"] = estimate(n - both_first - both_second, n)
    return out
