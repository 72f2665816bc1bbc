"""`openai`: any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, Ollama)
through the official `openai` SDK.

Spec parameters (all strings): `base_url`, `api_key` (else $OPENAI_API_KEY, which goes to
any base_url as the SDK sends it, warned once over plain http:// to another machine;
"EMPTY" for a local server when neither is set), `temperature` (overrides the request's),
`logprobs` ("auto": ask for the top-20 next-token logprobs when the request has `choices`;
"off"), `prefill` ("instruct": most chat servers cannot continue an assistant turn, so the user
message gets an answer-format line and the model's text comes back as-is; "assistant": send
the prefill as a partial assistant turn, for vLLM/llama.cpp servers that continue it),
`max_tokens` (overrides the request's: room for a reasoning model to think),
`reasoning_effort` (sent as is), `timeout` (seconds, default 60), `max_connections` (HTTP
pool size, default 64), `price_in`/`price_out` (USD per million prompt/completion tokens).
Any other parameter is refused (`KNOWN_PARAMS`); `base_url` must be
http(s)://host[:port][/path], without the endpoint (`/chat/completions`) on it.

Models that refuse a parameter: a 400 or 422 that names logprobs (sent without them) or the
most top logprobs allowed (text-generation-inference: 5; asked for that many), asks for
`max_completion_tokens` instead of `max_tokens` (OpenAI's o-series and gpt-5), refuses
temperature 0 (`NEARLY_GREEDY` sent instead) or any temperature but the default (sent without
one) is answered by sending the request again without it, once per provider, with a warning.

Scale-out: `base_url=URL1|URL2|...` spreads calls over several servers of the same model
(the one with the fewest calls in flight first, at most `per_server` at a time on each); a
server whose connection is refused or reset twice in a row is left out for `down_for`
seconds (default 30) and the call goes to another one at once.

Batch mode: `batch=on` sends cache misses through OpenAI's Batch API instead (a JSONL file
uploaded with purpose "batch", a batch on /v1/chat/completions with a 24h window; see
`judgeaudit.llm.batch`), `batch_size` requests at most per batch (default 10,000),
submitted once no request has joined for `batch_wait` seconds (default 2), polled every
`poll` seconds (default 30, growing while nothing changes); calls are priced at half the
listed price (the Batch API's discount) unless price_in/price_out say otherwise.

The SDK's own retries are off (`max_retries=0`): the client retries, so that one policy and
one count of retries hold for every provider. The helpers here (error mapping, Retry-After
parsing, key redaction) are shared with the anthropic provider.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import functools
import ipaddress
import json
import logging
import math
import os
import re
import time
import urllib.parse
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any, ClassVar

from judgeaudit.llm.base import (
    PER_REQUEST_KINDS,
    FatalProviderError,
    Provider,
    ProviderError,
    Request,
    RequestRejected,
    Response,
    Usage,
    http_error_kind,
    unusable_answer,
)
from judgeaudit.llm.redact import (
    is_secret,
    mask_known,
    redact_url,
    register_secret,
    register_url,
)
from judgeaudit.llm.redact import redact as redact_text
from judgeaudit.llm.registry import register

log = logging.getLogger("judgeaudit.llm")

# Parameters that change how we talk to the server, not what it answers: kept out of the
# cache key so raising a timeout or a price does not orphan cached calls.
OPERATIONAL_PARAMS = frozenset({"timeout", "max_connections", "price_in", "price_out",
                                "batch", "batch_size", "batch_wait", "poll", "per_server",
                                "down_for", "wait"})
# What the provider's batch API charges, as a share of the listed (sync) price.
BATCH_DISCOUNT = 0.5

# USD per million tokens (prompt, completion), standard tier as listed by OpenAI in 2025.
# Matched on the exact model id or the id plus a date suffix; prefer price_in/price_out.
OPENAI_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
}

# Seconds between readiness checks of a server that is still starting (the `wait` parameter).
READY_POLL = 2.0

NOT_FOUND = ("not found; check the model name and base_url (vLLM, llama.cpp and most "
             "OpenAI-compatible servers answer under /v1: http://HOST:PORT/v1)")

# The spec parameters read here (name -> meaning and default); anything else is refused.
KNOWN_PARAMS: dict[str, str] = {
    "base_url": "server URL, http(s)://host[:port][/path], or several separated by '|' "
                "(spread by fewest calls in flight) (default $OPENAI_BASE_URL or "
                "api.openai.com)",
    "api_key": "API key (default $OPENAI_API_KEY, sent to base_url too; not needed when "
               "base_url or $OPENAI_BASE_URL names a server: with neither key set, 'EMPTY' "
               "is sent)",
    "temperature": "sampling temperature, overrides the request's (default: the request's)",
    "max_tokens": "most tokens the model may write, overrides the request's (8 for a verdict); "
                  "a reasoning model (o-series, gpt-5, a thinking Qwen) spends tokens thinking "
                  "first: give it room, e.g. 2000 (default: the request's)",
    "reasoning_effort": "sent as is to a reasoning model, e.g. minimal, low, medium, high "
                        "(default: not sent)",
    "logprobs": "auto: ask for top-20 next-token logprobs when choosing; off (default auto)",
    "prefill": "instruct: answer-format line; assistant: partial assistant turn "
               "(default instruct)",
    "timeout": "seconds per HTTP request (default 60)",
    "max_connections": "HTTP connection pool size (default 64)",
    "price_in": "USD per million prompt tokens (default: built-in table, hosted only; with "
                "batch=on give the batch rate you are billed: a given price is used as is)",
    "price_out": "USD per million completion tokens (default: built-in table, hosted only)",
    "per_server": "with several base_urls: most calls in flight per server (default: no "
                  "bound but --concurrency)",
    "down_for": "with several base_urls: seconds a server whose connection failed twice in a "
                "row is left out (default 30)",
    "wait": "seconds to wait for a server that is still starting (loading its model: it "
            "refuses connections or answers 503) before the first call; GET /models is asked "
            f"every {READY_POLL:g} s until it answers (default 0: no wait)",
    "batch": "on: send calls through the Batch API (half price, results within 24h); off "
             "(default off)",
    "batch_size": "batch mode: most requests per batch (default 10000, at most 50000)",
    "batch_wait": "batch mode: seconds without a new request before a batch is submitted "
                  "(default 2)",
    "poll": "batch mode: seconds between status checks, growing while nothing changes "
            "(default 30)",
}


def is_loopback(url: str) -> bool:
    """Whether `url` names this machine (localhost, 127.0.0.0/8, ::1)."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name
        return host == "localhost" or host.endswith(".localhost")


def billed(urls: Sequence[str], env_var: str) -> bool:
    """Whether calls may cost money: to `urls`, else to the server in $`env_var`, else to the
    provider's hosted API. Any server but this machine's own may bill."""
    urls = list(urls) or [u for u in [os.environ.get(env_var)] if u]
    return not urls or not all(is_loopback(u) for u in urls)


# The address each SDK calls when neither base_url nor its environment variable names one.
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


def server_key(url: str) -> str:
    """`url` in the one form the cache key holds: scheme and host lower-cased, the scheme's
    default port and a trailing slash dropped (`HTTP://Gpu1:80/v1/` is `http://gpu1/v1`),
    the path otherwise as given (servers tell its case apart). A URL already in that form is
    returned unchanged, so keys of specs that name one stay as they were. Userinfo is kept
    (`Provider.cache_identity` masks its password); text that is no URL is only stripped."""
    text = url.strip()
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError:
        return text
    host = parts.hostname
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not host:
        return text
    netloc = f"[{host}]" if ":" in host else host
    if "@" in parts.netloc:
        netloc = parts.netloc.rpartition("@")[0] + "@" + netloc
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return urllib.parse.urlunsplit((scheme, netloc, parts.path.rstrip("/"), parts.query,
                                    parts.fragment))


@functools.lru_cache(maxsize=256)
def keyed_server(given: str | None, env: str | None, default: str) -> str | None:
    """The server a provider's calls go to, as its cache key names it: `given` (the
    base_url parameter: one URL, or several separated by '|'), else `env` (the environment
    variable the SDK reads then), each in one form (`server_key`); several are sorted and
    each named once (one model served by several servers: which one answers a call changes
    who pays, not the answer). None for the SDK's `default` address, written out or not, so
    a spec naming it shares the keys of one naming nothing (hosted users' keys are as they
    were). An $OPENAI_BASE_URL is in the key: without it, a run against another server was
    served the first server's answers from the cache."""
    raw = given if given is not None else env
    if raw is None or not raw.strip():
        return None
    urls = sorted({server_key(u) for u in raw.split("|") if u.strip()})
    if not urls or urls == [server_key(default)]:
        return None
    return "|".join(urls)


def with_server(public: dict[str, Any], server: str | None) -> dict[str, Any]:
    """`public` (a provider's keyed parameters) with its base_url replaced by `server`
    (`keyed_server`, its password masked), or left out when `server` is None."""
    from judgeaudit.llm.base import _mask_userinfo

    out = {k: v for k, v in public.items() if k != "base_url"}
    if server is not None:
        out["base_url"] = _mask_userinfo(server)
    return dict(sorted(out.items()))


def env_proxy(url: str) -> str | None:
    """The proxy the environment sends `url` through ($HTTPS_PROXY, $HTTP_PROXY or $ALL_PROXY,
    unless $NO_PROXY names its host), its password masked; None when there is none."""
    parts = urllib.parse.urlsplit(url if "://" in url else f"https://{url}")
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme.lower()) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    return redact_url(proxy)


# Seconds to wait for a connection to open: a live server accepts in milliseconds, so this
# long without an answer is a host that drops the request (a firewall, a wrong address),
# which otherwise waited out the whole call timeout on every attempt.
CONNECT_TIMEOUT = 10.0


def http_timeout(sdk: Any, timeout: float | None) -> Any:
    """The timeout an SDK (openai, anthropic: each has its `Timeout`) is given for
    `timeout` seconds a call: the same, but at most `CONNECT_TIMEOUT` to open the
    connection."""
    if timeout is None:
        return None
    return sdk.Timeout(timeout, connect=min(timeout, CONNECT_TIMEOUT))


def sdk_http_client(sdk: Any, url: str, *, max_connections: int, timeout: float | None,
                    provider: str) -> Any:
    """The httpx client an SDK (openai, anthropic) is given: its connection limits; a server
    on this machine is reached directly, never through a proxy from the environment (which
    cannot reach this machine's loopback: a running local server looked unreachable); a
    redirect is not followed but reported (`map_sdk_error`): followed, a POST became a GET
    whose 404 read as a wrong model name."""
    kw = {"limits": type(sdk.DEFAULT_CONNECTION_LIMITS)(
              max_connections=max_connections, max_keepalive_connections=max_connections),
          "timeout": http_timeout(sdk, timeout), "follow_redirects": False}
    host = urllib.parse.urlsplit(url).hostname or ""
    local = is_loopback(url)
    # No proxy for this host (a mount of None); the rest of the environment ($SSL_CERT_FILE
    # for a local HTTPS server with its own CA) still applies.
    direct = {"mounts": {f"all://[{host}]" if ":" in host else f"all://{host}": None}}
    try:
        return sdk.DefaultAsyncHttpxClient(**kw, **(direct if local else {}))
    except ImportError as exc:  # a SOCKS proxy in $ALL_PROXY without httpx's socks extra
        if local:  # never used for this host: leave the environment out altogether
            return sdk.DefaultAsyncHttpxClient(**kw, trust_env=False)
        raise FatalProviderError(f"{provider}: the proxy {env_proxy(url) or ''} from the "
                                 f"environment cannot be used: {exc}") from None


_HTML_START = re.compile(rb"^\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body)\b",
                         re.IGNORECASE | re.DOTALL)
_HTML_NAME = re.compile(rb"<(title|h1)\b[^>]*>(.*?)</\1\s*>", re.IGNORECASE | re.DOTALL)
_HTML_TAG = re.compile(r"<[^>]*>")
# A gateway's error page sent with 200 (some proxies do): the server behind it may come back,
# so it is retried as a malformed answer is, unlike a login page, which stays one.
_GATEWAY_PAGE = re.compile(r"\b50[0-4]\b|bad gateway|service (temporarily )?unavailable|"
                           r"gateway time-?out", re.IGNORECASE)


def html_page(content: bytes) -> str | None:
    """The name of the page (its <title>, else its first <h1>, else its first words, at
    most 100 characters, secrets masked) when a 200's body is an HTML page, not an API's
    JSON (a login page or a portal in front of the server); None when it is no HTML page."""
    head = content[:4096]
    if not _HTML_START.match(head):
        return None
    found = sorted(_HTML_NAME.findall(content[:65536]), key=lambda m: m[0].lower() != b"title")
    raw = found[0][1] if found else content[:2048]
    text = _HTML_TAG.sub(" ", raw.decode("utf-8", "replace"))
    text = " ".join(text.split())[:100]
    return redact_url(redact_text(text)) or "(a page with no title)"


def html_error(provider: str, where: str, content: bytes, api: str) -> ProviderError | None:
    """The error for a 200 whose body is an HTML page (`html_page`), else None: fatal, since
    every call would get the same page (a login page answered 137 requests in 39 s before
    the breaker stopped it), unless the page names a gateway error (502, 503, 504), which
    is retried as before."""
    name = html_page(content)
    if name is None:
        return None
    text = f"{provider}: base_url {where} returns HTML (not {api}): {name!r}"
    if _GATEWAY_PAGE.search(name):
        return ProviderError(f"{text}; a gateway error, retried", retryable=True,
                             kind="malformed")
    return FatalProviderError(f"{text}; check base_url (the API's root, e.g. "
                              "http://host:8000/v1) and that no login stands in front of it",
                              kind="bad_request")


def error_in_body(data: Any) -> tuple[int | None, str] | None:
    """(the HTTP status it names, its message) when a 200's body is an error object instead
    of an answer (`{"error": {"message", "code"}}` or `{"error": "..."}`), else None."""
    err = data.get("error") if isinstance(data, dict) and "choices" not in data else None
    if isinstance(err, str) and err:
        return None, redact_text(err)
    if not isinstance(err, dict):
        return None
    code = err.get("code")
    status = code if isinstance(code, int) and 400 <= code < 600 else None
    message = err.get("message") or err.get("type") or json.dumps(err)[:300]
    return status, redact_text(str(message))


def check_base_url(url: str | None, endpoints: Sequence[str] = ("/chat/completions",
                                                                 "/completions")) -> str | None:
    """`url` unchanged when it is http(s)://host[:port][/path], else a ValueError (caught at
    construction, not at the first call: "localhost:8000" would otherwise fail later as an
    unsupported protocol, "http//x" as a relative path). A URL ending in one of the
    `endpoints` the client appends itself is refused with the base to give instead (pasted
    whole, every call would go to .../chat/completions/chat/completions, a 404 each)."""
    if url is None:
        return None
    register_url(url)  # its password is masked wherever it is echoed (`redact`)
    # a password holding / ? # (a spec decodes %2F once) splits the URL before its @: say how
    # to write it, not that the URL lacks the form it has
    raw_pw = re.match(r"(?i)^[a-z][a-z0-9+.\-]*://[^:@/\s]*:([^@\s]*)@", url.strip())
    hint = ("; its password holds / ? or #, which a judge spec decodes from %2F %3F %23: "
            "encode them twice (%252F %253F %2523)"
            if raw_pw and any(c in raw_pw.group(1) for c in "/?#") else "")
    bad = ValueError(f"base_url {redact_url(url)!r}: expected http(s)://host[:port][/path]"
                     + hint)
    try:
        parts = urllib.parse.urlsplit(url.strip())
        port = parts.port  # raises ValueError for a non-numeric or out-of-range port
    except ValueError:
        raise bad from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise bad
    if port is None and parts.netloc.rstrip().endswith(":"):
        raise bad
    if any(c.isspace() for c in url.strip()):
        raise bad
    named = split_endpoint(url, endpoints)
    if named is not None:
        raise ValueError(f"base_url {redact_url(url)!r} names the endpoint itself; give the "
                         f"part before {named[1]}: {redact_url(named[0])!r}")
    if parts.query or parts.fragment:
        azure = ("api-version" in parts.query.lower()
                 or parts.hostname.lower().endswith(".azure.com"))
        hint = (": Azure OpenAI's v1 API needs none, give "
                "https://RESOURCE.openai.azure.com/openai/v1" if azure else "")
        raise ValueError(f"base_url {redact_url(url)!r} has a query string; the client adds the "
                         "endpoint to the URL's path, so the query would end up inside the "
                         f"path (a 404 on every call): give the URL without it{hint}")
    return url


# What the SDKs append to a base_url: openai's, then anthropic's (its base has no /v1).
ENDPOINTS = ("/chat/completions", "/completions", "/v1/messages", "/messages")


def split_endpoint(url: str, endpoints: Sequence[str] = ENDPOINTS) -> tuple[str, str] | None:
    """(base, endpoint) when `url`'s path ends in one of `endpoints` (the first that fits),
    else None: the base_url a user should give for a URL that names the endpoint."""
    parts = urllib.parse.urlsplit(url.strip())
    path = parts.path.rstrip("/")
    for endpoint in endpoints:
        if path.lower().endswith(endpoint):
            base = urllib.parse.urlunsplit(parts._replace(path=path[:-len(endpoint)],
                                                          query="", fragment=""))
            return base, endpoint
    return None


# ---- pure helpers (unit-tested) ------------------------------------------------------------

def choice_probs(
    top_logprobs: Sequence[tuple[str, float]],
    choices: Sequence[str],
    sampled: str | None = None,
) -> dict[str, float] | None:
    """Probabilities of `choices` at one token position, renormalised over the choices.

    `top_logprobs` are (token, logprob) pairs for that position; tokens match a choice after
    stripping whitespace, case-sensitively ("A" and " A" both count for "A", "a" does not),
    and variants of one choice add up. A choice absent from the top list gets 0. Returns None
    when no choice appears, or when `sampled` (the token actually generated there) is given
    and is not itself a choice: then the model answered with something else ("Response",
    "**", prose) and a distribution read off that position would contradict its text.
    """
    if not choices:
        return None
    if sampled is not None and sampled.strip() not in choices:
        return None
    mass = dict.fromkeys(choices, 0.0)
    found = False
    for token, lp in top_logprobs:
        t = token.strip()
        if t in mass and lp is not None and math.isfinite(lp):
            mass[t] += math.exp(lp)
            found = True
    total = sum(mass.values())
    if not found or total <= 0:
        return None
    return {c: m / total for c, m in mass.items()}


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP-date."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_UNITS = r"(?:milliseconds?|ms|hours?|h|minutes?|m|seconds?|s)(?![a-z])"
_WAIT_IN_TEXT = re.compile(
    rf"(?:try again|retry)(?: after| in)?\s+((?:\d+(?:\.\d+)?\s*{_UNITS}\s*)+)", re.I)
_WAIT_PART = re.compile(rf"(\d+(?:\.\d+)?)\s*({_UNITS})", re.I)


def retry_after_in_text(message: str) -> float | None:
    """Seconds to wait that a rate-limit message states, when no header does: OpenAI's
    "Please try again in 1m9.696s" / "in 579ms", Azure's "retry after 20 seconds", Gemini's
    "Please retry in 39.5s". None when the message names no wait."""
    m = _WAIT_IN_TEXT.search(message)
    if m is None:
        return None
    total = 0.0
    for num, unit in _WAIT_PART.findall(m.group(1)):
        u = unit.lower()
        scale = 0.001 if u in ("ms", "millisecond", "milliseconds") else {
            "h": 3600.0, "m": 60.0, "s": 1.0}[u[0]]
        total += float(num) * scale
    return total


def retry_after_from(headers: Any) -> float | None:
    """Retry-After from response headers; OpenAI's millisecond variant wins if present."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms is not None:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    return parse_retry_after(headers.get("retry-after"))


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Remove every secret (and anything shaped like an API key, a URL password, a key in a
    query string or an auth header: `judgeaudit.llm.redact`) from a message, by the one
    rule of `redact.mask_known` (a placeholder such as api_key=ollama is none: a plain
    replace turned "http://ollama:11434" into "http://***:11434")."""
    given = sorted({s.strip() for s in secrets if s and is_secret(s)}, key=len, reverse=True)
    return redact_text(mask_known(text, given) if given else text)


def api_key(params: dict[str, str], key_env: str, provider: str) -> str | None:
    """The API key (the `api_key` parameter, else `$key_env`) as it can go in a header, or
    None when there is none: the whitespace around it dropped (a newline from a key file, a
    Kubernetes secret or a CRLF .env file, which HTTP libraries refuse as a header value and
    which looked like a server that could not be reached). A space or a character that is
    not printable ASCII inside the key is refused, without echoing it."""
    given = params.get("api_key")
    key = (given or os.environ.get(key_env) or "").strip()
    if not key:
        return None
    bad = next((i for i, c in enumerate(key) if not (c.isascii() and c.isprintable())
                or c.isspace()), None)
    if bad is not None:
        source = "the api_key parameter" if given else f"${key_env}"
        raise FatalProviderError(
            f"{provider}: the API key from {source} has a space, a line break or a "
            f"character that is not printable ASCII at position {bad + 1} of {len(key)}; "
            "set it again as the bare key", kind="auth")
    register_secret(key)  # masked wherever a server echoes it (`redact`)
    return key


def check_key(params: dict[str, str], key_env: str, provider: str) -> None:
    """A ValueError (bad input: exit 2) when the key the provider would send is malformed
    (`api_key`); as a refused call it failed the whole run (exit 3). The providers run it
    before their first call that is sent (`Provider.check_sendable`), not when the judge is
    made: a fully cached run or a plan sends no key. A key that passes is registered as a
    secret (`api_key`); one refused never is (it is not sent, and a refused "wrong" stayed
    masked in every later message of the process)."""
    try:
        api_key(params, key_env, provider)
    except FatalProviderError as exc:
        raise ValueError(str(exc)) from None


def register_key(params: dict[str, str], key_env: str, provider: str) -> None:
    """Register the key the provider would send as a secret when it is well formed (a
    malformed one is refused at the first call sent: `check_key`), so a message before any
    call masks it too."""
    with contextlib.suppress(FatalProviderError):
        api_key(params, key_env, provider)


# (variable, host) pairs warned about already: a key sent in clear text is said once.
_CLEARTEXT_WARNED: set[tuple[str, str]] = set()


def warn_cleartext(key_env: str, urls: Iterable[str | None], provider: str) -> None:
    """Warn once per host when the key from `$key_env` goes over plain http:// to a host
    that is not this machine: the SDKs' convention (a key from the environment is sent to
    any base_url, which proxies rely on) puts it in clear text on the network."""
    for url in urls:
        if not url or not url.strip().lower().startswith("http://") or is_loopback(url):
            continue
        host = urllib.parse.urlsplit(url.strip()).hostname or url
        if (key_env, host) in _CLEARTEXT_WARNED:
            continue
        _CLEARTEXT_WARNED.add((key_env, host))
        log.warning("%s: the key from $%s is sent to %s over plain http://, readable on the "
                    "network; use https://, or give the server its own key (api_key=... in "
                    "the judge spec; api_key=EMPTY for a server that wants none)", provider,
                    key_env, redact_url(url.strip()))


# Top logprobs asked per token: OpenAI's and vLLM's most. A server allowing fewer (text-
# generation-inference: 5 unless --max-top-n-tokens) is asked for what it allows
# (`top_logprobs_limit`); the two labels of a verdict are nearly always among the top 5.
TOP_LOGPROBS = 20
_TOP_LIMIT = re.compile(
    r"(?:<=?|at most|less than or equal to|max(?:imum)?(?: allowed)?(?: value)?(?: is)?"
    r"(?: of)?:?)\s*(\d+)")


# The temperature sent for 0 to a server that refuses 0 ("`temperature` must be strictly
# positive": text-generation-inference before 2.0.1; "(0, +inf)"): as good as greedy for a
# one-token verdict, where dropping the temperature would sample at the server's default 1.
NEARLY_GREEDY = 1e-3
_POSITIVE_ONLY = re.compile(r"strictly positive|must be (?:> ?0|greater than 0|positive)|"
                            r"\(0(?:\.0)?, ?\+?inf")


def top_logprobs_limit(message: str) -> int | None:
    """The most top logprobs a server allows, from its refusal of more (lower case):
    text-generation-inference's "`top_n_tokens` must be >= 0 and <= 5. Given: 20", vLLM's
    "requested sample logprobs of 20, which is greater than max allowed: 5", "top_logprobs
    must be less than or equal to 5". None when the message names no limit."""
    if not any(w in message for w in ("top_logprobs", "top_n_tokens", "top logprobs",
                                      "sample logprobs")):
        return None
    found = [int(n) for n in _TOP_LIMIT.findall(message)]
    return min(found) if found else None


def server_message(exc: Any) -> str:
    """The server's own error message from an SDK status error, else the exception text."""
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"]
        if isinstance(err, dict) and err.get("message"):  # Mistral: pydantic's error list
            return json.dumps(err["message"])[:2000]
        if isinstance(err, str) and err:
            return err
    if isinstance(body, str) and body:  # text-generation-inference's {"error": "..."}
        return body
    return str(getattr(exc, "message", None) or exc)


def server_code(exc: Any) -> str:
    """The error's code and type as the server sent them (OpenAI: `insufficient_quota`,
    Azure: `content_filter`), space-separated; "" when it sent none."""
    body = getattr(exc, "body", None)
    err = body.get("error", body) if isinstance(body, dict) else None
    if not isinstance(err, dict):
        return ""
    return " ".join(str(err[k]) for k in ("code", "type") if isinstance(err.get(k), str))


class ContextRefusal(RequestRejected):
    """A prompt over a hosted API model's context (HTTP 400/422 context_length_exceeded and
    its kin from OpenAI, Azure OpenAI, Anthropic or OpenRouter, `fixed_context`): a property
    of the request and of the model the cache keys it by, so the client keeps it in the
    cache's refusals (`keep_refusal`, `Client._keep_refusal`) and a re-run does not send it
    again. Other refusals stay plain `RequestRejected`s and are sent again by a re-run: a
    self-hosted server's (vLLM's --max-model-len, TGI's --max-input-tokens, llama.cpp's
    --ctx-size: runtime settings the cache key does not hold, review7 finding 6), a 413 (a
    body-size limit of the server or a proxy in front of it, not the model's), as the
    embedded backends' length check."""

    keep_refusal: ClassVar[bool] = True


# llama.cpp's server refusing a prompt over the context it was started with (--ctx-size per
# slot), which the user can raise: not the model's context (`ContextRefusal`)
_SERVER_CONTEXT = re.compile(r"exceed_context_size|available context size", re.IGNORECASE)


# Hosted APIs whose model's context is fixed by the model's name (in the cache key); any
# other server sets its own (`fixed_context`).
_HOSTED = frozenset({"api.openai.com", "api.anthropic.com", "openrouter.ai"})
_HOSTED_SUFFIX = (".openai.azure.com",)
SELF_HOSTED_CONTEXT = (" (a self-hosted server's context is its own setting, e.g. vLLM's "
                       "--max-model-len, TGI's --max-input-tokens, llama.cpp's --ctx-size, LM "
                       "Studio's context length: not kept in the cache, a re-run asks again)")


def fixed_context(where: str) -> bool:
    """Whether `where` (a provider's server as its messages name it: 'api.openai.com' when no
    base_url is given, else the base_url) is a hosted API whose model's context is fixed by
    the model's name: api.openai.com, *.openai.azure.com, api.anthropic.com, openrouter.ai.
    Any other server (vLLM, TGI, LM Studio, llama.cpp, a proxy) sets the context at start."""
    try:
        host = (urllib.parse.urlsplit(where if "://" in where else "//" + where).hostname
                or "").lower()
    except ValueError:
        return False
    return host in _HOSTED or host.endswith(_HOSTED_SUFFIX)


def rejected(text: str, kind: str, status: int | None, message: str, where: str
             ) -> RequestRejected:
    """The per-request refusal (`PER_REQUEST_KINDS`) of an HTTP answer from `where`
    (`status`, the server's code and `message`): a `ContextRefusal`, kept in the cache, only
    for a prompt over a hosted API model's own context (`fixed_context`); else a
    `RequestRejected`, sent again by a re-run, a self-hosted server's saying so."""
    if kind == "too_long" and status != 413:
        if fixed_context(where) and not _SERVER_CONTEXT.search(message):
            return ContextRefusal(text, kind=kind)
        return RequestRejected(text + SELF_HOSTED_CONTEXT, kind=kind)
    return RequestRejected(text, kind=kind)


def map_sdk_error(
    exc: Exception,
    sdk: Any,
    *,
    provider: str,
    where: str,
    key_env: str,
    secrets: Iterable[str | None],
    timeout: float,
    not_found: str = "not found; check the model name and base_url",
) -> ProviderError | None:
    """Classify an openai/anthropic SDK exception (both SDKs share these class names).

    Timeouts, connection failures and what `http_error_kind` calls retryable (429, 5xx, ...)
    are retried (with the server's Retry-After when it sent one); a prompt over the model's
    context or refused by a content filter fails that request only (`RequestRejected`); any
    other 4xx is fatal. Each error's `kind` is set (`judgeaudit.llm.base.ERROR_KINDS`).
    Messages never hold the key (nor a URL password).
    Returns None for exceptions that are not the SDK's (let them propagate as bugs).
    """
    secrets = list(secrets)
    where = redact_url(where)
    if isinstance(exc, sdk.APITimeoutError):
        # The HTTP library's ConnectTimeout (by name: the SDKs ship httpx or its fork)
        if any(c.__name__ == "ConnectTimeout" for c in type(exc.__cause__).__mro__):
            return ProviderError(
                f"{provider}: connection to {where} failed (no answer to connecting within "
                f"{min(timeout, CONNECT_TIMEOUT):g}s: a wrong host or port, or a firewall "
                "dropping it)", retryable=True, kind="connection")
        return ProviderError(f"{provider}: no response from {where} within {timeout:g}s",
                             retryable=True, kind="timeout")
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc
        msg = redact_url(redact(f"{type(cause).__name__}: {cause}", secrets))
        if "CERTIFICATE_VERIFY_FAILED" in msg:  # retrying cannot make it trusted
            why = msg.split("certificate verify failed:")[-1].split("(_ssl")[0].strip()
            return FatalProviderError(
                f"{provider}: the TLS certificate of {where} is not trusted ({why}): give the "
                "CA that signed it with SSL_CERT_FILE=/path/to/ca.pem", kind="connection")
        proxy = env_proxy(where)
        via = (f"; it went through the proxy {proxy} from the environment: add the host to "
               "$NO_PROXY to reach it directly" if proxy else "")
        return ProviderError(f"{provider}: connection to {where} failed ({msg}){via}",
                             retryable=True, kind="connection")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        detail = redact_url(redact(server_message(exc), secrets))[:300]
        kind, retryable = http_error_kind(status, f"{server_code(exc)} {server_message(exc)}")
        if retryable:  # 503s often say when to come back too
            resp = getattr(exc, "response", None)
            what = f"rate limited by {where} (HTTP 429)" if kind == "rate_limit" else (
                f"HTTP {status} from {where}")
            wait = retry_after_from(getattr(resp, "headers", None))
            if wait is None and kind == "rate_limit":
                wait = retry_after_in_text(server_message(exc))
            return ProviderError(f"{provider}: {what}: {detail}", retryable=True, kind=kind,
                                 retry_after=wait)
        if kind in PER_REQUEST_KINDS:
            why = {"too_long": "the prompt is too long for the model",
                   "refused": "the server's content filter refused this prompt"}[kind]
            if status == 413:
                why += (" (HTTP 413: over a body-size limit of the server or a proxy in front "
                        "of it; not kept in the cache, a re-run sends it again)")
            return rejected(f"{provider}: HTTP {status} from {where}: {why}: {detail}", kind,
                            status, f"{server_code(exc)} {server_message(exc)}", where)
        if 300 <= status < 400:
            resp = getattr(exc, "response", None)
            to = redact_url(str(getattr(resp, "headers", {}).get("location") or ""))
            named = split_endpoint(to) if to else None
            fix = f": give base_url={named[0] if named else to}" if to else ""
            return FatalProviderError(f"{provider}: HTTP {status} from {where}: the server "
                                      f"redirects to {to or 'another address'}{fix}",
                                      kind="bad_request")
        hint = {
            401: f"authentication failed; check ${key_env} or the api_key parameter",
            403: "permission denied for this key/model",
            404: not_found,
            400: "bad request",
            422: "request rejected as unprocessable",
        }.get(status, "request rejected")
        if kind == "auth" and status not in (401, 403):
            hint = "the account is out of credit; check the plan and billing of this key"
        return FatalProviderError(f"{provider}: HTTP {status} from {where}: {hint}: {detail}",
                                  kind=kind)
    if isinstance(exc, sdk.APIResponseValidationError):
        return ProviderError(f"{provider}: malformed response from {where}", retryable=True,
                             kind="malformed")
    return None


def float_param(params: dict[str, str], name: str, provider: str, *, default: float | None,
                positive: bool = False) -> float | None:
    """A numeric spec parameter, with an error that names it and the value given."""
    raw = params.get(name)
    if raw is None:
        return default
    try:
        v = float(raw)
    except ValueError:
        raise ValueError(f"{provider} parameter {name}={raw!r}: expected a number") from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise ValueError(f"{provider} parameter {name}={raw!r}: expected a "
                         f"{'positive' if positive else 'non-negative'} number")
    return v


def int_param(params: dict[str, str], name: str, provider: str, *, default: int) -> int:
    """A positive whole-number spec parameter, with an error naming it and the value."""
    raw = params.get(name, str(default))
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{provider} parameter {name}={raw!r}: expected a positive integer")
    return int(raw)


def price_for(model: str, params: dict[str, str], table: dict[str, tuple[float, float]],
              provider: str, hosted: bool) -> tuple[float, float] | None:
    """(prompt, completion) USD per million tokens: from price_in/price_out, else the
    built-in table (hosted APIs only: a local server with the same model name is free)."""
    pin = float_param(params, "price_in", provider, default=None)
    pout = float_param(params, "price_out", provider, default=None)
    if (pin is None) != (pout is None):
        raise ValueError(f"{provider}: give both price_in and price_out (USD per million "
                         f"tokens), or neither")
    if pin is not None and pout is not None:
        return (pin, pout)
    if not hosted:
        return None
    for k, price in table.items():
        if model == k or model.startswith(k + "-20") or model == k + "-latest":
            return price
    return None


def _http_response_cls() -> type:
    """The SDK's HTTP response class (httpx2 for openai/anthropic >= 3/2, httpx before)."""
    try:
        import httpx2

        return httpx2.Response
    except ImportError:  # pragma: no cover - older SDKs
        import httpx

        return httpx.Response


def choice_line(choices: Sequence[str]) -> str:
    """The answer-format line appended to the user turn when a prefill cannot be sent."""
    if all(len(c) == 1 and c.isalpha() for c in choices):
        return "Answer with a single letter."
    return "Answer with only one of: " + ", ".join(choices) + "."


def chat_messages(request: Request, prefill_mode: str = "instruct"
                  ) -> tuple[list[dict[str, str]], dict[str, Any]]:
    """Chat messages for an OpenAI-compatible server, plus extra body fields: the prefill as
    a partial assistant turn (`prefill_mode="assistant"`, with vLLM's continue flags), or,
    for a request with choices, an answer-format line in the last user turn."""
    msgs = [{"role": m.role, "content": m.content} for m in request.messages]
    extra: dict[str, Any] = {}
    if request.prefill and prefill_mode == "assistant":
        msgs.append({"role": "assistant", "content": request.prefill})
        # vLLM continues a final assistant turn only when told to; llama.cpp does anyway.
        extra = {"continue_final_message": True, "add_generation_prompt": False}
    elif request.prefill and request.choices:
        add_choice_line(msgs, request.choices)
    return msgs, extra


def add_choice_line(msgs: list[dict[str, Any]], choices: Sequence[str]) -> None:
    """For servers that cannot continue an assistant turn: end the last user message with the
    answer-format line (or add one), so the model answers with a choice label."""
    line = choice_line(choices)
    for m in reversed(msgs):
        if m["role"] == "user":
            m["content"] = m["content"].rstrip() + "\n\n" + line
            return
    msgs.append({"role": "user", "content": line})


def chat_body(request: Request, model: str, *, prefill_mode: str = "instruct",
              temperature: float | None = None, logprobs: bool = True,
              top_logprobs: int = TOP_LOGPROBS) -> dict[str, Any]:
    """The chat-completions body for `request` (what the openai provider sends; also the
    body of every line of a plan file, whatever the provider): model, messages, max_tokens,
    temperature (`temperature` overrides the request's), and the top logprobs when the
    request has choices and `logprobs` is on."""
    msgs, extra = chat_messages(request, prefill_mode)
    body: dict[str, Any] = {
        "model": model,
        "messages": msgs,
        "max_tokens": request.max_tokens,
        "temperature": temperature if temperature is not None else request.temperature,
        **extra,
    }
    if request.choices and logprobs:
        body["logprobs"] = True
        body["top_logprobs"] = top_logprobs
    return body


def message_text(content: Any) -> str:
    """A message's content as text: a string as it is, null (a refusal) as "", a list of
    parts (Mistral's reasoning models: thinking parts, then text parts) as its text parts
    joined; anything else is not a chat completion (TypeError)."""
    if content is None or isinstance(content, str):
        return content or ""
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content
                       if isinstance(p, dict) and p.get("type", "text") == "text")
    raise TypeError(f"message content of type {type(content).__name__}")


# Why a reply with an empty `choices` list holds no verdict.
NO_CHOICES = "no choices in the reply (a content filter?)"


def parse_chat_completion(data: dict[str, Any], choices: Sequence[str],
                          prefill: str = "") -> Response:
    """A chat.completion object -> Response: the text, the probabilities of `choices` from
    the first token's top_logprobs (when there), usage. `prefill`: the assistant turn the
    request ended with; a server that returns it with its continuation (llama.cpp's does)
    has it cut off, so the text is the continuation, as from every other server. Raises
    KeyError, IndexError, TypeError or AttributeError on a body that is not a chat
    completion."""
    usage = data.get("usage") or {}
    if data.get("choices") == [] and isinstance(usage, dict) and usage:
        # Answered (HTTP 200) and billed (its usage), with nothing in it: a content filter
        # that drops the answer. One answer with no verdict, not a retry: retried, 40 calls
        # took 256 requests whose tokens were never counted, past --max-cost. (Without usage
        # it is no sign of a paid answer: malformed, retried as before.)
        return Response(text="", usage=Usage(int(usage.get("prompt_tokens") or 0),
                                             int(usage.get("completion_tokens") or 0)),
                        invalid=NO_CHOICES,
                        raw={"model": data.get("model"), "finish_reason": None, "choices": 0})
    choice = data["choices"][0]
    text = message_text(choice["message"].get("content"))
    if prefill and text.lstrip().startswith(prefill.strip()):
        text = text.lstrip()[len(prefill.strip()):]
    probs = None
    top: list[tuple[str, float]] | None = None
    logprobs = choice.get("logprobs")
    if choices and isinstance(logprobs, dict) and logprobs.get("content"):
        first = logprobs["content"][0]
        top = [(t["token"], t["logprob"]) for t in first.get("top_logprobs") or []]
        probs = choice_probs(top, choices, sampled=first.get("token"))
    written = int(usage.get("completion_tokens") or 0)
    refusal = choice["message"].get("refusal")
    return Response(
        text=text,
        probs=probs,
        usage=Usage(int(usage.get("prompt_tokens") or 0), written),
        invalid=unusable_answer(text, choice.get("finish_reason"), written,
                                refusal=refusal if isinstance(refusal, str) else None),
        raw={
            "model": data.get("model"),
            "finish_reason": choice.get("finish_reason"),
            # Kept for review: what the model weighed at the first token.
            "first_token_top": [list(t) for t in top] if top is not None else None,
        },
    )


EMPTY_BASE_URL = ("base_url is empty: give the server's URL, or leave the parameter out for the "
                  "provider's default")


def base_url_param(params: dict[str, str], provider: str) -> str | None:
    """The spec's `base_url`, None when it is not given; a ValueError when it is given empty
    (`base_url=` or a bare `base_url`): read as "not given", it sent every call, with the
    key, to the provider's hosted API instead of the server the user meant."""
    if "base_url" not in params:
        return None
    raw = params["base_url"]
    if not raw.strip():
        raise ValueError(f"{provider}: {EMPTY_BASE_URL}")
    return raw


def split_base_urls(raw: str | None) -> list[str]:
    """`base_url` as a list: one URL, or several separated by '|' (each checked)."""
    if raw is None or not raw.strip():
        return []
    urls = [u.strip() for u in raw.split("|")]
    if any(not u for u in urls):
        raise ValueError(f"base_url {redact_url(raw)!r}: an empty entry in a '|'-separated "
                         "list")
    for u in urls:
        check_base_url(u)
    return urls


class _Server:
    """One of several servers behind a `base_url=URL1|URL2` spec."""

    def __init__(self, url: str):
        self.url = url
        self.inflight = 0
        self.fails = 0           # connection failures in a row
        self.down_until = 0.0    # time.monotonic() before which it is left out
        self.calls = 0           # calls answered (for tests and logs)
        self.client: Any = None
        self.loop: asyncio.AbstractEventLoop | None = None


# A server whose connection fails this many times in a row is left out for `down_for`.
DOWN_AFTER = 2


# ---- the provider --------------------------------------------------------------------------

@register
class OpenAIProvider(Provider):
    """Chat completions through `openai.AsyncOpenAI`; next-token probabilities over the
    request's choices from the first generated token's top_logprobs, when the server has them.
    """

    name: ClassVar[str] = "openai"
    default_concurrency: ClassVar[int] = 8
    operational_params: ClassVar[frozenset[str]] = OPERATIONAL_PARAMS
    key_env: ClassVar[str] = "OPENAI_API_KEY"
    known_params: ClassVar[dict[str, str] | None] = KNOWN_PARAMS

    def __init__(self, model: str, params: dict[str, str] | None = None):
        super().__init__(model, params)
        p = self.params
        register_key(p, self.key_env, self.name)
        self.base_urls = split_base_urls(base_url_param(p, self.name))
        self.base_url: str | None = self.base_urls[0] if self.base_urls else None
        self.timeout = float_param(p, "timeout", self.name, default=60.0, positive=True)
        self.temperature = float_param(p, "temperature", self.name, default=None)
        self.max_tokens = (int_param(p, "max_tokens", self.name, default=1)
                           if "max_tokens" in p else None)
        self.reasoning_effort = p.get("reasoning_effort") or None
        # Set once the server refuses them (see the module docstring).
        self._token_field = "max_tokens"
        self._temperature_ok = True
        self._zero_temperature_ok = True  # cleared by a server that wants it > 0
        self.max_connections = int_param(p, "max_connections", self.name, default=64)
        self.logprobs_mode = p.get("logprobs", "auto")
        if self.logprobs_mode not in ("auto", "off"):
            raise ValueError(f"{self.name} parameter logprobs={self.logprobs_mode!r}: "
                             f"expected 'auto' or 'off'")
        self.prefill_mode = p.get("prefill", "instruct")
        if self.prefill_mode not in ("instruct", "assistant"):
            raise ValueError(f"{self.name} parameter prefill={self.prefill_mode!r}: "
                             f"expected 'instruct' or 'assistant'")
        # The built-in prices hold for OpenAI's own API: none given, or its address written.
        hosted = self.server() is None
        # Instance attribute shadows the class default the client reads for cost accounting.
        self.price_per_mtok = price_for(model, p, OPENAI_PRICES, self.name, hosted)
        self.billed = billed(self.base_urls, "OPENAI_BASE_URL")
        self._logprobs_ok = True  # cleared when the server rejects logprobs once
        self._top_logprobs = TOP_LOGPROBS  # lowered to what the server allows
        self._sdk_client: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None
        # Several servers (base_url=URL1|URL2): least in flight first, per_server at most.
        self.per_server = int_param(p, "per_server", self.name, default=1_000_000)
        self.down_for = float_param(p, "down_for", self.name, default=30.0)
        self.wait = float_param(p, "wait", self.name, default=0.0)
        if not (math.isfinite(self.wait) and self.wait >= 0):
            raise ValueError(f"{self.name} parameter wait={p['wait']!r}: expected seconds >= 0")
        self._ready: asyncio.Task[None] | None = None  # the wait for the server, once
        self.servers = [_Server(u) for u in self.base_urls] if len(self.base_urls) > 1 else []
        self._turn = 0
        self._freed: asyncio.Event | None = None
        from judgeaudit.llm.batch import batch_settings

        self.batch = batch_settings(p, self.name, max_size=50_000)
        if self.batch is not None:
            if self.servers:
                raise ValueError(f"{self.name}: batch=on takes one base_url, not a list")
            if self.price_per_mtok is not None and "price_in" not in p:
                self.price_per_mtok = (self.price_per_mtok[0] * BATCH_DISCOUNT,
                                       self.price_per_mtok[1] * BATCH_DISCOUNT)
        self._batch_backend: Any = None

    @property
    def where(self) -> str:
        """The server, fit for messages (a URL password masked)."""
        if self.servers:
            return f"{len(self.servers)} servers (" + "|".join(
                redact_url(s.url) for s in self.servers) + ")"
        return redact_url(self.base_url or os.environ.get("OPENAI_BASE_URL") or "api.openai.com")

    def server(self) -> str | None:
        """The server calls go to, as the cache key names it (`keyed_server`): None for
        OpenAI's own API."""
        return keyed_server(self.params.get("base_url"), os.environ.get("OPENAI_BASE_URL"),
                            OPENAI_DEFAULT_URL)

    def keyed_params(self, public: dict[str, Any]) -> dict[str, Any]:
        """The base_url as the server actually asked, in one form (`keyed_server`)."""
        return with_server(public, self.server())

    def check_sendable(self) -> None:
        """A malformed key (`check_key`), or none where one is needed (no base_url, no
        $OPENAI_BASE_URL), is bad input (exit 2), found before the first call sent: a missing
        key failed the first call and with it the run (exit 3, "5 of the 6 calls not sent")
        where a malformed one exited 2. A fully cached run or a plan sends no key and needs
        none (the client runs this before the first call the cache does not answer)."""
        check_key(self.params, self.key_env, self.name)
        if api_key(self.params, self.key_env, self.name) is None and not self._keyless():
            raise ValueError(self._no_key())

    def _keyless(self) -> bool:
        """Whether the calls go to a server of the user's own (base_url or $OPENAI_BASE_URL,
        not OpenAI's address written out): local servers (vLLM, llama.cpp) accept any key,
        so none is needed."""
        return self.server() is not None

    def _no_key(self) -> str:
        return (f"{self.name}: no API key: set ${self.key_env}, or pass api_key=... in the "
                "judge spec, or point base_url=... at a local OpenAI-compatible server")

    def _api_key(self) -> str:
        key = api_key(self.params, self.key_env, self.name)
        if key is not None:
            if not self.params.get("api_key"):
                warn_cleartext(self.key_env,
                               self.base_urls or [os.environ.get("OPENAI_BASE_URL")], self.name)
            return key
        if self._keyless():
            return "EMPTY"  # local servers (vLLM, llama.cpp) accept any key
        raise FatalProviderError(self._no_key(), kind="auth")

    async def prepare(self) -> None:
        """Import the SDK and build its client for this loop before the timed call (the
        first import takes about a second: timed, it made every first attempt time out);
        with `wait`, wait for the server to come up (`_await_ready`), once."""
        self._client()
        if self.wait <= 0:
            return
        ready = self._ready
        if ready is not None and ready.done() and not ready.cancelled() and (
                ready.exception() is None):
            return  # it came up (an earlier command's wait counts too)
        loop = asyncio.get_running_loop()
        if ready is None or ready.done() or ready.get_loop() is not loop:
            ready = self._ready = loop.create_task(self._await_ready())
        await asyncio.shield(ready)

    async def _await_ready(self) -> None:
        """Ask GET /models every `READY_POLL` s until the server answers (any status below
        500: a 401 or 404 is a server that is up), for at most `wait` s. Until then a
        refused connection, a timeout or a 5xx (llama.cpp's 503 "Loading model") means it is
        still starting; any other error (an untrusted certificate) is raised at once."""
        import openai

        secrets = [self.params.get("api_key"), os.environ.get(self.key_env)]
        targets = ([(s.client, redact_url(s.url)) for s in self.servers] if self.servers
                   else [(self._client(), self.where)])
        deadline = time.monotonic() + self.wait
        last, said = "", False
        while True:
            for client, where in targets:
                try:
                    async with asyncio.timeout(min(10.0, max(1.0, self.wait))):
                        await client.get("/models", cast_to=_http_response_cls())
                    return
                except openai.APIStatusError as exc:
                    if exc.status_code < 500:
                        return
                    last = f"HTTP {exc.status_code} from {where}: {server_message(exc)}"
                except (openai.APIConnectionError, TimeoutError) as exc:
                    err = self._mapped(exc, openai, secrets, where)
                    if isinstance(err, ProviderError) and not err.retryable:
                        raise err from None
                    last = str(err).removeprefix(f"{self.name}: ")
            left = deadline - time.monotonic()
            if left <= 0:
                raise FatalProviderError(
                    f"{self.name}: the server did not come up within wait={self.wait:g} s "
                    f"(last: {last}); wait longer (wait=SECONDS in the judge spec) or check "
                    "that it is starting", kind="connection")
            if not said:
                said = True
                log.warning("%s: waiting up to %g s for %s to come up (%s)", self.name,
                            self.wait, self.where, last)
            await asyncio.sleep(min(READY_POLL, left))

    def _client(self) -> Any:
        """The SDK client, created lazily (a fully cached run needs no key) and once per event
        loop (its connection pool belongs to the loop that opened it)."""
        loop = asyncio.get_running_loop()
        if self.servers:
            for srv in self.servers:
                if srv.client is None or srv.loop is not loop:
                    srv.client, srv.loop = self._new_sdk_client(srv.url), loop
                    self._freed = None  # an Event belongs to one loop
            return self.servers[0].client
        if self._sdk_client is None or self._loop is not loop:
            self._sdk_client = self._new_sdk_client(self.base_url)
            self._loop = loop
        return self._sdk_client

    def _new_sdk_client(self, base_url: str | None) -> Any:
        import openai

        where = base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com"
        http = sdk_http_client(openai, where, max_connections=self.max_connections,
                               timeout=self.timeout, provider=self.name)
        return openai.AsyncOpenAI(
            api_key=self._api_key(), base_url=base_url, timeout=http_timeout(openai, self.timeout),
            max_retries=0, http_client=http,
        )

    def build_messages(self, request: Request) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """Chat messages for the server, plus extra body fields (assistant-prefill mode)."""
        return chat_messages(request, self.prefill_mode)

    def request_body(self, request: Request) -> dict[str, Any]:
        """The body this provider sends for `request` (logprobs as the server allows them):
        also each line's body in batch mode and in a plan file."""
        want_lp = bool(request.choices) and self.logprobs_mode == "auto" and self._logprobs_ok
        body = chat_body(request, self.model, prefill_mode=self.prefill_mode,
                         temperature=self.temperature, logprobs=want_lp,
                         top_logprobs=self._top_logprobs)
        limit = body.pop("max_tokens")
        body[self._token_field] = self.max_tokens or limit
        if not self._temperature_ok:
            body.pop("temperature", None)
        elif body.get("temperature") == 0 and not self._zero_temperature_ok:
            body["temperature"] = NEARLY_GREEDY
        if self.reasoning_effort:
            body["reasoning_effort"] = self.reasoning_effort
        return body

    def _adapt(self, message: str, sent: dict[str, Any]) -> bool:
        """After a 400 refusing a parameter of the `sent` body (`message`, lower case): drop
        the logprobs, switch max_tokens to max_completion_tokens, or drop the temperature,
        for this and every later request (warned once). False: nothing to change, the 400
        stands. Calls in flight when the first refusal came are refused too and just send
        again."""
        change = None
        limit = top_logprobs_limit(message) if "logprobs" in sent else None
        if limit is not None and 0 < limit < sent.get("top_logprobs", 0):
            if limit < self._top_logprobs:
                change = f"top_logprobs={sent['top_logprobs']}; asking for the top {limit}"
                self._top_logprobs = limit
        elif ("logprob" in message or "top_n_tokens" in message) and "logprobs" in sent:
            if self._logprobs_ok:
                change = "logprobs; continuing without them"
            self._logprobs_ok = False
        elif "max_completion_tokens" in message and "max_tokens" in sent:
            if self._token_field == "max_tokens":
                change = "max_tokens; sending max_completion_tokens instead"
            self._token_field = "max_completion_tokens"
        elif ("temperature" in message and sent.get("temperature") == 0
              and _POSITIVE_ONLY.search(message)):
            if self._zero_temperature_ok:
                change = (f"temperature 0; sending {NEARLY_GREEDY:g} instead (nearly greedy; "
                          "give temperature= in the spec to choose)")
            self._zero_temperature_ok = False
        elif ("temperature" in message and "temperature" in sent
              and ("unsupported" in message or "not support" in message)):
            if self._temperature_ok:
                change = "this temperature; sending none (the model's default)"
            self._temperature_ok = False
        else:
            return False
        if change is not None:
            log.warning("%s at %s rejects %s", self.model, self.where, change)
        return True

    def batch_backend(self) -> Any:
        """The Batch API backend when `batch=on` (the client sends cache misses to it)."""
        if self.batch is None:
            return None
        if self._batch_backend is None:
            from judgeaudit.llm.batch_openai import OpenAIBatchBackend

            self._batch_backend = OpenAIBatchBackend(self)
        return self._batch_backend

    async def generate(self, request: Request) -> Response:
        if self.servers:
            return await self._generate_spread(request)
        return await self._generate_on(self._client(), self.where, request)

    async def _generate_spread(self, request: Request) -> Response:
        """One call on the server with the fewest calls in flight (per_server at most); a
        connection refused or reset goes to another server at once, and a server failing
        DOWN_AFTER times in a row is left out for `down_for` seconds."""
        self._client()
        tried: set[int] = set()
        while True:
            srv = await self._take(tried)
            try:
                resp = await self._generate_on(srv.client, redact_url(srv.url), request)
            except ProviderError as exc:
                if exc.kind != "connection":
                    raise
                srv.fails += 1
                if srv.fails >= DOWN_AFTER and srv.down_until <= time.monotonic():
                    srv.down_until = time.monotonic() + (self.down_for or 0.0)
                    log.warning("%s: %s failed %d times in a row; left out for %gs",
                                self.name, redact_url(srv.url), srv.fails, self.down_for)
                tried.add(self.servers.index(srv))
                if len(tried) >= len(self.servers):
                    raise
                continue
            finally:
                srv.inflight -= 1
                if self._freed is not None:
                    self._freed.set()
            srv.fails, srv.down_until = 0, 0.0
            srv.calls += 1
            return resp

    async def _take(self, tried: set[int]) -> _Server:
        """The server for the next call (its in-flight count taken): up, not tried for this
        call, below per_server, fewest in flight (ties in turn). When every server is down,
        the one back soonest; when all are at per_server, wait for a slot."""
        while True:
            now = time.monotonic()
            free = [i for i, s in enumerate(self.servers)
                    if i not in tried and s.inflight < self.per_server]
            up = [i for i in free if self.servers[i].down_until <= now]
            if not up and free and all(self.servers[i].down_until > now
                                       for i in range(len(self.servers)) if i not in tried):
                up = [min(free, key=lambda i: self.servers[i].down_until)]
            if up:
                n = len(self.servers)
                best = min(up, key=lambda i: (self.servers[i].inflight, (i - self._turn) % n))
                self._turn = (best + 1) % n
                srv = self.servers[best]
                srv.inflight += 1
                return srv
            if self._freed is None:
                self._freed = asyncio.Event()
            self._freed.clear()
            with contextlib.suppress(TimeoutError):  # a server may have come back up
                await asyncio.wait_for(self._freed.wait(), timeout=0.5)

    async def _generate_on(self, client: Any, where: str, request: Request) -> Response:
        import openai

        secrets = [self.params.get("api_key"), os.environ.get(self.key_env)]
        for attempt in range(6):  # one change each: top logprobs, logprobs, token field,
            # temperature (twice: 0 refused, then any)
            body = self.request_body(request)  # as the server allows it so far
            try:
                # The SDK's documented raw `post` (auth, base_url, timeouts, status errors as
                # for `chat.completions.create`) without its per-call walk of the params'
                # TypedDicts, which cost ~1 ms of CPU per call: the harness's bottleneck at
                # concurrency >= 32 (benchmarks/bench_harness.py).
                http = await client.post("/chat/completions", cast_to=_http_response_cls(),
                                         body=body)
                break
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                if attempt < 5 and self._adapt(server_message(exc).lower(), body):
                    continue
                raise self._mapped(exc, openai, secrets, where) from None
            except openai.NotFoundError as exc:
                raise await self._not_found(client, exc, secrets, where) from None
            except openai.OpenAIError as exc:
                raise self._mapped(exc, openai, secrets, where) from None
        return self.parse_body(http.content, request, where)

    async def _not_found(self, client: Any, exc: Exception, secrets: list[str | None],
                         where: str) -> Exception:
        """A 404, naming the models the server serves when it lists them and this one is not
        among them (vLLM answers a model name it does not serve with 404: one of the listed
        names is what to give). Without a list it is the plain 404 (`NOT_FOUND`)."""
        import openai

        err = self._mapped(exc, openai, secrets, where)
        try:
            async with asyncio.timeout(5):
                listed = await client.get("/models", cast_to=_http_response_cls())
            names = [str(m["id"]) for m in json.loads(listed.content)["data"]]
        except (openai.OpenAIError, ValueError, KeyError, TypeError, TimeoutError):
            return err
        if not names or self.model in names:
            return err
        more = f" and {len(names) - 8} more" if len(names) > 8 else ""
        return FatalProviderError(
            f"{self.name}: HTTP 404 from {where}: the server does not serve model "
            f"{self.model!r}; it serves {', '.join(repr(n) for n in names[:8])}{more}: give "
            f"one as MODEL, e.g. openai:{names[0]}?base_url=...", kind="bad_request")

    def _mapped(self, exc: Exception, sdk: Any, secrets: list[str | None],
                where: str | None = None) -> Exception:
        err = map_sdk_error(exc, sdk, provider=self.name, where=where or self.where,
                            key_env=self.key_env, secrets=secrets, timeout=self.timeout or 0.0,
                            not_found=NOT_FOUND)
        if err is None:
            return exc
        text = str(err)
        starting = (err.kind == "server" and "loading" in text.lower()) or (
            err.kind == "connection" and "ConnectError" in text)
        if starting and err.retryable and self.base_urls and not self.wait:  # still starting?
            err = ProviderError(f"{text}; if the server is still starting (loading its model), "
                                "let the judge wait for it: wait=SECONDS in its spec",
                                retryable=True, kind=err.kind, retry_after=err.retry_after)
        return err

    def parse_body(self, content: bytes, request: Request, where: str | None = None
                   ) -> Response:
        """A 200 body -> Response; a body that is not a chat completion is a retryable error
        (servers under load truncate), an error object in it the error it names
        (`error_in_body`), an HTML page a fatal one unless it names a gateway error
        (`html_error`: a login page in front of the server answers every call the same)."""
        data: Any = None
        try:
            data = json.loads(content)
            return self._parse(data, request)
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            error = error_in_body(data)
            if error is not None:
                raise self._body_error(*error, where or self.where) from None
            page = html_error(self.name, redact_url(where or self.where), content,
                              "an OpenAI-compatible API")
            if page is not None:
                raise page from None
            snippet = content[:80].decode("utf-8", "replace")
            raise ProviderError(f"{self.name}: malformed response from {where or self.where} "
                                f"(not a chat completion): {snippet!r}", retryable=True,
                                kind="malformed") from None

    def _body_error(self, status: int | None, message: str, where: str) -> ProviderError:
        """A 200 whose body is an error object (OpenRouter's errors from the model's
        provider): classified by the HTTP status it names, as that answer would be (no
        status: a server error, retried)."""
        kind, retryable = http_error_kind(status or 500, message)
        code = f" (code {status})" if status else ""
        text = f"{self.name}: {where} answered 200 with an error{code}: {message[:300]}"
        if kind in PER_REQUEST_KINDS:
            return rejected(text, kind, status, message, where)
        if retryable:
            return ProviderError(text, retryable=True, kind=kind)
        return FatalProviderError(text, kind=kind)

    def _parse(self, data: dict[str, Any], request: Request) -> Response:
        sent = request.prefill if self.prefill_mode == "assistant" else ""
        return parse_chat_completion(data, request.choices, sent or "")

    async def aclose(self) -> None:
        client, self._sdk_client = self._sdk_client, None
        loop = asyncio.get_running_loop()
        if client is not None and self._loop is loop:
            await client.close()
        for srv in self.servers:
            c, srv.client = srv.client, None
            if c is not None and srv.loop is loop:
                await c.close()
