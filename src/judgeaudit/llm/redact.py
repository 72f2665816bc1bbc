"""Keep secrets out of messages and logs.

`redact(text)` masks what a key can hide in: the password of URL userinfo
(`http://user:KEY@host` -> `http://user:***@host`), secret-named query values (`?api_key=`,
`key=`, `token=`, ...), Authorization / Bearer / x-api-key header values and anything shaped
like an API key (`sk-...`, `sk-ant-...`, `key-...`).

`install_log_redaction()` puts a `RedactingFilter` on the root logger's handlers and on the
HTTP and SDK loggers, so a record is redacted before any handler writes it (under `-v` httpx
logs every request URL, userinfo included).
"""

from __future__ import annotations

import logging
import re

# Anything shaped like an API key; shared with the provider error messages.
KEYLIKE = re.compile(r"\b(sk-(?:ant-)?|key-)[A-Za-z0-9_\-*.]{3,}")
# scheme://user:PASSWORD@  (the user part stays: it names an account, not a secret). The
# password runs to the @ whatever it holds but spaces and quotes: a spec's percent-decoded
# key may hold / ? # (http://user:sk-Ab/cd@host was shown whole in an error)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^:@/\s?#]*):([^@\s'\"<>]*)@")
# ?api_key=... &key=... token=... (query strings, form bodies, "key=value" text)
_QUERY = re.compile(
    r"(?i)((?:^|[?&;\s,(\"'])(?:api[_-]?key|apikey|key|token|access[_-]?token|auth|"
    r"password|passwd|secret|client[_-]?secret|sig|signature)=)[^&\s#;,)\"']+")
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


def redact(text: str) -> str:
    """`text` with URL passwords, secret query values, auth headers and key-shaped strings
    masked by `***`."""
    if not text:
        return text
    text = _USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", text)
    text = _QUERY.sub(lambda m: m.group(1) + MASK, text)
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


__all__ = ["KEYLIKE", "RedactingFilter", "install_log_redaction", "redact", "redact_url"]
