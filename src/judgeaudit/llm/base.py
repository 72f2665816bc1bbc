"""The provider contract: one request/response shape for every model behind the client.

A provider turns a `Request` into a `Response` and knows nothing of caching, retries or
concurrency; `judgeaudit.llm.client.Client` adds those around every provider alike.
"""

from __future__ import annotations

import abc
import difflib
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar, Literal

Role = Literal["system", "user", "assistant"]

# What a failed attempt was, as counted in `CallStats.errors` (set by each provider's error
# classifier on `ProviderError.kind`; the client adds "timeout" for its own timeout).
ERROR_KINDS: tuple[str, ...] = (
    "rate_limit",   # HTTP 429
    "server",       # HTTP 5xx
    "timeout",      # no answer in time (client or HTTP timeout, HTTP 408)
    "connection",   # refused, reset or dropped connection
    "malformed",    # a 200 whose body is not the expected JSON (HTML, truncated, no choices)
    "auth",         # HTTP 401/403, no API key, an account out of credit
    "bad_request",  # HTTP 400/404/422 and other 4xx
    "too_long",     # HTTP 400/413/422 saying this prompt is over the model's context
    "refused",      # HTTP 400/422 from a content filter refusing this prompt
    "not_recorded",  # a replay file has no verdict or score for this item (or order)
    "other",        # anything else (HTTP 409/425, provider-specific failures)
)


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


# Characters per token where tokens are estimated, not counted (a plan's estimate; a server
# that sends no usage): about 4 for English text under the GPT and Qwen tokenizers. A rule of
# thumb, not a count: code and other languages take more tokens per character.
CHARS_PER_TOKEN = 4


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
    # Why this answer cannot be used as one although the call succeeded (set by the client:
    # a response over the size cap); judges treat it as invalid with this reason.
    invalid: str | None = None

    def to_json(self) -> str:
        d: dict[str, Any] = {"text": self.text, "probs": self.probs,
                             "usage": asdict(self.usage), "raw": self.raw}
        if self.invalid is not None:
            d["invalid"] = self.invalid
        return json.dumps(d)

    @classmethod
    def from_json(cls, s: str) -> Response:
        d = json.loads(s)
        return cls(
            text=d["text"], probs=d.get("probs"), usage=Usage(**d.get("usage", {})),
            raw=d.get("raw"), cached=True, invalid=d.get("invalid"),
        )


def unusable_answer(text: str, stop: str | None, written: int, *, field: str = "finish_reason",
                    refusal: str | None = None) -> str | None:
    """Why an answer the server sent (HTTP 200) holds no verdict, in words the user can act
    on; None when it may hold one. `stop` is why generation stopped (`field` names it as the
    API does: finish_reason, stop_reason), `refusal` the refusal text OpenAI sends apart."""
    if refusal:
        return f"the model refused to answer: {refusal[:200]}"
    if stop in ("content_filter", "refusal"):
        return (f"the answer was withheld ({field} {stop}): the model or the server's content "
                "filter refused this prompt")
    if not text.strip() and stop in ("length", "max_tokens"):
        # A reasoning model that spent the whole budget thinking: say so where the verdict
        # is shown, not a bare empty answer.
        return (f"no answer within the token limit ({written} tokens written, {field} {stop}): "
                "a reasoning model spends them thinking first; give it room with "
                "max_tokens=2000 in the judge spec")
    return None


# The reason of an answer with no text that stopped on its own (`no_verdict_why`).
EMPTY_ANSWER = "empty answer"


def stopped_at_limit(resp: Response) -> bool:
    """True when generation stopped at the token limit (OpenAI finish_reason "length",
    Anthropic stop_reason "max_tokens"): such an answer may have been cut before its
    verdict, and a judge says so rather than calling it unreadable."""
    raw = resp.raw if isinstance(resp.raw, dict) else {}
    return any(raw.get(f) in ("length", "max_tokens") for f in ("finish_reason", "stop_reason"))


def no_verdict_why(resp: Response, max_tokens: int | None = None) -> str | None:
    """Why an answer that gave no verdict gave none, when its shape says so: "cut at
    max_tokens (N)" (N the limit sent, `limit_sent`, else the tokens written) or "empty answer";
    None for an answer with text that simply could not be read. A cut answer was recorded
    with no reason unless it happened to be the run's first unreadable one."""
    if stopped_at_limit(resp):
        return f"cut at max_tokens ({max_tokens or resp.usage.completion_tokens})"
    if not resp.text.strip():
        return EMPTY_ANSWER
    return None


def limit_sent(provider: Any, request: Request) -> int:
    """The token limit the server was sent: the judge spec's `max_tokens` (a provider's
    override, room for a reasoning model), else the request's. A cut answer named the
    request's 384 under max_tokens=4000."""
    override = getattr(provider, "max_tokens", None)
    return override if isinstance(override, int) and override > 0 else request.max_tokens


def cut_reason(reason: str, resp: Response, max_tokens: int | None = None) -> str:
    """`reason` (why an answer gives no verdict) saying that the answer was cut at the token
    limit when it was (finish_reason "length", stop_reason "max_tokens"): a verdict cut
    short ("The better response is Response") read as a plain unparseable answer, and only
    an empty cut answer named the limit (`unusable_answer`). `max_tokens`: the request's."""
    raw = resp.raw if isinstance(resp.raw, dict) else {}
    field = next((f for f in ("finish_reason", "stop_reason")
                  if raw.get(f) in ("length", "max_tokens")), None)
    if field is None or "token limit" in reason:
        return reason
    of = f" of max_tokens={max_tokens}" if max_tokens else ""
    room = (f"max_tokens={max(64, 4 * max_tokens)}" if max_tokens else "a larger max_tokens")
    return (f"{reason} (cut at the token limit: {resp.usage.completion_tokens} tokens "
            f"written{of}, {field} {raw[field]}; give it room with {room} in the judge spec)")


class ProviderError(Exception):
    """A failure the client should classify: `retryable` errors are retried with backoff,
    others fail the call at once (and stop the client: see `Client`). `kind` is one of
    `ERROR_KINDS`, for the per-kind failure counts."""

    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None,
                 kind: str = "other"):
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.kind = kind if kind in ERROR_KINDS else "other"


class FatalProviderError(ProviderError):
    """Authentication, bad request, missing record: retrying cannot help."""

    def __init__(self, message: str, *, kind: str = "other"):
        super().__init__(message, retryable=False, kind=kind)


class RequestRejected(ProviderError):
    """The server refused this one request (a prompt over the model's context, or one its
    content filter blocks): retrying it cannot help, but other requests can still succeed,
    so only this call fails."""

    def __init__(self, message: str, *, kind: str = "too_long"):
        super().__init__(message, retryable=False, kind=kind)


# How servers say a prompt is over the model's context, in a 400/422: OpenAI and vLLM
# ("This model's maximum context length is 4096 tokens"), llama.cpp ("the request exceeds the
# available context size", exceed_context_size_error), Anthropic ("prompt is too long: N
# tokens > M maximum"), TGI ("`inputs` tokens + `max_new_tokens` must be <= 4096").
_TOO_LONG = re.compile(
    r"context[ _](length|size|window)|prompt is too long|input is too long|too many tokens|"
    r"exceed_context_size|tokens \+ `?max_new_tokens`? must be <=", re.IGNORECASE)
# How they say a content filter refused the prompt: Azure OpenAI (code content_filter, "the
# prompt triggering Azure OpenAI's content management policy"), OpenAI (code invalid_prompt,
# "flagged as potentially violating our usage policy").
_REFUSED = re.compile(r"content_filter|content management policy|violating our usage policy",
                      re.IGNORECASE)
# How they say the account is out of credit (OpenAI sends it as a 429 that waiting cannot
# cure: insufficient_quota; Anthropic as a 400).
_NO_CREDIT = re.compile(r"insufficient_quota|exceeded your current quota|"
                        r"credit balance is too low", re.IGNORECASE)


def http_error_kind(status: int, message: str = "") -> tuple[str, bool]:
    """(kind, retryable) of an HTTP error answer, by its status and the server's message
    (with its error code, when it sent one). 429, 408/409/425 and 5xx are worth retrying,
    except a 429 saying the account is out of credit ("auth", as a 402); a 413, or a
    400/422 whose message says the prompt is over the model's context, is "too_long", and
    one from a content filter "refused": both concern that request alone
    (`PER_REQUEST_KINDS`)."""
    if status == 402 or (status in (400, 429) and _NO_CREDIT.search(message)):
        return "auth", False
    if status == 429:
        return "rate_limit", True
    if status >= 500:
        return "server", True
    if status == 408:
        return "timeout", True
    if status in (409, 425):
        return "other", True
    if status == 413 or (status in (400, 422) and _TOO_LONG.search(message)):
        return "too_long", False
    if status in (400, 422) and _REFUSED.search(message):
        return "refused", False
    if status in (401, 403):
        return "auth", False
    return "bad_request", False


# Kinds of refusal that concern one request only: other requests can still succeed.
PER_REQUEST_KINDS = frozenset({"too_long", "refused"})


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
    # Answers only what it recorded, for the texts it recorded (replay): a probe that judges
    # rewritten texts cannot run on it (`audit.battery.cannot_judge`).
    recorded_only: ClassVar[bool] = False
    # Default bound on concurrent calls; the user's --concurrency overrides it.
    default_concurrency: ClassVar[int] = 8
    # Price per million tokens (prompt, completion), where known, for cost accounting.
    price_per_mtok: ClassVar[tuple[float, float] | None] = None
    # Calls may cost money (a hosted API, a server not on this machine): a spend cap
    # (`--max-cost`) then needs `price_per_mtok`.
    billed: ClassVar[bool] = False
    # The spec parameters this provider reads: name -> one line with its meaning and default.
    # When set, any other parameter is refused at construction (a typo such as `timout`
    # would otherwise be ignored silently); None accepts anything (the provider checks).
    known_params: ClassVar[dict[str, str] | None] = None

    def __init__(self, model: str, params: dict[str, str] | None = None):
        self.model = model
        self.params = dict(params or {})
        if self.known_params is not None:
            check_params(self.name, self.params, self.known_params)

    @abc.abstractmethod
    async def generate(self, request: Request) -> Response:
        """Run one call. Raise ProviderError for failures the client should classify."""

    def cannot_serve(self, meta: Mapping[str, Any]) -> str | None:
        """Why this provider has no answer for requests carrying `meta` (their "task" and, for
        a HUB-J G-module, their "module"), or None (a real model answers any). Commands ask
        before any call (`commands.needs`): a judge-only provider where text must be written
        is a usage error, not a run that fails after its judges were paid for."""
        return None

    def check_sendable(self) -> None:  # noqa: B027 - optional hook
        """Raise ValueError (bad input: exit 2) when no call can be sent as configured (a
        malformed key). The client runs it before the first call the cache does not answer,
        live or batched, as `LocalProvider.prepare` checks its backend: a fully cached run
        or a plan (--plan-only) sends nothing and needs none of it. The default finds
        nothing."""

    async def prepare(self) -> None:  # noqa: B027 - optional hook
        """One-time setup the client runs before an attempt and outside its timeout (SDK
        import, connection pool): a call's timeout then measures the call alone. Cheap once
        done; the default has nothing to prepare."""

    def cache_identity(self) -> dict[str, Any]:
        """What identifies this provider's outputs: name, model, non-secret parameters (a
        password in a URL's userinfo is masked: it changes who pays, not what comes back)."""
        return {"provider": self.name, "model": self.model,
                "params": self.keyed_params(self._public_params())}

    def _public_params(self) -> dict[str, Any]:
        """The non-secret parameters that change outputs, as given (passwords masked)."""
        return {k: _mask_userinfo(v) for k, v in sorted(self.params.items())
                if k not in self.secret_params and k not in self.operational_params}

    def legacy_identity(self) -> dict[str, Any] | None:
        """The identity a cache made before `keyed_params` existed (ffebffa) keyed this
        judge's answers under, where reading them is safe and it differs from
        `cache_identity`; else None (no second lookup). That key held the parameters as
        given: for a base_url written in the spec it names the same server (written
        `URL/`, in capitals or with its default port), so an upgraded cache keeps its
        answers. Not for a server from $OPENAI_BASE_URL alone: that key named no server and
        may hold another server's answers."""
        given = self.params.get("base_url")
        if not isinstance(given, str) or not given.strip():
            return None
        old = {"provider": self.name, "model": self.model, "params": self._public_params()}
        return None if old == self.cache_identity() else old

    def keyed_params(self, public: dict[str, Any]) -> dict[str, Any]:
        """`public` (the non-secret parameters that change outputs, as given) as the cache
        key holds them. A provider that reaches a server overrides it: the key then names
        the server actually asked (from $OPENAI_BASE_URL too) in one form, so a run against
        another server is not served this one's answers. The default keeps them as given."""
        return public

    def run_identity(self) -> dict[str, Any]:
        """What a result records about this judge: its cache identity, plus what a provider
        resolves at run time and its verdicts or timings depend on (the local backend and
        the CPU). No secrets: the same masking as the cache key."""
        return self.cache_identity()

    async def aclose(self) -> None:  # noqa: B027 - optional hook
        """Release connections; the default has nothing to release."""




def _mask_userinfo(value: Any) -> Any:
    """A URL's userinfo password masked (`spec.mask_url`, the one rule for it)."""
    from judgeaudit.spec import mask_url

    return mask_url(value) if isinstance(value, str) else value


def check_params(provider: str, params: dict[str, Any], known: Iterable[str],
                 label: str | None = None) -> None:
    """Refuse parameters `provider` does not read, suggesting the closest known name:
    "unknown parameter 'timout' for provider 'openai'; did you mean 'timeout'? known: ..."
    (`label` words it "unknown LABEL parameter 'x'" instead)."""
    known = sorted(known)
    unknown = sorted(set(params) - set(known))
    if not unknown:
        return
    hints = []
    for name in unknown:
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        if close:
            hints.append(f"{close[0]!r}" + (f" (for {name!r})" if len(unknown) > 1 else ""))
    names = ", ".join(repr(n) for n in unknown)
    what = "parameter" if len(unknown) == 1 else "parameters"
    head = (f"unknown {label} {what} {names}" if label
            else f"unknown {what} {names} for provider {provider!r}")
    hint = f" did you mean {', '.join(hints)}?" if hints else ""
    raise ValueError(f"{head};{hint} known: {', '.join(known)}")


def describe_params(known: dict[str, str]) -> str:
    """`known_params` as lines `name: meaning`, for help texts."""
    return "\n".join(f"{k}: {v}" for k, v in sorted(known.items()))


def request_key(provider: Provider, request: Request) -> str:
    """Cache key: sha256 over provider identity and the full request. Text is encoded with
    `surrogatepass`, so a lone surrogate in it neither crashes nor collides with another
    text (valid text keys exactly as plain UTF-8)."""
    return _key_of(provider.cache_identity(), provider, request)


def legacy_request_key(provider: Provider, request: Request) -> str | None:
    """The key `request` had in a cache made before the key named the server in one form
    (`Provider.legacy_identity`), or None where there is none to read."""
    old = provider.legacy_identity()
    return None if old is None else _key_of(old, provider, request)


def _key_of(identity: dict[str, Any], provider: Provider, request: Request) -> str:
    material = {"id": identity, "req": request.key_material(provider.uses_meta)}
    blob = json.dumps(material, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


# ---- text hygiene at the client boundary ------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


def has_lone_surrogate(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def replace_lone_surrogates(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD (a high+low pair left as two code
    points is joined into its character), so it can be written as UTF-8."""
    if not _SURROGATE.search(text):
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def sanitize(value: Any) -> tuple[Any, bool]:
    """A JSON-like value (str, list, dict) with lone surrogates replaced in every string and
    key; and whether anything was replaced."""
    if isinstance(value, str):
        out = replace_lone_surrogates(value)
        return out, out is not value
    if isinstance(value, list | tuple):
        items = [sanitize(v) for v in value]
        changed = any(c for _, c in items)
        return ([v for v, _ in items] if changed else value), changed
    if isinstance(value, dict):
        pairs = [(sanitize(k), sanitize(v)) for k, v in value.items()]
        changed = any(kc or vc for (_, kc), (_, vc) in pairs)
        return ({k: v for (k, _), (v, _) in pairs} if changed else value), changed
    return value, False


__all__ = [
    "EMPTY_ANSWER", "ERROR_KINDS", "PER_REQUEST_KINDS", "FatalProviderError", "Message", "Provider",
    "ProviderError", "Request", "RequestRejected", "cut_reason", "http_error_kind",
    "limit_sent", "no_verdict_why", "stopped_at_limit", "unusable_answer",
    "Response", "Usage", "check_params", "describe_params", "legacy_request_key", "request_key",
    "replace_lone_surrogates", "sanitize",
]
