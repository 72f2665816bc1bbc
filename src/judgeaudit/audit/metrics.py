"""Per-probe metrics on verdicts: signed shift toward a perturbed response, robustness and
consistency rates, position preference. Each returns its n, interval and p-value."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from judgeaudit.judges.pairwise import PairwiseVerdict
from judgeaudit.stats import binomial_test, bootstrap_ci, mde_paired_flip, mde_proportion, wilson


def estimate(successes: float, n: int) -> dict[str, Any]:
    if n == 0:
        return {"value": None, "ci95": [None, None], "n": 0}
    lo, hi = wilson(successes, n)
    return {"value": successes / n, "ci95": [lo, hi], "n": n}


def _finite(x: float) -> float | None:
    """NaN (a design that cannot reach the power) becomes None: shown as n/a."""
    return None if x is None or not np.isfinite(x) else float(x)


def credit(v: PairwiseVerdict, target: int) -> float | None:
    """1 if the consensus picks `target` (1/2), 0.5 for a tie, 0 otherwise; None if invalid."""
    w = v.winner
    if w is None:
        return None
    return 0.5 if w == 0 else float(w == target)


def shift(
    before: Sequence[PairwiseVerdict], after: Sequence[PairwiseVerdict], targets: Sequence[int],
    seed: int = 0,
) -> dict[str, Any]:
    """Signed shift of preference toward the perturbed response: mean(credit_after -
    credit_before) over items valid in both. p: exact sign test on items that moved toward
    vs away (ties in the change are uninformative). Under no bias the shift is symmetric
    around 0 whatever the judge's noise, so the test is valid against repeat noise."""
    pairs = [(credit(b, t), credit(a, t)) for b, a, t in zip(before, after, targets, strict=True)]
    valid = [(b, a) for b, a in pairs if b is not None and a is not None]
    n = len(valid)
    out: dict[str, Any] = {"n": n, "n_invalid": len(pairs) - n}
    if n == 0:
        out.update(effect=None, ci95=(None, None), p=None, mde=None)
        return out
    d = np.array([a - b for b, a in valid])
    up, down = int((d > 0).sum()), int((d < 0).sum())
    out["effect"] = float(d.mean())
    lo, hi = bootstrap_ci(d, np.mean, seed=seed)
    out["ci95"] = (float(lo), float(hi))
    out["p"] = binomial_test(up, up + down, 0.5) if up + down else 1.0
    discordant = max((up + down) / n, 1.0 / n)
    out["mde"] = _finite(mde_paired_flip(n, discordant))
    out["up"], out["down"] = up, down
    return out


def same_winner_rate(a: Sequence[PairwiseVerdict], b: Sequence[PairwiseVerdict]) -> dict[str, Any]:
    """Share of items whose consensus verdict is the same in both lists (valid in both)."""
    pairs = [(x.winner, y.winner) for x, y in zip(a, b, strict=True)
             if x.winner is not None and y.winner is not None]
    return estimate(sum(x == y for x, y in pairs), len(pairs))


def position(verdicts: Sequence[PairwiseVerdict], seed: int = 0) -> dict[str, Any]:
    """First-slot preference from both-order verdicts. Per item, f = share of its two
    decisive verdicts that went to the response shown first; effect = mean(f) - 0.5.
    p: exact sign test of items choosing first-shown in both orders vs second-shown in both
    (items consistent across orders carry no position information)."""
    f, both_first, both_second, decisive = [], 0, 0, 0
    for v in verdicts:
        if len(v.orders) != 2 or not all(o.valid and o.winner != 0 for o in v.orders):
            continue
        firsts = [(o.winner == 1) == (o.order == "12") for o in v.orders]
        f.append(sum(firsts) / 2)
        both_first += all(firsts)
        both_second += not any(firsts)
        decisive += 2
    n = len(f)
    out: dict[str, Any] = {"n": n, "n_invalid": len(verdicts) - n}
    if n == 0:
        out.update(effect=None, ci95=(None, None), p=None, mde=None, first_rate=None)
        return out
    arr = np.array(f)
    out["effect"] = float(arr.mean() - 0.5)
    lo, hi = bootstrap_ci(arr, np.mean, seed=seed)
    out["ci95"] = (float(lo) - 0.5, float(hi) - 0.5)
    m = both_first + both_second
    out["p"] = binomial_test(both_first, m, 0.5) if m else 1.0
    out["mde"] = _finite(mde_proportion(n, 0.5))
    # Item-level first-slot rate with the same (item-bootstrap) interval as the effect:
    # the two orders of one item are paired, so a verdict-level binomial interval would be
    # far too wide for judges that are mostly consistent.
    out["first_rate"] = {"value": float(arr.mean()), "ci95": [float(lo), float(hi)], "n": n}
    out["both_first"], out["both_second"] = both_first, both_second
    out["consistency"] = estimate(n - m, n)
    return out
