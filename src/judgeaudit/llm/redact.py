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
registers (`register_secret`: its api_key once it passed the provider's check;
`register_url`: its base_url's userinfo; `reset_secrets` forgets them). One length rule
holds everywhere: under 4 characters or a documented placeholder (`PLACEHOLDERS`: EMPTY,
ollama, lm-studio, ...) is no secret; under 12 is masked only as a whole token; longer,
wherever it appears. `mask_known(text)` masks only those (for model answers, which the
patterns would garble: "key-value store"; `mask_data` for a raw payload); `redact` masks
both. Neither raises, whatever the secret holds (a byte that is not UTF-8 in a variable).

`install_log_redaction()` redacts each log record as it is made (a record factory) and puts a
`RedactingFilter` on the root logger's handlers and on the HTTP, SDK and judgeaudit loggers,
so a record is redacted before any handler writes it, whenever logging is configured (under
`-v`, or a script's `logging.basicConfig(level=logging.INFO)`, httpx logs every request URL,
userinfo included). The CLI installs it, and so does every `Session` when it opens (the
Python API).
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
from collections.abc import Iterable
from typing import Any, NamedTuple

from judgeaudit.spec import PLACEHOLDERS, is_placeholder

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
# One rule for every text (messages, logs, answers, raw payloads, invalid reasons): a known
# secret shorter than MIN_CHARS is never masked (a 3-character "password" would eat every
# word holding it); one shorter than ANYWHERE_CHARS only as a whole token, not inside a
# longer word or number (OPENAI_API_KEY=test turned "12 tests; latest" into "12 ***s;
# la***"; 12345678 ate "created": 1712345678); a longer one wherever it appears (a real
# key: 40-160 characters, found inside a percent-encoded query or a base64 run too).
MIN_CHARS = 4
ANYWHERE_CHARS = 12
# What local servers document to send where they want no key (EMPTY, ollama, lm-studio,
# sk-no-key-required, not-needed, ...) and an elision (`api_key=...`): not secrets, never
# masked, by the patterns either (`judgeaudit.spec.is_placeholder`, shared with the spec's
# own masking).
_registered: frozenset[str] = frozenset()  # replaced, never changed: read without a lock
_lock = threading.Lock()


def is_secret(value: str | None) -> bool:
    """Whether `value` is masked as a secret: a string of `MIN_CHARS` or more (stripped)
    that is not a documented placeholder (`PLACEHOLDERS`)."""
    if not isinstance(value, str):
        return False
    v = value.strip()
    return len(v) >= MIN_CHARS and v.lower() not in PLACEHOLDERS


def register_secret(value: str | None) -> None:
    """Mask `value` (whitespace-stripped) wherever it appears from now on, in this process
    (until `reset_secrets`): an API key a provider sends, a password it was given."""
    global _registered
    if not is_secret(value):
        return
    v = value.strip()  # type: ignore[union-attr]
    if v not in _registered:
        with _lock:
            _registered = _registered | {v}


def reset_secrets() -> None:
    """Forget every registered secret (`register_secret`): a new session in a notebook, a
    test. The environment's keys stay masked (they are read each time)."""
    global _registered
    with _lock:
        _registered = frozenset()


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


_ENV_NAMES = (*SECRET_ENV, *URL_ENV)
try:  # the keys of os.environ's own mapping (bytes on POSIX, upper case on Windows)
    _ENV_KEYS: tuple[object, ...] | None = tuple(map(os.environ.encodekey, _ENV_NAMES))
except Exception:  # not CPython's os._Environ
    _ENV_KEYS = None


def _env_values() -> tuple[object, ...]:
    """The values of `_ENV_NAMES` now, as os.environ stores them: read from its mapping
    directly (0.5 us; `os.environ.get` encodes each name and decodes each value: 12 us, most
    of the cost of an answer with no secret). Decoded only when they change (`_known`)."""
    env = os.environ
    data = getattr(env, "_data", None)
    if _ENV_KEYS is not None and type(data) is dict:
        return tuple(map(data.get, _ENV_KEYS))
    return tuple(map(env.get, _ENV_NAMES))


def known_secrets() -> tuple[str, ...]:
    """Every secret to mask now, longest first: the registered ones, the keys in
    `SECRET_ENV` and the userinfo credentials of the URLs in `URL_ENV` (read now: ingest and
    a cached run mask $OPENAI_API_KEY without a provider having sent it)."""
    return _known(_registered, _env_values())


def _decoded(value: object) -> str:
    """An environment value as os.environ gives it (bytes: surrogate-escaped, as Python
    decodes a byte that is not UTF-8)."""
    if isinstance(value, bytes):
        return os.fsdecode(value)
    return value if isinstance(value, str) else ""


@functools.lru_cache(maxsize=64)
def _known(registered: frozenset[str], env: tuple[object, ...]) -> tuple[str, ...]:
    """`known_secrets` for these registered values and environment values (cached: every
    answer stored asks)."""
    found = set(registered)
    for v in env[:len(SECRET_ENV)]:
        if is_secret(v := _decoded(v)):
            found.add(v.strip())
    for url in env[len(SECRET_ENV):]:
        found.update(v for v in url_credentials(_decoded(url)) if is_secret(v))
    return tuple(sorted(found, key=len, reverse=True))


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
_WORD = re.compile(r"\w")
_SURROGATE = re.compile("[\ud800-\udfff]")


class _Matcher(NamedTuple):
    """How one secret is found: `needles`, the substrings a text must hold for the pattern
    to have a chance (a plain `in` check, 20x cheaper than the regex on a text without
    one); `pattern`, every form as one regex; `cores`, its base64 forms."""

    needles: tuple[str, ...]
    shortest: int
    pattern: re.Pattern[str]
    cores: frozenset[str]


def _token(form: str) -> str:
    """`form` as a pattern matching it only as a whole token: not preceded or followed by a
    word character where its own edge is one."""
    left = r"(?<!\w)" if _WORD.match(form[0]) else ""
    right = r"(?!\w)" if _WORD.match(form[-1]) else ""
    return left + re.escape(form) + right


@functools.lru_cache(maxsize=512)
def _matcher(secret: str) -> _Matcher:
    """How `secret` can appear in text: as given, JSON-escaped, percent-encoded (whole or
    URL-style), form-encoded and inside base64 (`_b64_cores`: such a match is widened to
    the whole base64 run around it, so no decodable remainder is left). A value holding a
    byte that is not UTF-8 (os.environ keeps it as a lone surrogate, \\udce9) is encoded
    back to that byte (and, as an answer holding it is stored, to U+FFFD); a form that
    cannot be built is left out, never raised."""
    plain = {secret, json.dumps(secret)[1:-1]}
    if _SURROGATE.search(secret):  # as an answer is stored: each replaced by U+FFFD
        plain.add(_SURROGATE.sub("\ufffd", secret))
    cores: set[str] = set()
    try:
        raw = secret.encode("utf-8", "surrogateescape")
    except UnicodeError:  # a surrogate no byte decodes to: only the forms above
        raw = None
    if raw is not None:
        plain |= {urllib.parse.quote(raw, safe=""), urllib.parse.quote(raw),
                  urllib.parse.quote_plus(raw)}
        cores = _b64_cores(raw)
    whole = len(secret) < ANYWHERE_CHARS
    forms = sorted(plain | cores, key=len, reverse=True)
    pattern = "|".join(_token(f) if whole and f not in cores else re.escape(f) for f in forms)
    return _Matcher(tuple(forms), min(map(len, forms)), re.compile(pattern), frozenset(cores))


def _mask_one(text: str, secret: str) -> str:
    m = _matcher(secret)
    if len(text) < m.shortest or not any(n in text for n in m.needles):
        return text
    out, at = [], 0
    for found in m.pattern.finditer(text):
        start, end = found.span()
        if start < at:
            continue
        if found.group() in m.cores:  # the whole base64 token around it
            while start > at and text[start - 1] in _B64_CHARS:
                start -= 1
            while end < len(text) and text[end] in _B64_CHARS:
                end += 1
        out += [text[at:start], MASK]
        at = end
    return "".join(out) + text[at:] if out else text


def mentions_known(text: str, secrets: Iterable[str] | None = None) -> bool:
    """Whether `text` may hold a known secret in one of its forms (a substring check, no
    regex): False means `mask_known` would return it unchanged."""
    if not text or not isinstance(text, str):
        return False
    for secret in known_secrets() if secrets is None else secrets:
        try:
            m = _matcher(secret)
        except Exception:  # never raise: say it may, and let mask_known decide
            return True
        if len(text) >= m.shortest and any(n in text for n in m.needles):
            return True
    return False


def mask_known(text: str, secrets: Iterable[str] | None = None) -> str:
    """`text` with every known secret (`secrets`, default `known_secrets()`: pass it to mask
    several texts at the cost of one look at the environment) masked by `***`, in each of
    its forms (`_matcher`), by the one length rule (`ANYWHERE_CHARS`). Unlike `redact` it
    changes nothing else, so it may run over a model's answer. It never raises (a logging
    filter or a cache write that raised would break the run): a secret whose forms cannot
    be built is masked as written."""
    if not text or not isinstance(text, str):
        return text
    for secret in known_secrets() if secrets is None else secrets:
        try:
            text = _mask_one(text, secret)
        except Exception:
            text = text.replace(secret, MASK) if secret else text
    return text


def mask_data(obj: Any, secrets: Iterable[str] | None = None) -> Any:
    """`obj` (a JSON-like payload: dicts, lists, strings) with `mask_known` applied to every
    string in it, keys too; the same object when nothing changed. A raw payload keeps its
    shape (`raw["backend"]` feeds the cache's statistics) and its numbers (a key of digits
    does not eat a timestamp)."""
    secrets = known_secrets() if secrets is None else tuple(secrets)
    if isinstance(obj, str):
        return mask_known(obj, secrets)
    if isinstance(obj, dict):
        items = [(mask_data(k, secrets), mask_data(v, secrets)) for k, v in obj.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, obj.items(),
                                                                 strict=True)):
            return obj
        return dict(items)
    if isinstance(obj, list | tuple):
        out = [mask_data(v, secrets) for v in obj]
        return obj if all(a is b for a, b in zip(out, obj, strict=True)) else type(obj)(out)
    return obj


def redact(text: str) -> str:
    """`text` with the known secrets (`mask_known`), URL passwords, secret query values, auth
    headers and key-shaped strings masked by `***`. Never raises (`mask_known`)."""
    if not text or not isinstance(text, str):
        return text
    text = mask_known(text)
    text = _USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", text)
    text = _BARE_USERINFO.sub(lambda m: f"{m.group(1)}{MASK}@", text)
    text = _QUERY.sub(_named, text)
    text = _URL_QUERY.sub(_named, text)
    text = _AUTH_HEADER.sub(_header, text)
    text = _BEARER.sub(_named, text)
    text = _BASIC.sub(_basic, text)
    return KEYLIKE.sub(lambda m: m.group(0) if is_placeholder(m.group(0))
                       else m.group(1) + MASK, text)


def _named(m: re.Match[str]) -> str:
    """A `name=VALUE` (or `Bearer VALUE`) match masked after its group 1, unless the value
    is a placeholder or an elision (`api_key=EMPTY`, "pass api_key=... in the judge spec"
    were shown as `api_key=***`, which hid what to pass)."""
    value = m.group(0)[len(m.group(1)):]
    return m.group(0) if is_placeholder(value) else m.group(1) + MASK


def _header(m: re.Match[str]) -> str:
    """An auth header's value masked (its scheme word kept), unless a placeholder."""
    value = m.group(0)[m.end(2) - m.start(0):] if m.group(2) else m.group(0)[len(m.group(1)):]
    if is_placeholder(value):
        return m.group(0)
    return m.group(1) + (f"{m.group(2)} " if m.group(2) else "") + MASK


def redact_url(url: str) -> str:
    """A URL fit to show: its userinfo password and secret query values masked."""
    return redact(url)


def _locals_hold_secret(exc_info: Any) -> bool:
    """Whether a local variable of the traceback's frames holds a known secret. A program's
    own formatter may show locals (`traceback.TracebackException(capture_locals=True)`):
    such a record keeps the stock traceback (`exc_text`), which shows none, so the key in
    `call(api_key=...)` never reaches the handler. Checked only for records with a traceback
    and a known secret; a local whose repr fails or is huge is read by its first 100,000
    characters, or skipped."""
    secrets = known_secrets()
    tb = exc_info[2] if isinstance(exc_info, tuple) and len(exc_info) == 3 else None
    if tb is None or not secrets:
        return False
    for _ in range(200):  # frames
        if tb is None:
            break
        for value in list(tb.tb_frame.f_locals.values())[:500]:
            try:
                text = value if isinstance(value, str) else repr(value)
            except Exception:  # noqa: BLE001 - a repr that raises shows nothing
                continue
            if mentions_known(text[:100_000], secrets):
                return True
        tb = tb.tb_next
    return False


class RedactingFilter(logging.Filter):
    """Redacts every record's message (and its formatted traceback) in place: `msg` becomes
    the redacted full message and `args` None, so no handler can format the secret back in.
    A traceback is replaced (`exc_text`) only when it holds a secret, so a handler's own
    `formatException` still runs for every other record."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler's error path
            return True
        try:
            self._redact(record, message)
        except Exception:  # never raise into the code that logged; never show it unchecked
            record.msg, record.args, record.exc_text = _WITHHELD, None, None
            record.exc_info = record.stack_info = None
        return True

    def _redact(self, record: logging.LogRecord, message: str) -> None:
        # The traceback is checked as the stock formatter writes it, but kept on the record
        # (`exc_text`) only when it held a secret: a set `exc_text` is what every handler's
        # formatter writes instead of calling its own `formatException`, so setting it always
        # changed how a program's handlers showed its exceptions once a Session opened.
        trace = record.exc_text or ""
        if record.exc_info and not trace:
            trace = logging.Formatter().formatException(record.exc_info)
        # fields given with `extra=` a format string may show ("%(key)s")
        extras = {k: v for k, v in vars(record).items()
                  if k not in _RECORD_FIELDS and isinstance(v, str)}
        texts = [message, trace, record.stack_info or "", *extras.values()]
        if not self._touches(texts):
            if trace and _locals_hold_secret(record.exc_info):
                record.exc_text = trace  # the stock traceback: it shows no locals
            return
        for k, v in extras.items():
            setattr(record, k, self._clean(v))
        record.msg, record.args = self._clean(message), None
        if trace:
            cleaned = self._clean(trace)
            if cleaned != trace or _locals_hold_secret(record.exc_info):
                record.exc_text = cleaned
        if record.stack_info:
            record.stack_info = self._clean(record.stack_info)

    @staticmethod
    def _touches(texts: list[str]) -> bool:
        """Whether a record must be rewritten: always (its message may hold a key-shaped
        string only `redact` finds)."""
        return True

    @staticmethod
    def _clean(text: str) -> str:
        return redact(text)


_WITHHELD = "(a log message withheld: it could not be checked for secrets)"
# A LogRecord's own attributes: any other is a field given with `extra=`.
_RECORD_FIELDS = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class KnownSecretsFilter(RedactingFilter):
    """`RedactingFilter` for handlers that also write a program's own records (the Python
    API puts it on the root logger's handlers): it changes a record only where it holds a
    secret judgeaudit knows (`mask_known`, and a URL's password), never by the key-shaped
    patterns `redact` also masks ("config key=value" became "key=***", "sk-learn" "sk-***"
    in a script's own log), and leaves `args` alone otherwise."""

    @staticmethod
    def _touches(texts: list[str]) -> bool:
        return any(mentions_known(t) or _USERINFO.search(t) for t in texts)

    @staticmethod
    def _clean(text: str) -> str:
        return _USERINFO.sub(lambda m: f"{m.group(1)}:{MASK}@", mask_known(text))


# Loggers whose records may carry request URLs or headers: filtered where they are logged,
# before they propagate (the root handlers' filter covers their children too).
SDK_LOGGERS = ("httpx", "httpcore", "httpx2", "httpcore2", "openai", "anthropic")
# ... and ours (a retry line quotes a server's error, which may echo the key).
OWN_LOGGERS = ("judgeaudit",)
_REDACTED_ROOTS = frozenset((*SDK_LOGGERS, *OWN_LOGGERS))
_FILTER = RedactingFilter()
_KNOWN_FILTER = KnownSecretsFilter()


def _loggers() -> list[logging.Logger]:
    """The SDK loggers and ours, and every child of them that exists now (a logger's filter
    sees only the records logged on it: `httpcore.http11`'s pass `httpcore`'s untouched)."""
    roots = (*SDK_LOGGERS, *OWN_LOGGERS)
    names = set(roots) | {
        name for name, lg in list(logging.Logger.manager.loggerDict.items())
        if isinstance(lg, logging.Logger) and name.split(".", 1)[0] in roots}
    return [logging.getLogger(name) for name in sorted(names)]


def _redact_record(record: logging.LogRecord) -> None:
    """Redact a record as it is made: an HTTP/SDK logger's or ours (`SDK_LOGGERS`,
    `OWN_LOGGERS`, children included) by `RedactingFilter`, any other (a program's own) by
    `KnownSecretsFilter`. Never raises into the code that logged."""
    try:
        top = (record.name or "").split(".", 1)[0]
        (_FILTER if top in _REDACTED_ROOTS else _KNOWN_FILTER).filter(record)
    except Exception:  # the filters catch their own errors; this is the last guard
        record.msg, record.args, record.exc_text = _WITHHELD, None, None
        record.exc_info = record.stack_info = None


def _install_record_factory() -> None:
    """Redact every record when it is made (`logging.setLogRecordFactory`, wrapping the
    factory in place), before any filter or handler sees it, whatever logger made it and
    whenever logging was configured. The filters alone left gaps: a logger's filter sees
    only records logged on it, not its children's, and handlers are filtered only if they
    existed at the last install. `anthropic._base_client` (made when the SDK is first
    imported, inside a command) logged "Sending HTTP Request: POST http://user:KEY@host"
    to a handler a script put on the `anthropic` logger, and to the root handler
    ANTHROPIC_LOG=debug makes at that import. Not wrapped twice; a factory a program sets
    later that calls the previous one keeps it."""
    current = logging.getLogRecordFactory()
    if getattr(current, "_judgeaudit_redacts", False):
        return

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = current(*args, **kwargs)
        _redact_record(record)
        return record

    factory._judgeaudit_redacts = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(factory)


def install_log_redaction(*, own_program: bool = False) -> RedactingFilter:
    """Redact every log record as it is made (`_install_record_factory`), and add the
    redacting filter to the root logger's handlers and to the HTTP/SDK loggers and ours
    (`_loggers`). Idempotent and cheap: the CLI calls it after configuring logging, and
    every `judgeaudit.session.Session` when it opens, so a script that configured logging
    (`logging.basicConfig(level=logging.INFO)`) before or after calling the API logs no
    secret. `own_program` (the API: the root handlers write the program's own records too):
    those handlers get `KnownSecretsFilter`, which masks only the secrets judgeaudit knows,
    as the record factory does for every logger but the HTTP/SDK ones and ours."""
    _install_record_factory()
    root = _KNOWN_FILTER if own_program else _FILTER
    for h in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in h.filters):
            h.addFilter(root)
    for lg in _loggers():
        if not any(isinstance(f, RedactingFilter) and not isinstance(f, KnownSecretsFilter)
                   for f in lg.filters):
            lg.addFilter(_FILTER)
    return _FILTER


__all__ = ["ANYWHERE_CHARS", "KEYLIKE", "MIN_CHARS", "PLACEHOLDERS", "KnownSecretsFilter",
           "RedactingFilter", "install_log_redaction", "is_secret", "known_secrets",
           "mask_data", "mask_known", "mentions_known", "redact", "redact_url",
           "register_secret", "register_url", "reset_secrets", "url_credentials"]
