"""The one SPEC grammar for judges and data: `kind[:name][?key=value&...]`.

A neutral module (it imports nothing of ours) used by `data`, `judges` and the CLI alike.
`name` may itself contain colons (Windows paths, `local:/x/y.gguf`); only the first colon
splits, and a name cannot contain `?`. Parameter keys and values are percent-decoded
(`%2B` `%26` `%3D` `%20`), so a base_url can be passed inside a spec; a `+` stays a `+`
(it is not form-decoded to a space: `api_key=ab+cd` is the key `ab+cd`). `str(spec)`
encodes them again where needed: `parse_spec(str(spec)) == spec` for any keys and values.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote, unquote

# Parameter names whose values are secrets wherever they appear (any provider): names whose
# last word is one (`api_key`, `x-api-key`, `access_token`, `auth`), not any name holding
# one (planted sim biases `authority` and `factor_token_count`, and `max_tokens`, were
# masked too, so two judges differing only there read as one).
_SECRET_WORD = r"(?:apikey|key|token|secret|password|passwd|pwd|auth|authorization|bearer)"
SECRET_NAMES = re.compile(rf"(?i)(?:^|[^a-z0-9]){_SECRET_WORD}$")
# What local servers document to send where they want no key (vLLM's EMPTY, Ollama's ollama,
# LM Studio's lm-studio, llama.cpp's sk-no-key-required, LocalAI's and text-generation-
# webui's not-needed, ...): not secrets, so never masked ("http://ollama:11434" was shown as
# "http://***:11434", `api_key=EMPTY` as `api_key=***`). A key a server was started with
# (vLLM --api-key token-abc123) is one. Here, in the neutral module, for `llm.redact` too.
PLACEHOLDERS = frozenset({
    "empty", "none", "null", "x", "dummy", "placeholder", "ollama", "lm-studio", "lmstudio",
    "not-needed", "not_needed", "no-key", "nokey", "no-key-required", "sk-no-key-required",
    "your-api-key", "your_api_key"})
# An elided value, as a hint writes one: "pass api_key=... in the judge spec" (shown as
# "api_key=***", which hid what to pass)
_ELIDED = re.compile(r"\.{3,}|\u2026")


def is_placeholder(value: str | None) -> bool:
    """Whether a key's value is a documented placeholder (`PLACEHOLDERS`, any case) or an
    elision (`...`): shown as written, never masked, since it hides nothing and masking it
    hid what a local server was sent or what a hint asks for."""
    if not isinstance(value, str):
        return False
    v = unquote(value).strip().strip("'\"").strip()
    return v.lower() in PLACEHOLDERS or bool(_ELIDED.fullmatch(v))


def _mask_value(m: re.Match[str]) -> str:
    """A secret-named value's match as shown: its name and `***`, or as written when the
    value is a placeholder (`is_placeholder`)."""
    value = m.group(0)[len(m.group(1)):]
    return m.group(0) if is_placeholder(value) else m.group(1) + "***"

# URL userinfo: `scheme://user:PASSWORD@host` (and a bare `scheme://TOKEN@host`).
# scheme://USER[:PASSWORD]@: the password runs to the @ whatever it holds but spaces and
# quotes (a percent-decoded key may hold / ? #: http://user:sk-Ab/cd@host was shown whole)
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)([^/@\s?#:]*(?::[^@\s'\"<>]*)?)@")


# A secret in a URL's query string: `?api-key=K`, `&subscription-key=K` (Azure APIM),
# `?code=K` (Azure Functions), `&sig=K` (a SAS), also percent-encoded inside a value
# (`%3Fapi-key%3DK`, %253F when encoded twice). Names whose last word is a secret one, never
# a word that merely ends in one (`monkey`, `max_tokens`).
_ENC = r"%(?:25)*"
_QUERY_SECRET = re.compile(
    rf"(?i)((?:[?&;]|{_ENC}(?:3F|26))(?:[a-z0-9_-]*[_-])?(?:api_?key|apikey|key|token|"
    rf"secret|password|passwd|pwd|auth|sig|signature|code)(?:=|{_ENC}3D))"
    rf"(?:(?!{_ENC}26)[^&#\s'\",)])+")


def mask_url(value: str) -> str:
    """`http://user:KEY@host/v1` -> `http://user:***@host/v1`; `http://KEY@host` ->
    `http://***@host`; a secret query value (`?api-key=KEY`, `%3Fcode%3DKEY`) -> `***`.
    Values without either are returned unchanged."""

    def sub(m: re.Match[str]) -> str:
        user, sep, _ = m.group(2).partition(":")
        return f"{m.group(1)}{user}:***@" if sep else f"{m.group(1)}***@"

    return _QUERY_SECRET.sub(_mask_value, _USERINFO.sub(sub, value))


@dataclass(frozen=True)
class Spec:
    kind: str
    name: str = ""
    params: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        s = self.kind + (f":{self.name}" if self.name else "")
        if self.params:
            s += "?" + "&".join(f"{_enc(k)}={_enc(v)}" for k, v in self.params.items())
        return s

    def public(self, secret: frozenset[str] = frozenset({"api_key"})) -> str:
        """The spec as text with secrets masked, safe to log or store: parameters named in
        `secret` or looking like secrets (`*key*`, `token`, `password`, ...) and the
        password of any URL userinfo (`base_url=http://user:KEY@host`)."""
        return str(Spec(self.kind, mask_url(self.name), self._public_params(secret)))

    def _public_params(self, secret: frozenset[str] = frozenset({"api_key"})) -> dict[str, str]:
        return {k: ("***" if (k in secret or SECRET_NAMES.search(k)) and not is_placeholder(v)
                     else mask_url(v))
                for k, v in self.params.items()}

    def __repr__(self) -> str:
        """Masked as `public` masks: a notebook showing `session.judges` showed the key."""
        return (f"Spec(kind={self.kind!r}, name={mask_url(self.name)!r}, "
                f"params={self._public_params()!r})")


def _enc(text: str) -> str:
    """Percent-encode what would change a spec's meaning (`&`, `=`, `?`, `%`, `+`, `#`,
    spaces, non-ASCII); URL punctuation such as `:`, `/`, `@`, `,` and the
    replicas' `|` stay readable."""
    return quote(text, safe="/:@,;*!$'()~[]|")


_SPEC_START = re.compile(r"^[A-Za-z][\w-]*(?:[:?]|$)")


def split_specs(text: str) -> list[str]:
    """Split a comma-separated list of SPECs, keeping commas inside parameter values
    (`sim?x=1,2,local` -> `sim?x=1,2` and `local`): a comma starts a new spec only where the
    next piece begins like one (a word, then ':' or '?' or the end)."""
    out: list[str] = []
    for piece in text.split(","):
        if out and "?" in out[-1] and not _SPEC_START.match(piece.strip()):
            out[-1] += "," + piece
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]


def public_spec(text: str) -> str:
    """A spec string as it may be shown: parsed and masked (`Spec.public`), or, when it does
    not parse, with URL userinfo and secret-looking parameter values masked as text
    (`_masked_text`)."""
    try:
        return parse_spec(text).public()
    except ValueError:
        return _masked_text(text)


def _masked_text(text: str) -> str:
    """A spec's text, parsed or not, with the value of every parameter whose name looks like
    a secret (`SECRET_NAMES`: api_key, key, token, password, authorization, ...) masked, and
    URL userinfo and `api_key=...`-style values elsewhere (`mask_secrets`). Each piece
    between `?` and `&` is one parameter: `?api_key=K?x=1` keeps its `?x=1`,
    `?api_key=A&api_key=B` masks both. For the errors of a spec that does not parse, which
    repeated the key."""
    def piece(p: str) -> str:
        name, eq, value = p.partition("=")
        if eq and SECRET_NAMES.search(unquote(name).strip()) and not is_placeholder(value):
            return f"{name}=***"
        return mask_secrets(p)

    head, sep, query = text.partition("?")
    return mask_secrets(head) + sep + "".join(piece(p) for p in re.split(r"([?&])", query))


# The value is the token attached to the `=` / `:` (or a quoted one after spaces:
# `api_key = "..."`), never the next word of prose: "the key from api_key= has a space" lost
# its "has" to the mask.
_SECRET_VALUE = re.compile(
    r"(?i)(\b(?:[\w-]*[_-])?(?:api_?key|apikey|token|secret|password|passwd)\s*[=:]"
    r"(?:\s*['\"])?)[^&\s'\",)]+")


def mask_secrets(text: str) -> str:
    """Mask URL userinfo passwords and `api_key=...`-style values in free text (an error
    message that quotes a spec or a URL)."""
    return _SECRET_VALUE.sub(_mask_value, mask_url(text))


def parse_spec(text: str) -> Spec:
    text = text.strip()
    if not text:
        raise ValueError("empty spec; expected kind[:name][?key=value&...]")
    shown = _masked_text(text)  # what an error may quote: never the key
    head, _, query = text.partition("?")
    kind, _, name = head.partition(":")
    if not kind or not kind.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"bad spec {shown!r}: kind must be a word, e.g. 'local' or 'jsonl:PATH'")
    params: dict[str, str] = {}
    if query:
        if "?" in query:  # `?api_key=K?base_url=U`: U was read into the key, the call went
            # to the provider's default host
            raise ValueError(f"bad spec {shown!r}: a second '?' among the parameters; join "
                             "parameters with '&' (a '?' inside a value is written %3F)")
        # Split on `&` and the first `=`, then percent-decode: not `parse_qsl`, which
        # form-decodes `+` to a space (a key `ab+cd` was read as `ab cd`).
        for piece in query.split("&"):
            if not piece:
                continue
            raw_k, _, raw_v = piece.partition("=")
            k, v = unquote(raw_k), unquote(raw_v)
            if not k:
                raise ValueError(f"bad spec {shown!r}: empty parameter name")
            if k in params:  # the last one won silently
                raise ValueError(f"bad spec {shown!r}: parameter {k!r} given twice")
            params[k] = v
    return Spec(kind.lower(), name, params)
