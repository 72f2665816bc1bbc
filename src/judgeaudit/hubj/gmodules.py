"""The HUB-J LLM modules as async calls: request (prompts), strict JSON (llmjson), validation.

Every function takes the `Client` of the model playing that module (any provider, cached,
concurrent) and a `JSONStats` that counts strict/repaired/retried/failed answers per module.
A failed answer is returned as None (or dropped from a list) and counted, never replaced by a
default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from judgeaudit.hubj import prompts as P
from judgeaudit.hubj.llmjson import JSONStats, call_json, record_failure
from judgeaudit.hubj.prompts import Factor, Feature
from judgeaudit.llm import CallFailed, Client
from judgeaudit.perturb.rewrite import strip_wrapper

# Labels that explain nothing about a judge's deviation (the issue: no "better quality").
VAGUE = re.compile(
    r"^(?:(?:better|higher|more|overall|general|good|greater)\s+)*(?:quality|helpful(?:ness)?|"
    r"accura(?:te|cy)|correct(?:ness)?|relevan(?:t|ce)|useful(?:ness)?|better|good|clarity|"
    r"clear|fluen(?:t|cy)|coheren(?:t|ce)|precis(?:e|ion)|effective(?:ness)?)$",
    re.IGNORECASE)


def _text(obj: Mapping[str, Any], key: str, limit: int = 400) -> str:
    v = obj.get(key)
    if not isinstance(v, str) or not v.strip():
        raise ValueError(f"field {key!r} must be a non-empty string")
    return " ".join(v.split())[:limit]


def is_vague(name: str) -> bool:
    return bool(VAGUE.match(name.strip().strip(".").lower()))


async def g_extract(client: Client, item_id: str, prompt: str, judge_preferred: str,
                    human_preferred: str, stats: JSONStats, max_features: int = 3
                    ) -> list[Feature]:
    def validate(obj: dict[str, Any]) -> list[Feature]:
        feats = obj.get("features")
        if not isinstance(feats, list):
            raise ValueError("'features' must be a list")
        out = []
        for f in feats[:max_features]:
            if not isinstance(f, dict):
                raise ValueError("each feature must be an object")
            name = _text(f, "name", 80)
            if is_vague(name):
                continue
            out.append(Feature(item_id, name, _text(f, "reason"), _text(f, "definition")))
        return out

    req = P.extract_request(item_id, prompt, judge_preferred, human_preferred, max_features)
    got = await call_json(client, req, validate, stats)
    return got or []


async def g_construct(client: Client, representatives: Sequence[str],
                      previous: Sequence[Factor], stats: JSONStats, max_factors: int = 4
                      ) -> list[Factor]:
    def validate(obj: dict[str, Any]) -> list[Factor]:
        fs = obj.get("factors")
        if not isinstance(fs, list):
            raise ValueError("'factors' must be a list")
        out = []
        for f in fs[:max_factors]:
            if not isinstance(f, dict):
                raise ValueError("each factor must be an object")
            name = _text(f, "name", 80)
            if not is_vague(name):
                out.append(Factor(name.lower(), _text(f, "definition")))
        return out

    got = await call_json(client, P.construct_request(representatives, previous, max_factors),
                          validate, stats)
    return got or []


async def g_assign(client: Client, feature: str, factors: Sequence[Factor],
                   stats: JSONStats) -> int | None:
    """1-based index of the factor the feature belongs to, 0 = none, None = no answer."""
    n = len(factors)

    def validate(obj: dict[str, Any]) -> int:
        k = obj.get("factor")
        if isinstance(k, str) and k.strip().isdigit():
            k = int(k.strip())
        if not isinstance(k, int) or isinstance(k, bool) or not 0 <= k <= n:
            raise ValueError(f"'factor' must be a whole number 0..{n}, got {k!r}")
        return k

    return await call_json(client, P.assign_request(feature, factors), validate, stats,
                           close=P.G_ASSIGN.close)


async def g_score(client: Client, item_id: str, prompt: str, response: str, factor: Factor,
                  criteria: Mapping[int, str], stats: JSONStats) -> int | None:
    def validate(obj: dict[str, Any]) -> int:
        s = obj.get("score")
        if isinstance(s, str) and s.strip().isdigit():
            s = int(s.strip())
        if isinstance(s, float) and s.is_integer():
            s = int(s)
        if not isinstance(s, int) or isinstance(s, bool) or not 1 <= s <= 5:
            raise ValueError(f"'score' must be a whole number 1..5, got {s!r}")
        return s

    return await call_json(client, P.score_request(item_id, prompt, response, factor, criteria),
                           validate, stats, close=P.G_SCORE.close)


async def g_crit(client: Client, factor: Factor, stats: JSONStats) -> dict[int, str] | None:
    def validate(obj: dict[str, Any]) -> dict[int, str]:
        levels = obj.get("levels", obj)
        if not isinstance(levels, dict):
            raise ValueError("expected an object with keys '1'..'5'")
        return {k: _text(levels, str(k), 300) for k in range(1, 6)}

    return await call_json(client, P.crit_request(factor), validate, stats)


async def g_inj(client: Client, item_id: str, prompt: str, text: str, factor: Factor,
                criteria: Mapping[int, str], level: int, stats: JSONStats,
                mode: str = "rewrite") -> str | None:
    """The rewritten text (plain-text module: see prompts), or None when the call failed or
    came back empty/unchanged (counted as failed). mode="append": the model writes only the
    sentences to add, and the rewrite is the original followed by them."""
    stats.calls += 1
    req = P.inject_request(prompt, text, factor, criteria, level, item_id=item_id, mode=mode)
    try:
        resp = await client.call(req)
    except CallFailed as exc:
        if exc.fatal:
            raise
        record_failure(stats, req, str(exc), "call failed", call_error=True)
        return None
    out = strip_wrapper(resp.text, text)
    m = re.search(r"</?text>", out)
    if m:  # the model echoed the input's tags: keep what is between/after them
        out = re.sub(r"</?text>", "", out).strip()
    if mode == "append" and out.strip():
        out = text.rstrip() + " " + out.strip()
    if not out.strip() or out.strip() == text.strip():
        record_failure(stats, req, resp.text, "empty or unchanged rewrite")
        return None
    stats.strict += 1
    return out


async def g_check(client: Client, item_id: str, prompt: str, original: str, rewritten: str,
                  stats: JSONStats) -> bool | None:
    """True if the rewritten text gives the same answer as the original."""
    def validate(obj: dict[str, Any]) -> bool:
        v = str(obj.get("same_answer", "")).strip().lower()
        if v not in ("yes", "no"):
            raise ValueError(f"'same_answer' must be 'yes' or 'no', got {v!r}")
        return v == "yes"

    return await call_json(client, P.check_request(item_id, prompt, original, rewritten),
                           validate, stats, close=P.G_CHECK.close)


__all__ = ["VAGUE", "g_assign", "g_check", "g_construct", "g_crit", "g_extract", "g_inj",
           "g_score", "is_vague"]
