"""Algorithm 1, step 3: validate factors on held-out disagreement items, and criteria.

For each factor z and held-out item x (the judge preferred r-, humans r+), G_score rates both
responses 1-5 on z's Likert criteria; Delta_x = s(judge-preferred) - s(human-preferred).
Per factor: mean Delta with a t interval, a one-sample t-test and a Wilcoxon signed-rank
p-value (H0: Delta centred on 0), and each p's Benjamini-Hochberg q over every factor
validated in the run (`multiplicity`): a run tests ~11-15 factors at once, so at p < 0.05 a
third of the runs flagged some null factor. A factor is `significant` when its Wilcoxon q is at
most `ALPHA`. Novelty: Pearson r of the per-item Delta of each factor with
each pre-discovered factor's, and among the found factors (high |r| = not new).
The same table is computed for both baseline sets, so a discovered set is always shown next to
them.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj.baselines import criteria_for
from judgeaudit.hubj.discover import sides
from judgeaudit.hubj.gmodules import g_crit, g_score
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor, default_criteria
from judgeaudit.llm import Client
from judgeaudit.stats import (
    benjamini_hochberg,
    mean_ci,
    one_sample_t,
    pearson,
    wilcoxon_signed_rank,
)
from judgeaudit.stats.types import Estimate

ALPHA = 0.05  # the false discovery rate a factor is called significant at


async def criteria_for_factors(client: Client | None, factors: Sequence[Factor],
                               stats: JSONStats) -> tuple[dict[str, dict[int, str]],
                                                          dict[str, str]]:
    """Likert criteria per factor and where each came from: shipped (baselines), G_crit, or
    the generic fallback when G_crit gave no usable answer (counted in stats)."""
    out: dict[str, dict[int, str]] = {}
    source: dict[str, str] = {}
    todo = []
    for f in factors:
        c = criteria_for(f)
        if c is not None:
            out[f.name], source[f.name] = c, "shipped"
        elif client is None:
            out[f.name], source[f.name] = default_criteria(f), "generic"
        else:
            todo.append(f)
    got = await asyncio.gather(*(g_crit(client, f, stats) for f in todo))  # type: ignore[arg-type]
    for f, c in zip(todo, got, strict=True):
        if c is None:
            out[f.name], source[f.name] = default_criteria(f), "generic (G_crit failed)"
        else:
            out[f.name], source[f.name] = c, "G_crit"
    return out, source


async def score_pairs(client: Client, items: Sequence[PairwiseItem], factors: Sequence[Factor],
                      criteria: Mapping[str, Mapping[int, str]], stats: JSONStats
                      ) -> dict[str, list[tuple[int, int] | None]]:
    """{factor: per item (s(judge-preferred r-), s(human-preferred r+)) or None if a score
    failed}. Requests go factor by factor (shared prompt prefixes)."""
    jobs = []
    for f in factors:
        for it in items:
            judge_pref, human_pref = sides(it)
            for text in (judge_pref, human_pref):
                jobs.append(g_score(client, it.id, it.prompt, text, f, criteria[f.name], stats))
    flat = await asyncio.gather(*jobs)
    out: dict[str, list[tuple[int, int] | None]] = {}
    k = 0
    for f in factors:
        rows: list[tuple[int, int] | None] = []
        for _it in items:
            a, b = flat[k], flat[k + 1]
            k += 2
            rows.append(None if a is None or b is None else (a, b))
        out[f.name] = rows
    return out


def deltas(pairs: Sequence[tuple[int, int] | None]) -> np.ndarray:
    """Per item Delta (nan where a score is missing)."""
    return np.array([math.nan if p is None else p[0] - p[1] for p in pairs], dtype=float)


def delta_stats(d: np.ndarray) -> dict[str, Any]:
    """Mean Delta as an estimate (t interval; also under its old name "mean_delta") with the
    t-test, the Wilcoxon p-value and the share of positive Deltas."""
    x = d[np.isfinite(d)]
    n = int(x.size)
    if n == 0:
        e = Estimate(math.nan, (math.nan, math.nan), 0, method="t").as_dict()
        return {**e, "mean_delta": None, "t": None, "p_t": None, "p_wilcoxon": None,
                "share_positive": None}
    if n == 1:  # no spread to test against: the t-test's p was nan, printed as "nan"
        e = Estimate(float(x[0]), (math.nan, math.nan), 1,
                     method="none: n < 2, no t interval or t-test").as_dict()
        return {**e, "mean_delta": e["value"], "t": None, "p_t": None, "p_t_note": "n < 2",
                "p_wilcoxon": wilcoxon_signed_rank(x), "share_positive": float((x > 0).mean())}
    if n >= 2 and np.ptp(x) == 0:  # no spread: the t interval is the point [d, d] and the
        # t-test's p is 0 (even on 2 items), both read as certainty; the signed-rank p holds
        e = Estimate(float(x.mean()), (math.nan, math.nan), n,
                     method="none: every item's Delta is the same, so the t interval would "
                            "be a point and the t-test undefined").as_dict()
        t, p = None, None
    else:
        t, p = one_sample_t(x)
        e = Estimate(float(x.mean()), mean_ci(x), n, method="t").as_dict()
    return {**e, "mean_delta": e["value"], "t": t, "p_t": p,
            "p_wilcoxon": wilcoxon_signed_rank(x), "share_positive": float((x > 0).mean())}


def correlations(a: Mapping[str, np.ndarray], b: Mapping[str, np.ndarray]
                 ) -> dict[str, dict[str, dict[str, Any]]]:
    """Pearson r (Fisher interval) of per-item Delta for every (a, b) pair, on the items
    where both are present: an estimate, its value also under "r"."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for na, da in a.items():
        row = {}
        for nb, db in b.items():
            ok = np.isfinite(da) & np.isfinite(db)
            if ok.sum() < 3 or np.ptp(da[ok]) == 0 or np.ptp(db[ok]) == 0:
                e = Estimate(math.nan, (math.nan, math.nan), int(ok.sum()))
            else:
                e = pearson(da[ok], db[ok])
            est = e.as_dict()
            row[nb] = {**est, "r": est["value"]}
        out[na] = row
    return out


def max_abs_r(row: Mapping[str, Mapping[str, Any]], skip: str | None = None) -> float | None:
    vals = [abs(v["r"]) for k, v in row.items() if k != skip and v.get("r") is not None]
    return max(vals) if vals else None


def multiplicity(d: Mapping[str, np.ndarray], alpha: float = ALPHA
                 ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """Per factor the q-values (Benjamini-Hochberg over every factor in `d`, once each
    though it may stand in several sets) of its t and Wilcoxon p, and whether it is
    `significant`: q (Wilcoxon) <= alpha. The Wilcoxon p decides because it exists wherever
    there is a Delta (the t-test has none on one item, or when every Delta is the same, as
    on a judge that always prefers the longer response) and assumes no normal 1-5 Likert
    differences. Also the summary stored beside the tables (method, alpha, m)."""
    names = list(d)
    stats = {n: delta_stats(d[n]) for n in names}

    def bh(key: str) -> dict[str, float | None]:
        ps = [math.nan if stats[n][key] is None else float(stats[n][key]) for n in names]
        qs = benjamini_hochberg(ps)
        return {n: None if math.isnan(q) else float(q) for n, q in zip(names, qs, strict=True)}

    q_t, q_w = bh("p_t"), bh("p_wilcoxon")
    per = {n: {"q_t": q_t[n], "q_wilcoxon": q_w[n],
               "significant": q_w[n] is not None and q_w[n] <= alpha} for n in names}
    m = sum(q is not None for q in q_w.values())
    summary = {"method": "benjamini-hochberg", "alpha": alpha, "decided_on": "q_wilcoxon",
               "m": m,
               "over": "every factor validated in this run (all sets, each factor once)",
               "significant": [n for n in names if per[n]["significant"]],
               "attainable": attainable(max((int(np.isfinite(d[n]).sum()) for n in names),
                                            default=0), m, alpha)}
    return per, summary


def attainable(n: int, m: int, alpha: float = ALPHA) -> dict[str, Any] | None:
    """What n held-out Deltas can show at all: the smallest two-sided exact Wilcoxon p
    (every Delta non-zero, all one sign: 2 / 2^n), how many of the m factors must reach it
    for any to pass Benjamini-Hochberg at `alpha` (the k-th smallest p must be <= k alpha /
    m; None when none can), and the fewest items for one factor to pass alone (p <= alpha /
    m). With 6 held-out items and 14 factors the smallest p is 0.031 and a lone factor needs
    0.0036: the run said "significant: none" as if it had looked. None without a test."""
    if n < 1 or m < 1:
        return None
    p_min = min(1.0, 2.0 / 2 ** n)
    need = math.ceil(p_min * m / alpha - 1e-12)
    alone = next(k for k in range(1, 200) if 2.0 / 2 ** k <= alpha / m)
    return {"n": n, "m": m, "smallest_p": p_min,
            "factors_needed": need if need <= m else None, "n_for_one_alone": alone,
            "limited": p_min > alpha / m}


async def validate(client: Client, items: Sequence[PairwiseItem],
                   sets: Mapping[str, Sequence[Factor]], criteria: Mapping[str, Mapping[int, str]],
                   stats: JSONStats, pre_discovered: str = "pre_discovered",
                   alpha: float = ALPHA) -> dict[str, Any]:
    """Delta tables for every factor set (e.g. found, pre_discovered, biasscope), with q-values
    and significance over all of them (`multiplicity`), and novelty of each set against the
    pre-discovered factors and within itself."""
    factors = {f.name: f for fs in sets.values() for f in fs}
    scores = await score_pairs(client, items, list(factors.values()), criteria, stats)
    d = {name: deltas(scores[name]) for name in factors}
    q, summary = multiplicity(d, alpha)
    pre = {f.name: d[f.name] for f in sets.get(pre_discovered, [])}
    out: dict[str, Any] = {"n_items": len(items), "multiplicity": summary, "sets": {}}
    for set_name, fs in sets.items():
        mine = {f.name: d[f.name] for f in fs}
        vs_pre = correlations(mine, pre)
        within = correlations(mine, mine)
        rows = []
        for f in fs:
            rows.append({
                "factor": f.name, "definition": f.definition, **delta_stats(d[f.name]),
                **q[f.name],
                "max_abs_r_pre_discovered": max_abs_r(vs_pre[f.name],
                                                      f.name if set_name == pre_discovered
                                                      else None),
                "max_abs_r_within_set": max_abs_r(within[f.name], f.name),
            })
        out["sets"][set_name] = {"factors": rows, "r_vs_pre_discovered": vs_pre,
                                 "r_within": within}
    out["scores"] = {name: [list(p) if p else None for p in ps] for name, ps in scores.items()}
    out["item_ids"] = [it.id for it in items]
    return out


__all__ = ["ALPHA", "attainable", "correlations", "criteria_for_factors", "delta_stats", "deltas",
           "max_abs_r", "multiplicity", "score_pairs", "validate"]
