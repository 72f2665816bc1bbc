"""Judge prompt templates as data: versioned text files whose sha256 is recorded in every
result, so a changed rubric or wording is visible in the output, never silent."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

_SECTION = re.compile(r"^### (system|user|prefill|labels|final)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Template:
    name: str
    system: str
    user: str
    prefill: str
    sha256: str
    # Verdict labels, first = the response shown first (pairwise) or the pass label (binary).
    labels: tuple[str, ...] = ("A", "B")
    # Reasoning templates: no forced verdict token; the verdict is read from the last line
    # matching this regex (group 1 = a label), after a longer generation.
    final_pattern: str | None = None

    def render_user(self, **fields: str) -> str:
        # str.format parses only the template; inserted (untrusted) text is never re-parsed.
        return self.user.format(**fields)


def parse_template(name: str, text: str) -> Template:
    parts = _SECTION.split(text)
    # parts = [preamble, name1, body1, name2, body2, ...]
    sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
    missing = {"system", "user"} - set(sections)
    if missing:
        raise ValueError(f"template {name!r} lacks section(s) {sorted(missing)} ('### system')")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    labels = tuple(x.strip() for x in sections.get("labels", "A, B").split(",") if x.strip())
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise ValueError(f"template {name!r}: '### labels' needs distinct labels, e.g. 'A, B'")
    final = sections.get("final", "").strip() or None
    if final is not None:
        try:
            if re.compile(final).groups < 1:
                raise ValueError("no group")
        except (re.error, ValueError):
            raise ValueError(f"template {name!r}: '### final' must be a regex with one group "
                             "capturing the label") from None
    return Template(
        name, sections["system"], sections["user"], sections.get("prefill", "").strip(), digest,
        labels, final,
    )


def builtin_templates() -> list[str]:
    files = resources.files("judgeaudit.judges").joinpath("templates").iterdir()
    return sorted(p.name.removesuffix(".txt") for p in files if p.name.endswith(".txt"))


def load_template(name_or_path: str) -> Template:
    """A built-in template by name (`pairwise_v1`) or a user's template file by path."""
    p = Path(name_or_path)
    if p.suffix == ".txt" and p.exists():
        return parse_template(p.stem, p.read_text(encoding="utf-8"))
    res = resources.files("judgeaudit.judges").joinpath("templates", f"{name_or_path}.txt")
    if not res.is_file():
        raise ValueError(
            f"unknown template {name_or_path!r}; built-in: {', '.join(builtin_templates())}"
            " (or give a path to a .txt template file)"
        )
    return parse_template(name_or_path, res.read_text(encoding="utf-8"))
