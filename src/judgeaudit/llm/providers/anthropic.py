"""`anthropic`: Claude models through the official `anthropic` SDK (Messages API).

Spec parameters (strings): `api_key` (else $ANTHROPIC_API_KEY), `auth` (the header the key
goes in: `x-api-key`, as the Messages API documents, by default; `bearer` for a gateway that
takes only `Authorization: Bearer KEY`, what SDK 2.x sends), `base_url`, `temperature`,
`timeout` (seconds, default 60), `max_connections` (default 64), `price_in`/`price_out` (USD
per million tokens). Any other parameter is refused (`KNOWN_PARAMS`); `base_url` must be
http(s)://host[:port][/path].

The Messages API continues a final partial assistant turn, so the request's prefill is sent
as one and the returned text is the continuation (" A" after "...is Response"). Models that
refuse prefill answer 400 "prefill not supported": then, once per provider, we fall back to
an answer-format line in the user turn (as the openai provider does) and return the text
as generated. There are no logprobs: `probs` is always None and the judge parses the text.

The installed SDK (anthropic 2.x) has no `temperature` argument any more, so the request's
temperature is not sent; a `temperature` spec parameter is passed through as an extra body
field for servers that still take it. SDK retries are off; the client retries (same error
mapping as the openai provider).

Batch mode: `batch=on` sends cache misses through the Message Batches API instead
(`client.messages.batches.create` with one `custom_id` = cache key per request, polled with
`retrieve`, answers read with `results`; see `judgeaudit.llm.batch`); `batch_size` (default
10,000), `batch_wait` (seconds, default 2) and `poll` (seconds, default 30) as for openai;
calls are priced at half the listed price unless price_in/price_out say otherwise.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from typing import Any, ClassVar

from judgeaudit.llm.base import (
    FatalProviderError,
    Provider,
    ProviderError,
    Request,
    Response,
    Usage,
    unusable_answer,
)
from judgeaudit.llm.providers.openai import (
    BATCH_DISCOUNT,
    OPERATIONAL_PARAMS,
    add_choice_line,
    api_key,
    base_url_param,
    billed,
    check_base_url,
    check_key,
    float_param,
    html_error,
    http_timeout,
    int_param,
    keyed_server,
    map_sdk_error,
    price_for,
    register_key,
    sdk_http_client,
    server_message,
    warn_cleartext,
    with_server,
)
from judgeaudit.llm.redact import redact_url
from judgeaudit.llm.registry import register

log = logging.getLogger("judgeaudit.llm")

# The address the SDK calls when neither base_url nor $ANTHROPIC_BASE_URL names one.
ANTHROPIC_DEFAULT_URL = "https://api.anthropic.com"

# USD per million tokens (input, output), as listed by Anthropic in 2025. Matched on the
# exact id, the id plus a date suffix, or "-latest"; prefer price_in/price_out.
ANTHROPIC_PRICES: dict[str, tuple[float, float]] = {
    "claude-3-haiku": (0.25, 1.25),
    "claude-3-5-haiku": (0.80, 4.00),
    "claude-haiku-4-5": (1.00, 5.00),
    "claude-3-5-sonnet": (3.00, 15.00),
    "claude-3-7-sonnet": (3.00, 15.00),
    "claude-sonnet-4": (3.00, 15.00),
    "claude-sonnet-4-5": (3.00, 15.00),
    "claude-opus-4": (15.00, 75.00),
    "claude-opus-4-1": (15.00, 75.00),
}

# The headers the key can go in (`auth`).
AUTH_HEADERS = ("x-api-key", "bearer")

# The spec parameters read here (name -> meaning and default); anything else is refused.
KNOWN_PARAMS: dict[str, str] = {
    "api_key": "API key (default $ANTHROPIC_API_KEY)",
    "auth": "the header the key is sent in: x-api-key, as the Messages API documents; "
            "bearer: Authorization: Bearer KEY, for a gateway that takes only that "
            "(default x-api-key)",
    "base_url": "server URL, http(s)://host[:port][/path] (default $ANTHROPIC_BASE_URL or "
                "api.anthropic.com)",
    "temperature": "sampling temperature, sent as an extra body field (default: not sent)",
    "max_tokens": "most tokens the model may write, overrides the request's (8 for a verdict); "
                  "give an answer cut at the limit room, e.g. 64 (default: the request's)",
    "timeout": "seconds per HTTP request (default 60)",
    "max_connections": "HTTP connection pool size (default 64)",
    "price_in": "USD per million input tokens (default: built-in table, hosted only; with "
                "batch=on give the batch rate you are billed: a given price is used as is)",
    "price_out": "USD per million output tokens (default: built-in table, hosted only)",
    "batch": "on: send calls through the Message Batches API (half price, results within "
             "24h); off (default off)",
    "batch_size": "batch mode: most requests per batch (default 10000, at most 100000)",
    "batch_wait": "batch mode: seconds without a new request before a batch is submitted "
                  "(default 2)",
    "poll": "batch mode: seconds between status checks, growing while nothing changes "
            "(default 30)",
}


@register
class AnthropicProvider(Provider):
    """Messages API via `anthropic.AsyncAnthropic`; system prompt to `system=`, prefill as a
    final assistant turn, text only (no probabilities)."""

    name: ClassVar[str] = "anthropic"
    default_concurrency: ClassVar[int] = 8
    # how the key is sent changes who answers, not what: kept out of the cache key
    operational_params: ClassVar[frozenset[str]] = OPERATIONAL_PARAMS | {"auth"}
    key_env: ClassVar[str] = "ANTHROPIC_API_KEY"
    known_params: ClassVar[dict[str, str] | None] = KNOWN_PARAMS

    def __init__(self, model: str, params: dict[str, str] | None = None):
        super().__init__(model, params)
        p = self.params
        register_key(p, self.key_env, self.name)
        self.auth = (p.get("auth") or "x-api-key").strip().lower()
        if self.auth not in AUTH_HEADERS:
            raise ValueError(f"{self.name} parameter auth={p['auth']!r}: expected "
                             f"{' or '.join(AUTH_HEADERS)}")
        self.base_url: str | None = check_base_url(base_url_param(p, self.name),
                                                   ("/v1/messages", "/messages"))
        self.timeout = float_param(p, "timeout", self.name, default=60.0, positive=True)
        self.temperature = float_param(p, "temperature", self.name, default=None)
        self.max_tokens = (int_param(p, "max_tokens", self.name, default=1)
                           if "max_tokens" in p else None)
        self.max_connections = int_param(p, "max_connections", self.name, default=64)
        # The built-in prices hold for Anthropic's own API: none given, or its address written.
        hosted = self.server() is None
        self.price_per_mtok = price_for(model, p, ANTHROPIC_PRICES, self.name, hosted)
        self.billed = billed([self.base_url] if self.base_url else [], "ANTHROPIC_BASE_URL")
        self._prefill_ok = True  # cleared when the model refuses a prefill once
        self._sdk_client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        from judgeaudit.llm.batch import batch_settings

        self.batch = batch_settings(p, self.name, max_size=100_000)
        if (self.batch is not None and self.price_per_mtok is not None
                and "price_in" not in p):
            self.price_per_mtok = (self.price_per_mtok[0] * BATCH_DISCOUNT,
                                   self.price_per_mtok[1] * BATCH_DISCOUNT)
        self._batch_backend: Any = None

    @property
    def where(self) -> str:
        """The server, fit for messages (a URL password masked)."""
        return redact_url(self.base_url or os.environ.get("ANTHROPIC_BASE_URL")
                          or "api.anthropic.com")

    def server(self) -> str | None:
        """The server calls go to, as the cache key names it (`keyed_server`, from
        $ANTHROPIC_BASE_URL too): None for Anthropic's own API."""
        return keyed_server(self.params.get("base_url"), os.environ.get("ANTHROPIC_BASE_URL"),
                            ANTHROPIC_DEFAULT_URL)

    def keyed_params(self, public: dict[str, Any]) -> dict[str, Any]:
        """The base_url as the server actually asked, in one form (`keyed_server`)."""
        return with_server(public, self.server())

    def check_sendable(self) -> None:
        """A malformed key (`check_key`) or none at all is bad input (exit 2), found before
        the first call sent (a missing one failed the run at its first call, exit 3); a
        fully cached run or a plan sends no key and needs none."""
        check_key(self.params, self.key_env, self.name)
        if api_key(self.params, self.key_env, self.name) is None:
            raise ValueError(self._no_key())

    def _no_key(self) -> str:
        return (f"{self.name}: no API key: set ${self.key_env} or pass api_key=... in the "
                "judge spec")

    def _api_key(self) -> str:
        key = api_key(self.params, self.key_env, self.name)
        if key is None:
            raise FatalProviderError(self._no_key(), kind="auth")
        if not self.params.get("api_key"):
            warn_cleartext(self.key_env, [self.base_url or os.environ.get("ANTHROPIC_BASE_URL")],
                           self.name)
        return key

    async def prepare(self) -> None:
        """SDK import and client for this loop, before the timed call (see openai)."""
        self._client()

    def _client(self) -> Any:
        """Created lazily (cached runs need no key), once per event loop."""
        loop = asyncio.get_running_loop()
        if self._sdk_client is None or self._loop is not loop:
            import anthropic

            where = (self.base_url or os.environ.get("ANTHROPIC_BASE_URL")
                     or "https://api.anthropic.com")
            http = sdk_http_client(anthropic, where, max_connections=self.max_connections,
                                   timeout=self.timeout, provider=self.name)
            key = self._api_key()
            # The key goes in one header (`auth`): x-api-key by default, as the Messages API
            # documents it (SDK 2.x sends an api_key as `Authorization: Bearer`, which
            # servers and gateways that check x-api-key refuse); bearer for a gateway that
            # takes only that. Never both: the key is not sent twice.
            headers = ({"X-Api-Key": key, "Authorization": anthropic.Omit()}
                       if self.auth == "x-api-key" else
                       {"Authorization": f"Bearer {key}", "X-Api-Key": anthropic.Omit()})
            self._sdk_client = anthropic.AsyncAnthropic(
                api_key=key, base_url=self.base_url,
                timeout=http_timeout(anthropic, self.timeout),
                max_retries=0, http_client=http, default_headers=headers,
            )
            self._loop = loop
        return self._sdk_client

    @staticmethod
    def build(request: Request, prefill: bool = True) -> tuple[str | None, list[dict[str, str]]]:
        """(system, messages): system messages joined; the prefill as a final assistant turn
        (trailing whitespace removed: the API rejects a final assistant turn ending in it),
        or with `prefill=False` an answer-format line in the last user turn."""
        system = "\n\n".join(m.content for m in request.messages if m.role == "system") or None
        msgs = [{"role": m.role, "content": m.content}
                for m in request.messages if m.role != "system"]
        text = request.prefill.rstrip()
        if text and prefill:
            msgs.append({"role": "assistant", "content": text})
        elif text and request.choices:
            add_choice_line(msgs, request.choices)
        return system, msgs

    def batch_params(self, request: Request) -> dict[str, Any]:
        """The Messages API parameters for `request` (a batch request's `params`): what a
        live call sends, the prefill as a final assistant turn while the model takes one."""
        use_prefill = bool(request.prefill.strip()) and self._prefill_ok
        system, msgs = self.build(request, prefill=use_prefill)
        params: dict[str, Any] = {"model": self.model,
                                  "max_tokens": self.max_tokens or request.max_tokens,
                                  "messages": msgs}
        if system is not None:
            params["system"] = system
        if self.temperature is not None:
            params["temperature"] = self.temperature
        return params

    def batch_backend(self) -> Any:
        """The Message Batches backend when `batch=on` (the client sends cache misses to it)."""
        if self.batch is None:
            return None
        if self._batch_backend is None:
            from judgeaudit.llm.batch_anthropic import AnthropicBatchBackend

            self._batch_backend = AnthropicBatchBackend(self)
        return self._batch_backend

    async def generate(self, request: Request) -> Response:
        import anthropic

        client = self._client()
        secrets = [self.params.get("api_key"), os.environ.get(self.key_env)]
        use_prefill = bool(request.prefill.strip()) and self._prefill_ok
        for attempt in (0, 1):
            system, msgs = self.build(request, prefill=use_prefill)
            kwargs: dict[str, Any] = {
                "model": self.model, "messages": msgs,
                "max_tokens": self.max_tokens or request.max_tokens,
            }
            if system is not None:
                kwargs["system"] = system
            if self.temperature is not None:
                kwargs["extra_body"] = {"temperature": self.temperature}
            try:
                raw = await client.messages.with_raw_response.create(**kwargs)
                break
            except anthropic.BadRequestError as exc:
                if use_prefill and attempt == 0 and "prefill" in server_message(exc).lower():
                    log.warning("%s refuses assistant prefill; using an answer-format line",
                                self.model)
                    self._prefill_ok = use_prefill = False
                    continue
                raise self._mapped(exc, anthropic, secrets) from None
            except anthropic.AnthropicError as exc:
                raise self._mapped(exc, anthropic, secrets) from None
        return self.parse_body(raw.http_response.content)

    def _mapped(self, exc: Exception, sdk: Any, secrets: list[str | None]) -> Exception:
        err = map_sdk_error(exc, sdk, provider=self.name, where=self.where, key_env=self.key_env,
                            secrets=secrets, timeout=self.timeout or 0.0)
        return err if err is not None else exc

    def parse_body(self, content: bytes) -> Response:
        """A 200 body -> Response; anything that is not a message is a retryable error,
        except an HTML page that names no gateway error (`html_error`: a login page), which
        is fatal."""
        try:
            return parse_message(json.loads(content))
        except (ValueError, KeyError, TypeError, AttributeError):
            page = html_error(self.name, redact_url(self.where), content,
                              "an Anthropic Messages API")
            if page is not None:
                raise page from None
            snippet = content[:80].decode("utf-8", "replace")
            raise ProviderError(f"{self.name}: malformed response from {self.where} "
                                f"(not a message): {snippet!r}", retryable=True,
                                kind="malformed") from None

    async def aclose(self) -> None:
        client, self._sdk_client = self._sdk_client, None
        if client is not None and self._loop is asyncio.get_running_loop():
            await client.close()


def parse_message(data: dict[str, Any]) -> Response:
    """A Messages API message -> Response (text blocks joined, usage); raises KeyError,
    TypeError or AttributeError when it is not a message."""
    blocks = data["content"]
    text = "".join(b.get("text") or "" for b in blocks if b.get("type") == "text")
    usage = data.get("usage") or {}
    written = int(usage.get("output_tokens") or 0)
    return Response(
        text=text,
        probs=None,
        usage=Usage(int(usage.get("input_tokens") or 0), written),
        raw={"model": data.get("model"), "stop_reason": data.get("stop_reason")},
        invalid=unusable_answer(text, data.get("stop_reason"), written, field="stop_reason"),
    )
