"""Judge prompt templates as data: versioned text files whose sha256 is recorded in every
result, so a changed rubric or wording is visible in the output, never silent."""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

_SECTION = re.compile(r"^### (system|user|prefill|labels|final|ties)\s*$", re.MULTILINE)
# A character the verdict reader keeps in a token (`parse._STRIP` splits on the others): a
# tie label with any other character ("no winner", "[C]") could never be read.
_LABEL_CHAR = re.compile(r"[^\s*_`\"'\[\]().:,!]+")


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
    # The file a user's template was read from (None for a built-in): messages name it.
    source: str | None = None
    # Pairwise tie labels ('### ties', e.g. "C, tie"): an answer naming one is a tie verdict
    # (winner 0), as a built-in template's "tie" is; none declared = a tie label is unread.
    ties: tuple[str, ...] = ()

    @property
    def where(self) -> str:
        """How messages name this template: its file, or its built-in name."""
        return self.source or self.name

    def render_user(self, **fields: str) -> str:
        # str.format parses only the template; inserted (untrusted) text is never re-parsed.
        return self.user.format(**fields)


def parse_template(name: str, text: str, source: str | None = None) -> Template:
    """A template from its text; `source` is the file it came from (named in messages)."""
    where = source or name
    parts = _SECTION.split(text)
    # parts = [preamble, name1, body1, name2, body2, ...]
    sections = {parts[i]: parts[i + 1].strip("\n") for i in range(1, len(parts) - 1, 2)}
    missing = {"system", "user"} - set(sections)
    if missing:
        raise ValueError(f"template {where!r} lacks section(s) {sorted(missing)} ('### system')")
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    labels = tuple(x.strip() for x in sections.get("labels", "A, B").split(",") if x.strip())
    if len(labels) < 2 or len(set(labels)) != len(labels):
        raise ValueError(f"template {where!r}: '### labels' needs distinct labels, e.g. 'A, B'")
    ties = tuple(x.strip() for x in sections.get("ties", "").split(",") if x.strip())
    if "ties" in sections:
        _check_ties(where, labels, ties)
    final = sections.get("final", "").strip() or None
    if final is not None:
        try:
            if re.compile(final).groups < 1:
                raise ValueError("no group")
        except (re.error, ValueError):
            raise ValueError(f"template {where!r}: '### final' must be a regex with one group "
                             "capturing the label") from None
    return Template(
        name, sections["system"], sections["user"], sections.get("prefill", "").strip(), digest,
        labels, final, source, ties,
    )


def _check_ties(where: str, labels: tuple[str, ...], ties: tuple[str, ...]) -> None:
    """Tie labels the reader can take apart from the verdict labels: at least one, distinct,
    none a verdict label in any case (the reader folds case: 'a' would read as 'A'), each
    one token the reader keeps (letters, digits, '-', '/'...; no space or brackets)."""
    problems: list[str] = []
    if not ties:
        problems.append("it lists no label")
    if len({x.lower() for x in ties}) != len(ties):
        problems.append(f"its labels {', '.join(ties)} are not distinct")
    clash = [x for x in ties if x.lower() in {y.lower() for y in labels}]
    if clash:
        problems.append(f"{', '.join(map(repr, clash))} is also a verdict label "
                        f"('### labels': {', '.join(labels)})")
    odd = [x for x in ties if not _LABEL_CHAR.fullmatch(x)]
    if odd:
        problems.append(f"{', '.join(map(repr, odd))} is not one word the reader can take "
                        "(no spaces, brackets, quotes or punctuation)")
    if problems:
        raise ValueError(f"template {where!r}: '### ties' " + "; ".join(problems) + ". It "
                         "lists the labels that mean a tie, comma-separated, e.g. 'C, tie'.")


def builtin_templates() -> list[str]:
    files = resources.files("judgeaudit.judges").joinpath("templates").iterdir()
    return sorted(p.name.removesuffix(".txt") for p in files if p.name.endswith(".txt"))


def load_template(name_or_path: str) -> Template:
    """A built-in template by name (`pairwise_v1`) or a user's template file by path."""
    p = Path(name_or_path)
    if p.suffix == ".txt" and p.exists():
        return parse_template(p.stem, p.read_text(encoding="utf-8"), str(p))
    res = resources.files("judgeaudit.judges").joinpath("templates", f"{name_or_path}.txt")
    if not res.is_file():
        raise ValueError(
            f"unknown template {name_or_path!r}; built-in: {', '.join(builtin_templates())}"
            " (or give a path to a .txt template file)"
        )
    return parse_template(name_or_path, res.read_text(encoding="utf-8"))


# What each judge kind fills in a template's user section: the placeholders it must use (a
# template without one never shows the judge that text) and those it may use; what each holds.
KIND_FIELDS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pairwise": (("prompt", "response_a", "response_b"), ("reference_block",)),
    "pointwise": (("prompt", "response"),
                  ("reference_block", "rubric", "levels", "scale_note", "answer_instruction")),
    "binary": (("prompt", "response"), ("reference_block",)),
}
FIELD_HELP = {
    "prompt": "the instruction", "response_a": "the response shown first",
    "response_b": "the response shown second", "response": "the response judged",
    "reference_block": "the reference answer, when the item has one", "rubric": "the rubric",
    "levels": "the score levels, one a line",
    "scale_note": "a sentence on the scale (scoring-bias variants)",
    "answer_instruction": "a sentence on how to answer (scoring-bias variants)",
}
# The item fields a placeholder shows: (field, placeholder, what the field holds). A user's
# template without the placeholder drops that text of every item carrying it, which the
# run counts and says (`item_field_drops`).
ITEM_FIELDS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "pointwise": (("rubric", "rubric", "a rubric"),
                  ("rubric_levels", "levels", "per-score rubric levels"),
                  ("reference", "reference_block", "a reference answer")),
    "pairwise": (("reference", "reference_block", "a reference answer"),),
    "binary": (("reference", "reference_block", "a reference answer"),),
}
# Text in braces shaped like a placeholder (sections sent as written are checked for these).
_NAMED = re.compile(r"\{\s*([A-Za-z_]\w*)\s*\}")
# Phrases that state the scale a score template asks for; each needs a scale or score word
# beside its numbers, so a banded rubric on 1..k ("1-2 = poor, 4-5 = good", "between 1 and
# 2", "1 through 3"), a count ("3/4 of the sub-questions", "0-1 errors", "a 10-point plan",
# "a 1-point difference") or "24/7" is not read as a scale. One is another scale than 1..k
# when its top is above k or its bottom is 0 (`_other_scale`).
# A whole number, not part of a decimal ("1.5"); "..10" is a range's top ("1..10").
_NUM = r"(?:(?<![\d.])|(?<=\d\.\.))(\d+)(?!\.?\d)"
_TO = r"\s*(?:to|-|\u2013|\u2014|\.\.|through)\s*"
_SCORE_WORD = r"\b(?:scor(?:e|es|ed|ing)|rat(?:e|es|ed|ing|ings)|grade[sd]?|mark(?:s|ed)?)\b"
# Up to three words between a score word and its numbers ("score the response from"), none
# of which starts a condition ("score 2 if 9 out of 10 ..." is no scale).
_GAP = (r"(?:\s*[:,]?\s+(?!(?:if|when|unless|where|while|for|and|or|but|whether)\b)"
        r"[\w()'\u2019-]+){0,3}?")
# After a range, what makes it a count or a band's label, not a scale ("1-2 sentences",
# "0-1 errors", "1-2 = poor", "0-1: none").
_COUNTS = (r"(?!\s*(?:=|:|%|percent|sentence|word|paragraph|line|bullet|example|item|reason|"
           r"step|token|character|minute|error|mistake|point\w*\s+(?:per|each)))")
_NOT_COUNTED = re.compile(_COUNTS, re.IGNORECASE)
# A number joined to another by '-', '/' or '.' on its far side is part of a date or a code
# ("as of 2024-10-15", "v1.2-3"), never a range's end.
_CHAINED_BEFORE = re.compile(r"\d[-/.\u2013]$")
_CHAINED_AFTER = re.compile(r"^[-/.\u2013]\d")
_SCALE_PHRASES = (
    # "on a scale of 1 to 10", "scale from 0-5", "scale: 1-10" (a phrase naming the scale:
    # a top below k is another scale too, "on a scale of 1 to 3")
    ("scale", re.compile(r"\bscale\s*(?:of|from|:)?\s*" + _NUM + _TO + _NUM, re.IGNORECASE)),
    # "1-10 scale", "0 to 10 rating scale", "1-10 point scale"
    ("scale", re.compile(_NUM + _TO + _NUM + r"[- ](?:point\s+)?(?:\w+\s+)?scale\b",
                         re.IGNORECASE)),
    # "score it from 1 to 10", "scores range from 0 to 10", "rate the response 1-10"
    ("range", re.compile(_SCORE_WORD + _GAP + r"\s*[:,]?\s+(?:from\s+)?" + _NUM + _TO + _NUM
                         + _COUNTS, re.IGNORECASE)),
    # "a score between 1 and 10" (a range inside 1..k is a band of it)
    ("top", re.compile(_SCORE_WORD + _GAP + r"\s+between\s+" + _NUM + r"\s+and\s+" + _NUM,
                       re.IGNORECASE)),
    # "a score out of 10", "rate it 7 out of 10" (also below k: "a score out of 3")
    ("out_of", re.compile(_SCORE_WORD + _GAP + r"\s+out\s+of\s+" + _NUM, re.IGNORECASE)),
    # "a score like 7/10", "score: X/10" (a score is not above its top: "24/7" is none)
    ("ratio", re.compile(_SCORE_WORD + _GAP + r"\s*[:,]?\s*(?<![\d.])(\d+|\b[XN])\s*/\s*" + _NUM,
                         re.IGNORECASE)),
    # "a 10-point scale", "10 point rating scale" (not "a 10-point plan")
    ("top", re.compile(_NUM + r"[- ]point\s+(?:\w+\s+)?(?:scale|rating)\b", re.IGNORECASE)),
)
# A line naming a score (not "mark": "mark each of the 1-10 steps" is no scale) ...
_LINE_SCORE_WORD = re.compile(r"\b(?:scor(?:e|es|ed|ing)|rat(?:e|es|ed|ing|ings)|grade[sd]?)\b",
                              re.IGNORECASE)
# ... and a range from 0 or 1 anywhere on it, bare or in parentheses: "Score (1-10):", "a 1
# to 10 rating", "a number between 1 and 10 as your score", "a score in 1..10". Another
# scale only when its top is above k: a top at most k is a band of 1..k ("1-2 = poor").
_LO = r"(?<![\d.])([01])(?!\.?\d)"
_BARE_RANGE = re.compile(r"\(?(?:\bbetween\s+" + _LO + r"\s+and\s+|" + _LO + _TO + r")" + _NUM
                         + _COUNTS + r"\)?", re.IGNORECASE)


def _names(fields: tuple[str, ...]) -> str:
    names = [f"{{{f}}}" for f in fields]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _user_fields(user: str) -> tuple[list[str], list[str], str | None]:
    """(bare placeholder names, brace texts that are no placeholder, a brace error) of a
    user section, read by the same parser `render_user`'s str.format uses."""
    names: list[str] = []
    odd: list[str] = []
    try:
        for _lit, field, spec, conv in string.Formatter().parse(user):
            if field is None:
                continue
            if field.isidentifier() and not spec and not conv:
                names.append(field)
            else:
                odd.append("{" + field + (f"!{conv}" if conv else "")
                           + (f":{spec}" if spec else "") + "}")
    except ValueError as exc:  # "Single '}' encountered", "expected '}' before end of string"
        return names, odd, str(exc)
    return names, odd, None


def user_placeholders(t: Template) -> set[str]:
    """The placeholders a template's user section fills (what its prompts can show)."""
    return set(_user_fields(t.user)[0])


def _mentions(text: str, label: str, fold: bool) -> bool:
    pat = r"(?<![A-Za-z0-9_])" + re.escape(label) + r"(?![A-Za-z0-9_])"
    return re.search(pat, text, re.IGNORECASE if fold else 0) is not None


def _chained(line: str, m: re.Match[str], last: int) -> bool:
    """Whether the range `m` (its top in group `last`) is part of a chain of numbers, a date
    or a code ("as of 2024-10-15" holds "10-15"), not a range."""
    first = next(i for i in range(1, last + 1) if m.group(i) is not None)
    return bool(_CHAINED_BEFORE.search(line, 0, m.start(first))
                or _CHAINED_AFTER.match(line, m.end(last)))


# Before a phrase in its clause: a condition ("If the user asked for a 1-3 scale rating, ..."),
# so the phrase describes something else than the score asked for.
_CONDITION = re.compile(r"\b(?:if|when|whenever|unless|whether|suppose)\b", re.IGNORECASE)
# After "out of N": a word that makes N a count ("1 out of 3 criteria", "out of 4 tests"),
# unless it names the scale ("out of 10 points") or starts a clause of its own: a condition
# after the phrase ("a score out of 3 when the prompt is unsafe") still sets the score's
# scale; "when" is no counted noun.
_COUNTED_AFTER = re.compile(
    r"\s+(?!(?:points?|scale|rating|stars?|if|when|whenever|unless|where|while|whether|for|"
    r"and|or|but|then|so|as|because|since|per|each|otherwise|only)\b)[A-Za-z]",
    re.IGNORECASE)
# The filled levels named as what the score is given from ("one overall score from the
# levels below", "the final score uses the levels", "with the level that fits it best"):
# with {levels} in the user section (the judge fills in the k levels, one a line, on every
# call), such a clause states the scale 1..k. Not a count ("3 levels") nor "the level of
# detail".
_THE_LEVELS = re.compile(r"\b(?:the|these|those)\s+(?:(?:listed|given|rubric|score|scoring|"
                         r"rating|grading|following|above|below|same)\s+)?levels?\b(?!\s+of\b)",
                         re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.;!?,](?=\s|$)|\n")


def _phrases(line: str) -> Iterator[tuple[str, re.Match[str], list[str]]]:
    """Each scale phrase on `line`: (its kind, the match, its numbers)."""
    for kind, pat in _SCALE_PHRASES:
        for m in pat.finditer(line):
            yield kind, m, [g for g in m.groups() if g is not None]


def _states_scale(text: str, k: int) -> bool:
    """Whether `text` states the scale 1..k anywhere ("from 1 to 5", "1-5 scale", "out of
    5", "X/5", "a 5-point scale", "between 1 and 5", "(1-5)" on a score line)."""
    for line in text.splitlines():
        for kind, m, nums in _phrases(line):
            n = [int(x) for x in nums if x.isdigit()]
            if kind in ("range", "scale", "top") and len(n) >= 2:
                if n[-2:] == [1, k] and not _chained(line, m, m.lastindex or 0):
                    return True
            elif n and n[-1] == k and (kind in ("out_of", "ratio") or len(n) == 1):
                return True
        if _LINE_SCORE_WORD.search(line) and any(
                (m.group(1) or m.group(2)) == "1" and int(m.group(3)) == k
                and not _chained(line, m, 3) for m in _BARE_RANGE.finditer(line)):
            return True
    return False


def _gives_levels(text: str) -> bool:
    """Whether a clause of `text` gives the score from the filled levels (a score word and
    "the levels" in it, no scale phrase beside them): with {levels} that states 1..k. A
    clause with its own scale phrase ("on a scale of 1 to 3 using the levels below") asks
    for that scale, not the levels'."""
    for clause in _CLAUSE_END.split(text):
        if (_LINE_SCORE_WORD.search(clause) and _THE_LEVELS.search(clause)
                and not any(True for _ in _phrases(clause))
                and not _BARE_RANGE.search(clause)):
            return True
    return False


def _asked_below(line: str, m: re.Match[str], kind: str) -> bool:
    """Whether a phrase with a top below k states the scale the score is asked on: not in a
    conditional clause ("If the user asked for a 1-3 scale rating, ..."), not a band's label
    ("Scale: 1-2 = poor"), not a count ("1 out of 3 criteria")."""
    start = max(line.rfind(c, 0, m.start()) for c in ".;:!?,")
    if _CONDITION.search(line, start + 1, m.start()):
        return False
    if kind == "out_of":
        return _COUNTED_AFTER.match(line, m.end()) is None
    return _NOT_COUNTED.match(line, m.end()) is not None


# A condition in a plain range's sentence makes it a band of 1..k, a cap for some responses
# ("Score it from 1 to 3 if the prompt is unsafe", "If unsafe, score it 1-3").
_RANGE_CONDITION = re.compile(r"\b(?:if|when|whenever|unless|suppose|in\s+case)\b",
                              re.IGNORECASE)
# What may follow a plain range naming the score's range: the end of its clause, or how the
# score is given ("from 1 to 3 for the response", "1 to 3 points", "where 1 is poor"). Any
# other word says something of the range ("ratings 1 through 3 mean a factual error"): a
# band of 1..k, not the score asked for.
_RANGE_ENDS = re.compile(
    r"\s*(?:$|[.;,:!?)(]|[-\u2013\u2014]\s|\s(?:points?|stars?|for|based|on|according|"
    r"using|with|and|or|as|to|that|reflecting|inclusive|only|overall)\b|\swhere\s+\d)",
    re.IGNORECASE)
_SENTENCE_END = re.compile(r"[.;!?](?=\s|$)")
_CLAUSE_STOP = re.compile(r"[.;,!?](?=\s|$)")
# A score word just before a bare range in parentheses: "Score (1-3):", "Rating (1 to 3)".
_SCORE_BEFORE = re.compile(_SCORE_WORD + r"\s*$", re.IGNORECASE)


# "for" / "to" after a plain range, and the words after it: "1 to 3 for poor responses",
# "a score (1-3) to unhelpful responses", "1 to 3 only for unsafe responses" give a band to
# some responses. The whole response ("for each response", "to the answer"), a criterion
# ("for helpfulness") or what the score does ("to indicate quality") name the score's range.
_FOR_TO = re.compile(r"\)?\s+(only\s+)?(for|to)\s+([\w'\u2019-]+)(?:\s+([\w'\u2019-]+))?",
                     re.IGNORECASE)
_WHOLE = {"each", "every", "all", "its", "overall"}
_THE = {"the", "this", "that", "their", "your", "a", "an"}
_RESPONSE = re.compile(r"(?:response|answer|output|reply|completion|submission|text|"
                       r"candidate|assistant|model)s?$", re.IGNORECASE)
# After "the response": a word that narrows it to some responses ("the response that ...",
# "the response with errors"): a band.
_NARROWS = re.compile(r"\s+(?:that|which|who|whose|with|without|where|when|if|containing|"
                      r"having|in\s+which)\b", re.IGNORECASE)
# A criterion ("for helpfulness", "for accuracy and clarity"): one abstract noun, then the
# end of the clause or another criterion.
_CRITERION = re.compile(r"\w+(?:ness|ity|cy|ance|ence|ion|ment|ure)$", re.IGNORECASE)
_CRITERION_END = re.compile(r"\s*(?:$|[.;,:!?)]|\s(?:and|or)\b)")
_DOES = {"indicate", "reflect", "show", "express", "represent", "denote", "rate", "score",
         "grade", "mark", "measure", "assess", "evaluate", "judge", "capture", "signal",
         "say", "state", "describe", "convey", "quantify", "summarize", "summarise", "rank"}


def _band_for(line: str, end: int) -> bool:
    """Whether "for" / "to" right after a plain range gives it to some responses (a band:
    "1 to 3 for poor responses", "(1-3) to unhelpful ones", "only for unsafe responses")
    rather than naming the whole response, a criterion or what the score does ("from 1 to
    3 for each response", "for helpfulness", "to indicate quality"). See `_FOR_TO`."""
    f = _FOR_TO.match(line, end)
    if f is None:
        return False
    if f.group(1):  # "only for": some responses only
        return True
    w1, w2 = f.group(3).lower(), (f.group(4) or "")
    if f.group(2).lower() == "to" and w1 in _DOES:
        return False
    if w1 in _WHOLE:
        return False
    if w1 in _THE and _RESPONSE.match(w2):
        return _NARROWS.match(line, f.end(4)) is not None
    return not (_CRITERION.fullmatch(w1) and _CRITERION_END.match(line, f.end(3)))


def _range_asked(line: str, m: re.Match[str]) -> bool:
    """Whether a plain range from 1 with a top below k ("score it from 1 to 3", "a score
    between 1 and 3", "Score (1-3):") names the range of the score asked for: nothing is
    said of the range after it (`_RANGE_ENDS`), it is given to no group of responses
    (`_band_for`) and no condition is in its sentence before it or in its clause after it.
    Otherwise it is a band of 1..k."""
    start = max(line.rfind(c, 0, m.start()) for c in ".;!?")
    if _RANGE_CONDITION.search(line, start + 1, m.start()):
        return False
    if _RANGE_ENDS.match(line, m.end()) is None or _band_for(line, m.end()):
        return False
    stop = _CLAUSE_STOP.search(line, m.end())
    return _RANGE_CONDITION.search(line, m.end(), stop.start() if stop else len(line)) is None


# A band up to k: "4-5", "4 to 5", "between 4 and 5", "(4-5)" from 2 or more, then the end
# of its clause or what the band is for or means ("4-5 for helpful", "4-5 = good", "(4-5):
# helpful", "4 to 5 if correct", "4-5 mean a correct answer"), not a count ("4-5 sources").
_BAND = re.compile(r"(?:\bbetween\s+" + _NUM + r"\s+and\s+|" + _NUM + _TO + r")" + _NUM
                   + r"(?=\)?\s*(?:$|[.;,:!?=/()]|[-\u2013\u2014]\s|\s(?:points?|stars?|for|"
                   r"only|to|if|when|whenever|unless|where|means?|indicates?|is|are|denotes?|"
                   r"represents?|signals?|shows?|reflects?|and|or|as|should|would|will|goes?|"
                   r"corresponds?|appl(?:y|ies))\b))", re.IGNORECASE)
# A line opening with a band, after a bullet or a parenthesis: "- 4-5: helpful".
_LINE_START = re.compile(r"^[\s*\u2022>#-]*\(?$")
# A numbered thing before a range makes it no band: "steps 4-5", "questions 4 to 5".
_NUMBERED = re.compile(r"\b(?:steps?|items?|questions?|parts?|sections?|lines?|pages?|"
                       r"chapters?|turns?|rounds?|rows?|columns?|paragraphs?|sentences?|"
                       r"criteria|criterion|rules?|examples?|cases?|tasks?|no\.|nos\.|#)\s*$",
                       re.IGNORECASE)


def _bands_reach(text: str, k: int) -> bool:
    """Whether `text` has a band from 2 or more up to k (`_BAND`) on a line with a score word
    or opening its line: with it, ranges below it ("Score 1-3 for a factual error. Score
    4-5 for a correct answer.") are bands of the scale 1..k they reach together, not the
    score's range."""
    for line in text.splitlines():
        scored = _LINE_SCORE_WORD.search(line) is not None
        for m in _BAND.finditer(line):
            first = 1 if m.group(1) is not None else 2
            lo, hi = int(m.group(first)), int(m.group(3))
            if (2 <= lo < hi == k and not _chained(line, m, 3)
                    and _NUMBERED.search(line, 0, m.start()) is None
                    and (scored or _LINE_START.match(line, 0, m.start()) is not None)):
                return True
    return False


def _other_scale(text: str, k: int, *, stated: bool = False) -> tuple[str, str] | None:
    """(the phrase, its line) of the first phrase stating a scale other than 1..k, or None.
    A stated scale is another one when its top is above k or its bottom is 0; a range whose
    top is at most k (and bottom 1 or more) is a band of 1..k, except as below. A phrase
    naming the scale with a top below k ("on a scale of 1 to 3", "a score out of 3") is
    another scale only in a template that states 1..k nowhere and when it is about the score
    asked for (`_asked_below`): "score each aspect on a scale of 1 to 3, then give an overall
    score from 1 to 5" asks for 1..5. So is a plain range from 1 naming the score's range
    ("score it from 1 to 3", "a score between 1 and 3", "Score (1-3):"), unless a condition
    or a word about it makes it a band (`_range_asked`) or another band reaches k beside it
    ("Score 1-3 for ... Score 4-5 for ...", `_bands_reach`). `stated`: the template states
    1..k otherwise (it gives the score from the {levels} the judge fills in)."""
    below_counts = not (stated or _states_scale(text, k))
    # ranges that together reach k ("1-3 for ..., 4-5 for ...") are bands of 1..k
    plain_counts = below_counts and not _bands_reach(text, k)
    for line in text.splitlines():
        for kind, m, nums in _phrases(line):
            if kind in ("range", "scale"):
                lo, hi = int(nums[-2]), int(nums[-1])
                if lo > hi or _chained(line, m, m.lastindex or 0):
                    continue  # no range: "2024-10" of a date, "5 to 1"
                other = hi > k or lo == 0
                # a phrase naming the scale states its top: one below k can be another
                # scale ("on a scale of 1 to 3")
                if kind == "scale" and hi < k and below_counts:
                    other = other or _asked_below(line, m, kind)
                # a plain range from 1 names the score's range too ("score it from 1 to 3")
                # unless a condition or a word about it makes it a band of 1..k
                if kind == "range" and lo == 1 and hi < k and plain_counts:
                    other = other or (_asked_below(line, m, kind) and _range_asked(line, m))
            elif kind == "out_of":
                top = int(nums[-1])
                other = top > k or (top < k and below_counts and _asked_below(line, m, kind))
            elif kind == "ratio":
                top = int(nums[-1])
                score = nums[-2]
                other = top > k and (not score.isdigit() or int(score) <= top)
            else:
                lo_hi = [int(x) for x in nums]
                other = lo_hi[-1] > k
                # "a score between 1 and 3": the score's range, as "from 1 to 3" is
                if (len(lo_hi) == 2 and lo_hi[0] == 1 and lo_hi[1] < k and plain_counts
                        and _asked_below(line, m, kind) and _range_asked(line, m)):
                    other = True
            if other:
                return m.group(0).strip(), line.strip()
        if _LINE_SCORE_WORD.search(line):
            for m in _BARE_RANGE.finditer(line):
                top = int(m.group(3))
                if _chained(line, m, 3):
                    continue
                # "Score (1-3):" right after the score word labels the score's range
                labels = (m.group(0).startswith("(") and (m.group(1) or m.group(2)) == "1"
                          and _SCORE_BEFORE.search(line, 0, m.start()) is not None)
                if top > k or (top < k and plain_counts and labels
                               and _range_asked(line, m)):
                    return m.group(0).strip(), line.strip()
    return None


def check_template(t: Template, kind: str, *, scale: int = 5) -> None:
    """Refuse, before any call, a template its judge would fill wrongly: a placeholder the
    kind needs missing (the judge never sees that text, and still answers), one it does not
    fill (str.format fails mid-run), braces that are no placeholder, verdict labels it never
    names (the reader takes only the template's `### labels`), a score template on another
    scale than the judge reads (1..`scale`). One ValueError names every problem and the file.
    """
    must, may = KIND_FIELDS[kind]
    problems: list[str] = []
    names, odd, brace_error = _user_fields(t.user)
    if brace_error:
        problems.append(f"the user section has a brace that opens or closes no placeholder "
                        f"({brace_error})")
    for f in dict.fromkeys(names):
        if f not in must and f not in may:
            problems.append(f"the user section names {{{f}}}, which a {kind} judge does not "
                            "fill")
    for raw in dict.fromkeys(odd):
        problems.append(f"the user section has {raw!r}, which is no placeholder")
    if not brace_error:
        for f in must:
            if f not in names:
                problems.append(f"the user section lacks {{{f}}} ({FIELD_HELP[f]}), so the "
                                "judge would never see it")
    for section, text in (("system", t.system), ("prefill", t.prefill)):
        for f in dict.fromkeys(_NAMED.findall(text)):
            problems.append(f"the {section} section names {{{f}}}, but that section is sent "
                            "as written (placeholders are filled in the user section only)")
    if problems:
        may_s = f"; it may also use {_names(may)}" if may else "; it may use no other"
        odd_hint = (" A literal brace in the user section is written doubled: {{ and }} "
                    "(e.g. {{\"verdict\": \"A\"}}); the system section is sent as written."
                    if odd or brace_error else "")
        raise ValueError(
            f"template {t.where!r} cannot be used as a {kind} template: "
            + "; ".join(problems) + f". A {kind} template's user section must use "
            f"{_names(must)}{may_s}." + odd_hint)
    if t.ties and kind != "pairwise":
        raise ValueError(f"template {t.where!r} declares '### ties' ({', '.join(t.ties)}), but "
                         f"a {kind} judge reads no tie; leave the section out")
    if kind in ("pairwise", "binary"):
        text = "\n".join((t.system, _NAMED.sub(" ", t.user), t.prefill))
        fold = len({x.lower() for x in t.labels}) == len(t.labels)
        unnamed = [x for x in t.labels[:2] if not _mentions(text, x, fold)]
        if unnamed:
            raise ValueError(
                f"template {t.where!r} never names the verdict label(s) "
                f"{', '.join(map(repr, unnamed))}, so the judge is not asked for them; the "
                f"answer is read only for the template's labels ({', '.join(t.labels[:2])}, "
                "set under '### labels', default A, B; the first names the response shown "
                "first). If the template asks for other labels (1/2, X/Y), declare them: a "
                "line '### labels' followed by e.g. '1, 2'.")
        fold_all = len({x.lower() for x in t.labels + t.ties}) == len(t.labels + t.ties)
        if t.ties and not any(_mentions(text, x, fold_all) for x in t.ties):
            raise ValueError(
                f"template {t.where!r} declares the tie label(s) {', '.join(t.ties)} under "
                "'### ties' but never names one, so the judge is not asked for a tie; name "
                "it in the question (e.g. 'Answer A, B, or C for a tie') or leave the section "
                "out.")
    if kind == "pointwise":
        # {levels} lists the k levels on every call; {scale_note} / {answer_instruction}
        # state nothing (evaluate and audit fill them with "").
        stated = "levels" in names and _gives_levels(
            "\n".join((t.system, _NAMED.sub(" ", t.user), t.prefill)))
        found = _other_scale("\n".join((t.system, t.user, t.prefill)), scale, stated=stated)
        if found is not None:
            phrase, line = found
            raise ValueError(
                f"template {t.where!r} asks for scores on another scale than 1..{scale}: "
                f"{phrase!r} (in the line {line!r}), but the judge reads scores on "
                f"1..{scale} only: an answer above {scale} would be refused as off the scale "
                f"and one within it read as if on 1..{scale}. Rewrite the template for the "
                f"scale 1..{scale} ({{levels}} lists the levels); a template cannot set "
                "another scale. If that phrase does not set the scale the judge answers on, "
                "reword it: the check reads only phrases such as 'on a scale of 1 to 10', "
                "'1-10 scale', 'score it from 1 to 10', 'out of 10' or '7/10' after a score "
                "word, 'a 10-point scale', 'a score between 1 and 10', and a range from 0 or 1 "
                "('1-10', '(1 to 10)', 'between 1 and 10') on a line with a score word "
                "unless a count word, '=' or ':' follows it ('1-10 errors', '1-10 = poor'). "
                "A smaller scale for sub-scores is accepted beside the score asked for on "
                f"1..{scale}: state it ('an overall score from 1 to {scale}') or, with "
                "{levels} in the user section, give it from the levels ('one overall score "
                "from the levels below').")


def item_field_drops(t: Template, kind: str, items: Sequence[object],
                     fields: Sequence[str] | None = None) -> list[str]:
    """The text a user's template drops from the run's items, one warning per field: a
    score template without {rubric} on items with a rubric, without {levels} on items with
    rubric levels, a template without {reference_block} on items with a reference. The
    judge answers without that text; the run goes on (a template may judge by its own
    rubric on data that carries one, and builtin data cannot lose the field), but the drop
    is counted and said, never silent. `fields` limits the check (scoring-bias shows a
    reference only in its ref_k prompts). Built-in templates are not checked: what they show
    is documented (the pairwise ones show no reference)."""
    if t.source is None:
        return []
    names, _odd, _err = _user_fields(t.user)
    out: list[str] = []
    for field, placeholder, what in ITEM_FIELDS.get(kind, ()):
        if (fields is not None and field not in fields) or placeholder in names:
            continue
        n = sum(1 for it in items if getattr(it, field, None))
        if n:
            out.append(
                f"template {t.where!r} drops {what} (field {field!r}) that {n} of "
                f"{len(items)} items carry: its user section has no {{{placeholder}}}, so the "
                f"judge sees none of it on those {n} items. To show it, add {{{placeholder}}} "
                "to the user section (it is filled from each item).")
    return out
