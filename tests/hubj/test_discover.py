"""Algorithm 1: the greedy factor selection against brute force, and discovery end to end with
a scripted G-module provider and a bag-of-words embedder (both deterministic, so novelty,
coverage and stopping can be checked exactly). The real MiniLM embedder and k-means are
checked in test_embed.py."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
import pytest

from judgeaudit.hubj.discover import DiscoverConfig, discover_factors, greedy_select
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Feature
from judgeaudit.llm import Client, Request, Response, make_provider
from judgeaudit.llm.base import Provider
from judgeaudit.llm.registry import register


def _objective(sets: Sequence[set[int]], n: int, alpha: float, lam: float) -> float:
    covered: set[int] = set()
    total = 0.0
    for c in sets:
        new = c - covered
        total += alpha * len(new) - lam * (n - len(covered) - len(new))
        covered |= new
    return total


@pytest.mark.parametrize("seed", range(20))
def test_greedy_first_pick_is_the_best_single_factor_and_picks_cover_new_features(seed):
    rng = np.random.default_rng(seed)
    n = 12
    cover = {f"z{i}": set(rng.choice(n, size=rng.integers(1, 7), replace=False).tolist())
             for i in range(5)}
    covered: set[int] = set()
    picks = greedy_select(cover, n, covered, 3, 1.0, 0.5)
    best_single = max(_objective([c], n, 1.0, 0.5) for c in cover.values())
    assert picks[0][2] == pytest.approx(best_single)
    seen: set[int] = set()
    for name, k_new, _gain in picks:
        assert k_new == len(cover[name] - seen) > 0
        seen |= cover[name]
    assert covered == seen
    # greedy gains add up to the objective of the chosen sequence
    assert sum(g for *_x, g in picks) == pytest.approx(
        _objective([cover[nm] for nm, *_y in picks], n, 1.0, 0.5))
    # and it is never worse than 1 - 1/e of the best sequence of the same length by coverage
    best_cov = max(len(set().union(*(cover[z] for z in combo)))
                   for combo in itertools.combinations(cover, len(picks)))
    assert len(seen) >= (1 - 1 / np.e) * best_cov


def test_greedy_stops_when_nothing_new_is_covered():
    covered = {0, 1, 2}
    assert greedy_select({"a": {0, 1}, "b": {2}}, 5, covered, 3, 1.0, 0.5) == []


VOCAB = ["long", "words", "list", "bullet", "polite", "tone", "cite", "source", "formal"]


class BagOfWords:
    """Unit vectors of word counts over a fixed vocabulary (deterministic stand-in)."""

    name = "bag-of-words"

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for t in texts:
            v = np.array([len(re.findall(rf"\b{w}\b", t.lower())) for w in VOCAB], float) + 1e-3
            rows.append(v / np.linalg.norm(v))
        return np.array(rows)


@register
class ScriptedDiscoverProvider(Provider):
    """G_construct proposes the first word-theme of each representative (plus a near-duplicate
    of 'long words' to be rejected as not novel); G_assign maps a feature to the factor whose
    name shares a word with it."""

    name: ClassVar[str] = "test-discover-script"
    deterministic: ClassVar[bool] = True
    vague_only: ClassVar[bool] = False

    async def generate(self, request: Request) -> Response:
        meta: dict[str, Any] = request.meta
        if meta["module"] == "G_construct":
            if self.vague_only:
                return Response(text='{"name": "relevance", "definition": "How relevant."}]}')
            out = []
            for f in meta["features"]:
                name = f.split(":")[0]
                out.append(f'{{"name": "{name}", "definition": "The response has {name}."}}')
            out.append('{"name": "long words!", "definition": "The response has long words."}')
            return Response(text=", ".join(out) + "]}")
        if meta["module"] == "G_assign":
            feat = meta["feature"].split(":")[0].lower()
            for i, fname in enumerate(meta["factors"], start=1):
                if set(fname.split()) & set(feat.split()):
                    return Response(text=f"{i}}}", probs={str(k): float(k == i)
                                                          for k in range(len(meta["factors"]) + 1)})
            return Response(text="0}", probs={"0": 1.0})
        raise AssertionError(meta["module"])


def _features() -> list[Feature]:
    themes = ["long words"] * 6 + ["bullet list"] * 4 + ["polite tone"] * 3 + ["cite source"]
    return [Feature(f"i{k}", t, "on this item", f"uses {t}") for k, t in enumerate(themes)]


async def test_discovery_keeps_novel_factors_covers_features_and_stops_at_rho():
    client = Client(make_provider("test-discover-script", "x"))
    stats: dict[str, JSONStats] = {}
    cfg = DiscoverConfig(clusters=4, max_factors=5, iterations=3, tau=0.9, rho=0.7,
                         candidates=5)
    out = await discover_factors(client, BagOfWords(), _features(), cfg, stats)
    names = [f.name for f in out.factors]
    assert names[0] == "long words"                  # covers the most features
    assert set(names) <= {"long words", "bullet list", "polite tone", "cite source"}
    assert any(r["name"] == "long words!" for r in out.rejected)   # near-duplicate: not novel
    assert out.covered_share >= 0.7
    assert len(out.rounds) == 1                      # rho reached in the first round
    assert out.coverage["long words"] == list(range(6))
    assert stats["G_construct"].calls == 1 and stats["G_assign"].calls == 14


async def test_vague_candidates_fall_back_to_representatives_and_are_recorded():
    ScriptedDiscoverProvider.vague_only = True
    try:
        client = Client(make_provider("test-discover-script", "x"))
        cfg = DiscoverConfig(clusters=4, max_factors=5, iterations=1, tau=0.9, rho=0.7)
        out = await discover_factors(client, BagOfWords(), _features(), cfg, {})
        assert not any(f.name == "relevance" for f in out.candidates)   # dropped as vague
        assert out.rounds[0]["candidates_from_representatives"]
        assert out.factors and out.covered_share > 0
        nofb = await discover_factors(client, BagOfWords(), _features(),
                                      DiscoverConfig(clusters=4, iterations=1,
                                                     rep_fallback=False), {})
        assert nofb.factors == []
    finally:
        ScriptedDiscoverProvider.vague_only = False
