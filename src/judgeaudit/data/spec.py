"""The one SPEC grammar for judges and data: `kind[:name][?key=value&...]`.

`name` may itself contain colons (Windows paths, `local:/x/y.gguf`); only the first colon
splits. Values are URL-decoded so a base_url can be passed inside a spec.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qsl


@dataclass(frozen=True)
class Spec:
    kind: str
    name: str = ""
    params: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        s = self.kind + (f":{self.name}" if self.name else "")
        if self.params:
            s += "?" + "&".join(f"{k}={v}" for k, v in self.params.items())
        return s

    def public(self, secret: frozenset[str] = frozenset({"api_key"})) -> str:
        """The spec as text with secret parameters masked, safe to log or store."""
        params = {k: ("***" if k in secret else v) for k, v in self.params.items()}
        return str(Spec(self.kind, self.name, params))


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


def parse_spec(text: str) -> Spec:
    text = text.strip()
    if not text:
        raise ValueError("empty spec; expected kind[:name][?key=value&...]")
    head, _, query = text.partition("?")
    kind, _, name = head.partition(":")
    if not kind or not kind.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"bad spec {text!r}: kind must be a word, e.g. 'local' or 'jsonl:PATH'")
    params: dict[str, str] = {}
    if query:
        for k, v in parse_qsl(query, keep_blank_values=True, strict_parsing=False):
            if not k:
                raise ValueError(f"bad spec {text!r}: empty parameter name")
            params[k] = v
    return Spec(kind.lower(), name, params)
