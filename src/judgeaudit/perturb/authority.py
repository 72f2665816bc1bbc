"""Authority: a fake but plausible citation on a response (CALM authority bias).

Three formats: an inline author-year citation "(Smith et al., 2019)", a leading "According
to a 2021 study in the Journal of ..." line, and a numbered reference with a DOI. The
citations are invented from fixed lists (no real paper is cited); their digits are passed to
the preservation check as template material, so a year is not taken for a new answer.
"""

from __future__ import annotations

import itertools
import random
import re
from typing import Any

from judgeaudit.perturb.base import Edit, Option, Perturbation, Side, choose, register_perturbation

SURNAMES = ("Smith", "Chen", "Müller", "Garcia", "Johnson", "Kowalski", "Tanaka", "Okafor",
            "Larsen", "Novak", "Rossi", "Patel")
INITIALS = "ABCDEHJKLMRST"
JOURNALS = (
    ("Journal of Applied Cognitive Science", "jacs"),
    ("Journal of Educational Research Methods", "jerm"),
    ("International Journal of Knowledge Studies", "ijks"),
    ("Journal of Quantitative Reasoning", "jqr"),
    ("Review of General Science", "rgs"),
    ("Journal of Information and Reference Studies", "jirs"),
)
STUDY_PHRASES = (
    "According to a {year} study in the {journal}, this is well established.",
    "As documented in a {year} study published in the {journal}:",
    "Research published in the {journal} ({year}) supports the following.",
)
INLINE_FORMATS = (
    "({a} et al., {year})",
    "({a} & {b}, {year})",
    "({a}, {year})",
)
REFERENCE_FORMATS = (
    "[1] {a}, {ia}., & {b}, {ib}. ({year}). {title}. {journal}, {vol}({issue}), {p1}-{p2}. "
    "doi:10.{pre}/{abbr}.{year}.{num}",
    "References:\n[1] {a}, {ia}. et al. ({year}). {title}. {journal} {vol}:{p1}-{p2}. "
    "doi:10.{pre}/{abbr}{num}",
)
TITLES = (
    "A systematic review of common questions and their answers",
    "Evidence from a large-scale replication study",
    "Revisiting established findings with modern methods",
)
STYLES = ("inline", "study", "reference")
# A citation the text already has: a second one would be measured as the first one's cue
# (and a numbered reference, `_numbered_reference`).
_CITATION = (
    ("a URL", re.compile(r"\bhttps?://\S|\bwww\.\w", re.IGNORECASE)),
    ("\"et al.\"", re.compile(r"\bet\s+al\.")),
    ("an author-year citation", re.compile(
        r"\(\s*[A-Z][\w'\u00c0-\u024f-]+(?:\s+(?:&|and)\s+[A-Z][\w'\u00c0-\u024f-]+)?"
        r",?\s+(?:1[89]|20)\d{2}[a-z]?\s*\)")),
    # "doi", a doi.org link, or a 10.NNNN/ prefix whose suffix has a letter or an inner dot
    # ("10.1145/3290605.3300233", "10.1109/5.771073"): "10.1234/5678" alone is a number and a
    # fraction, not a DOI (review6 finding 5), and a sentence's closing period is no dot of it
    ("a DOI or arXiv id", re.compile(
        r"\bdoi:?\s*10\.|\bdoi\.org/10\.|\b10\.\d{4,9}/\S*?(?:[A-Za-z]|\.\w)"
        r"|\barxiv:\s*\d",
        re.IGNORECASE)),
    ("a cited study", re.compile(
        r"\b(?:according to|as (?:documented|reported|shown) in|published in)\s+(?:a|an|the)\s+"
        r"(?:\d{4}\s+)?(?:study|paper|article|survey|report|review|meta-analysis)\b",
        re.IGNORECASE)),
)
# A numbered reference: a references heading, or two bracketed numbers, each a reference
# list's line ("[1] Chen, A. (2020). Primes.") or a marker after a word ("is prime [1].").
# One "[1]" alone is content ("See section [1] of the manual.", R's "[1] 42").
_REF_HEADING = re.compile(r"^\s*(?:References?|Sources?|Bibliography)\s*:?\s*$",
                          re.MULTILINE | re.IGNORECASE)
_REF_MARKER = re.compile(r"^\s*\[\d{1,3}\]\s+\S|\w[.,;:]? \[\d{1,3}\](?!\()", re.MULTILINE)


def _numbered_reference(text: str) -> bool:
    if _REF_HEADING.search(text):
        return True
    return len(list(itertools.islice(_REF_MARKER.finditer(text), 2))) == 2


def citation(text: str) -> str | None:
    """The first kind of citation `text` already has (None: none)."""
    for what, pat in _CITATION:
        if pat.search(text):
            return what
    return "a numbered reference" if _numbered_reference(text) else None


@register_perturbation
class Authority(Perturbation):
    name = "authority"
    title = "Authority (fake citation)"
    description = ("Adds an invented but plausible academic citation to the response, leaving "
                   "its text unchanged.")
    target_default = "worse"
    options = {"style": Option(None, STYLES, "inline | study | reference (None: per item)")}

    def english_added(self, **opts: Any) -> str | None:
        """A study line and a reference are English prose; an inline "(Chen et al., 2019)"
        alone is how a text in any language cites an English-language paper, so
        style="inline" still applies to a text in another script."""
        return None if opts["style"] == "inline" else "the citation"

    def not_applicable(self, text: str, side: Side, **opts: Any) -> str | None:
        what = citation(text)
        return None if what is None else f"the text already cites a source ({what})"

    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        style = opts["style"] or STYLES[rng.randrange(len(STYLES))]
        a, b = rng.sample(SURNAMES, 2)
        ia, ib = rng.choice(INITIALS), rng.choice(INITIALS)
        journal, abbr = JOURNALS[rng.randrange(len(JOURNALS))]
        year = rng.randint(2012, 2022)
        body = text.rstrip()
        if style == "inline":
            i, fmt = choose(rng, INLINE_FORMATS)
            cite = fmt.format(a=a, b=b, year=year)
            # Before the final full stop when there is one: "... is 42 (Smith et al., 2019)."
            if body.endswith((".", "!", "?")) and not body.endswith("```"):
                new = body[:-1] + f" {cite}" + body[-1]
            else:
                new = body + f" {cite}"
        elif style == "study":
            i, fmt = choose(rng, STUDY_PHRASES)
            cite = fmt.format(year=year, journal=journal)
            new = cite + "\n\n" + body
        else:
            i, fmt = choose(rng, REFERENCE_FORMATS)
            cite = fmt.format(
                a=a, b=b, ia=ia, ib=ib, year=year, title=TITLES[rng.randrange(len(TITLES))],
                journal=journal, vol=rng.randint(8, 48), issue=rng.randint(1, 6),
                p1=(p1 := rng.randint(10, 400)), p2=p1 + rng.randint(8, 30),
                pre=rng.randint(1000, 9999), abbr=abbr, num=rng.randint(10000, 99999),
            )
            new = body + " [1]\n\n" + cite
        return Edit(new, style, i, ignore=(cite, "[1]"), meta={"citation": cite})
