"""`sim`: a simulated judge with planted biases, so every estimator can be checked against a
known truth. Local, instant, seeded and deterministic.

Spec: `sim[:PRESET]?quality=3&position=0.8&length=1&noise=1&seed=0&...` (parameters override
the preset; presets: see PRESETS).

Pairwise model (reads Request.meta; A = the response shown first):
    z = quality * (q_A - q_B) + position + sum_m c_m * d_m
    verdict = "A" iff z + noise * eps > 0,  eps ~ Logistic(0, 1) drawn per call
so P(verdict A) = sigmoid(z / noise) (sigmoid(z) at the default noise=1; noise=0 is the
deterministic argmax, an exact tie broken by a seeded coin).
- q: meta["quality"] (shown order); else meta["label"] mapped to shown order (better = 1,
  worse = 0, tie = equal); else no quality difference.
- d_m = x_m(A) - x_m(B) from judgeaudit.llm.features.pair_differences on the text actually
  shown (meta["shown"], meta["prompt"]): `length` = log((1 + words_A) / (1 + words_B)),
  `markdown`, `authority`, `confidence`, `sentiment`, `self` per-text scores, `bandwagon` = +1/-1
  when a crowd claim in the prompt names A/B, `injection` = +1/-1 per injected instruction
  pushing toward A/B. The coefficient c_m has the parameter's name.
- eps comes from sha256(seed, item_id, order, Request.repeat, prompt, shown texts): the same
  call gives the same verdict, a repeat is a fresh draw, and any change to the shown text is a
  fresh draw too (as for a real judge). `crn=1` (common random numbers) keys the draw on seed,
  item, order and repeat only, so a perturbation moves a verdict only through the planted
  coefficients.
- Returned probs (`probs=noisy`, default): {"A": sigmoid(z + noise * eps), "B": 1 - that}: the
  per-call confidence, whose argmax is the returned text (the judge layer reads probs first).
  `probs=none` returns text only. Response.raw holds z, P(verdict A) and every term.
- `invalid=0.05`: that share of calls (own seeded draw) answers "I cannot decide", no probs.

Pointwise model (meta task "pointwise", K = len(meta["score_ids"]), default 5 ids):
    s = 1 + (K - 1) * sigmoid(quality * (q - 0.5)) + sum_m c_m * x_m(response)
        + score_noise * N(0, 1)
    score = clip(floor(s + 0.5), 1, K)  ->  text = score_ids[score - 1]
with q = meta["quality"] (the base is the middle (K + 1) / 2 when q is unknown), the length
covariate log((1 + words) / (1 + ref_words)) where ref_words = words of meta["reference"] if
given else `length_ref` (default 100), no position or bandwagon term. Text only, no probs.
Scoring-prompt sensitivities (planted truths for `judgeaudit scoring-bias`), applied to s
before the noise, in this order:
    s += order_bias   when meta["rubric_order"] == "descending" (rubric listed K..1)
    s += id_bias      when the score ids are not the numerals 1..K (letters, roman, ...)
    s += ref_pull * (meta["reference_score"] - s)   when a reference with a score is shown
(`ref_pull` in [0, 1]: 0 = ignores the reference's score, 1 = copies it). Without `crn`, the
noise draw of a pointwise call whose prompt variant differs from the baseline (rubric order,
ids, reference; meta["variant"] other than "baseline") is keyed on those too: a different
prompt is a fresh draw, as for a real judge; with `crn=1` only the planted terms move it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from statistics import NormalDist
from typing import Any, ClassVar

from judgeaudit.llm import features
from judgeaudit.llm.base import FatalProviderError, Provider, Request, Response, check_params
from judgeaudit.llm.registry import register

SIM_VERSION = "sim-v1"
COEFFICIENTS: tuple[str, ...] = features.COVARIATES
DEFAULTS: dict[str, float] = {
    "quality": 3.0, "position": 0.0, **dict.fromkeys(COEFFICIENTS, 0.0),
    "noise": 1.0, "seed": 0.0, "invalid": 0.0, "score_noise": 0.5, "crn": 0.0, "length_ref": 100.0,
    "ref_pull": 0.0, "order_bias": 0.0, "id_bias": 0.0,
}
# Named judges; spec parameters override them.
PRESETS: dict[str, dict[str, float]] = {
    "default": {},
    "unbiased": {},
    "positional": {"position": 1.0},
    "verbose": {"length": 1.0},
    "gullible": {"authority": 1.0, "bandwagon": 1.5, "injection": 3.0},
    # A bit of everything, with magnitudes like those reported for real judges.
    "biased": {"position": 0.5, "length": 0.7, "markdown": 0.4, "authority": 0.5,
               "bandwagon": 0.8, "injection": 1.5, "confidence": 0.3, "sentiment": 0.2,
               "self": 0.5},
}
INVALID_TEXT = "I cannot decide"

# Every spec parameter, with its meaning and default (the preset's value wins over these).
KNOWN_PARAMS: dict[str, str] = {
    "quality": "logit per unit of latent quality difference (default 3)",
    "position": "logit bonus of the response shown first (default 0)",
    **{m: f"coefficient of the {m} covariate difference (default 0)" for m in COEFFICIENTS},
    "noise": "scale of the logistic noise per call; 0 = deterministic (default 1)",
    "seed": "seed of the per-call draws (default 0)",
    "invalid": "share of calls answering 'I cannot decide', 0 <= x < 1 (default 0)",
    "score_noise": "sd of the normal noise on pointwise scores (default 0.5)",
    "crn": "1: common random numbers, draws keyed on item/order/repeat only (default 0)",
    "length_ref": "reference length in words for the pointwise length covariate (default 100)",
    "ref_pull": "pull of a shown reference's score on pointwise scores, 0-1 (default 0)",
    "order_bias": "pointwise score shift when the rubric is listed descending (default 0)",
    "id_bias": "pointwise score shift when score ids are not 1..K (default 0)",
    "probs": "noisy: return the per-call probabilities; none: text only (default noisy)",
}


def sigmoid(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    e = math.exp(x)
    return e / (1.0 + e)


def _shown_quality(meta: dict[str, Any]) -> tuple[float, float] | None:
    q = meta.get("quality")
    if q is not None:
        if len(q) != 2:
            raise FatalProviderError(f"sim: meta['quality'] must be [q_A, q_B], got {q!r}")
        return float(q[0]), float(q[1])
    label, order = meta.get("label"), meta.get("order", "12")
    if label in (None, ""):
        return None
    label = int(label)
    if label == 0:
        return 0.0, 0.0
    first_better = (label == 1) == (order == "12")
    return (1.0, 0.0) if first_better else (0.0, 1.0)


@register
class SimProvider(Provider):
    """Bradley-Terry on latent quality plus planted covariate and position effects."""

    name: ClassVar[str] = "sim"
    uses_meta: ClassVar[bool] = True
    default_concurrency: ClassVar[int] = 64
    known_params: ClassVar[dict[str, str] | None] = KNOWN_PARAMS

    def __init__(self, model: str = "default", params: dict[str, str] | None = None):
        check_params(self.name, params or {}, self.known_params or KNOWN_PARAMS, label="sim")
        super().__init__(model or "default", params)
        if self.model not in PRESETS:
            raise ValueError(f"unknown sim preset {self.model!r}; presets: {', '.join(PRESETS)}")
        values = {**DEFAULTS, **PRESETS[self.model]}
        self.probs_mode = "noisy"
        for k, v in self.params.items():
            if k == "probs":
                if v not in {"noisy", "none"}:
                    raise ValueError(f"sim parameter probs={v!r}: expected 'noisy' or 'none'")
                self.probs_mode = v
                continue
            if k not in DEFAULTS:  # (check_params refused it already)
                raise ValueError(f"unknown sim parameter {k!r}; known: "
                                 f"{', '.join([*DEFAULTS, 'probs'])}")
            try:
                values[k] = float(v)
            except ValueError:
                raise ValueError(f"sim parameter {k}={v!r}: expected a number") from None
            if not math.isfinite(values[k]):
                raise ValueError(f"sim parameter {k}={v!r}: expected a finite number")
        if values["noise"] < 0 or values["score_noise"] < 0:
            raise ValueError("sim parameters noise and score_noise must be >= 0")
        if not 0 <= values["invalid"] < 1:
            raise ValueError(f"sim parameter invalid={values['invalid']}: expected 0 <= x < 1")
        if not 0 <= values["ref_pull"] <= 1:
            raise ValueError(f"sim parameter ref_pull={values['ref_pull']}: expected 0 <= x <= 1")
        if values["length_ref"] < 0:
            raise ValueError("sim parameter length_ref must be >= 0 (words)")
        if values["seed"] < 0 or values["seed"] != int(values["seed"]):  # as --seed is
            raise ValueError(f"sim parameter seed={values['seed']:g}: expected a whole "
                             "number >= 0")
        self.values = values
        self.seed = int(values["seed"])
        self.crn = bool(values["crn"])

    # ---- the planted truth -------------------------------------------------------------------

    def truth(self) -> dict[str, Any]:
        """Every planted value: `quality` (beta_q), `position` (kappa, log-odds for the first
        shown), one coefficient per covariate, and the noise settings."""
        return {**self.values, "seed": self.seed, "crn": self.crn, "probs": self.probs_mode,
                "preset": self.model, "version": SIM_VERSION}

    def cache_identity(self) -> dict[str, Any]:
        return {"provider": self.name, "model": self.model, "params": self.truth()}

    def logit(self, meta: dict[str, Any]) -> tuple[float, dict[str, float]]:
        """z (log-odds of A before noise) and its terms, for a pairwise request's meta."""
        shown = meta.get("shown")
        if not shown or len(shown) != 2:
            raise FatalProviderError(
                f"sim needs Request.meta['shown'] = [text A, text B] (item "
                f"{meta.get('item_id')!r}); build requests with judgeaudit.judges")
        q = _shown_quality(meta)
        terms: dict[str, float] = {
            "quality": self.values["quality"] * (q[0] - q[1]) if q else 0.0,
            "position": self.values["position"],
        }
        diffs = features.pair_differences(str(meta.get("prompt") or ""), shown[0], shown[1])
        for m in COEFFICIENTS:
            if self.values[m]:
                terms[m] = self.values[m] * diffs[m]
        return sum(terms.values()), terms

    def prob_first(self, meta: dict[str, Any]) -> float:
        """P(verdict = A) for this request, ignoring `invalid`: sigmoid(z / noise)."""
        z, _ = self.logit(meta)
        s = self.values["noise"]
        if s == 0:
            return 1.0 if z > 0 else 0.0 if z < 0 else 0.5
        return sigmoid(z / s)

    # ---- randomness --------------------------------------------------------------------------

    def _uniforms(self, request: Request, n: int = 3) -> list[float]:
        """n independent uniforms in (0, 1), a pure function of the call."""
        meta = request.meta
        key: list[Any] = [SIM_VERSION, self.seed, meta.get("task"), meta.get("item_id"),
                          meta.get("order"), request.repeat]
        if not self.crn:
            key += [meta.get("prompt"), meta.get("shown"), meta.get("response")]
            if meta.get("variant") not in (None, "baseline"):
                key += [meta.get("variant"), meta.get("rubric_shown"), meta.get("score_ids"),
                        meta.get("reference"), meta.get("reference_score")]
        digest = hashlib.sha256(
            json.dumps(key, ensure_ascii=False, default=str).encode("utf-8")).digest()
        return [(int.from_bytes(digest[8 * i: 8 * i + 8], "big") + 0.5) / 2**64
                for i in range(n)]

    # ---- calls -------------------------------------------------------------------------------

    async def generate(self, request: Request) -> Response:
        meta = request.meta or {}
        task = meta.get("task", "pairwise")
        if task == "pairwise":
            return self._pairwise(request)
        if task == "pointwise":
            return self._pointwise(request)
        if task == "binary":
            return self._binary(request)
        raise FatalProviderError(str(self.cannot_serve(meta)))

    def cannot_serve(self, meta: Mapping[str, Any]) -> str | None:
        task = meta.get("task", "pairwise")
        if task in ("pairwise", "pointwise", "binary"):
            return None
        return f"sim cannot serve task {task!r} (only pairwise, pointwise, binary)"

    def _pairwise(self, request: Request) -> Response:
        z, terms = self.logit(request.meta)
        u_noise, u_invalid, u_tie = self._uniforms(request)
        raw: dict[str, Any] = {"logit": z, "p_first": self.prob_first(request.meta),
                               "terms": terms}
        if u_invalid < self.values["invalid"]:
            return Response(text=INVALID_TEXT, probs=None, raw={**raw, "invalid": True})
        s = self.values["noise"]
        eps = math.log(u_noise / (1.0 - u_noise)) if s > 0 else 0.0
        y = z + s * eps
        p_obs = sigmoid(y)
        if y == 0:  # exact tie: a seeded coin; lean the probs so their argmax agrees
            p_obs = 0.5 + (1e-9 if u_tie < 0.5 else -1e-9)
        # Answer in the template's own labels (A/B by default, 1/2 for numeric templates).
        first, second = (request.choices[0], request.choices[1]) if len(
            request.choices) >= 2 else ("A", "B")
        text = first if p_obs > 0.5 else second
        probs = {first: p_obs, second: 1.0 - p_obs} if self.probs_mode == "noisy" else None
        return Response(text=text, probs=probs, raw=raw)

    def _binary(self, request: Request) -> Response:
        """PASS/FAIL on one response: z = quality * (q - 0.5) + sum_m c_m * x_m(response)
        (the same covariates as pairwise, on the one text); pass iff z + noise * eps > 0."""
        meta = request.meta
        q = meta.get("quality")
        text = str(meta.get("response") or "")
        cov = features.covariates(text)
        z = self.values["quality"] * (float(q) - 0.5) if q is not None else 0.0
        z += sum(self.values[m] * cov[m] for m in COEFFICIENTS if m not in ("bandwagon",
                                                                             "length"))
        u_noise, u_invalid, _ = self._uniforms(request)
        pos, neg = (request.choices[0], request.choices[1]) if len(
            request.choices) >= 2 else ("PASS", "FAIL")
        if u_invalid < self.values["invalid"]:
            return Response(text=INVALID_TEXT, raw={"logit": z, "invalid": True})
        s = self.values["noise"]
        y = z + (s * math.log(u_noise / (1.0 - u_noise)) if s > 0 else 0.0)
        return Response(text=pos if y > 0 else neg, raw={"logit": z})

    def score_mean(self, meta: dict[str, Any]) -> float:
        """The noiseless continuous score for a pointwise request."""
        ids = meta.get("score_ids") or ["1", "2", "3", "4", "5"]
        k = len(ids)
        q = meta.get("quality")
        base = (1 + (k - 1) * sigmoid(self.values["quality"] * (float(q) - 0.5))
                if q is not None else (k + 1) / 2)
        text = str(meta.get("response") or "")
        cov = features.covariates(text)
        ref = meta.get("reference")
        ref_words = features.word_count(ref) if ref else self.values["length_ref"]
        cov["length"] = math.log((1 + features.word_count(text)) / (1 + ref_words))
        shift = sum(self.values[m] * cov[m] for m in COEFFICIENTS if m != "bandwagon")
        s = base + shift
        if meta.get("rubric_order") == "descending":
            s += self.values["order_bias"]
        if [str(x) for x in ids] != [str(i) for i in range(1, k + 1)]:
            s += self.values["id_bias"]
        k_ref = meta.get("reference_score")
        if k_ref is not None:
            s += self.values["ref_pull"] * (float(k_ref) - s)
        return s

    def _pointwise(self, request: Request) -> Response:
        meta = request.meta
        ids = [str(s) for s in (meta.get("score_ids") or ["1", "2", "3", "4", "5"])]
        u_noise, u_invalid, _ = self._uniforms(request)
        mean = self.score_mean(meta)
        if u_invalid < self.values["invalid"]:
            return Response(text=INVALID_TEXT, raw={"mean": mean, "invalid": True})
        s = mean + self.values["score_noise"] * NormalDist().inv_cdf(u_noise)
        score = min(max(math.floor(s + 0.5), 1), len(ids))
        return Response(text=ids[score - 1], raw={"mean": mean, "score": score})


__all__ = ["COEFFICIENTS", "DEFAULTS", "KNOWN_PARAMS", "PRESETS", "SimProvider", "sigmoid"]
