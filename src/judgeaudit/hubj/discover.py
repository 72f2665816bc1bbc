"""Algorithm 1 (discover), steps 1-2: features from consensus disagreements, then factors.

1. G_extract, per consensus-disagreement item: features of the judge-preferred response that
   explain the deviation (name, reason, general definition; vague labels dropped).
2. Up to T rounds on the still-uncovered features U:
   embed U; k-means into M clusters (seeded); the feature nearest each centroid is a
   representative; G_construct proposes candidate factors from the representatives and the
   factors kept so far (when it gives fewer candidates than asked for, e.g. a small model's
   vague labels are dropped, the representatives themselves fill the gap: `rep_fallback`,
   recorded per round); a candidate is kept only if its cosine similarity to
   every kept factor is below tau; G_assign maps every feature in U to one open candidate or
   abstains;
   coverage C(z) = features assigned to z; greedily add the factor z maximising
       alpha * |C(z) \\ covered| - lambda_u * |features still uncovered after adding z|
   while it covers something new and fewer than K factors are selected; stop when the
   covered share of all features reaches rho, else go on with the uncovered features.
Step 3 (validation on held-out items) is `judgeaudit.hubj.validate`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj.embed import Embedder, kmeans, representatives
from judgeaudit.hubj.gmodules import g_assign, g_construct, g_extract, is_vague
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor, Feature
from judgeaudit.llm import Client


@dataclass
class DiscoverConfig:
    clusters: int = 4            # M
    max_factors: int = 5         # K
    iterations: int = 3          # T
    tau: float = 0.7             # novelty threshold (cosine)
    rho: float = 0.8             # target covered share
    alpha: float = 1.0
    lambda_u: float = 0.5
    max_features: int = 3        # per item, G_extract
    candidates: int = 4          # per round, G_construct
    rep_fallback: bool = True    # representatives fill in when G_construct gives too few
    seed: int = 0

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class DiscoverOutcome:
    features: list[Feature]
    factors: list[Factor]                       # selected, in order of selection
    coverage: dict[str, list[int]]              # factor name -> feature indices
    candidates: list[Factor]                    # every kept (novel) candidate
    rejected: list[dict[str, Any]]              # candidates dropped as not novel
    rounds: list[dict[str, Any]] = field(default_factory=list)
    assignments: dict[int, str | None] = field(default_factory=dict)

    @property
    def covered_share(self) -> float:
        cov = set().union(*self.coverage.values()) if self.coverage else set()
        return len(cov) / len(self.features) if self.features else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "features": [f.as_dict() for f in self.features],
            "factors": [{**f.as_dict(), "coverage": len(self.coverage.get(f.name, [])),
                         "covered_features": self.coverage.get(f.name, [])}
                        for f in self.factors],
            "candidates": [f.as_dict() for f in self.candidates],
            "rejected_as_not_novel": self.rejected,
            "rounds": self.rounds,
            "covered_share": self.covered_share,
            "assignments": {str(k): v for k, v in self.assignments.items()},
        }


def sides(item: PairwiseItem) -> tuple[str, str]:
    """(human-rejected r-, human-preferred r+) by the item's human label (1 or 2)."""
    if item.label == 1:
        return item.response_2, item.response_1
    if item.label == 2:
        return item.response_1, item.response_2
    raise ValueError(f"item {item.id}: needs a human label 1 or 2, got {item.label!r}")


async def extract_features(client: Client, items: Sequence[PairwiseItem], stats: JSONStats,
                           max_features: int = 3) -> list[Feature]:
    """G_extract on consensus-disagreement items: there the judge preferred r-."""
    async def one(it: PairwiseItem) -> list[Feature]:
        judge_pref, human_pref = sides(it)
        return await g_extract(client, it.id, it.prompt, judge_pref, human_pref, stats,
                               max_features)

    out = await asyncio.gather(*(one(it) for it in items))
    return [f for fs in out for f in fs]


def greedy_select(cover: dict[str, set[int]], n_all: int, covered: set[int], k_left: int,
                  alpha: float, lambda_u: float) -> list[tuple[str, int, float]]:
    """Greedy picks (name, newly covered, objective gain) by
    alpha * |C(z) minus covered| - lambda_u * |uncovered after z|; stops when nothing new is
    covered or k_left picks are made. `covered` is updated in place."""
    picks = []
    open_ = dict(cover)
    while open_ and len(picks) < k_left:
        order = list(open_)
        gains = {z: alpha * len(open_[z] - covered)
                 - lambda_u * (n_all - len(covered) - len(open_[z] - covered)) for z in order}
        name = max(order, key=lambda z: (gains[z], -order.index(z)))
        new = open_[name] - covered
        if not new:
            break
        picks.append((name, len(new), gains[name]))
        covered |= new
        del open_[name]
    return picks


async def discover_factors(
    client: Client,
    embedder: Embedder,
    features: Sequence[Feature],
    cfg: DiscoverConfig,
    stats: dict[str, JSONStats],
    on_round: Callable[[dict[str, Any]], None] | None = None,
) -> DiscoverOutcome:
    feats = list(features)
    out = DiscoverOutcome(feats, [], {}, [], [])
    if not feats:
        return out
    n = len(feats)
    emb_all = embedder.encode([f.text for f in feats])
    kept: list[Factor] = []
    kept_emb: list[np.ndarray] = []
    covered: set[int] = set()
    for t in range(cfg.iterations):
        u = [i for i in range(n) if i not in covered]
        if not u or len(out.factors) >= cfg.max_factors:
            break
        x = emb_all[u]
        labels, cents = kmeans(x, cfg.clusters, seed=cfg.seed + t)
        reps = [u[i] for i in representatives(x, labels, cents)]
        cands = await g_construct(client, [feats[i].text for i in reps], kept,
                                  stats.setdefault("G_construct", JSONStats()), cfg.candidates)
        from_reps: list[str] = []
        if cfg.rep_fallback and len(cands) < cfg.candidates:
            # A small model often turns the representatives into vague judgements (relevance,
            # clarity: dropped as vague). The representatives are themselves features with a
            # name and a general definition, so they fill the missing candidates (recorded).
            names = {c.name for c in cands}
            for i in reps:
                f = feats[i]
                if len(cands) >= cfg.candidates:
                    break
                if f.name.lower() not in names and not is_vague(f.name):
                    cands.append(Factor(f.name.lower(), f.definition))
                    names.add(f.name.lower())
                    from_reps.append(f.name.lower())
        added = []
        if cands:
            ce = embedder.encode([c.text for c in cands])
            for c, e in zip(cands, ce, strict=True):
                sims = [float(e @ k) for k in kept_emb]
                if any(c.name == k.name for k in kept) or (sims and max(sims) >= cfg.tau):
                    out.rejected.append({"round": t + 1, **c.as_dict(),
                                         "max_similarity": max(sims) if sims else None})
                    continue
                kept.append(c)
                kept_emb.append(e)
                added.append(c)
        out.candidates = list(kept)
        selected = {f.name for f in out.factors}
        pool = [c for c in kept if c.name not in selected][-9:]
        cover: dict[str, set[int]] = {c.name: set() for c in pool}
        if pool:
            st = stats.setdefault("G_assign", JSONStats())
            answers = await asyncio.gather(*(g_assign(client, feats[i].text, pool, st)
                                             for i in u))
            for i, a in zip(u, answers, strict=True):
                if a:
                    cover[pool[a - 1].name].add(i)
                    out.assignments.setdefault(i, pool[a - 1].name)
                else:
                    out.assignments.setdefault(i, None)
        picks = greedy_select(cover, n, covered, cfg.max_factors - len(out.factors),
                              cfg.alpha, cfg.lambda_u)
        by_name = {c.name: c for c in pool}
        for name, _new, _gain in picks:
            out.factors.append(by_name[name])
            out.coverage[name] = sorted(cover[name])
        rnd = {"round": t + 1, "uncovered_before": len(u), "clusters": int(cents.shape[0]),
               "representatives": [feats[i].text for i in reps],
               "candidates": [c.name for c in cands], "kept": [c.name for c in added],
               "candidates_from_representatives": from_reps,
               "picked": [{"factor": nm, "new": k, "gain": g} for nm, k, g in picks],
               "covered_share": len(covered) / n}
        out.rounds.append(rnd)
        if on_round:
            on_round(rnd)
        if len(covered) / n >= cfg.rho:
            break
    return out


__all__ = ["DiscoverConfig", "DiscoverOutcome", "discover_factors", "extract_features",
           "greedy_select", "sides"]
