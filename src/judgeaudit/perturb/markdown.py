"""Beauty / format: the same content as markdown or as plain text (production check "markdown
vs plain, same content").

plain -> markdown: a heading, the first sentence in bold, the remaining sentences as a bullet
list; every word of the original is kept (checked). markdown -> plain: headings, emphasis,
bullets, links and code fences are stripped; the words are kept, numbered-list numbers too.
Code blocks are never split into sentences.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

from judgeaudit.perturb.base import Edit, Option, Perturbation, Side, register_perturbation
from judgeaudit.perturb.preserve import answer_preserved, words_preserved

HEADINGS = ("Answer", "Response", "Solution", "Summary")
BULLETS = ("-", "*")
_SENT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
_FENCE = re.compile(r"```.*?```", re.DOTALL)
_MD_HINT = re.compile(r"(^#{1,6}\s|^\s*[-*+]\s|\*\*|__|```|^\s*>\s|\[[^\]]+\]\([^)]+\))",
                      re.MULTILINE)
# Markdown structure that to_markdown would double or break: a heading, a bullet or a numbered
# list, bold, a code fence, a block quote, a link, a table rule. Each is (what, pattern, how
# many matches it takes): content that only looks like markup is not structure (review6
# finding 5: "Use __init__ and __main__" is two dunder names, not bold; "- 5 degrees is cold."
# a negative number, not a list; "> 5 means greater than five" a comparison, not a quote).
_BULLET_ITEM = re.compile(r"^\s*[-*+]\s+\S", re.MULTILINE)
_MD_STRUCTURE: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("a heading", re.compile(r"^\s{0,3}#{1,6}\s+\S", re.MULTILINE), 1),
    # a list (two item lines), or one item that starts with a word, not a number
    ("a bullet list", _BULLET_ITEM, 2),
    ("a bullet list", re.compile(r"^\s*[-*+]\s+[^\W\d_]", re.MULTILINE), 1),
    ("a numbered list", re.compile(r"^\s*\d{1,3}[.)]\s+\S.*\n(?:.*\n)*?\s*\d{1,3}[.)]\s+\S",
                                   re.MULTILINE), 1),
    # **x** or __x__ standing as words, not inside one (2**10**2) and not a lowercase
    # identifier between double underscores (a dunder name: __init__, __main__)
    ("bold text", re.compile(r"(?<![\w*])\*\*(?!\s)[^*\n]+?(?<!\s)\*\*(?![\w*])"
                             r"|(?<![\w_])__(?![a-z][a-z0-9]*__)(?!\s)[^_\n]+?(?<!\s)__(?![\w_])"),
     1),
    ("a code fence", re.compile(r"^\s*```", re.MULTILINE), 1),
    # "> " followed by a word, not a number or a symbol ("> 5 means greater than five")
    ("a block quote", re.compile(r"^\s{0,3}>\s*[^\W\d_]", re.MULTILINE), 1),
    ("a link", re.compile(r"\[[^\]\n]+\]\([^)\s]+\)"), 1),
    ("a table", re.compile(r"^\s*\|?\s*:?-{3,}:?\s*\|", re.MULTILINE), 1),
)


def has_markdown(text: str) -> bool:
    return bool(_MD_HINT.search(text))


def markdown_structure(text: str) -> str | None:
    """The first kind of markdown structure `text` already has (None: plain text)."""
    for what, pat, least in _MD_STRUCTURE:
        if len(list(itertools.islice(pat.finditer(text), least))) == least:
            return what
    return None


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENT.split(" ".join(text.split())) if s.strip()]


def to_markdown(text: str, rng: random.Random) -> tuple[str, int]:
    """(markdown text, phrasing index). Paragraphs with code fences are kept as they are."""
    hi = rng.randrange(len(HEADINGS))
    bi = rng.randrange(len(BULLETS))
    out = [f"## {HEADINGS[hi]}", ""]
    first = True
    # Split into prose and fenced code; only prose is restructured.
    pos = 0
    chunks: list[tuple[str, str]] = []
    for m in _FENCE.finditer(text):
        chunks.append(("prose", text[pos:m.start()]))
        chunks.append(("code", m.group()))
        pos = m.end()
    chunks.append(("prose", text[pos:]))
    for kind, chunk in chunks:
        if kind == "code":
            out += [chunk, ""]
            continue
        sents = _sentences(chunk)
        if not sents:
            continue
        if first:
            out += [f"**{sents[0]}**", ""]
            sents = sents[1:]
            first = False
        if sents:
            out += [f"{BULLETS[bi]} {s}" for s in sents] + [""]
    return "\n".join(out).strip(), hi * len(BULLETS) + bi


def to_plain(text: str) -> str:
    """Strip markdown markup, keeping every word (heading text becomes its own line)."""
    pos = 0
    out: list[str] = []
    for m in list(_FENCE.finditer(text)) + [None]:
        prose = text[pos:m.start()] if m else text[pos:]
        out.append(_plain_prose(prose))
        if m:
            code = re.sub(r"^```[^\n]*\n?", "", m.group())
            out.append(re.sub(r"\n?```$", "", code))
            pos = m.end()
    return "\n".join(s for s in (o.strip("\n") for o in out) if s.strip()).strip()


def _plain_prose(text: str) -> str:
    lines = []
    for line in text.splitlines():
        s = re.sub(r"^\s{0,3}#{1,6}\s+", "", line)          # headings
        s = re.sub(r"^\s*>\s?", "", s)                       # block quotes
        s = re.sub(r"^(\s*)[-*+]\s+", r"\1", s)              # bullets (numbered lists stay)
        s = re.sub(r"!?\[([^\]]+)\]\(([^)]+)\)", r"\1 (\2)", s)  # links: text (url)
        s = re.sub(r"(\*\*|__)(.+?)\1", r"\2", s)             # bold
        s = re.sub(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])", r"\1", s)  # italic *x*
        # _x_ italics are left alone: underscores are more often part of names (URL_0_).
        s = re.sub(r"`([^`]+)`", r"\1", s)                    # inline code
        if re.fullmatch(r"\s*([-*_])(\s*\1){2,}\s*", s):      # horizontal rules
            continue
        lines.append(s.rstrip())
    text = "\n".join(lines)
    return re.sub(r"\n{3,}", "\n\n", text)


@register_perturbation
class Markdown(Perturbation):
    name = "markdown"
    title = "Beauty / format (markdown)"
    description = ("Re-formats the same content as markdown (heading, bold, bullet list) or "
                   "strips markdown to plain text.")
    target_default = "worse"
    options = {"direction": Option("to_markdown", ("to_markdown", "to_plain"),
                                   "add markdown, or strip it")}

    def english_added(self, **opts: Any) -> str | None:
        """to_markdown adds an English heading ("## Answer"); to_plain adds nothing."""
        return "the heading" if opts["direction"] == "to_markdown" else None

    def not_applicable(self, text: str, side: Side, **opts: Any) -> str | None:
        """to_markdown on text that is already markdown would nest the structure ("**# Title
        - **4****"), not add the cue."""
        if opts["direction"] != "to_markdown":
            return None
        what = markdown_structure(text)
        return None if what is None else f"the text already has markdown structure ({what})"

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        if opts["direction"] == "to_plain":
            return Edit(to_plain(text), "to_plain", None)
        md, i = to_markdown(text, rng)
        return Edit(md, "to_markdown", i)

    def check(self, original: str, edit: Edit, side: Side) -> tuple[bool, str | None]:
        ok, why = answer_preserved(original, edit.text, side.answer, competitor=side.competitor)
        if ok:
            ok, why = words_preserved(original, edit.text)
        return ok, why
