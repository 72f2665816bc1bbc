"""Keep secrets out of messages and logs.

`redact(text)` masks what a key can hide in: the password of URL userinfo
(`http://user:KEY@host` -> `http://user:***@host`), secret-named query values (`?api_key=`,
`key=`, `token=`, `subscription-key=`, `?code=`, ..., also percent-encoded inside another
value: `%3Fapi-key%3DKEY`), Authorization / Bearer / x-api-key header values and anything
shaped like an API key (`sk-...`, `sk-ant-...`, `key-...`).

Patterns miss a secret echoed bare ("password URLcanary rejected"), so the secrets this
process knows are masked too, wherever and however they appear (as given, percent-encoded,
JSON-escaped, inside base64 such as a Basic header): the keys of the provider environment
variables (`SECRET_ENV`), the passwords of the URLs in `URL_ENV`, and every value a provider
registers (`register_secret`: its api_key; `register_url`: its base_url's userinfo).
`mask_known(text)` masks only those (for model answers, which the patterns would garble:
"key-value store"); `redact` masks both.

`install_log_redaction()` puts a `RedactingFilter` on the root logger's handlers and on the
HTTP and SDK loggers, so a record is redacted before any handler writes it (under `-v` httpx
logs every request URL, userinfo included).
"""

from __future__ import annotations

import base64
import functools
import json
import logging
import os
import re
import threading
import urllib.parse

# Anything shaped like an API key; shared with the provider error messages.
KEYLIKE = re.compile(r"\b(sk-(?:ant-)?|key-)[A-Za-z0-9_\-*.]{3,}")
# scheme://user:PASSWORD@  (the user part stays: it names an account, not a secret). The
# password runs to the @ whatever it holds but spaces and quotes: a spec's percent-decoded
# key may hold / ? # (http://user:sk-Ab/cd@host was shown whole in an error)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:@/\s?#]*):([^@\s'\"<>]*)@")
# scheme://TOKEN@host: userinfo without a password is the credential itself (a token as the
# user name, as GitHub and some gateways take it)
_BARE_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^:@/\s?#'\"<>]+@")
# ?api_key=... &key=... token=... (query strings, form bodies, "key=value" text), also
# percent-encoded inside another value (a spec's base_url=...%3Fapi-key%3DKEY, %253F twice
# encoded). Names: the usual ones and any whose last word is key/token/secret/password
# (subscription-key: Azure APIM, x-api-key, refresh_token, sas_token); never a word that
# merely ends in one (monkey=3, max_tokens=8).
_ENC_SEP = r"%(?:25)*(?:3F|26)"
_EQ = r"(?:=|%(?:25)*3D)"
_VALUE = r"(?:(?!%(?:25)*26)[^&\s#;,)\"'])+"
_QUERY = re.compile(
    rf"(?i)((?:^|[?&;\s,(\"']|{_ENC_SEP})(?:api[_-]?key|apikey|key|token|access[_-]?token|"
    r"auth|password|passwd|pwd|secret|client[_-]?secret|sig|signature|"
    rf"[a-z0-9_-]*[_-](?:key|token|secret|password)){_EQ}){_VALUE}")
# Names that are secrets only in a URL's query (after ? or &): Azure Functions' and OAuth's
# `code=` ("error code=429" in prose stays).
_URL_QUERY = re.compile(rf"(?i)((?:[?&]|{_ENC_SEP})code{_EQ}){_VALUE}")
# Authorization: Bearer X / Basic X / X, x-api-key: X (headers, dict reprs, JSON). After
# `=` the value is the token attached to it (or a quoted one): "api-key= has a space" lost
# the word "has" to the mask; after a header's `:` a space is the header syntax.
_AUTH_HEADER = re.compile(
    r"(?i)((?:authorization|x-api-key|api-key)['\"]?\s*(?::\s*['\"]?|=(?:\s*['\"])?))"
    r"(?:(bearer|basic|token)\s+)?[^\s'\",}]+")
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=\-]{4,}")
# Basic CREDENTIALS, wherever a server echoes the header back ("Incorrect API key provided:
# Basic dXNlcjpzay0uLi4="): base64 of user:password, so a URL's userinfo key leaked encoded
_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{4,}={0,2})")
MASK = "***"


def _basic(m: re.Match[str]) -> str:
    """Mask a Basic credential: a token that decodes to user:password (plain words after
    "basic" stay)."""
    import base64
    import binascii

    token = m.group(2)
    try:
        decoded = base64.b64decode(token + "=" * (-len(token) % 4), validate=True)
    except (binascii.Error, ValueError):
        return m.group(0)
    return m.group(1) + MASK if b":" in decoded else m.group(0)


# ---- the secrets this process knows -------------------------------------------------------

# Environment variables holding keys (the providers' and the model hub's), and URLs whose
# userinfo password is a secret (the providers' base URLs, the proxies).
SECRET_ENV = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "HF_TOKEN",
              "HUGGING_FACE_HUB_TOKEN")
URL_ENV = ("OPENAI_BASE_URL", "ANTHROPIC_BASE_URL", "HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY",
           "https_proxy", "http_proxy", "all_proxy")
# Shorter values are not masked as text: a 3-character "password" would eat every word
# holding it. Model answers (`mask_known` on data) take a longer floor still, so a weak
# password cannot garble the answers stored (`DATA_MIN_CHARS`).
MIN_CHARS = 4
DATA_MIN_CHARS = 8
# Placeholders sent where a server wants no key: not secrets.
_PLACEHOLDERS = frozenset({"empty", "none", "null", "dummy", "x"})
_registered: frozenset[str] = frozenset()  # replaced, never changed: read without a lock
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Mask `value` (and its whitespace-stripped form) wherever it appears from now on, in
    this process: an API key a provider sends, a password it was given."""
    global _registered
    for v in {value, value.strip()} if value else ():
        if len(v) >= MIN_CHARS and v.lower() not in _PLACEHOLDERS and v not in _registered:
            with _lock:
                _registered = _registered | {v}


def url_credentials(url: str | None) -> list[str]:
    """The secrets in a URL's userinfo: its password (as written and percent-decoded); the
    user name too when there is no password (`http://TOKEN@host`: the name is the
    credential). A user name beside a password names an account and is not one."""
    if not url or "@" not in url:
        return []
    m = re.match(r"(?i)^\s*[a-z][a-z0-9+.\-]*://([^/?#]*)@", url)
    if m is None:
        return []
    user, sep, password = m.group(1).partition(":")
    secret = password if sep else user
    return [v for v in {secret, urllib.parse.unquote(secret)} if v]


def register_url(url: str | None) -> None:
    """Register the credentials of a URL's userinfo (`url_credentials`)."""
    for v in url_credentials(url):
        register_secret(v)


def known_secrets() -> list[str]:
    """Every secret to mask now, longest first: the registered ones, the keys in
    `SECRET_ENV` and the userinfo credentials of the URLs in `URL_ENV` (read now: ingest and
    a cached run mask $OPENAI_API_KEY without a provider having sent it)."""
    env = os.environ
    return _known(_registered, tuple(env.get(name) for name in _ENV_NAMES))


_ENV_NAMES = (*SECRET_ENV, *URL_ENV)


@functools.lru_cache(maxsize=64)
def _known(registered: frozenset[str], env: tuple[str | None, ...]) -> list[str]:
    """`known_secrets` for these registered values and environment values (cached: every
    answer stored asks)."""
    found = set(registered)
    for v in env[:len(SECRET_ENV)]:
        v = (v or "").strip()
        if len(v) >= MIN_CHARS and v.lower() not in _PLACEHOLDERS:
            found.add(v)
    for url in env[len(SECRET_ENV):]:
        found.update(v for v in url_credentials(url) if len(v) >= MIN_CHARS)
    return sorted(found, key=len, reverse=True)


def _b64_cores(raw: bytes) -> set[str]:
    """The base64 characters that encode only `raw`'s bits, at each of the three alignments
    it can have inside a longer encoded string (`Basic base64(user:KEY)` holds KEY at offset
    5): whatever surrounds it, one of them is in the encoding."""
    cores = set()
    for pad in range(3):
        enc = base64.b64encode(b"\0" * pad + raw + b"\0\0").decode()
        first, last = -(-8 * pad // 6), 8 * (pad + len(raw)) // 6
        core = enc[first:last]
        if len(core) >= 8:  # shorter ones match by chance
            cores.update({core, core.replace("+", "-").replace("/", "_")})
    return cores


_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-=")


@functools.lru_cache(maxsize=512)
def _pattern(secret: str) -> tuple[re.Pattern[str], frozenset[str]]:
    """How `secret` can appear in text, as one pattern: as given, percent-encoded (whole or
    URL-style), form-encoded, JSON-escaped, and inside base64 (`_b64_cores`, the second
    value: such a match is widened to the whole base64 run around it, so no decodable
    remainder is left)."""
    plain = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote(secret),
             urllib.parse.quote_plus(secret), json.dumps(secret)[1:-1]}
    cores = frozenset(_b64_cores(secret.encode()))
    forms = sorted(plain | cores, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, forms))), cores


def _mask_one(text: str, secret: str) -> str:
    pattern, cores = _pattern(secret)
    out, at = [], 0
    for m in pattern.finditer(text):
        start, end = m.span()
        if start < at:
            continue
        if m.group() in cores:  # the whole base64 token around it
            while start > at and text[start - 1] in _B64_CHARS:
                start -= 1
            while end < len(text) and text[end] in _B64_CHARS:
                end += 1
        out += [text[at:start], MASK]
        at = end
    return "".join(out) + text[at:] if out else text


def mask_known(text: str, min_chars: int = MIN_CHARS,
               secrets: list[str] | None = None) -> str:
    """`text` with every known secret (`secrets`, default `known_secrets()`: pass it to mask
    several texts at the cost of one look at the environment) of at least `min_chars`
    characters masked by `***`, in each of its forms (`_pattern`). Unlike `redact` it
    changes nothing else, so it may run over a model's answer."""
    if not text:
        return text
    for secret in known_secrets() if secrets is None else secrets:
        if len(secret) >= min_chars:
            text = _mask_one(text, secret)
    return text


def redact(text: str) -> str:
    """`text` with the known secrets (`mask_known`), URL passwords, secret query values, auth
    headers and key-shaped strings masked by `***`."""
    if not text:
        return text
    text = mask_known(text)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", text)
    text = _BARE_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _QUERY.sub(lambda m: m.group(1) + MASK, text)
    text = _URL_QUERY.sub(lambda m: m.group(1) + MASK, text)
    text = _AUTH_HEADER.sub(
        lambda m: m.group(1) + (f"{m.group(2)} " if m.group(2) else "") + MASK, text)
    text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    text = _BASIC.sub(_basic, text)
    return KEYLIKE.sub(lambda m: m.group(1) + MASK, text)


def redact_url(url: str) -> str:
    """A URL fit to show: its userinfo password and secret query values masked."""
    return redact(url)


class RedactingFilter(logging.Filter):
    """Redacts every record's message (and its formatted traceback) in place: `msg` becomes
    the redacted full message and `args` None, so no handler can format the secret back in."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler's error path
            return True
        record.msg = redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = redact(logging.Formatter().formatException(record.exc_info))
        elif record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


# Loggers whose records may carry request URLs or headers: filtered where they are logged,
# before they propagate (the root handlers' filter covers their children too).
SDK_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "openai", "anthropic")
_FILTER = RedactingFilter()


def install_log_redaction() -> RedactingFilter:
    """Add the redacting filter to the root logger's handlers and to the HTTP/SDK loggers
    (idempotent; call it after logging is configured, e.g. after `basicConfig`)."""
    targets: list[logging.Filterer] = [*logging.getLogger().handlers]
    targets += [logging.getLogger(name) for name in SDK_LOGGERS]
    for t in targets:
        if not any(isinstance(f, RedactingFilter) for f in t.filters):
            t.addFilter(_FILTER)
    return _FILTER


__all__ = ["KEYLIKE", "RedactingFilter", "install_log_redaction", "known_secrets", "mask_known",
           "redact", "redact_url", "register_secret", "register_url", "url_credentials"]
