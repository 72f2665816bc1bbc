"""Item schemas. A pairwise item is two responses to one prompt, in a canonical order
(response_1, response_2); presentation order is decided by the judge, not stored here."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# 1 or 2 = which response is better; 0 = tie. None = unknown.
Label = Literal[0, 1, 2]


def valid_text(v: Any) -> Any:
    """Text that can be stored and sent: a lone surrogate (a JSON escape such as "\\ud800"
    decodes to one) cannot be encoded as UTF-8 and would crash a cache key, a request or a
    results file, so it becomes U+FFFD, the Unicode replacement character."""
    if not isinstance(v, str):
        return v
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return v.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return v


class PairwiseItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    prompt: str
    response_1: str
    response_2: str
    label: Label | None = None
    # Individual annotator labels where the source has several (PandaLM: 3).
    annotator_labels: tuple[Label, ...] = ()
    # Latent quality of each response where known (built-in data, simulations).
    quality: tuple[float, float] | None = None
    # Model names behind the responses, where known (self-preference, compassion-fade).
    models: tuple[str, str] | None = None
    reference: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("prompt", "response_1", "response_2")
    @classmethod
    def _text(cls, v: str) -> str:
        if not isinstance(v, str):
            raise ValueError("must be text")
        return valid_text(v)

    @field_validator("id", "reference")
    @classmethod
    def _clean(cls, v: str | None) -> str | None:
        return valid_text(v)

    def better(self) -> str | None:
        return {1: self.response_1, 2: self.response_2}.get(self.label or -1)


class PointwiseItem(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1)
    prompt: str
    response: str
    # Gold score (1-5) where known, e.g. human or strong-model scores.
    score: float | None = None
    rubric: str | None = None
    # Per-score rubric descriptions, keyed "1".."5".
    rubric_levels: dict[str, str] | None = None
    reference: str | None = None
    quality: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", "prompt", "response", "rubric", "reference")
    @classmethod
    def _clean(cls, v: str | None) -> str | None:
        return valid_text(v)


Item = PairwiseItem | PointwiseItem
