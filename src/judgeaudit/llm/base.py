"""The provider contract: one request/response shape for every model behind the client.

A provider turns a `Request` into a `Response` and knows nothing of caching, retries or
concurrency; `judgeaudit.llm.client.Client` adds those around every provider alike.
"""

from __future__ import annotations

import abc
import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class Request:
    """One model call.

    `messages` is the full chat prompt. `prefill` is text the assistant turn starts with
    (local models continue from it; chat APIs get it appended as a partial assistant turn
    where they support that, else it is folded into the last user message).
    `choices` asks for the probability of each option as the next token (pairwise verdicts
    from one forward pass, or logprobs from an API); generation still returns `text`.
    `meta` carries structured facts that non-text providers need (replay: item id and
    presentation order; sim: the texts shown and their latent quality). It is part of the
    cache key, so two calls differing only in meta are never confused.
    `repeat` distinguishes deliberate repeats of the same call (a noise-floor measurement
    is a new call, not a cache hit).
    """

    messages: tuple[Message, ...]
    max_tokens: int = 16
    temperature: float = 0.0
    prefill: str = ""
    choices: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    repeat: int = 0

    def key_material(self, include_meta: bool = True) -> dict[str, Any]:
        return {
            "messages": [asdict(m) for m in self.messages],
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "prefill": self.prefill,
            "choices": list(self.choices),
            "meta": self.meta if include_meta else None,
            "repeat": self.repeat,
        }


@dataclass
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class Response:
    """What a provider returns. `probs` maps each requested choice to its probability
    (renormalised over the choices) when the provider could compute it, else None."""

    text: str
    probs: dict[str, float] | None = None
    usage: Usage = field(default_factory=Usage)
    cached: bool = False
    raw: dict[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(
            {"text": self.text, "probs": self.probs, "usage": asdict(self.usage), "raw": self.raw}
        )

    @classmethod
    def from_json(cls, s: str) -> Response:
        d = json.loads(s)
        return cls(
            text=d["text"], probs=d.get("probs"), usage=Usage(**d.get("usage", {})),
            raw=d.get("raw"), cached=True,
        )


class ProviderError(Exception):
    """A failure the client should classify: `retryable` errors are retried with backoff."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after


class FatalProviderError(ProviderError):
    """Authentication, bad request, missing record: retrying cannot help."""

    def __init__(self, message: str):
        super().__init__(message, retryable=False)


class Provider(abc.ABC):
    """A model behind one async call. Subclasses register themselves by `name`.

    `params` are the user's spec parameters (e.g. base_url, temperature); those listed in
    `secret_params` are never part of the cache key or any output.
    """

    name: ClassVar[str]
    secret_params: ClassVar[frozenset[str]] = frozenset({"api_key"})
    # Parameters that change how a call is made, not what it returns (timeouts, pool sizes,
    # prices): left out of the cache key so changing them does not invalidate the cache.
    operational_params: ClassVar[frozenset[str]] = frozenset()
    # Providers that read `Request.meta` (replay, sim) have it in their cache key; text
    # providers do not, so adding a label to a dataset does not invalidate their cache.
    uses_meta: ClassVar[bool] = False
    # Same request -> same output (local logits at temperature 0, recorded verdicts): a
    # repeat measures nothing, so the consistency floor needs no extra calls.
    deterministic: ClassVar[bool] = False
    # Default bound on concurrent calls; the user's --concurrency overrides it.
    default_concurrency: ClassVar[int] = 8
    # Price per million tokens (prompt, completion), where known, for cost accounting.
    price_per_mtok: ClassVar[tuple[float, float] | None] = None

    def __init__(self, model: str, params: dict[str, str] | None = None):
        self.model = model
        self.params = dict(params or {})

    @abc.abstractmethod
    async def generate(self, request: Request) -> Response:
        """Run one call. Raise ProviderError for failures the client should classify."""

    def cache_identity(self) -> dict[str, Any]:
        """What identifies this provider's outputs: name, model, non-secret parameters."""
        public = {k: v for k, v in sorted(self.params.items())
                  if k not in self.secret_params and k not in self.operational_params}
        return {"provider": self.name, "model": self.model, "params": public}

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default has nothing to release."""


def request_key(provider: Provider, request: Request) -> str:
    """Cache key: sha256 over provider identity and the full request."""
    material = {"id": provider.cache_identity(), "req": request.key_material(provider.uses_meta)}
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
