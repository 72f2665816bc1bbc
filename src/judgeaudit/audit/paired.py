"""Paired item-level comparisons shared by every probe: the effect is the mean of per-item
paired differences (after - before, changed - plain, first-slot share - 1/2), with a
bootstrap interval over items, an exact two-sided sign test on the items that moved, and the
smallest effect that test detects at the realised n and discordance (the MDE)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from judgeaudit.stats import binomial_test, paired_estimate
from judgeaudit.stats.power import mde_from_se, mde_sign_test
from judgeaudit.stats.types import Estimate

POWER = 0.8  # the MDE is the effect detected with this power
# The effect's interval (exact below SPARSE_MOVERS items that moved): `stats.paired_estimate`.


def _finite(x: float | None) -> float | None:
    return None if x is None or not np.isfinite(x) else float(x)


def sign_test_mde(d: np.ndarray, alpha: float = 0.05, power: float = POWER,
                  unit: float = 1.0) -> tuple[float | None, dict[str, Any]]:
    """MDE of the exact sign test on these paired differences, and how it was computed.

    The MDE comes from the realised data, not from n alone: psi = share of items that moved
    (d != 0) and the sizes of their moves (`unit` when none moved), then `mde_sign_test`: the
    exact power of the test the probe reports, turned into a mean difference through the
    movers' sizes. A judge whose verdicts rarely move (a
    narrow interval) gets a small MDE; a noisy one a large MDE at the same n. Also recorded:
    the standard error of the mean difference and the normal-approximation MDE
    (z_{1-alpha/2} + z_power) * SE, which the exact value approaches at large n."""
    n = int(d.size)
    moved = d[d != 0]
    psi = moved.size / n
    m = float(np.abs(moved).mean()) if moved.size else float(unit)
    se = float(d.std(ddof=1) / math.sqrt(n)) if n > 1 else None
    mde = _finite(mde_sign_test(n, psi, m, alpha=alpha, power=power,
                                moves=moved if moved.size else None))
    detail = {
        "method": "exact two-sided sign test",
        "n": n, "discordance": psi, "mean_change": m, "se": se,
        "alpha": alpha, "power": power,
        "normal_approx": _finite(mde_from_se(se, alpha, power)) if se is not None else None,
    }
    return mde, detail


def paired_stats(d: Sequence[float] | np.ndarray, *, seed: int = 0, alpha: float = 0.05,
                 unit: float = 1.0, mde: bool = True,
                 span: float | None = None) -> dict[str, Any]:
    """Effect = mean(d) with its 95% interval (`paired_estimate`; `span` bounds every d), p of
    the exact two-sided sign test (items that moved up vs down; unmoved items carry no
    information) and, with `mde`, the MDE of that test at this n and discordance.

    `estimate` is the effect as an Estimate (method "score-bounded" with a span,
    "bootstrap-percentile" without one,
    "clopper-pearson-movers" or "clopper-pearson-constant"; no method when there is no
    interval); "effect", "ci95" (None where not finite) and "method" repeat it for the
    probes that read them; "span" is the bound given."""
    est = paired_estimate(d, seed=seed, span=span)
    arr = np.asarray(d, dtype=float)
    n = est.n
    if n == 0:
        return {"effect": None, "ci95": (None, None), "p": None, "mde": None, "n": 0,
                "se": None, "mde_detail": None, "up": 0, "down": 0, "estimate": est,
                "method": None, "span": span}
    up, down = int((arr > 0).sum()), int((arr < 0).sum())
    out: dict[str, Any] = {
        "effect": est.value, "ci95": (_finite(est.ci95[0]), _finite(est.ci95[1])),
        "estimate": est, "method": est.method, "span": span,
        "p": binomial_test(up, up + down, 0.5) if up + down else 1.0,
        "n": n, "up": up, "down": down,
        "se": float(arr.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
        "mde": None, "mde_detail": None,
    }
    if mde:
        out["mde"], out["mde_detail"] = sign_test_mde(arr, alpha=alpha, unit=unit)
    return out


def paired_difference(a: Sequence[float | None], b: Sequence[float | None],
                      seed: int = 0, alpha: float = 0.05, unit: float = 1.0,
                      span: float | None = None) -> dict[str, Any]:
    """Effect = mean(b - a) over items valid in both (b = the changed condition; `span`
    bounds |b - a|). `valid` / `invalid` are the positions used / left out (either side
    None)."""
    valid = [i for i, (x, y) in enumerate(zip(a, b, strict=True))
             if x is not None and y is not None]
    d = np.array([b[i] - a[i] for i in valid], dtype=float)  # type: ignore[operator]
    out = paired_stats(d, seed=seed, alpha=alpha, unit=unit, span=span)
    out["n_invalid"] = len(a) - len(valid)
    out["valid"] = valid
    out["invalid"] = sorted(set(range(len(a))) - set(valid))
    out["d"] = d.tolist()
    return out


def credit_of(verdict: Any, label: int) -> float | None:
    """Per-item accuracy credit: mean over asked orders of 1[winner == label]; None if any
    order is invalid."""
    if any(not o.valid for o in verdict.orders):
        return None
    return float(np.mean([o.winner == label for o in verdict.orders]))


def effect_dict(est: Estimate) -> dict[str, Any]:
    """An effect as the results write it: value, ci95 and (when set) method; its n is a
    sibling key of the probe or row that holds it, so it is not repeated here."""
    out = est.as_dict()
    del out["n"]
    return out
