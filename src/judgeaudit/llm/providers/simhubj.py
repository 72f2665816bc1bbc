"""`simhubj`: the `sim` judge plus planted per-factor sensitivities and a scripted generator,
so quantify and mitigate can be checked against a known truth.

Spec: `simhubj[:PRESET]?factor_NAME=e1,e2,e3,e4,e5&...&<any sim parameter>`.
- A text shows factor NAME at level l when it carries the marker `[[NAME@l]]` (NAME with
  underscores for spaces); `factor_levels(text)` reads them.
- Pairwise: z gains, for every planted factor, e(level of A) - e(level of B), where e(0) = 0
  and e(l) is the l-th value of `factor_NAME` (a single number c means e(l) = c * l). So the
  planted flip rate of a rewrite at level l and the planted l* (argmax of e) are known.
- Scripted modules (Request.meta["module"]): G_inj appends the marker for the requested
  factor and level to the text (an additive edit that keeps the answer); G_check answers
  "yes"; G_score reports the marked level of the factor (1 when unmarked), or with
  `score_from=length` the text's word count binned to 1-5 (so mitigate sees a score that
  depends on the text); G_crit returns generic levels. G_extract/G_construct/G_assign are not
  scripted here (tests script them with their own provider).
Everything else (quality, position, covariates, noise, seeds) is the `sim` provider's.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, ClassVar

from judgeaudit.llm.base import FatalProviderError, Request, Response
from judgeaudit.llm.features import spaced_word_count
from judgeaudit.llm.providers.sim import KNOWN_PARAMS as SIM_PARAMS
from judgeaudit.llm.providers.sim import SimProvider
from judgeaudit.llm.registry import register

# The G-modules `generate` answers (the others need a model that writes text).
SCRIPTED = frozenset({"G_inj", "G_inj_append", "G_check", "G_score", "G_crit"})
MARK = re.compile(r"\[\[([A-Za-z0-9_\-]+)@([1-5])\]\]")


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9\-]+", "_", name.strip().lower()).strip("_")


def marker(name: str, level: int) -> str:
    return f"[[{slug(name)}@{int(level)}]]"


def factor_levels(text: str) -> dict[str, int]:
    """{factor slug: level} of the markers in a text (the highest level if repeated)."""
    out: dict[str, int] = {}
    for m in MARK.finditer(text or ""):
        out[m.group(1)] = max(out.get(m.group(1), 0), int(m.group(2)))
    return out


def parse_effects(name: str, value: str) -> tuple[float, ...]:
    """'0.5,1,2,1,0' -> five per-level logit shifts; '0.7' -> 0.7 * level."""
    parts = [p for p in value.split(",") if p.strip()]
    try:
        nums = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"simhubj parameter factor_{name}={value!r}: expected one number or "
                         "five comma-separated numbers") from None
    if len(nums) == 1:
        return tuple(nums[0] * lvl for lvl in range(1, 6))
    if len(nums) != 5 or not all(math.isfinite(x) for x in nums):
        raise ValueError(f"simhubj parameter factor_{name}={value!r}: expected 5 finite "
                         f"numbers (levels 1-5), got {len(nums)}")
    return tuple(nums)


def _length_level(text: str) -> int:
    w = spaced_word_count(text)
    return 1 if w < 30 else 2 if w < 80 else 3 if w < 150 else 4 if w < 300 else 5


@register
class SimHubjProvider(SimProvider):
    name: ClassVar[str] = "simhubj"
    # factor_NAME stands for any factor_<name> (taken before the sim parameters are checked).
    known_params: ClassVar[dict[str, str] | None] = {
        **SIM_PARAMS,
        "factor_NAME": "per-level logit shifts of factor NAME: 5 comma-separated numbers, or "
                       "one number c meaning c * level (default: no planted factors)",
        "score_from": "G_score answers from the factor marker or the text length "
                      "(marker|length, default marker)",
    }

    def __init__(self, model: str = "default", params: dict[str, str] | None = None):
        params = dict(params or {})
        self.effects: dict[str, tuple[float, ...]] = {}
        for k in [k for k in params if k.startswith("factor_")]:
            fname = slug(k[len("factor_"):])
            if not fname:
                raise ValueError(f"simhubj parameter {k!r}: no factor name after factor_")
            self.effects[fname] = parse_effects(fname, params.pop(k))
        self.score_from = params.pop("score_from", "marker")
        if self.score_from not in ("marker", "length"):
            raise ValueError(f"simhubj parameter score_from={self.score_from!r}: expected "
                             "marker or length")
        super().__init__(model, params)

    def truth(self) -> dict[str, Any]:
        return {**super().truth(), "factors": {k: list(v) for k, v in self.effects.items()},
                "score_from": self.score_from, "hubj": "simhubj-v1"}

    def effect(self, factor: str, level: int) -> float:
        e = self.effects.get(slug(factor))
        return 0.0 if e is None or level <= 0 else e[level - 1]

    def logit(self, meta: dict[str, Any]) -> tuple[float, dict[str, float]]:
        z, terms = super().logit(meta)
        if self.effects:
            la, lb = (factor_levels(t) for t in meta["shown"])
            for f in self.effects:
                d = self.effect(f, la.get(f, 0)) - self.effect(f, lb.get(f, 0))
                if d:
                    terms[f"factor:{f}"] = d
                    z += d
        return z, terms

    async def generate(self, request: Request) -> Response:
        meta = request.meta or {}
        module = meta.get("module")
        if module is None:
            return await super().generate(request)
        if module in ("G_inj", "G_inj_append"):
            text = str(meta.get("text", ""))
            mark = marker(str(meta["factor"]), int(meta["level"]))
            # mode "append": only the added material comes back
            return Response(text=mark if meta.get("mode") == "append" else f"{text} {mark}")
        if module == "G_check":
            return Response(text="yes", probs={"yes": 1.0, "no": 0.0} if request.choices
                            else None)
        if module == "G_score":
            resp = str(meta.get("response", ""))
            if self.score_from == "length":
                lvl = _length_level(resp)
            else:
                lvl = factor_levels(resp).get(slug(str(meta.get("factor", ""))), 0) or 1
            return Response(text=f"{lvl}}}")
        if module == "G_crit":
            levels = {str(k): f"level {k} of {meta.get('factor')}" for k in range(1, 6)}
            return Response(text=json.dumps(levels)[len('{"1": "'):])
        raise FatalProviderError(str(self.cannot_serve(meta)))

    def cannot_serve(self, meta: Mapping[str, Any]) -> str | None:
        module = meta.get("module")
        if module is None:
            return super().cannot_serve(meta)
        if module in SCRIPTED:
            return None
        return (f"simhubj does not script module {module!r} (only "
                f"{', '.join(sorted(SCRIPTED))})")


__all__ = ["MARK", "SimHubjProvider", "factor_levels", "marker", "parse_effects", "slug"]
