"""Strict verdict and score parsing. Anything that is not clearly one verdict is invalid
(None) and counted by the caller: never coerced to a guess."""

from __future__ import annotations

import bisect
import contextlib
import functools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from judgeaudit.llm import CallFailed, Client, Request, Response

V = TypeVar("V")

# How much of an over-cap answer a verdict keeps for review (the cache keeps up to the cap).
RAW_KEEP = 2000

_STRIP = re.compile(r"[\s*_`\"'\[\]().:,!]+")
# Reasoning models (DeepSeek-R1, Qwen3, ... served without a reasoning parser) write their
# thinking into the answer before the verdict: "<think> ... </think>\n\nA". Some chat
# templates open the block in the prompt, so only its close appears in the answer.
_THINK_OPEN = re.compile(r"^\s*<(think|thinking|reasoning)>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(think|thinking|reasoning)>", re.IGNORECASE)


def strip_reasoning(text: str) -> str:
    """The answer after a reasoning model's closed thinking block (the whole text when it has
    none). A block never closed is left as it is: no verdict can be read from it."""
    closes = list(_THINK_CLOSE.finditer(text or ""))
    return text[closes[-1].end():] if closes else text


def reasoning_cut_off(text: str) -> bool:
    """True for an answer that opens a thinking block and never closes it: the model ran out
    of tokens while thinking, before any verdict."""
    return bool(_THINK_OPEN.match(text or "")) and not _THINK_CLOSE.search(text or "")


_TIE_WORDS = {"tie", "draw", "equal", "same"}  # "both"/"neither" stay invalid

# End-of-sequence tokens a server leaves at the end of the answer when it does not strip
# them ("A</s>"): not part of the verdict.
_EOS = re.compile(r"(?:</s>|<\|im_end\|>|<\|eot_id\|>|<\|endoftext\|>|<\|end_of_text\|>|"
                  r"<\|eom_id\|>|<\|end\|>|<end_of_turn>|<eos>)\Z", re.IGNORECASE)

# A label before the verdict, followed by ':' ("Verdict: A", "**Final verdict:** [[B]]",
# "Better: Response A"): every label reads as "Answer:" does. The verdict may be on the
# label's line or, when the label line holds nothing else, on the next one.
_LABELS = (r"(?:(?:my|the)\s+)?(?:final\s+|overall\s+)?(?:verdict|answer|choice|decision|"
           r"judge?ment|selection|result|winner|output|response|preferred(?:\s+response)?|"
           r"better(?:\s+response)?|best(?:\s+response)?)")
# Possessive runs: a label starts with a letter, so the markup before it is never given back
# (a line of a million underscores was re-tried from each of its ends: 0.3 s per rule).
_LABEL_COLON = re.compile(r"^[\s#>*_]*+" + _LABELS + r"[\s*_]*+[:=][\s*_]*+", re.IGNORECASE)

# One short sentence that names exactly one choice and nothing else on its line: "The better
# response is A.", "I choose Response B". Anchored at both ends: "I would not choose A", "I
# choose A over B" and longer prose do not match and stay invalid.
_BRACKETED = re.compile(r"\[\[\s*+([^\[\]\n]{1,20}?)\s*+\]\]")  # \s*+: no backtracking
_SENTENCE = re.compile(
    r"^(?:(?:the|my)\s+(?:better|best|preferred|stronger|winning)\s+(?:response|answer|output|"
    r"one|choice)\s+is|(?:my\s+(?:verdict|choice|answer)\s+is)|i\s+(?:would\s+)?(?:choose|pick|"
    r"select|prefer|go\s+with|vote\s+for))\s+[*_\[(\"']*+(?:(?:response|output|answer)\s+)?"
    r"[*_\[(\"']*+(\w+)[*_\])\"']*\s*[.!]?$", re.IGNORECASE)

# A choice followed at once by a verb and a negation or a worse-than ("A is not better", "A
# isn't the better one", "A is worse"): the line names the choice only to reject it.
_AFTER_CHOICE_VERB = frozenset({"is", "was", "would", "does", "did", "seems", "looks",
                                "appears", "should", "could", "has", "isn", "wasn", "doesn",
                                "didn", "wouldn", "shouldn", "couldn", "fails", "lacks"})
_NEGATION = re.compile(r"\b(?:not|never|cannot|worse|worst|inferior|weaker|poorer|fails|"
                       r"lacks)\b|n[\'\u2019]t\b", re.IGNORECASE)
_CLAUSE_END = re.compile(r"[.,;:!?\n]")

# JSON answers ({"verdict": "A"}): the keys that hold a verdict or a score, compared after
# lower-casing and turning spaces/hyphens into "_". Other keys ("reason", "feedback") are
# the judge's commentary and are not read.
_VERDICT_KEYS = frozenset({
    "verdict", "winner", "choice", "answer", "better", "preferred", "decision", "result",
    "judgment", "judgement", "label", "selection", "selected", "best", "better_response",
    "preferred_response", "best_response", "final_verdict", "final_answer", "final_choice",
    "final_decision",
})
_SCORE_KEYS = frozenset({"score", "rating", "grade", "final_score", "overall_score",
                         "final_rating", "overall_rating"})
_FENCE = re.compile(r"^```[A-Za-z]*[ \t]*\n(.*)\n[ \t]*```$", re.DOTALL)
_KEY_SEP = re.compile(r"[\s\-]+")


# Full-width forms (U+FF01..U+FF5E, as a Chinese or Japanese input method types them:
# "Ａ", "［［A］］", "Ｓｃｏｒｅ: ４") and the ideographic space, as NFKC maps them: one ASCII
# character each, so every position in the copy is the original's. Only these: NFKC's other
# mappings would read "4²" as "42" or "½" as "1/2".
_HALFWIDTH = {0xFF01 + i: 0x21 + i for i in range(94)} | {0x3000: 0x20}


def _halfwidth(text: str, names: Sequence[str] = ()) -> str:
    """`text` with full-width forms as ASCII (`_HALFWIDTH`), the copy the readers match on
    (what they return is a label or a score, never this text); as it is when a name the
    reader matches (`names`: labels, score ids) is itself written in them."""
    if any(ord(ch) in _HALFWIDTH for n in names for ch in n):
        return text
    return text.translate(_HALFWIDTH)


def _strip_eos(text: str) -> str:
    """The answer without end-of-sequence tokens at its end."""
    text = text or ""
    rest, found = text.rstrip(), False
    # one token at a time, whitespace by str.rstrip: "(\s*token)+\s*$" as one regex took
    # seconds on a long run of blank lines (quadratic)
    while (m := _EOS.search(rest)) is not None:
        rest, found = rest[:m.start()].rstrip(), True
    return rest if found else text


def _negated_after(line: str, token: str) -> bool:
    """True when the clause right after the choice `token` (up to ',', '.', ...) starts with
    a verb and negates the choice or ranks it worse: "A is not better", "A isn't", "B is
    worse"; "A, though B is not bad" and "A. B is not ..." are not."""
    at = re.search(r"(?<![A-Za-z0-9])" + re.escape(token) + r"(?![A-Za-z0-9])", line)
    if at is None:
        return False
    rest = line[at.end():]
    cut = _CLAUSE_END.search(rest)
    clause = rest if cut is None else rest[:cut.start()]
    words = [w for w in re.split(r"[\s'\u2019*_\])\"]+", clause.lower()) if w]
    return bool(words) and words[0] in _AFTER_CHOICE_VERB and bool(_NEGATION.search(clause))


class _NotJson:
    """Marks an answer that is not a JSON object (read as plain text)."""


_NOT_JSON = _NotJson()
_TICKS = re.compile(r"```")
_FENCE_OPEN = re.compile(r"```[A-Za-z]*[ \t]*")
_LINE_BRACE = re.compile(r"^[ \t]*\{", re.MULTILINE)
_DECODER = json.JSONDecoder(object_pairs_hook=list)


def _json_object(text: str) -> list[tuple[str, Any]] | None | _NotJson:
    """The (key, value) pairs of the JSON object that is the whole answer (bare, or alone in
    one ```json fence), every pair kept: a key given twice with two verdicts is a conflict,
    not the last one. None for an answer that opens like one but is no single object
    (broken, two objects): such an answer gives no verdict. `_NOT_JSON` for anything else
    ("[[A]]" stays text)."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body.startswith("{"):
        return _NOT_JSON
    try:
        # Nested objects come back as pair lists too: read only to check they agree.
        return json.loads(body, object_pairs_hook=list)
    except (ValueError, RecursionError):  # broken, trailing text, a second object or
        return None                       # fence, nested past what json reads


def _is_object(value: Any) -> bool:
    """A decoded JSON object (a list of (key, value) pairs under `object_pairs_hook=list`;
    a JSON array decodes to a list of values, never of tuples)."""
    return isinstance(value, list) and all(isinstance(p, tuple) for p in value)


def _key(k: Any) -> str:
    return _KEY_SEP.sub("_", str(k).strip().lower())


def _has_key(pairs: list[tuple[str, Any]], keys: frozenset[str]) -> bool:
    return any(_key(k) in keys for k, _ in pairs)


def _line_end(text: str, i: int) -> int:
    n = text.find("\n", i)
    return len(text) if n < 0 else n


def _json_in_prose(text: str, keys: frozenset[str]
                   ) -> tuple[list[tuple[str, Any]], str] | None | _NotJson:
    """The one JSON verdict object in an answer with prose around it, and that prose.

    Objects are looked for in ```fences (the whole fence body one object) and at the start
    of a line outside fences. None (refuse) when a verdict object (one with a key of `keys`)
    is there but is not the only object, the text has other fences, or the object shares
    its line with text after it (a bare one starts its line by how it is found).
    `_NOT_JSON` when no object holds a verdict key: the answer is read as plain text."""
    ticks = [m.start() for m in _TICKS.finditer(text)]
    fences = list(zip(ticks[0::2], ticks[1::2], strict=False))
    inside = fences + ([(ticks[-1], len(text))] if len(ticks) % 2 else [])
    found: list[tuple[int, int, Any, bool]] = []  # (start, end, pairs, fenced)
    for open_at, close_at in fences:
        body = _FENCE_OPEN.sub("", text[open_at:close_at], count=1).strip()
        if body.startswith("{"):
            with contextlib.suppress(ValueError, RecursionError):  # broken: no object
                found.append((open_at, close_at + 3, _DECODER.decode(body), True))
    after = 0
    for m in _LINE_BRACE.finditer(text):
        at = m.end() - 1
        if at < after or any(a <= at < b for a, b in inside):
            continue
        try:
            value, end = _DECODER.raw_decode(text, at)
        except (ValueError, RecursionError):
            continue
        found.append((m.start(), end, value, False))
        after = end
    if not any(_has_key(v, keys) for _, _, v, _ in found):
        return _NOT_JSON
    if len(found) != 1:
        return None
    start, end, pairs, fenced = found[0]
    if (len(ticks) != (2 if fenced else 0)) or text[end:_line_end(text, end)].strip():
        return None
    return pairs, text[:start] + "\n" + text[end:]


def _find_json(text: str, keys: frozenset[str]
               ) -> tuple[list[tuple[str, Any]], str] | None | _NotJson:
    """The answer's JSON verdict object and the prose around it ("" for an answer that is
    the object), None for one that gives no verdict, `_NOT_JSON` for a plain-text answer."""
    whole = _json_object(text)
    if isinstance(whole, list):
        return whole, ""
    found = _json_in_prose(text, keys)
    if isinstance(found, _NotJson) and whole is None:
        return None  # it opens as JSON (or a JSON fence) but is none: as before
    return found


def _json_scalar(value: Any) -> str | None:
    """A JSON value as the text it stands for: strings as they are, integers and finite
    numbers in decimal; None for null, true/false (not 1/0), lists and objects, and for a
    string spanning lines ("A\\nB" is two answers, not the first)."""
    if isinstance(value, str):
        return None if "\n" in value.strip() or "\r" in value.strip() else value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return None


def _key_values(value: Any, keys: frozenset[str], depth: int = 0) -> list[tuple[int, Any]]:
    """Every value under a key of `keys` in `value`, at any depth, with its depth (0: the
    top-level object's own keys)."""
    got: list[tuple[int, Any]] = []
    todo = [(value, depth)]  # not recursive: json decodes deeper than Python recurses
    while todo:
        value, depth = todo.pop()
        if _is_object(value):
            for k, v in value:
                if _key(k) in keys:
                    got.append((depth, v))
                todo.append((v, depth + 1))
        elif isinstance(value, list):
            todo.extend((v, depth) for v in value)
    return got


def _read_json(pairs: list[tuple[str, Any]], keys: frozenset[str],
               read: Callable[[str], V | None], allow_float: bool = True) -> V | None:
    """The one value the object's verdict-like (score-like) keys agree on, or None: none of
    `keys` at the top level, or one of them (at any depth: {"analysis": {"verdict": "B"}}
    under a top-level "A" is a second verdict) unreadable (by `read`, one line), or two
    that disagree."""
    found = _key_values(pairs, keys)
    if not any(depth == 0 for depth, _ in found):
        return None
    got: list[V | None] = []
    for _, v in found:
        if isinstance(v, float) and not allow_float:
            got.append(None)
            continue
        text = _json_scalar(v)
        got.append(None if text is None else read(text))
    if any(g is None for g in got) or any(g != got[0] for g in got):
        return None
    return got[0]


def _read_answer(text: str, keys: frozenset[str], read: Callable[[str], V | None],
                 allow_float: bool = True) -> V | None:
    """An answer read as JSON (`_read_json`) or, when it holds no JSON verdict, as plain
    text by `read`. Prose around a JSON verdict is allowed only where none of its lines
    reads (by `read`) as another verdict."""
    found = _find_json(text, keys)
    if found is None:
        return None
    if isinstance(found, _NotJson):
        return read(text)
    pairs, prose = found
    got = _read_json(pairs, keys, read, allow_float)
    if got is None:
        return None
    for line in prose.splitlines():
        if line.strip() and read(line) not in (None, got):
            return None
    return got


def parse_choice(
    text: str, choices: tuple[str, ...] = ("A", "B"), allow_tie: bool = False,
    tie_labels: tuple[str, ...] = (),
) -> str | None:
    """Return the single choice `text` names, "tie" (if allowed), or None.

    `tie_labels` (with `allow_tie`): labels the template defines as a tie (MT-Bench's "C"):
    read as a choice would be ("[[C]]", "Final verdict: C") and returned as "tie"; a chain
    of thought then also reads as a tie when it ends on a tie sentence ("Therefore, both
    outputs are equally good.", `_tie_end`) and names no winner anywhere. Without them a
    tie sentence at the end stays invalid, as a template asking for A or B has no tie.

    Accepts e.g. "A", " A.", "**B**", "[[A]]", "Response A", "Output (b)", "A is better",
    "B\\nExplanation: ...", any of these after a label and a colon ("Verdict: A", "**Final
    verdict:** [[B]]", "Better: Response A", "Verdict:\\nA"), one short sentence naming
    one choice ("The better response is A.", "I choose B"), end-of-sequence tokens at the
    end ("A</s>", "B<|im_end|>") left out, a whole answer that is one lower-case letter
    ("b", "**a**"), a
    JSON object (bare or in a ```json fence) whose verdict-like keys ("verdict", "winner",
    "choice", ...) all name the same one choice in any of these forms (nested ones too, and
    each on one line), and any of these after a reasoning model's closed thinking block
    (`strip_reasoning`). The JSON may have prose around it ('{"verdict": "A"}\\nBecause
    ...', 'Sure!\\n```json ...```') when it is the answer's only JSON object, alone in the
    only fence or on lines of its own, and no prose line reads (by the plain rules) as
    another choice. A chain of thought whose opening is no verdict is read by its end
    (`_closing_choice`): its last line when that is an explicit verdict ("...\n\nFinal
    verdict: [[A]]", "Verdict:\nB", a bare choice after the reasoning's prose; not a bare
    choice under any other heading, "Worse output:\nOutput (b)", nor a line ending with ':'),
    or its last sentence when that names one winner and nothing turns it
    ("Therefore, Output (a) is better.", "So the better output is Output (b).", "Output (b)
    is better than Output (a) because ..."); a hedge, a negation, a condition, a restriction
    ("Considering only style, ..."), a contrast after it, an opening that refuses to choose
    ("Both\n..."), or a verdict sentence ("Output (a) is better."), "[[X]]" or "Final
    verdict: X" anywhere naming another choice leave it invalid (and make an answer whose
    opening gives a verdict invalid too). Rejects "C", "A or B", "Both", "A
    and B", prose that names both, "a good
    answer" (a lower-case letter in prose is the article), JSON naming both, none or an
    unknown value, a choice the line goes on to reject ("A is not better", "I would not
    choose A", "B is worse"), with verdict keys that disagree ({"verdict": "A",
    "analysis": {"verdict": "B"}}) or a value on two lines, two JSON objects or fences,
    and 'B\\n{"verdict": "A"}'.
    """
    text = _strip_eos(strip_reasoning(_strip_eos(_halfwidth(text or "", choices + tie_labels))))
    if not text or not text.strip():
        return None
    ties = tuple(t for t in tie_labels if t not in choices) if allow_tie else ()
    if ties:  # the tie label read as one more choice, then named "tie"
        got = _choice(text, choices + ties, allow_tie)
        if got is None:
            return "tie" if _tie_end(text, choices + ties) else None
        if got not in ties and _tie_end(text, choices + ties, alone=False):
            return None  # a winner and a tie at the end: which one is meant is unclear
        return "tie" if got in ties else got
    return _choice(text, choices, allow_tie)


def _choice(text: str, choices: tuple[str, ...], allow_tie: bool) -> str | None:
    """`parse_choice` on an answer already stripped, without tie labels."""
    got = _read_answer(text, _VERDICT_KEYS,
                       lambda v: _parse_plain_choice(v, choices, allow_tie), allow_float=False)
    if got is not None:  # a "[[B]]" anywhere (prose after a JSON verdict too) disagreeing
        fold = _folder(choices)
        if any((c := fold(m.group(1))) is not None and c != got
               for m in _BRACKETED.finditer(text)):
            return None
        # ... or a concluding sentence anywhere ("Therefore, Output (b) is better."), unless
        # the answer ends on a marked verdict naming `got` ("Final verdict: [[A]]"): a plain
        # sentence before it is a step of the reasoning, not the verdict
        if _marked_end(text, choices, allow_tie) != got \
                and any(c != got for c in _conclusions(text, choices)):
            return None
        # ... or a later line in another script naming another choice ("A\n\n但是回答B更好。"):
        # the readers do not read that script, so it cannot be told to agree (s44 parsefix8)
        if _opening_choice(text, choices, allow_tie) == got \
                and _other_script_names(text, tuple(c for c in choices if c != got), got):
            return None
    return got


def _mostly_other_script(line: str) -> bool:
    """True when more than half of `line`'s letters (and non-ASCII digits) are not Latin: a
    line the readers, which read the template's Latin labels and ASCII digits, cannot read.
    Only its first 2,000 characters are looked at (a long line is reasoning or data)."""
    signs = [c for c in line[:2000] if c.isalpha() or (c.isdecimal() and not c.isascii())]
    other = sum(1 for c in signs if not c.isascii() and not _latin(c))
    return 2 * other > len(signs)


@functools.lru_cache(maxsize=4096)
def _latin(c: str) -> bool:
    """True when the character `c` is of Latin script by its Unicode name (cached: a line of
    Chinese looked each character's name up again)."""
    return "LATIN" in unicodedata.name(c, "")


# Quotes of other scripts' punctuation, beside `_quoted_spans`' ("「回答B」", "«Ответ B»").
_OTHER_QUOTES = re.compile(r"\u300c[^\u300d]*+\u300d?|\u300e[^\u300f]*+\u300f?"
                           r"|\u00ab[^\u00bb]*+\u00bb?")


def _blank_quotes(line: str) -> str:
    """`line` with its quoted spans (`_quoted_spans`, "「...」", "«...»") blanked with NUL: a
    label or a number in quotes is a quote, not the judge's verdict."""
    blank = list(line)
    for a, b in _quoted_spans(line) + [m.span() for m in _OTHER_QUOTES.finditer(line)]:
        blank[a:b] = "\0" * (b - a)
    return "".join(blank)


def _own_other_script_lines(text: str, wanted: re.Pattern[str],
                            skip: Callable[[str], bool] | None = None) -> Iterator[str]:
    """The lines after an answer's first line, up to 2,000 characters each, where `wanted`
    matches outside quotes (`_blank_quotes`), that are mostly in another script than Latin
    (`_mostly_other_script`) and the judge's own: not in a ``` fence, not a "> " blockquote,
    not introduced as a response's text by the line before (`_introduced`). `wanted` is
    tried first: most lines hold nothing it matches and cost no more; then `skip` (a line it
    is True for is not yielded, before the costlier checks)."""
    lines = text.strip().splitlines()
    fence_at = [i for i, ln in enumerate(lines) if _FENCE_LINE.match(ln)]
    stray = fence_at[-1] if len(fence_at) % 2 else -1
    prev, fenced = lines[0] if lines else "", False
    for i, line in enumerate(lines[1:], start=1):
        cut = line[:2000]
        if not fenced and wanted.search(cut) and not line.lstrip().startswith(">") \
                and (skip is None or not skip(cut)) \
                and wanted.search(blanked := _blank_quotes(cut)) \
                and _mostly_other_script(cut) and not _introduced(prev):
            yield blanked
        if _FENCE_LINE.match(line) and i != stray:
            fenced = not fenced
        if line.strip():
            prev = line


def _other_script_names(text: str, others: tuple[str, ...], got: str | None = None) -> bool:
    """True when a later line of the judge's own in another script (`_own_other_script_lines`)
    names one of `others` as a token, not inside a Latin word or number ("回答B更好",
    "Ответ B", "Ｂ" read as B): the readers cannot read that line's sentence, so a verdict it
    may give for another choice cannot be ruled out, and the answer is unread rather than
    read as its opening (a wrong reading is silent; an unread one is counted and shown).
    A line that plainly prefers `got` over them (`_prefers`: "回答A比回答B更好。") agrees."""
    if not others:
        return False
    pattern = re.compile(r"(?<![A-Za-z0-9])(?:" + "|".join(map(re.escape, others))
                         + r")(?![A-Za-z0-9])")
    if got is None:
        return next(_own_other_script_lines(text, pattern), None) is not None
    # a line that prefers `got` as written prefers it with its quotes blanked too, or names
    # no other label then: checked first, before the costlier blanking
    compared = _comparisons(got, others)
    return any(not _prefers(line, compared) for line in _own_other_script_lines(
        text, pattern, lambda line: _prefers(line, compared)))


# A clause in Chinese, Russian or Japanese that compares two labels and prefers one (s45
# parse9: "A\n\n回答A比回答B更好。" was unread though it restates the verdict). `{w}` is the
# label preferred, `{l}` the other; the whole clause must be the comparison, after at most
# a concluding lead ("所以", "我认为", "Поэтому"): "回答A并不比回答B更好", "回答A比回答B更差"
# and anything else naming the other label are not read as agreeing.
_CMP_NOUN = (r"(?:回答|答案|响应|響應|回应|回應|回复|回覆|输出|輸出|选项|選項|"
             r"(?:response|output|answer|ответ|вариант)[ \t]*+)?")
_CMP_OF = r"(?:的回答|的答案|的)?"
_CMP_MORE = r"(?:更加|更|还要|還要|还|還|要|稍微|稍|略|明显|明顯)?"
_CMP_GOOD = (r"(?:好|优秀|優秀|出色|强|強|准确|準確|完整|全面|清晰|有用|详细|詳細|合适|合適|"
             r"恰当|恰當)")
_CMP_MUCH = r"(?:一些|一点|一點|得多|很多|许多|許多)?"
_CMP_SHAPES = (
    _CMP_NOUN + "{w}" + _CMP_OF + r"(?:比|较|較|要比)" + _CMP_NOUN + "{l}" + _CMP_OF + _CMP_MORE
    + _CMP_GOOD + _CMP_MUCH,
    _CMP_NOUN + "{w}" + _CMP_OF + r"(?:优于|優於|好于|好於|胜过|勝過|胜于|勝於|强于|強於)"
    + _CMP_NOUN + "{l}" + _CMP_OF,
    _CMP_NOUN + "{l}" + _CMP_OF + r"(?:不如|比不上)" + _CMP_NOUN + "{w}" + _CMP_OF
    + r"(?:好|优秀|優秀)?",
    _CMP_NOUN + "{l}" + _CMP_OF + r"(?:比|较|較)" + _CMP_NOUN + "{w}" + _CMP_OF + _CMP_MORE
    + r"(?:差|弱|逊色|遜色)" + _CMP_MUCH,
    _CMP_NOUN + r"{w}(?:(?:немного|значительно|намного|гораздо|явно|чуть)[ \t]++)?"
    r"(?:лучше|предпочтительнее|точнее|полнее)[ \t]*+,?[ \t]*+(?:чем[ \t]++)?"
    r"(?:(?:ответа?|варианта?)[ \t]++)?{l}",
    _CMP_NOUN + r"{w}(?:の方|のほう)?(?:が|は)" + _CMP_NOUN + r"{l}(?:より|よりも)"
    r"(?:良い|よい|いい|優れている|優れています|優秀)(?:です)?",
)
_CMP_LEAD = re.compile(r"(?:(?:所以|因此|因而|总之|總之|综上所述|綜上所述|综上|綜上|总的来说|"
                       r"總的來說|总体而言|總體而言|我认为|我認為|我觉得|我覺得|显然|顯然|"
                       r"поэтому|итак|таким[ \t]++образом|в[ \t]++итоге|в[ \t]++целом|"
                       r"したがって|よって|結論として)[ \t,，:：]*+)*+", re.IGNORECASE)
_CMP_SPLIT = re.compile(r"[。，；;！!\n]|,(?![ \t]*+чем)|\.(?=\s|$)")


def _label_re(label: str) -> str:
    return r"(?<![A-Za-z0-9])" + re.escape(label) + r"(?![A-Za-z0-9])"


@functools.lru_cache(maxsize=64)
def _comparisons(got: str, others: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """A pattern finding any of `others` as a label, and one matching a whole clause that
    prefers `got` over one of them (`_CMP_SHAPES`); built once per pair of labels."""
    pad = r"[ \t]*+{}[ \t]*+"
    shapes = "|".join(s.format(w=pad.format(_label_re(got)), l=pad.format(_label_re(o)))
                      for s in _CMP_SHAPES for o in others)
    return (re.compile("|".join(_label_re(o) for o in others)),
            re.compile("(?:" + shapes + ")", re.IGNORECASE))


def _prefers(line: str, patterns: tuple[re.Pattern[str], re.Pattern[str]]) -> bool:
    """True when every clause of `line` (quotes blanked) that names one of the other labels
    is a comparison preferring the label read over it (`_comparisons`): the line restates
    the verdict. A question, a clause preferring another label, or any other clause naming
    one is not."""
    if "?" in line or "\uff1f" in line:
        return False
    named, prefers = patterns
    for clause in _CMP_SPLIT.split(line):
        if named.search(clause) is None:
            continue
        body = clause.strip(" \t*_\"'\u201c\u201d\0")  # \0: a quote blanked
        if (lead := _CMP_LEAD.match(body)) is not None:
            body = body[lead.end():]
        if prefers.fullmatch(body) is None:
            return False
    return True


# Words that name a choice right after them: "Output (a)", "Response b", "Assistant A".
_LABEL_WORDS = frozenset({"response", "output", "answer", "assistant"})


def _folder(choices: tuple[str, ...]) -> Callable[[str], str | None]:
    """How a token is matched to a choice in any case: by its lower-case form, or, where two
    choices differ only in case (AlpacaEval's "m"/"M"), as written (folding "m" to "M"
    would read one model's verdict as the other's)."""
    if len({c.lower() for c in choices}) < len(choices):
        return lambda t: t if t in choices else None
    by_lower = {c.lower(): c for c in choices}
    return lambda t: by_lower.get(t.lower())


# A "Verdict:"-like label anywhere in a line ("After reconsidering, final verdict: B"), and
# where its value starts: a second labelled verdict that disagrees with the first makes the
# answer invalid.
# (The lookahead, the first letters of `_LABELS`, lets each other position fail at once: a
# megabyte of one character took 0.3-0.4 s trying every label there.)
_LABEL_ANYWHERE = re.compile(r"(?<![A-Za-z])(?=[mtfovacdjsrwpb])" + _LABELS +
                             r"[\s*_]*+[:=][ \t*_]*([^\n]*)", re.IGNORECASE)
# What may follow a choice in a labelled value: nothing, or that it is the better one ("A is
# better", "A wins", "B is the better response"). Anything else is a sentence about the
# choice ("A loses", "A is less helpful", "No problems with this response"), not a verdict.
_BARE_TAIL = re.compile(
    r"(?:(?:is|was)\s+(?:the\s+)?(?:better|best|preferred|stronger|superior|winner)"
    r"(?:\s+(?:one|response|answer|output|choice|option))?|wins)?")
# Where a value's first clause ends: "A. It cites...", "YES, THE ANSWER IS NOT HARMFUL",
# "B; the other one rambles" read as the choice before it.
_SENTENCE_END = re.compile(r"[.!?,;](?=\s|$)")


def _bare_value(line: str) -> bool:
    """True when `line` (an answer's first line, or a label's value) up to its first clause
    end is one choice in an accepted form ("A", "[[A]]", "Output (a)", "Response B is
    better", "tie", "YES."), not a sentence about it: "A loses", "A is less helpful", "NO
    PROBLEMS WITH THIS RESPONSE"."""
    end = _SENTENCE_END.search(line)
    tokens = [t.lower() for t in _STRIP.split(line if end is None else line[:end.start()]) if t]
    if len(tokens) > 1 and tokens[0] in _LABEL_WORDS:
        tokens = tokens[1:]
    return bool(tokens) and _BARE_TAIL.fullmatch(" ".join(tokens[1:])) is not None


def _parse_plain_choice(text: str, choices: tuple[str, ...], allow_tie: bool) -> str | None:
    """`parse_choice` on an answer in plain text (no JSON): the verdict its opening gives
    (`_opening_choice`), None when a labelled verdict later on gives another one ("Verdict:
    A ... final verdict: B")."""
    got = _opening_choice(text, choices, allow_tie)
    if got is None:  # a chain of thought: its verdict at the end, unless it opened refusing
        got = _closing_choice(text, choices, allow_tie)
        if got is None or _refused_opening(text, choices):
            return None
    elif any(end not in (None, got)  # "A\n... Therefore, Output (b) is better.", "A\nB"
             for end in (_closing_choice(text, choices, allow_tie),
                         _closing_choice(text, choices, allow_tie, loose=True))):
        return None
    fold = _folder(choices)
    # a later "[[B]]" marker, or a line that is a verdict sentence ("The better response is
    # B.", "I choose B"), naming another choice: "[[A]]\nOn second thought ... [[B]]" read A
    later = [fold(m.group(1)) for m in _BRACKETED.finditer(text)]
    if _marked_end(text, choices, allow_tie) != got:  # a marked end outweighs a sentence
        later += [fold(m.group(1)) for line in text.strip().splitlines()[1:]
                  if (m := _SENTENCE.match(line.strip()))]
        later += _revised_choices(text, choices)  # "On reflection, I choose Response B"
    if any(c is not None and c != got for c in later):
        return None
    for m in _LABEL_ANYWHERE.finditer(text):
        # the label's own line, or its next one when it holds nothing else ("Verdict:\nB")
        other = _opening_choice(_label_value(text, m.start(1)), choices, allow_tie,
                                after_label=True)
        if other is not None and other != got:
            return None
    return got


_TOKEN_CHAR = re.compile(r"[^\s*_`\"'\[\]().:,!]")  # a character `_STRIP` keeps


def _label_value(text: str, start: int) -> str:
    """What `_opening_choice` reads after a label at `start`, cut short: the label's line, or
    the first non-blank line after it, and then the next token, if any (all it needs to tell
    "the whole answer is one letter"). The whole rest of the answer, sliced for each label,
    made a 56 kB answer of 7,000 labels take 6 s."""
    at = start
    while True:
        end = text.find("\n", at)
        line = text[at:] if end < 0 else text[at:end]
        if line.strip() or end < 0:
            break
        at = end + 1
    if end < 0:
        return text[start:]
    more = _TOKEN_CHAR.search(text, end)
    return text[start:end] + ("" if more is None else "\n" + more.group(0))


def _opening_choice(text: str, choices: tuple[str, ...], allow_tie: bool,
                    after_label: bool = False) -> str | None:
    """The verdict an answer's opening gives by the rules of `parse_choice`. `after_label`:
    `text` is what follows a "Verdict:"-like label, whose own line may hold nothing else, and
    whose value reads only when bare (`_bare_value`)."""
    if not text or not text.strip():
        return None
    if not after_label:
        label = _LABEL_COLON.match(text)
        if label is not None:
            rest = text[label.end():]
            if not rest.split("\n", 1)[0].strip():  # "Verdict:\nA": the verdict's own line
                rest = rest.lstrip()
            return _opening_choice(rest, choices, allow_tie, after_label=True)
    first_line = text.strip().splitlines()[0]
    tokens = [t for t in _STRIP.split(first_line) if t]
    if not tokens:
        return None
    fold = _folder(choices)
    sentence = _SENTENCE.match(first_line.strip())
    if sentence is not None:
        return fold(sentence.group(1))
    # A value, labelled or not, reads only when bare: "Output (a) provides a concise
    # summary" is prose about one output (a chain of thought's opening), not a verdict; it
    # read A, opposite to the verdict at its end in 24 of LLMBar's 924 GPT-4 CoT answers.
    if not _bare_value(first_line):
        return None
    lowered = [t.lower() for t in tokens]
    # Every choice the line names: as written, and in any case right after a label word
    # ("Output (a) is fine. Output (b) is better." names both).
    named = {t for t in tokens if t in choices}
    named |= {c for w, t in zip(lowered, tokens[1:], strict=False)
              if w in _LABEL_WORDS and (c := fold(t)) is not None}
    # Letters match case-sensitively ("a" is usually the article), except right after a
    # label word ("Output (b)", "response a") or alone on the line after a label and a
    # colon ("Verdict: b").
    labelled = lowered[0] in _LABEL_WORDS and len(tokens) > 1
    if labelled:
        tokens, lowered = tokens[1:], lowered[1:]
    labelled = labelled or (after_label and len(tokens) == 1)
    head = tokens[0]
    hit = fold(head) if labelled else (head if head in choices else None)
    if hit is not None:
        named.add(hit)
        # The first token is a choice; refuse if another choice is also named ("A or B"),
        # or if the line goes on to reject it ("A is not better").
        if len(named) > 1 or _negated_after(first_line, head):
            return None
        return hit
    if allow_tie and lowered[0] in _TIE_WORDS and not named:
        return "tie"
    # ...and when the whole answer is that one letter in lower case ("b", "**a**."): there
    # it cannot be the article. "a\nThe first one." is not the whole answer.
    whole = [t for t in _STRIP.split(text) if t]
    return fold(whole[0]) if len(whole) == 1 else None


# ---- a chain of thought's closing verdict ----------------------------------------------------
# An answer that reasons first ("Output (a) provides ... On the other hand, Output (b) ...")
# and gives its verdict at the end ("Therefore, Output (b) is better."): all 924 of LLMBar's
# GPT-4 CoT answers, every one invalid when only the opening was read. The end is read only
# when its last sentence is one verdict sentence with nothing around it that could turn it.


def _choice_re(name: str) -> str:
    """One choice as a verdict sentence names it: "Output (a)", "Response B", "[[A]]", "A";
    the label word in group `name`_l, what opens around it ("[[", "**") in `name`_b. The
    runs around it are bounded: "[[" x 6,000 took 1.7 s to search when they were not."""
    return (r"(?:[*_]{0,4}+(?P<" + name + r"_l>output|response|answer|assistant)\s*+)?"
            r"(?P<" + name + r"_b>[\[(\"'*_]{0,8})(?P<" + name + r">[A-Za-z0-9]+)[\])\"'*_]{0,8}")


_WINS = (r"(?:is|was)\s++(?:(?:clearly|slightly|significantly|much|far|definitely|overall|"
         r"marginally|somewhat)\s++)?(?:the\s++)?(?:(?:clear|overall)\s++)?(?:better|best|preferred|"
         r"superior|stronger|winner|winning)(?:\s++(?:one|response|answer|output|choice|option))?"
         r"|wins")
_OTHER = r"(?:the\s++other(?:\s++(?:one|response|answer|output))?|" + _choice_re("o") + r")"
# The verdict itself: "<choice> is better [than <other>]", "the better output is <choice>",
# "my final verdict is <choice>", "I would choose <choice> [over <other>]". No hedge ("may
# be", "seems", "is probably") and no negation fits between the choice and its verb. Not
# "the answer is 2": in a judged math answer that is the math, not a verdict.
_CORE = re.compile(
    r"(?:" + _choice_re("c") + r"\s++(?:" + _WINS + r")(?:\s++(?:than|over)\s++" + _OTHER + r")?"
    r"|(?P<named>(?:the|my)\s++(?:final\s++|overall\s++)?(?:(?:better|best|preferred|stronger|"
    r"superior|winning)\s++(?:response|answer|output|one|choice|option)|verdict|choice|"
    r"decision)\s++(?:is|would\s++be)\s++" + _choice_re("n") +
    r"|i\s++(?:would\s++)?(?:choose|pick|select|prefer|go\s++with|vote\s++for)\s++"
    + _choice_re("i") + r")(?:\s++over\s++" + _OTHER.replace("?P<o", "?P<p") + r")?)",
    re.IGNORECASE)
# Where a verdict sentence may be, for finding one: `_CORE` not inside a word. Every start
# `_verdict_sentence` tries follows a non-alphanumeric or the sentence's start, so this finds
# a sentence whenever it could read one; searched with `_CORE` itself, each start inside a
# long word ("a" x 50,000) re-read the rest of it (quadratic: about 60 s).
# The lookahead: every `_CORE` match has a letter or digit within its first 9 characters (a
# choice after at most 8 marks, or a word); a run of "[" or '"' tried each start's marks and
# failed late (0.6-0.9 s on a megabyte of one).
_CORE_AT = re.compile(r"(?<![A-Za-z0-9])(?=[*_\[(\"']{0,8}+[A-Za-z0-9])(?:" + _CORE.pattern + ")",
                      re.IGNORECASE)
# Words a concluding sentence opens with ("Therefore, ...", "So the better output is ...",
# "Based on the above, ..."); a sentence opening otherwise ("On the other hand, Output (b) is
# better", "However, ...") is a step of the comparison, not its conclusion.
_CONCLUDE = re.compile(
    r"^(?:therefore|thus|hence|so|overall|ultimately|consequently|accordingly|finally|"
    r"in\s+(?:conclusion|summary|sum|short|the\s+end|this\s+case|light\s+of|view\s+of|line\s+"
    r"with|accordance\s+with)|to\s+(?:conclude|sum\s+up|summarize|summarise)|all\s+(?:in\s+all|"
    r"things\s+considered)|on\s+balance|as\s+a\s+result|for\s+(?:this|these)\s+reasons?|based\s+"
    r"on|considering|given|taking|after|according\s+to)\b", re.IGNORECASE)
# A clause before the verdict that turns it into a hedge or a condition ("if accuracy
# matters", "it is unclear whether", "not counting style"): the sentence stays invalid.
# "only", "alone", "solely" restrict it to one criterion ("Considering only style, ...",
# "Based on conciseness alone, ..."): a criterion's winner, not the answer's.
_HEDGE = re.compile(r"\b(?:not|no|never|neither|nor|cannot|unclear|uncertain|unsure|hard|"
                    r"difficult|if|unless|whether|perhaps|maybe|arguably|possibly|probably|"
                    r"likely|might|may|could|would|seems?|appears?|tie|equally|however|but|yet|"
                    r"though|although|only|alone|solely|purely|exclusively)\b|n['\u2019]t\b",
                    re.IGNORECASE)
# ... except a concession that names no winner ("even though both outputs are not perfect",
# "while Output (a) is more detailed"): it grants a point and leaves the verdict as it is.
_CONCESSION = re.compile(r"^\s*(?:even\s+though|although|though|while|whereas|despite|"
                         r"in\s+spite\s+of|albeit)\b", re.IGNORECASE)
_VERDICT_WORD = re.compile(r"\b(?:better|best|preferred|superior|stronger|winner|wins?)\b",
                           re.IGNORECASE)
# What may follow the verdict: its reason ("because it follows the instruction", ", as Output
# (a) rambles"), with no contrast or restriction in it ("but", "though", "only", "unless").
_REASON = re.compile(r"^\s*+,?\s*+(?:because|since|due\s+to|given|thanks\s+to|considering|"
                     r"overall|here|in\s+this\s+case|according\s+to|based\s+on|in\s+line\s+"
                     r"with|in\s+accordance\s+with|as\s+(?:it|its|they|their|this|that|the\s+"
                     r"other)|,\s*(?:as|which))\b", re.IGNORECASE)
_TURN = re.compile(r"\b(?:but|however|though|although|yet|whereas|while|unless|if|except|"
                   r"only|partially|partly|arguably|perhaps|maybe)\b", re.IGNORECASE)
# Where a sentence ends ("... is better." "...\"climatic variables.\" Therefore, ...").
_SENT_SPLIT = re.compile(r"(?<=[.!?])[\"'\u201d\u2019)\]]*\s+")


def _trim_markup(sentence: str) -> str:
    """`sentence` without markup and end punctuation at its edges ("**...**", "- ", "."); by
    str.strip, linear where an anchored regex is quadratic in a long run of dots."""
    return sentence.lstrip(" \t\r\f\v#>*_-").rstrip(" \t\r\f\v*_.!")


def _names_choice(clause: str, choices: tuple[str, ...]) -> bool:
    """True when `clause` names a choice: as written, or in any case after a label word."""
    tokens = [t for t in _STRIP.split(clause) if t]
    fold = _folder(choices)
    return any(t in choices for t in tokens) or any(
        w.lower() in _LABEL_WORDS and fold(t) is not None
        for w, t in zip(tokens, tokens[1:], strict=False))


_CLAUSES = re.compile(r",(?:\s*+,)*+")


def _lead_ok(lead: str, choices: tuple[str, ...]) -> bool:
    """True when `lead`, what a sentence says before its verdict, leaves the verdict as it is:
    nothing, or a concluding word ("Therefore,") and clauses that name no choice and hedge
    nothing, or concede a point without naming a winner."""
    if not lead.strip():
        return True
    opener = _CONCLUDE.match(lead.strip())
    if opener is None or not (lead.rstrip().endswith(",") or not lead.strip()[opener.end():]):
        return False
    # "Therefore,,, ,": empty clauses say nothing; split off with their commas at once (200,000
    # of them, each matched against every rule and `_folder` built anew, cost ~2 s)
    for clause in _CLAUSES.split(lead.strip()[opener.end():]):
        if not clause.strip():
            continue
        if _CONCESSION.match(clause):
            if _VERDICT_WORD.search(clause):
                return False
        elif _HEDGE.search(clause) or _names_choice(clause, choices):
            return False
    return True


def _verdict_sentence(sentence: str, choices: tuple[str, ...]) -> str | None:
    """The one choice `sentence` gives as the winner ("Therefore, Output (a) is better.", "So
    the better output is Output (b).", "Output (b) is better than Output (a) because ..."),
    or None: no verdict, a hedge or condition around it, a second choice that is not the
    loser, a contrast after it ("..., but Output (b) is more accurate")."""
    s = _trim_markup(sentence)
    fold = _folder(choices)
    opener = _CONCLUDE.match(s)  # "So the better output is ...": no comma after "So"
    # after each run of commas: a start inside one (",,") is a comma, where no verdict opens
    starts = sorted({0, *(m.end() for m in re.finditer(r"(?:,\s*+)++", s)),
                     *([len(s) - len(s[opener.end():].lstrip())] if opener else [])})
    for at in starts:
        m = _CORE.match(s, at)
        if m is None:
            continue
        name = "n" if m.group("n") else ("i" if m.group("i") else "c")
        token, labelled = m.group(name), m.group(name + "_l") is not None
        got = fold(token) if labelled else (token if token in choices else None)
        if not labelled and not m.group(name + "_b") and token.isdigit():
            return None  # "So, 2 is the best option": a number the judged answer is about
        if got is None or not _lead_ok(s[:at], choices):
            return None
        for other in ("o", "p"):
            if m.group(other) is not None:
                lost = fold(m.group(other))
                if lost is None or lost == got or (m.group(other + "_l") is None
                                                   and m.group(other) not in choices):
                    return None
        tail = s[m.end():]
        if tail.strip() and (_REASON.match(tail) is None or _TURN.search(tail)):
            return None
        return got
    return None


# A heading that names the verdict without a colon ("## Final Verdict", "**Decision**"): the
# line after it is the verdict's own, as after "Final verdict:".
_VERDICT_HEADING = re.compile(r"^[\s#>*_]*+(?:(?:my|the)\s+)?(?:final\s+|overall\s+)?"
                              r"(?:verdict|decision|judge?ment)[\s#*_]*$", re.IGNORECASE)
# Where a line of prose ends: a sentence's end, after closing markup or quotes.
_PROSE_TAIL = " \t*_\"')]\u201d\u2019"


def _whole_bare(line: str) -> bool:
    """True when `line`, all of it, is one choice and at most that it is the better one
    ("Output (b)", "**B**", "Response A is better."), not a sentence that goes on after its
    first clause ("B is better? No, the first one is.", "Output (b) is better, but ...")."""
    tokens = [t.lower() for t in _STRIP.split(line) if t]
    if len(tokens) > 1 and tokens[0] in _LABEL_WORDS:
        tokens = tokens[1:]
    return bool(tokens) and _BARE_TAIL.fullmatch(" ".join(tokens[1:])) is not None


def _turned(value: str) -> bool:
    """True when what follows a labelled verdict's first clause turns it: a question ("B?
    No, ..."), a contrast or condition in the rest of its sentence ("B, but only for
    formatting", "B, unless accuracy matters"), or a later sentence opening with one
    ("B. However, ..."); its reason ("B, as it answers the question.") does not."""
    end = _SENTENCE_END.search(value)
    if end is None:
        return False
    if value[end.start()] == "?":
        return True
    rest = _SENT_SPLIT.split(value[end.start():], maxsplit=1)
    first, later = rest[0], rest[1] if len(rest) > 1 else ""
    return bool(_TURN.search(first)) or any(
        _TURN.match(_trim_markup(s)) for s in _SENT_SPLIT.split(later) if s.strip())


def _last_line_choice(prev: str, last: str, choices: tuple[str, ...],
                      allow_tie: bool) -> str | None:
    """The verdict an answer's last line gives when it is an explicit one: a verdict label on
    it ("Final verdict: [[A]]") or alone on the line before ("Verdict:\nB", "## Final
    Verdict\nB") with nothing after it that turns it (`_turned`); or, the line all of it
    one bare choice (`_whole_bare`), a [[X]] marker, or a choice after a line of prose that
    names no other ("...a short example.\n\nB"). A bare choice after any other line is no
    verdict: the loser under a heading ("Worse output:\nOutput (b)"), the last of a ranking
    ("Output (a)\nOutput (b)"), a criterion's ("**Conciseness**\nOutput (b)"); nor is a
    line ending with ':' ("Output (b):", a heading, or an answer cut off at max_tokens)."""
    if last.rstrip(" \t*_").endswith(":"):
        return None
    label = _LABEL_COLON.match(last)
    if label is not None:
        value: str | None = last[label.end():]
    else:
        above = _LABEL_COLON.match(prev)
        explicit = (above is not None and not prev[above.end():].strip()) \
            or _VERDICT_HEADING.match(prev) is not None
        value = last if explicit else None
    if value is not None:
        got = _opening_choice(value, choices, allow_tie, after_label=True)
        return None if got is None or _turned(value) else got
    tokens = [t for t in _STRIP.split(last) if t]
    # one lower-case letter alone is no verdict here ("a" is the whole-answer rule's)
    if (len(tokens) == 1 and tokens[0] not in choices) or not _whole_bare(last):
        return None
    got = _opening_choice(last, choices, allow_tie)
    if got is None or _BRACKETED.search(last):
        return got
    if not prev.rstrip(_PROSE_TAIL).endswith((".", "!", "?")):
        return None
    above_got = _opening_choice(prev, choices, allow_tie)
    return got if above_got in (None, got) else None


def _marked_end(text: str, choices: tuple[str, ...], allow_tie: bool) -> str | None:
    """The verdict an answer's last line marks as its verdict: a "Verdict:"-like label on it
    or alone on the line above ("Final verdict: [[A]]", "Verdict:\nB", "## Final
    Verdict\nB") or a "[[X]]" marker on it, read by `_last_line_choice`; None otherwise. It
    outweighs a plain verdict sentence before it ("The better response is Response B\n
    Final verdict: [[A]]" reads A), never another marked verdict."""
    end = len(text.rstrip())
    cut = text.rfind("\n", 0, end)
    last = text[cut + 1:end].strip()
    if not last:
        return None
    before = text[:cut].rstrip() if cut >= 0 else ""
    prev = before[before.rfind("\n") + 1:].strip()
    if not prev:
        return None  # one line: the opening's rules read it
    above = _LABEL_COLON.match(prev)
    marked = _LABEL_COLON.match(last) is not None or _BRACKETED.search(last) is not None \
        or (above is not None and not prev[above.end():].strip()) \
        or _VERDICT_HEADING.match(prev) is not None
    return _last_line_choice(prev, last, choices, allow_tie) if marked else None


def _closing_choice(text: str, choices: tuple[str, ...], allow_tie: bool,
                    loose: bool = False) -> str | None:
    """The verdict a chain of thought gives at its end, after its reasoning: its last line
    when that is an explicit verdict (`_last_line_choice`), else its last sentence when that
    is one verdict sentence (`_verdict_sentence`). None for an answer of one sentence (the
    opening's rules read it) or one that ends otherwise. `loose`: the last line is read by
    the opening's rules whatever comes before it ("Worse output:\nOutput (b)" gives B), for
    finding an end that contradicts an opening verdict, never for reading one."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return None
    last = lines[-1]
    if len(lines) > 1:
        if loose:
            tokens = [t for t in _STRIP.split(last) if t]
            got = None if len(tokens) == 1 and tokens[0] not in choices \
                else _opening_choice(last, choices, allow_tie)
        else:
            got = _last_line_choice(lines[-2], last, choices, allow_tie)
        if got is not None:
            return got
    sentences = [s for s in _SENT_SPLIT.split(last) if s.strip()]
    if len(lines) == 1 and len(sentences) < 2:
        return None
    return _verdict_sentence(sentences[-1], choices)


# An opening that refuses to choose ("Both", "Neither.", "A or B", "Tie" where ties are not
# allowed): the answer stays invalid whatever its end says.
_REFUSING = frozenset({"or", "and", "both", "neither", "nor", "none", "tie", "draw", "equal",
                       "equally", "same"})


def _refused_opening(text: str, choices: tuple[str, ...]) -> bool:
    """True when the answer's first line, up to its first clause end, is only choices and
    words that refuse to pick one of them ("Both", "A or B", "Neither.")."""
    body = text.strip()
    label = _LABEL_COLON.match(body)
    if label is not None:
        body = body[label.end():].strip()
    first = body.splitlines()[0] if body else ""
    end = _SENTENCE_END.search(first)
    tokens = [t.lower() for t in _STRIP.split(first if end is None else first[:end.start()])
              if t]
    allowed = _REFUSING | _LABEL_WORDS | {c.lower() for c in choices}
    return bool(tokens) and all(t in allowed for t in tokens) and (
        any(t in _REFUSING for t in tokens)
        or len({t for t in tokens if t in {c.lower() for c in choices}}) > 1)


# Words a judge opens a sentence with when it takes back what it said before ("On reflection,
# I choose Response B", "Correction: The better response is Response B", "However, Response B
# is better.", "Wait, ..."): a verdict sentence after them, naming another choice than an
# opening verdict, leaves the answer unread (review8: 'I choose **Response A**\nOn
# reflection, I choose **Response B**' read A once bold labels read).
_REVISION_LEAD = re.compile(
    r"(?:(?:on|upon|after)\s++(?:(?:further|second|closer|more\s++careful)\s++)?(?:reflection|"
    r"thoughts?|consideration|review|inspection|re-?reading|re-?consideration|reconsidering|"
    r"re-?checking|re-?evaluation|re-?evaluating)|correction|corrected|actually|however|wait|"
    r"but|no|hmm++|oops|sorry|nevertheless|nonetheless|instead|rather|in\s++fact|that\s++said|"
    r"having\s++said\s++that|scratch\s++that|i\s++was\s++wrong|let\s++me\s++(?:reconsider|"
    r"correct\s++(?:that|myself|this))|re-?reading|reconsidering|re-?evaluating|update|"
    r"updated|edit|revised|revision|second\s++thoughts?)\b[ \t,:;.!\-\u2013\u2014*_]*+",
    re.IGNORECASE)


def _revised_choice(sentence: str, choices: tuple[str, ...]) -> str | None:
    """The choice a verdict sentence after a revision lead names ("On reflection, I choose
    Response B", "Correction: The better response is **Response B**", "However, Response B is
    better."), None for any other sentence (one with no such lead is read by the other
    rules)."""
    rest, leads = _trim_markup(sentence), 0
    while leads < 4 and (m := _REVISION_LEAD.match(rest)) is not None:
        rest, leads = rest[m.end():], leads + 1
    if not leads or not rest.strip():
        return None
    sentence_m = _SENTENCE.match(rest.strip())
    if sentence_m is not None:
        return _folder(choices)(sentence_m.group(1))
    return _verdict_sentence(rest, choices) if _CORE_AT.search(rest) is not None else None


def _revised_choices(text: str, choices: tuple[str, ...]) -> list[str]:
    """Every choice a sentence after the answer's first line names after a revision lead
    (`_revised_choice`)."""
    got = []
    lines = text.strip().splitlines()
    fence_at = [i for i, ln in enumerate(lines) if _FENCE_LINE.match(ln)]
    stray = fence_at[-1] if len(fence_at) % 2 else -1  # a fence never closed hides nothing
    prev, fenced = lines[0] if lines else "", False
    for i, line in enumerate(lines[1:], start=1):
        if _FENCE_LINE.match(line):
            fenced = fenced if i == stray else not fenced
            continue
        if not line.strip():
            continue
        # a response's text, not the judge's (s44 review10 finding 3, as `parse_final` skips
        # them): in a ``` fence, a "> " blockquote, quotes, or introduced by the line before
        # ("Response B ends with this line:")
        theirs = fenced or line.lstrip().startswith(">") or _introduced(prev)
        prev = line
        if theirs:
            continue
        blank = list(line)
        for a, b in _quoted_spans(line):
            blank[a:b] = " " * (b - a)
        for s in _SENT_SPLIT.split("".join(blank)):
            if (c := _revised_choice(s, choices)) is not None:
                got.append(c)
    return got


def _conclusions(text: str, choices: tuple[str, ...]) -> list[str]:
    """Every choice a verdict sentence anywhere in the answer gives ("Therefore, Output (a)
    is better.", "The better response is B", "I choose A", and one with no concluding word,
    "Output (a) is better."): each must agree with the verdict read; a chain of thought that
    concludes twice, differently, or gives per-criterion winners ("**Accuracy**\nOutput (a)
    is better.\n**Conciseness**\nOutput (b) is better.") gives none."""
    got: list[str] = []
    for line in text.strip().splitlines():
        for s in _SENT_SPLIT.split(line):
            s = _trim_markup(s)
            if _CORE_AT.search(s) is None:
                continue
            c = _verdict_sentence(s, choices)
            if c is not None:
                got.append(c)
    return got


# ---- a reasoning template's final verdict ----------------------------------------------------
# A reasoning template (its '### final' regex, pairwise_cot_v1's "The better response is
# Response ([AB])\W*$") asks for its verdict on the answer's last line. The answer may also
# quote a response ('Response B ends with "The better response is Response B".'), echo the
# item's text (a response that itself ends with that line), state a plain verdict sentence
# ("Response B is better.") or mark one ("Final verdict: [[A]]"). The verdict is the last
# marked one: the template's own line, a "[[X]]" marker or a "Verdict:"-like label, outside
# quotes and echoes; plain sentences only say when it is contradicted after it.
_QUOTE_PAIRS = (('"', '"'), ("\u201c", "\u201d"), ("`", "`"))
# Each quote of `_QUOTE_PAIRS`: its opening mark to the first closing one, or to the line's end.
_QUOTE_RUNS = tuple(re.compile(re.escape(o) + "[^" + re.escape(c) + "]*+" + re.escape(c) + "?")
                    for o, c in _QUOTE_PAIRS)
_QUOTE_BEFORE = frozenset("'\u2018\u00ab\"\u201c`")
_FENCE_LINE = re.compile(r"^[ \t]*(?:```|~~~)")
_MARKER_TOKEN = re.compile(r"\w{1,20}")
# The labels that mark a final verdict ("Final verdict: A", "**Decision:** B"): not "Answer:",
# "Output:" or "Response:", which in a chain of thought more often head what a response says.
_FINAL_LABEL = re.compile(
    r"^[\s#>*_]*+(?:(?:my|the)\s+)?(?:final\s+|overall\s+)?(?:verdict|choice|decision|"
    r"judge?ment|winner|preferred(?:\s+response)?|better\s+response|best\s+response)"
    r"[\s*_]*[:=][\s*_]*", re.IGNORECASE)


_EDGE = " \t*_#-.!"


def _quoted_spans(line: str) -> list[tuple[int, int]]:
    """Where `line` is inside double quotes, curly double quotes or backticks: each opening
    mark to its closing one, or to the line's end when it has none (a quote cut short). A
    quote that is the whole line ('"The better response is Response A"', as the template
    words its request) is the judge's own line, not a quote of something else."""
    spans: list[tuple[int, int]] = []
    # where the line's text starts and ends inside its edge markup: found once, not sliced
    # per quote (a line of many quotes stays linear); each quote found by a regex, not a
    # Python loop of str.find (0.45 s on a line of a million quotes)
    first = len(line) - len(line.lstrip(_EDGE))
    last = len(line.rstrip(_EDGE))
    for run in _QUOTE_RUNS:
        spans += [sp for m in run.finditer(line) if first < (sp := m.span())[0] or sp[1] < last]
    return spans


# A lead-in that concludes, before the template's own line quoted in full ('Final answer:
# "The better response is Response A"', '**Final Answer:** "..."', 'So my conclusion is
# “...”', "Therefore, '...'."): the judge copies the quotes the template's request
# puts around its line. Reporting what a response says ('Response B restates: "..."',
# 'Note: Response B ends with "..."') is no such lead-in and stays a quote.
_CONCLUDING_LEAD = re.compile(
    r"(?:(?:so|thus|therefore|hence|overall|ultimately|finally|in\s+conclusion|in\s+summary|"
    r"to\s+conclude|to\s+summari[sz]e|all\s+in\s+all|in\s+the\s+end)(?:[\s*_]*,)?\s*)?"
    r"(?:(?:(?:my|the)\s+)?(?:final\s+|overall\s+)?(?:verdict|answer|conclusion|choice|"
    r"decision|judge?ment)[\s*_]*(?::|=|\s+is|\s+would\s+be|\s+will\s+be)?)?",
    re.IGNORECASE)
# The marks a judge puts around the line it copies: double, curly and single quotes.
_COPY_QUOTES = (('"', '"'), ("\u201c", "\u201d"), ("'", "'"), ("\u2018", "\u2019"))


def _concluding_quote(line: str, compiled: re.Pattern[str]) -> int | None:
    """Where the template's own line starts in `line` when the line is a concluding lead-in
    (`_CONCLUDING_LEAD`, not empty) and that line, all of it, in quotes, with only edge
    markup after the closing quote; None otherwise. Linear: the lead-in is matched once."""
    body = line.strip(_EDGE)
    for open_q, close_q in _COPY_QUOTES:
        at = body.find(open_q)
        if at <= 0 or not body.endswith(close_q) or len(body) - 1 <= at:
            continue
        lead = body[:at].strip(" \t*_#-")
        lead_m = _CONCLUDING_LEAD.fullmatch(lead)
        if not lead or lead_m is None:
            continue
        inner = body[at + 1:-1].strip(" \t*_")
        m = compiled.match(inner)
        if m is None or m.end() < len(inner.rstrip(".!")) or open_q in inner \
                or (close_q != open_q and close_q in inner):
            continue
        raw = body[at + 1:-1]
        return (len(line) - len(line.lstrip(_EDGE))) + at + 1 \
            + len(raw) - len(raw.lstrip(" \t*_"))
    return None


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """`spans` sorted and joined where they overlap: disjoint, so a bisect finds the one
    covering an index and many quoted spans on one line stay linear."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1]:
            if b > out[-1][1]:
                out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def _covered(merged: list[tuple[int, int]], starts: list[int], i: int) -> bool:
    """True when index `i` is inside one of the disjoint sorted spans `merged`."""
    k = bisect.bisect_right(starts, i) - 1
    return k >= 0 and i < merged[k][1]


def _norm_line(line: str) -> str:
    """A line compared for echoes: without edge markup and with its whitespace runs single."""
    return " ".join(line.strip(" \t\r\f\v#>*_-").split())


def parse_final(text: str, pattern: str, labels: tuple[str, ...] = ("A", "B"),
                shown: Sequence[str] = (), tie_labels: tuple[str, ...] = ()) -> str | None:
    """The label a reasoning template's answer ends on, or None.

    Verdict-like things, in the answer's order: the template's own line (a match of
    `pattern`, group 1 the label), a "[[X]]" marker and a verdict label with a bare value
    ("Final verdict: A", "Decision: B"; not "Answer:", "Output:", `_FINAL_LABEL`) (all three
    *marked*), and a plain verdict sentence ("Response B is better.",
    "Therefore, Output (a) is better.", "I choose B"). None of them counts inside quotes
    (double, curly or back quotes, "> " lines, ``` fences; a last ``` never closed opens
    nothing) or on a line that is a line of a response the judge was shown (`shown`: an echo
    of the item's text). The template's line quoted in full after a concluding lead-in
    ('Final answer: "The better response is Response A"', `_concluding_quote`) is the
    judge's own, as is that line with bold inside it; a quote reporting what a response
    says ('Response B restates: "..."') is not. The answer reads
    as the last marked one when everything after it agrees with it ("The better response is
    Response B\\nFinal verdict: [[A]]" reads A); None when nothing is marked, when a plain
    sentence after it disagrees (a closing tie, "Therefore, both are equally good.", too),
    or when it names no label ("[[C]]", "Final verdict: tie": the template asks for one of
    `labels`). "tie" where the template defines tie labels (`tie_labels`, "C") and the last
    marked verdict names one. An answer that is one label and nothing else ("A", the content
    after a provider's separate reasoning_content) reads as that label."""
    names = labels + tie_labels
    text = _strip_eos(strip_reasoning(_strip_eos(_halfwidth(text or "", names))))
    if not text.strip():
        return None
    echoes = {n for s in shown for ln in _halfwidth(s or "", names).splitlines()
              if (n := _norm_line(ln))}
    ties = tuple(t for t in tie_labels if t not in labels)
    fold = _folder(labels + ties)

    def name(label: str | None) -> str:
        """A label as read: itself, "tie" for a tie label, "?" for anything else."""
        return label if label in labels else ("tie" if label in ties or label == "tie"
                                              else "?")

    bare = text.strip()
    if bare in labels + ties:
        # the whole answer is one label ("A" after the provider's separate reasoning_content):
        # nothing else is there to quote, echo or contradict it
        return name(bare)

    found: list[tuple[int, str, bool]] = []  # (position, choice / "tie" / "?", marked)
    compiled = re.compile(pattern, re.MULTILINE)
    lines = text.split("\n")
    fence_lines = [i for i, ln in enumerate(lines) if _FENCE_LINE.match(ln)]
    # a fence opened and never closed (an odd number of ``` lines) hides nothing: its last
    # opening is a stray mark, and the verdict after it is still the judge's own line
    stray = fence_lines[-1] if len(fence_lines) % 2 else -1
    at, fenced = 0, False
    for number, line in enumerate(lines):
        start, at = at, at + len(line) + 1
        if not line or line.isspace():
            continue  # nothing to read; a megabyte of blank lines took seconds of the rules
        if _FENCE_LINE.match(line):
            fenced = fenced if number == stray else not fenced
            continue
        if fenced or line.lstrip().startswith(">") or (echoes and _norm_line(line) in echoes):
            continue
        spans = _quoted_spans(line)
        merged = _merged(spans)
        starts = [a for a, _ in merged]
        lead_end = len(line) - len(line.lstrip(_EDGE))  # first character that is not markup
        own = _concluding_quote(line, compiled)

        def quoted(i: int, merged: list[tuple[int, int]] = merged, starts: list[int] = starts,
                   line: str = line, lead_end: int = lead_end, own: int | None = own) -> bool:
            if i == own:
                return False
            return _covered(merged, starts, i) or (
                i > 0 and line[i - 1] in _QUOTE_BEFORE and lead_end < i - 1)

        taken: list[tuple[int, int]] = []
        for m in compiled.finditer(line):
            if m.end() > m.start() and not quoted(m.start()):
                found.append((start + m.start(), name(m.group(1)), True))
                taken.append((m.start(), m.end()))
        if not taken and ("**" in line or "__" in line):
            # the template's line with its label in bold ("The better response is
            # **Response A**"): read when that line, unbolded, is the whole line
            plain = line.replace("**", "").replace("__", "")
            m = compiled.search(plain)
            if m is not None and not plain[:m.start()].strip(_EDGE) \
                    and not _quoted_spans(plain):
                found.append((start, name(m.group(1)), True))
                taken.append((0, len(line)))
        for m in _BRACKETED.finditer(line):
            if not quoted(m.start()) and _MARKER_TOKEN.fullmatch(m.group(1).strip()):
                found.append((start + m.start(), name(fold(m.group(1).strip())), True))
                taken.append((m.start(), m.end()))
        label_at = _FINAL_LABEL.match(line)
        if label_at is not None and not quoted(label_at.end()):
            value = line[label_at.end():]
            got = _opening_choice(value, labels + ties, True, after_label=True)
            if got is not None and not _turned(value):
                found.append((start + label_at.end(), name(got), True))
                taken.append((0, len(line)))
        pieces, done = [], 0
        for a, b in _merged(spans + taken):
            pieces += [line[done:a], " " * (b - a)]
            done = b
        open_line = "".join([*pieces, line[done:]])
        if _CORE_AT.search(open_line) is None and _SENTENCE.match(open_line.strip()) is None \
                and not _TIE_WORD.search(open_line):
            continue
        sentence = _SENTENCE.match(open_line.strip())
        if sentence is not None and (c := fold(sentence.group(1))) is not None:
            found.append((start, c, False))
            continue
        pos = 0
        for part in _SENT_SPLIT.split(open_line):
            where = open_line.find(part, pos)
            pos = where + len(part)
            if _CORE_AT.search(part) is not None \
                    and ((c := _verdict_sentence(part, labels)) is not None
                         or (c := _revised_choice(part, labels)) is not None):
                found.append((start + where, c, False))  # "Correction: ... Response B"
            elif _TIE_WORD.search(part) and _tie_sentence(part, labels):
                found.append((start + where, "tie", False))
    found.sort()
    marked = [i for i, (_, _, is_marked) in enumerate(found) if is_marked]
    if not marked:
        return None
    last = found[marked[-1]][1]
    if last == "?" or (last == "tie" and not ties) \
            or any(c != last for _, c, _ in found[marked[-1]:]):
        return None
    if any(c != last for c in _opening_verdicts(text, labels + ties, found, name, compiled)):
        # "A\n...\nVerdict: B": which one the judge means is not guessed. A "Wait, ..." or
        # "Actually, ..." line between them is not taken as the judge taking the opening back
        # (1e34cc8 did, s44 review10 finding 2): a bullet ("- Actually, Response A handles
        # nulls."), a fenced or quoted response's line and "Actually, both have issues." read
        # the last verdict silently, where unread is counted and shown.
        return None
    return last


def _opening_verdicts(text: str, labels: tuple[str, ...], found: list[tuple[int, str, bool]],
                      name: Callable[[str | None], str], compiled: re.Pattern[str]) -> list[str]:
    """The verdicts a reasoning answer's first line gives as its opening (`parse_final`'s
    names): the line one label alone ("A", "**B**", "B.", "[[A]]"; not "Response A" or "A:",
    which head a response's discussion), or a marked verdict that opens it ("Verdict: A",
    the template's own line). A last marked verdict that differs leaves the answer unread,
    as `parse_choice` and `parse_score` leave an opening and a later labelled one that
    disagree. A marked verdict later on the first line ("Response B restates: The better
    response is Response B") is no opening: the last marked verdict outweighs it."""
    lead = len(text) - len(text.lstrip())
    cut = text.find("\n", lead)
    first_end = len(text) if cut < 0 else cut
    first = text[lead:first_end]
    tokens = [t for t in _STRIP.split(first) if t]
    if len(tokens) == 1 and tokens[0] in labels and not first.rstrip(" \t*_").endswith(":"):
        # a heading when another label heads a later line the same way ("**A**\n- ...\n
        # **B**\n- ..."): the answer discusses each in turn, no opening verdict
        if _other_heading(text[first_end:], tokens[0], labels):
            return []
        return [name(tokens[0])]
    body = first.lstrip(_EDGE)
    if _FINAL_LABEL.match(first) is None and compiled.match(body) is None \
            and compiled.match(body.replace("**", "").replace("__", "")) is None:
        return []
    return [c for pos, c, is_marked in found if is_marked and pos < first_end]


def _other_heading(rest: str, first: str, labels: tuple[str, ...]) -> bool:
    """True when a line of `rest` (the answer after its first line, the label `first` alone)
    is another label alone heading a discussion: lines follow it, and the line before it is
    no verdict label or heading ("Verdict:\nB", "## Final Verdict\nB" give a verdict)."""
    lines = [ln for ln in rest.splitlines() if ln.strip()]
    for i, ln in enumerate(lines[:-1]):
        t = [x for x in _STRIP.split(ln) if x]
        if len(t) != 1 or t[0] not in labels or t[0] == first:
            continue
        prev = lines[i - 1] if i else ""
        if not prev.rstrip(" \t*_").endswith(":") and _VERDICT_HEADING.match(prev) is None:
            return True
    return False


# A chain of thought's closing tie: "Therefore, both outputs are equally good.", "So it is a
# tie.", "Output (a) and Output (b) are equally helpful.", "Neither response is better."
_TIE_SENTENCE = re.compile(
    r"(?:both\s+(?:(?:outputs?|responses?|answers?)\s+)?(?:\(?\w{1,3}\)?\s+and\s+\(?\w{1,3}\)?\s+)?"
    r"|(?:output|response|answer)\s*\(?\w{1,3}\)?\s+and\s+(?:output|response|answer)\s*"
    r"\(?\w{1,3}\)?\s+)are\s+(?:equally\s+(?:good|bad|helpful|valid|correct|accurate|strong|"
    r"acceptable|poor|relevant|useful)|(?:of\s+)?(?:equal|the\s+same)\s+quality|tied)"
    r"|(?:it(?:'s|\s+is)|this\s+is)\s+a\s+tie|neither\s+(?:output|response|answer)\s+is\s+better",
    re.IGNORECASE)


_TIE_WORD = re.compile(r"(?i)\b(?:equal|equally|same|tie|tied|neither)\b")


def _tie_sentence(sentence: str, choices: tuple[str, ...]) -> bool:
    """True when `sentence` is one closing tie (`_TIE_SENTENCE`, all of it after a lead that
    `_lead_ok` allows: "Therefore,", "Overall,")."""
    s = _trim_markup(sentence)
    opener = _CONCLUDE.match(s)
    starts = {0, *(m.end() for m in re.finditer(r",\s*+", s))}
    if opener is not None:
        starts.add(len(s) - len(s[opener.end():].lstrip()))
    return any((m := _TIE_SENTENCE.match(s, at)) is not None and m.end() == len(s)
               and _lead_ok(s[:at], choices) for at in sorted(starts))


def _tie_end(text: str, choices: tuple[str, ...], alone: bool = True) -> bool:
    """True when the answer's last sentence is a closing tie (`_tie_sentence`) and, if
    `alone`, it is a chain of thought (more than that sentence) naming no winner elsewhere:
    no "[[X]]" marker or verdict sentence, no verdict label or opening naming a choice."""
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return False
    sentences = [x for x in _SENT_SPLIT.split(lines[-1]) if x.strip()]
    if not sentences or not _tie_sentence(sentences[-1], choices):
        return False
    if not alone:
        return True
    if len(lines) == 1 and len(sentences) < 2:
        return False
    fold = _folder(choices)
    return not (any(fold(m.group(1)) is not None for m in _BRACKETED.finditer(text))
                or _conclusions(text, choices)
                or _opening_choice(text, choices, False) is not None
                or any(_opening_choice(_label_value(text, m.start(1)), choices, False,
                                       after_label=True) is not None
                       for m in _LABEL_ANYWHERE.finditer(text)))


# A score's own labels, with a colon (or "is"): "Rating: [[4]]", "**Final score:** 4",
# "Overall: 4/5", "Score 4" (the prefill's own word, kept from before). The verdict reader's
# labels (`_LABELS`: "Verdict:", "Answer:", ...) read the same way.
_SCORE_LABELS = (r"(?:(?:my|the)\s+)?(?:final\s+|overall\s+)?(?:score|rating|grade|mark|"
                 r"evaluation|assessment|overall)")
_SCORE_LABEL = re.compile(
    r"^[\s#>*_]*+(?:" + _SCORE_LABELS + r"|" + _LABELS + r")[\s*_]*"
    r"(?:[:=][\s*_]*|\s+is\s+|\s+(?=[\[*0-9]))", re.IGNORECASE)
# ASCII digits only ([0-9], not \d): the ids are the ASCII numerals; "४.५" read as 4.5 where
# "५" read as nothing. A digit of another script is no score (`score_off_scale` says so).
_TOKEN = r"[0-9]+\.[0-9]+|[A-Za-z0-9]+"
# One score: "4", "**4**", "[[4]]", "3.5", with "/5" or "out of 5" after it.
# Possessive \s*+: each whitespace run is taken whole (what follows never starts with a space),
# so a long run of spaces cannot make the match backtrack (500 spaces took 21 s with \s*).
_SCORE_VALUE = (r"(?:\[\[\s*+(?P<b>" + _TOKEN + r")\s*+\]\]|\**+\s*+(?P<p>" + _TOKEN +
                r")\s*+\**+)\s*+(?:(?:/|\bout\s++of\b)\s*+(?P<top>[0-9]+))?\s*+[.)!]?\s*+$")
_SCORE_RE = re.compile(r"^\s*+" + _SCORE_VALUE, re.IGNORECASE)
# One short sentence giving one score and nothing else: "I'd give it a 4 out of 5", "I would
# rate this response 4/5.", "The score is 4", "My rating would be [[4]]". Anchored at both
# ends: "I'd give it a 3 or a 4" and longer prose stay invalid.
_SCORE_SENTENCE = re.compile(
    r"^\s*(?:i(?:['\u2019]d|\s+would)?\s+(?:give|rate|score|grade)\s+(?:it|this|that|"
    r"(?:this|the)\s+(?:response|answer|output))\s+(?:(?:a|an|as|at)\s+)?|"
    r"(?:the|my)\s+(?:final\s+|overall\s+)?(?:score|rating|grade)\s+(?:is|would\s+be)\s+)"
    + _SCORE_VALUE, re.IGNORECASE)
# Benchmarks' own judge formats: Prometheus ends "[RESULT] 4"; MT-Bench (FastChat) writes its
# explanation, then "Rating: [[4]]" once. Read anywhere in the answer, as replay reads a
# recorded answer: one "[[N]]" (two are no score), or "[RESULT] N" at the end.
_BENCH_SCORE = re.compile(r"\[RESULT\]\s*\(?\s*([0-9]+(?:\.[0-9]+)?)\s*\)?\s*$"
                          r"|^(?!.*\[\[.*\[\[).*?\[\[\s*([0-9]+(?:\.[0-9]+)?)\s*\]\]", re.S)


# Score markers anywhere in an answer ("[[4]]", "[RESULT] 4") and a later line that is a
# score's own label and a number ("Final score: 2", "Rating: [[2]]"): all must agree with the
# score read. Only numbers: "The response is clear." is no second reading. Numbers in any
# script (\d): a second reading in another script's digits cannot agree (`_on_scale`).
_MARKERS = re.compile(r"\[\[\s*(\d+(?:\.\d+)?)\s*\]\]"
                      r"|\[RESULT\]\s*\(?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)
_NUMBER_VALUE = _SCORE_VALUE.replace(_TOKEN, r"\d+(?:\.\d+)?")
# ([^\n]*? alone from the line's start: after a run "[\s#>*_]*" it re-scanned that run from
# each of its starts, quadratic: hours on a megabyte of underscores)
_LABEL_ALONE = re.compile(r"^[^\n]*?\b(?:score|rating|grade)[\s*_]*+[:=][\s*_]*+$",
                          re.IGNORECASE)
# ... any words before the label ("Revised score: 2", "After reflection, revised rating: 2",
# "- Score: 2", "1. Score: 2") and a dash as its separator ("Final rating - 2").
# Possessive runs after the label: a backtracking "[\s*_]*" gave back one "*" at a time to the
# value's own "\**+" (quadratic: 3 s on "Score: " and 100 kB of asterisks).
_LATER_SCORE = re.compile(r"^[^\n]*?\b(?:score|rating|grade|verdict)[\s*_]*+"
                          r"(?:[:=\-\u2013][\s*_]*+|(?<=\s)is\s++)" + _NUMBER_VALUE,
                          re.IGNORECASE)
# A later line giving a score in another form than `_LATER_SCORE` reads, each a score the
# judge may have moved to ("B ... Grade: D" read B; "4 ... Final answer: 2" read 4). Only the
# judge's own score counts, not one it reports or one in its prose (s44 review8: "raised the
# score to 2-1", "update the rating to 5 stars", a response's "\boxed{3}" read as a second
# score and made the answer unreadable): a labelled line ("Grade: D", "**Final grade:** D",
# "Overall: 2", "Verdict: IV") at the line's start, not in quotes, with any
# score of the scale; a final answer ("Final answer: 2", "**Final Answer:** [[2]]") or a line
# that is one \boxed{2}, not in a ``` fence nor introduced as a response's (`_introduced`:
# "The response's last line is:", "... and arrives at"); a "> " blockquote of any of these
# counts unless the line before the quote introduces it so; a revision of the judge's own score
# ("I'll revise my score to 2"; not "raised the score to"). Their values count only when they
# name a score (`_later_token`): "Verdict: good" is no second score. Possessive runs: linear
# on a long run of spaces or asterisks after a label.
_LATER_ID = re.compile(r"^[\s#*_\-]*+(?:\d{1,2}[.)][ \t]++)?(?:(?:my|the|final|overall|revised|"
                       r"updated|corrected|adjusted|new)[ \t*_]++)*+(?:score|rating|grade|"
                       r"verdict|overall|evaluation|assessment)[ \t*_]*+"
                       r"(?:[:=\-\u2013][\s*_]*+|(?<=\s)is\s++)" + _SCORE_VALUE, re.IGNORECASE)
_LATER_FINAL = re.compile(r"^[\s#*_\-]*+(?:(?:my|the)\s+)?final\s+answer[\s*_]*+[:=][\s*_]*+"
                          + _SCORE_VALUE, re.IGNORECASE)
_LATER_BOXED = re.compile(r"^(?:\\[(\[]|[\s#*_$])*+\\boxed\{\s*+(?P<p>" + _TOKEN +
                          r")\s*+\}[\s*_$\\)\].!]*+$")
# `_LATER_ID`, `_LATER_FINAL`, `_LATER_BOXED` with a value in digits of any script (\d).
_LATER_ID_ANY, _LATER_FINAL_ANY, _LATER_BOXED_ANY = (
    re.compile(p.pattern.replace(_TOKEN, r"\d+(?:\.\d+)?"), p.flags)
    for p in (_LATER_ID, _LATER_FINAL, _LATER_BOXED))
_LATER_REVISED = re.compile(
    r"\b(?:revis|chang|lower|rais|updat|adjust|correct|bump|drop|reduc|increas)\w*+\s++"
    r"my\s++(?:(?:final|overall)\s++)?(?:score|rating|grade)\s++"
    r"(?:(?:down|up)\s++)?to\s++(?:(?:a|an)\s++)?[*_\[]{0,4}(?P<p>" + _TOKEN + r")(?![A-Za-z0-9])",
    re.IGNORECASE)
# A line that introduces what comes next as something else's ("The response's last line is:",
# "... and arrives at"): it ends with ':' (not the judge's own label, "Final answer:") or with a
# word a sentence goes on after.
_JUDGE_LABEL_ALONE = re.compile(r"^[\s#*_\-]*+(?:(?:my|the)\s+)?(?:final\s+|overall\s+)?"
                                r"(?:answer|score|rating|grade|verdict)[\s*_]*+:[\s*_]*+$",
                                re.IGNORECASE)
_GOES_ON = frozenset({"at", "is", "was", "are", "be", "with", "as", "of", "to", "in", "gives",
                      "gets", "obtains", "reaches", "yields", "writes", "states", "answers",
                      "computes", "concludes", "finds", "returns", "outputs", "shows", "reads",
                      "says", "gave", "got", "obtained", "reached", "wrote", "stated",
                      "computed", "concluded", "found", "returned", "showed"})


# What a line introducing a response's text names (s44 review10 finding 1): the response or
# another's text as the subject ("The response", "Response B's answer", "its", "the student")
# and how it says it ("writes", "ends with", "arrives at", "last line", "verbatim"). A line
# ending with ':' or "is" alone ("In conclusion:", "Overall:", "The score is") leads to the
# judge's own answer, as does one in the first person or naming a score ("my final answer
# is", "My final score, after reflection:"): there a later "Final answer: 2" disagrees.
_OTHER_TEXT = re.compile(
    r"\b(?:(?:the|a|this|that|each|both|other|second|first)\s++(?:responses?|outputs?|"
    r"assistants?|students?|candidates?|submissions?|models?|references?|answer's)|"
    r"(?:responses?|outputs?|assistants?|models?)\s*+\(?[A-Za-z0-9]\)?(?![A-Za-z0-9])|"
    r"(?:response|output|assistant|student|candidate|model|reference|submission)'s|"
    r"its|it|their|they|student|reference)\b", re.IGNORECASE)
_SAYS = re.compile(
    r"\b(?:writes?|wrote|written|says|said|states?|stated|quotes?|quoted|reads|ends|ending|"
    r"ended|concludes|concluded|arrives|arrived|answers|answered|outputs|returns|returned|"
    r"shows|showed|reports|reported|computes|computed|obtains|obtained|reaches|reached|"
    r"gives|gave|gets|got|finds|found|claims|claimed|lines?|text|verbatim|excerpt|"
    r"solution|reply|replies|replied)\b", re.IGNORECASE)
_JUDGES_OWN = re.compile(
    r"\b(?:i|i'll|i'd|i'm|my|me|mine|we|our|us|score|scores|rating|grade|verdict|"
    r"conclusion|summary|summari[sz]e|overall|therefore|thus|hence|so)\b", re.IGNORECASE)


def _introduced(prev: str) -> bool:
    """True when `prev`, the line before a "Final answer: N" or "\\boxed{N}" line, introduces
    that line as what a response wrote: it ends with ':' (not the judge's own label) or with a
    word a sentence goes on after, and it names a response or another's text saying it
    (`_OTHER_TEXT`, `_SAYS`: "The response's last line is:", "The response solves it and
    arrives at") and nothing of the judge's own (`_JUDGES_OWN`). Any other line, "In
    conclusion:" or "The score is", leads to the judge's own answer (s44 review10: those read
    the opening score, silently wrong)."""
    body = prev.strip().rstrip(" \t*_")
    if body.endswith(":"):
        if _JUDGE_LABEL_ALONE.match(prev) is not None:
            return False
    else:
        words = body.rsplit(None, 1)
        if not words or words[-1].lower() not in _GOES_ON:
            return False
    return _OTHER_TEXT.search(body) is not None and _SAYS.search(body) is not None \
        and _JUDGES_OWN.search(body) is None


# Words a judge opens its own closing sentence with ("Hence, Final answer: 2", "Overall, I
# give it a score of 2."), beside the revision leads (`_REVISION_LEAD`: "Correction: 3",
# "Actually, 3."): after them a bare score or a final answer is the judge's own later score.
_CONCLUDING_WORDS = re.compile(
    r"(?:hence|thus|so|therefore|overall|finally|ultimately|consequently|accordingly|"
    r"in\s++(?:conclusion|summary|short|sum|total|the\s++end)|to\s++(?:summari[sz]e|"
    r"sum\s++up|conclude)|all\s++in\s++all|all\s++things\s++considered|on\s++balance)\b"
    r"[ \t,:;.!\-\u2013\u2014*_]*+", re.IGNORECASE)
# A sentence giving the judge's own score, first person or of "the/my score" (s44 review10
# finding 2: '4\nOverall, I give it a score of 2.' and 'Score: 4\nThe final score should be
# 2.' read 4): "the final score should be 2", "my rating is 2", "I'd give it a score of 2",
# "I would rate this response 2/5", "it deserves a 2" (s45 parse9). A score a response has
# ("the response's score of 2") or a condition ("2 if ...") is none: the sentence must end at
# the value. (Bounded runs: linear.)
_OWN_SCORE = re.compile(
    r"(?<![\w'\u2019])(?:(?:the|my)\s++(?:(?:final|overall|revised|corrected|updated|adjusted|"
    r"new|actual|correct|right|fair|appropriate|proper)\s++){0,3}+(?:score|rating|grade)\s++"
    r"(?:(?:should|would|will|must)\s++(?:(?:instead|rather|actually|really|then)\s++)?be|"
    r"is(?:\s++(?:instead|actually|therefore|thus|then))?|becomes|stays|remains)\s++|"
    r"i(?:['\u2019](?:d|ll)|\s++(?:would|will|now|instead|therefore|thus|must|should|shall|"
    r"then|finally|ultimately)){0,3}+\s++(?:give|assign|award|rate|score|grade)\s++(?:it|this|"
    r"that|(?:this|the)\s++(?:response|answer|output|submission))\s++(?:(?:a|an|as|at)\s++)?"
    r"(?:(?:final\s++|overall\s++)?(?:score|rating|grade)\s++of\s++)?|"
    r"(?:it|this|that|(?:this|the)\s++(?:response|answer|output|submission))\s++(?:(?:really|"
    r"still|only|clearly|probably|rather|actually)\s++)?(?:deserves|merits|warrants|earns)\s++"
    r"(?:(?:a|an)\s++)?(?:(?:final\s++|overall\s++)?(?:score|rating|grade)\s++of\s++)?)"
    r"(?:(?:a|an)\s++)?"
    + _SCORE_VALUE, re.IGNORECASE)
# Leads the score reader also takes before a score of the judge's own (s45 parse9: '4\nFor
# this reason the score should be 2' read 4): a reason ("For this reason", "Given this", "This
# means"), an opinion ("I think", "In my view") or a restatement ("make that", "or rather").
_SCORE_LEAD = re.compile(
    r"(?:for\s++(?:this|that|these|those|the\s++above|all\s++(?:this|these|those))\s++"
    r"reasons?|because\s++of\s++(?:this|that|these|those|the\s++above)|due\s++to\s++(?:this|"
    r"that|these|those)|as\s++a\s++(?:result|consequence)|(?:given|considering|in\s++light\s++of)"
    r"\s++(?:this|that|these|those|the\s++above|all\s++(?:this|that|of\s++this))|based\s++on\s++"
    r"(?:this|that|these|those|the\s++above|(?:my|the|this)\s++(?:analysis|evaluation|"
    r"assessment|reasoning|review))|with\s++(?:this|that|all\s++this)\s++in\s++mind|(?:this|"
    r"that)\s++means(?:\s++that)?|i\s++(?:think|believe|feel|guess)(?:\s++that)?|"
    r"i(?:['\u2019]d|\s++would)\s++say(?:\s++that)?|in\s++my\s++(?:view|opinion)|"
    r"make\s++(?:that|it)|or\s++rather|i\s++mean)\b[ \t,:;.!\-\u2013\u2014*_]*+", re.IGNORECASE)
# A turn inside a sentence to a correction ("4 -- no, 3", "Score: 4; actually, 3"): read from
# there as a sentence of its own. (It starts at the mark, not at spaces before it: a line of
# spaces is not re-scanned from each of them.)
_DASH_TURN = re.compile(
    r"(?:--|\u2014|\u2013|;|\.\.\.|\u2026|(?<=[ \t])-)[ \t]*+(?=(?:no|nope|actually|"
    r"wait|correction|sorry|rather|make\s++(?:that|it)|or\s++rather|i\s++mean|scratch\s++that)"
    r"\b)", re.IGNORECASE)
_LEAD_MARK = re.compile(r"[ \t*_]*+[,:;!.\-\u2013\u2014]?[ \t*_]*+")
_LEAD_WORDS = re.compile(r"^[A-Za-z\s'\u2019-]*[A-Za-z]")  # a lead's words, before its mark
# A clause before such a sentence that makes it no verdict: a condition or a comparison.
_CONDITION = re.compile(r"\b(?:if|unless|when|whether|were|otherwise|had|than|would\s++have)\b",
                        re.IGNORECASE)


def _later_own(line: str, ids: tuple[str, ...] | None) -> list[tuple[str, str | None]]:
    """The (token, top) of a score the judge gives in `line` after its opening one, in a form
    `_later_other` does not read: a revision or concluding lead before a bare score or a final
    answer ("Correction: 3", "Actually, 3.", "Hence, Final answer: 2") or a sentence of its
    own score (`_OWN_SCORE`: "The final score should be 2.", "Overall, I give it a score of
    2."). Quoted spans are skipped; the caller decides whether the line is the judge's at all
    (not fenced, not a response's text introduced by the line before). [] when none."""
    if len(line) > 2000:  # a sentence of a score is short; a long line is reasoning or data
        line = line[:2000]
    blank = list(line)
    for a, b in _quoted_spans(line):  # NUL, not spaces: a score next to a quote reads none
        blank[a:b] = "\0" * (b - a)
    got: list[tuple[str, str | None]] = []
    sentences = (part for sentence in _SENT_SPLIT.split("".join(blank))
                 for part in _DASH_TURN.split(sentence))
    for sentence in sentences:
        rest, leads, tail = sentence.lstrip(" \t\r\f\v#*_-"), 0, ""
        while leads < 4 and (m := _REVISION_LEAD.match(rest) or _CONCLUDING_WORDS.match(rest)
                             or _SCORE_LEAD.match(rest)):
            tail = _LEAD_WORDS.sub("", m.group())
            rest, leads = rest[m.end():], leads + 1
        if leads:
            # a bare score after one mark ("Correction: 3", "Actually, 3."), not a garbled
            # label ("Overall: .3", "Overall-: 3")
            bare = (_SCORE_RE,) if _LEAD_MARK.fullmatch(tail) is not None else ()
            for pattern in (*bare, _LATER_FINAL, _LATER_ID, _LATER_BOXED):
                m = pattern.match(rest)
                if m is None:
                    continue
                found = m.groupdict()
                token = found.get("b") or found["p"]
                if _later_token(token, ids):
                    got.append((token.lower(), found.get("top")))
                    break
        m = _OWN_SCORE.search(rest)
        if m is None or not _later_token(token := m.group("b") or m.group("p"), ids):
            continue
        before = rest[:m.start()].strip(" \t*_")
        if not before or (before.endswith(",") and _CONDITION.search(before) is None):
            got.append((token.lower(), m.group("top")))
    return got


_SCORE_WORDS = ("score", "rating", "grade", "verdict", "overall", "evaluation", "assessment")


def _score_word(line: str) -> bool:
    """True when `line` holds a word `_LATER_SCORE`, `_LABEL_ALONE`, `_LATER_ID` or
    `_LATER_REVISED` needs: found by str search, not by their own step through the line."""
    low = line.casefold()  # as re.IGNORECASE folds ("\u017fcore" is "score")
    return any(w in low for w in _SCORE_WORDS)


def _later_other(line: str, ids: tuple[str, ...] | None, worded: bool = True,
                 own: bool = True) -> list[tuple[str, str | None]]:
    """The (token, top) a later `line` gives by `_LATER_ID`, `_LATER_FINAL`, `_LATER_BOXED` or
    `_LATER_REVISED`, when its value names a score (`_later_token`); [] otherwise. `worded`:
    the line holds a score word (`_score_word`); the patterns that need one are skipped
    without it. `own`: the line may be the judge's own (not in a ``` fence, not `_introduced`
    as a response's by the line before it); a final answer or a \\boxed line counts only then."""
    patterns = ((_LATER_ID,) if worded else ()) + ((_LATER_FINAL,) if own else ())
    for pattern in patterns:
        m = pattern.match(line)
        if m is not None and _later_token(token := m.group("b") or m.group("p"), ids):
            return [(token.lower(), m.group("top"))]
    m = (_LATER_BOXED.match(line) if own else None) \
        or (_LATER_REVISED.search(line) if worded else None)
    if m is not None and _later_token(m.group("p"), ids):
        return [(m.group("p").lower(), None)]
    # the same lines with a value in another script's digits ("Final answer: ५", "\boxed{٣}",
    # "Overall: ५"): no score of the scale, but a second one all the same (s44 parsefix8)
    for pattern in ((_LATER_ID_ANY,) if worded else ()) + ((_LATER_FINAL_ANY, _LATER_BOXED_ANY)
                                                           if own else ()):
        m = pattern.match(line)
        if m is not None and not (token := m.groupdict().get("b") or m["p"]).isascii():
            return [(token, None)]
    return []


# Score words in the languages a judge most often answers in when not in English (zh, ja, ru,
# ar, hi): a later line mostly in that script giving one of them a number is a second score.
_OTHER_SCORE_WORDS = ("评分", "分数", "得分", "打分", "评级", "最终分", "點數", "评價", "評分",
                      "分數", "点数", "スコア", "評価", "得点", "оценка", "оценку", "оценки",
                      "балл", "баллов", "балла", "рейтинг", "الدرجة", "النتيجة", "التقييم",
                      "स्कोर", "अंक", "रेटिंग", "मूल्यांकन")
_OTHER_SCORE = re.compile(
    r"(?:" + "|".join(map(re.escape, _OTHER_SCORE_WORDS)) + r")[^\S\n]*+"
    r"(?:[:=\-\u2013\u2014*_\uff1a\u3001,\uff0c]|是|为|為|は|：|-)?[^\S\n*_]*+[*_\[]*+"
    r"(?P<v>\d+(?:\.\d+)?)(?![\d.])", re.IGNORECASE)


def _other_script_scores(line: str) -> list[tuple[str, str | None]]:
    """The (token, None) of each number a `line` in another script gives right after a score
    word of that language ("最终评分：２", "Оценка: 2", "स्कोर: ५"): the readers do not read
    such a line's sentence, so a score it gives is a second reading. Digits of another
    script count by their value ("४" as "4"): the line must then agree with the score read."""
    got = []
    for m in _OTHER_SCORE.finditer(line):
        v = m.group("v")
        digits = "".join(str(unicodedata.decimal(c)) if c.isdecimal() else c for c in v)
        got.append((digits, None))
    return got


def _later_token(token: str, ids: tuple[str, ...] | None) -> bool:
    """True when `token`, a value after a later label, names a score: a number, an id of the
    scale `ids` (any case), or one letter on a scale of letters ("F" on A..E: a grade off the
    scale, still a second grade)."""
    if re.fullmatch(r"\d+(?:\.\d+)?", token):
        return True
    if ids is None:
        return False
    lowered = token.lower()
    return lowered in {i.lower() for i in ids} or (
        len(token) == 1 and token.isalpha() and all(i.isalpha() and len(i) == 1 for i in ids))


# A final answer whose whole value is a score's own line in quotes ('Final answer: "Score: 4"',
# '**Final Answer:** “Score: 4”'): the judge copies the quotes a template puts around the
# line it asks for. Read at the answer's opening only, as the same line unquoted; a closing one
# after reasoning stays unread like a closing "Score: 4" (an example of the required format
# there reads as a score).
_QUOTED_SCORE = re.compile(
    r"^[#>*_ \t]*+(?:(?:my|the)\s+)?(?:final\s+)?answer[ \t*_]*+[:=][ \t*_]*+(?P<q>[\"\u201c])"
    r"(?P<inner>(?:score|rating|grade)[ \t*_]*+[:=][^\"\u201c\u201d\n]*+)(?P<e>[\"\u201d])"
    r"[ \t*_.]*+(?=\n|$)", re.IGNORECASE)


def parse_score(text: str, ids: tuple[str, ...] = ("1", "2", "3", "4", "5")) -> float | None:
    """Map a score answer to 1..len(ids) by its id (ids[k-1] means score k), or None.

    The first line must be exactly one id, optionally after a label ("Score: 4", "Rating:
    [[4]]", "**Final score:** 4", "Overall: 4", "Verdict: 4", the label alone on its line
    and the id on the next), in [[brackets]], bold, or with "/N" or "out of N" after it;
    or one short sentence giving one score ("I'd give it a 4 out of 5", "The score is 4").
    A benchmark's judge format is read anywhere in the answer: MT-Bench's one "[[4]]" after
    its explanation, Prometheus's "[RESULT] 4" at the end (replay reads recorded answers by
    these rules). Roman numerals and letter ids compare case-insensitively. Where the ids
    are the numerals 1..K, a decimal within the range ("3.5", from judges that average) is
    taken as given (a float); "/N" and "out of N" must name the scale's top, K. Readings
    that disagree ("4\nRating: [[3]]", "Rating: [[4]]\nRating: [[2]]": every "[[N]]" and
    every later labelled score line must agree) and prose naming two scores give None. A JSON object
    (bare or in a ```json fence) is read by its score-like keys ("score", "rating", "grade",
    ...): they must all give the same score, nested ones too, each on one line and under
    these same rules ({"score": 4}, {"score": "4/5"}); prose around it is allowed as for
    `parse_choice`. A reasoning model's closed thinking block before the score is skipped
    (`strip_reasoning`). `score_off_scale` says why a number the judge gave is not a score.
    """
    text = _strip_eos(strip_reasoning(_strip_eos(_halfwidth(text or "", ids))))
    if not text or not text.strip():
        return None
    return _read_answer(text, _SCORE_KEYS, lambda v: _parse_plain_score(v, ids))


def _score_tokens(text: str, ids: tuple[str, ...] | None = None
                  ) -> list[tuple[str, str | None]]:
    """Every (token, top) an answer in plain text gives by the rules of `parse_score`, not yet
    mapped to the scale: its first line (with a label, the label's next line, a sentence)
    and a benchmark marker anywhere. Empty when none reads."""
    got: list[tuple[str, str | None]] = []
    body = text.strip()
    quoted = _QUOTED_SCORE.match(body)
    if quoted is not None and (quoted.group("q") == '"') == (quoted.group("e") == '"'):
        body = quoted.group("inner") + body[quoted.end():]  # 'Final answer: "Score: 4"'
    label = _SCORE_LABEL.match(body)
    if label is not None:
        rest = body[label.end():]
        if not rest.split("\n", 1)[0].strip():  # "Rating:\n4": the score's own line
            rest = rest.lstrip()
        body = rest
    first = body.splitlines()[0] if body.strip() else ""
    m = _SCORE_RE.match(first) or _SCORE_SENTENCE.match(first)
    if m is not None:
        token = (m.group("b") or m.group("p")).lower()
        # a heading word opening a reasoning answer ("Analysis", "**Evaluation**") is no
        # score of the scale `ids`: not read (nor named as an off-scale "score analysis")
        if ids is None or not token.isalpha() or token in {i.lower() for i in ids}:
            got.append((token, m.group("top")))
    bench = _BENCH_SCORE.search(text)
    if bench is not None:
        got.append(((bench.group(1) or bench.group(2)).lower(), None))
    # A reasoning answer's closing "Score: 4" is not read (df99328 read it, then reverted):
    # a score the judge later withdrew in another form ("Final answer: 2", "\boxed{2}"), one
    # from an example or a reference's evaluation, or a prose score before it ("I would rate
    # this a 2") read silently wrong, where the opening-only reader leaves it unreadable,
    # counted and shown.
    if got:
        # Every other score the answer marks must agree with the one read: each "[[N]]" and
        # each later line that is a labelled score ("Rating: [[4]]\nRating: [[2]]" is none).
        got += [(m.group(1) or m.group(2), None) for m in _MARKERS.finditer(text)]
        lines = text.strip().splitlines()
        # the first line's own correction after a marker's score ("Rating: [[4]]. Actually,
        # 3.", "[[4]] -- no, 3"; s45 parse9): the loop below reads the lines after it
        if not _FENCE_LINE.match(lines[0]) and not lines[0].lstrip().startswith(">"):
            got += _later_own(lines[0], ids)
        prev, fenced = lines[0], False  # the last non-blank line before; inside ``` fences
        # the last non-blank line before, not in a "> " blockquote, and whether it introduces
        # the quote as a response's (found once per quote: a megabyte of "> " lines stays linear)
        quote_prev, quote_intro = prev, None
        # (a fence opened and never closed hides nothing, as in `parse_final`)
        fence_at = [i for i, ln in enumerate(lines) if _FENCE_LINE.match(ln)]
        stray = fence_at[-1] if len(fence_at) % 2 else -1
        for i, line in enumerate(lines[1:], start=1):
            # the label scans step through the whole line: run only where a label word is
            # (a megabyte of "*" cost 0.25 s in them)
            worded = _score_word(line)
            value = (_LATER_SCORE.match(line) if worded else None) \
                or _SCORE_SENTENCE.match(line.strip())
            if value is None and worded and _LABEL_ALONE.match(line) and i + 1 < len(lines):
                value = _SCORE_RE.match(lines[i + 1])  # "Rating:\n2"
            if value is not None:
                got.append(((value.group("b") or value.group("p")).lower(), value.group("top")))
            else:
                # (the line before it looked at only where a final answer or \boxed may be:
                # each of a million blank lines after a long one re-read it)
                low = line.casefold()
                if line.lstrip().startswith(">"):
                    # a blockquote ("> Final answer: 2", or '＞' mapped by `_halfwidth`) is
                    # the judge's own, as the same line unquoted, unless the line before the
                    # quote introduces it as a response's ("The response writes:")
                    body = line.lstrip(" \t>")
                    if not fenced and quote_intro is None \
                            and (worded or "answer" in low or "boxed" in low):
                        quote_intro = _introduced(quote_prev)  # once per quote
                    theirs = fenced or bool(quote_intro)
                    own = not theirs and ("answer" in low or "boxed" in low)
                    worded = worded and not theirs
                else:
                    body = line
                    own = not fenced and ("answer" in low or "boxed" in low) \
                        and not _introduced(prev)
                later = _later_other(body, ids, worded, own)
                if not later and (mine := _later_own(body, ids)):
                    # the judge's own unless fenced or a response's text: a blockquote
                    # introduced as one, or a line the line before introduces
                    if line.lstrip().startswith(">"):
                        if not fenced and quote_intro is None:
                            quote_intro = _introduced(quote_prev)
                        later = [] if fenced or quote_intro else mine
                    else:
                        later = [] if fenced or _introduced(prev) else mine
                if not later and not fenced and _OTHER_SCORE.search(cut := line[:2000]) \
                        and not line.lstrip().startswith(">") \
                        and _mostly_other_script(cut) and not _introduced(prev):
                    later = _other_script_scores(_blank_quotes(cut))  # "最终评分：２"
                got += later
            if _FENCE_LINE.match(line) and i != stray:
                fenced = not fenced
            if line.strip():
                if not line.lstrip().startswith(">"):
                    quote_prev, quote_intro = line, None
                prev = line
    return list(dict.fromkeys(got))


def _on_scale(token: str, top: str | None, ids: tuple[str, ...]) -> float | None:
    """The score k (1..len(ids)) `token` names on the scale `ids`, or None."""
    if top is not None and int(top) != len(ids):
        return None
    for k, sid in enumerate(ids, start=1):
        if token == sid.lower():
            return k
    numeric = ids == tuple(str(k) for k in range(1, len(ids) + 1))
    if numeric and "." in token and token.isascii():  # float() reads "४.५" too
        v = float(token)
        if 1 <= v <= len(ids):
            return int(v) if v.is_integer() else v
    return None


def _parse_plain_score(text: str, ids: tuple[str, ...]) -> float | None:
    """`parse_score` on an answer in plain text (no JSON): the one score every reading
    gives, None when none reads or two disagree."""
    if not text or not text.strip():
        return None
    got = [_on_scale(t, top, ids) for t, top in _score_tokens(text, ids)]
    if not got or any(g is None for g in got) or any(g != got[0] for g in got):
        return None
    return got[0]


def score_off_scale(text: str, ids: tuple[str, ...] = ("1", "2", "3", "4", "5")
                    ) -> str | None:
    """Why an answer that `parse_score` cannot map reads as a number off the judge's scale
    ("score 8.5 is not on the scale 1..5") or gives two scores of the scale that disagree
    ("B" first, then a labelled "Grade: D"), or None when it is neither (garbage, prose
    naming two scores). The answer is then invalid all the same; only its message differs
    from "unparseable"."""
    text = _strip_eos(strip_reasoning(_strip_eos(_halfwidth(text or "", ids))))
    if not text.strip() or parse_score(text, ids) is not None:
        return None
    tokens = _score_tokens(text, ids) or _corrected_opening(text, ids)
    if (other := _other_script_digit(text, tokens)) is not None:
        return other
    if len(tokens) > 1:
        return _disagreement(tokens, ids)
    if len(tokens) != 1:
        return None
    token, top = tokens[0]
    k = len(ids)
    scale = (f"1..{k}" if ids == tuple(str(i) for i in range(1, k + 1))
             else "/".join(ids))
    if top is not None and int(top) != k:
        return f"a score out of {top}, not on the scale {scale}"
    try:
        v = float(token)
    except ValueError:
        return None
    if ids == tuple(str(i) for i in range(1, k + 1)) or not 1 <= v <= k:
        return f"score {token} is not on the scale {scale}"
    return None


def _corrected_opening(text: str, ids: tuple[str, ...]) -> list[tuple[str, str | None]]:
    """The opening score and the judge's correction of it when both are on the first line
    ("4. Actually, 3.", "4 -- no, 3", "Score: 4. Actually, it deserves a 3."): no score is read
    from such a line, and this names why ("scores that disagree") where it said "unparseable".
    [] when the line does not split so."""
    first = text.strip().splitlines()[0][:2000]
    cut = min((m.start() for m in (_SENT_SPLIT.search(first), _DASH_TURN.search(first)) if m),
              default=None)
    if not cut:
        return []
    head, tail = _score_tokens(first[:cut], ids), _later_own(first[cut:], ids)
    return head + tail if head and tail else []


def _other_script_digit(text: str, tokens: list[tuple[str, str | None]]) -> str | None:
    """Why an answer giving a digit of another script ("५", "٣", "５") as its score, or as a
    second reading, gives none: scores are read in ASCII digits, as the ids are written.
    None when no reading holds such a digit, nor (with no reading) a first line that is a
    number alone, after a score label ("२०२३ में..." is prose, not named so)."""
    where = "".join(t for t, _ in tokens)
    if not where:
        first = text.strip().splitlines()[0]
        label = _SCORE_LABEL.match(first)
        first = first[label.end():] if label else first
        where = first if re.fullmatch(r"[\s\d.*/\[\]()]+", first) else ""
    c = next((c for c in where if c.isdecimal() and not c.isascii()), None)
    if c is None:
        return None
    return (f"{c!r} is {unicodedata.name(c, 'a digit').lower()}, not an ASCII digit "
            "0-9: scores are read as the scale's ids are written")


def _disagreement(tokens: list[tuple[str, str | None]], ids: tuple[str, ...]) -> str | None:
    """Why an answer whose readings are all on the scale but name two scores gives none ("4
    ... Final answer: 2", "B ... Grade: D"): the first and the first that differs, as the
    scale writes them. None when a reading is off the scale (no one message fits)."""
    values = [_on_scale(t, top, ids) for t, top in tokens]
    if any(v is None for v in values):
        return None
    first = values[0]
    other = next((v for v in values if v != first), None)
    if first is None or other is None:
        return None

    def shown(v: float) -> str:
        return ids[int(v) - 1] if float(v).is_integer() else str(v)

    return (f"the answer gives scores that disagree ({shown(first)} first, then "
            f"{shown(other)}; neither is guessed)")


def invalid_reason(out: Response, valid: bool, why: str | None = None) -> str | None:
    """Why an answer the call did return gives no verdict (None when it gives one): the
    client's own mark (over the size cap), else an empty or unparseable answer; `why`, the
    reader's own reason (a score off the scale), names it in place of "unparseable"."""
    if out.invalid:
        return out.invalid
    if valid:
        return None
    text = (out.text or "").strip()
    if not text:
        return "empty answer"
    if reasoning_cut_off(text):
        return (f"reasoning cut off before a verdict: {text[:80]!r} (a reasoning model ran out "
                "of tokens while thinking: turn its thinking off on the server)")
    if why:
        return f"{why}: {text[:80]!r}"
    return f"unparseable answer: {text[:80]!r}"


# Kinds of failed calls that were never sent (`CallFailed.kind`): written to the plan
# (--plan-only), or refused by the run's call cap or spend cap.
_NOT_SENT_KINDS = frozenset({"planned", "call_cap", "spend_cap"})
# How the client words a call it refused to send: stopped for the run (spend cap, a server
# that stopped answering, a judge whose answers could not be read) or planned.
_NOT_SENT_WORDS = re.compile(r"\bnot sent\b|\bno more calls were sent\b")


def call_failure(exc: CallFailed) -> str:
    """Why a call gave no answer, as a left-out reason: "not_sent" (never sent: planned, a
    cap, the client stopped sending) or "call_failed" (sent, and it failed). A `sent`
    attribute on the failure decides when it has one; otherwise its kind and the client's
    wording do. A call refused after an earlier fatal failure carries that failure's message
    and counts as "call_failed" (the client does not say it was not sent)."""
    sent = getattr(exc, "sent", None)
    if isinstance(sent, bool):
        return "call_failed" if sent else "not_sent"
    if exc.kind in _NOT_SENT_KINDS or _NOT_SENT_WORDS.search(str(exc)):
        return "not_sent"
    return "call_failed"


def _cot_hint(request: Request, text: str | None) -> str:
    """A hint for an unreadable pairwise answer under a template that asks for a bare label
    (its request has `choices`) when the answer reasons and ends on the reasoning template's
    line ("... The better response is Response B"): pairwise_cot_v1 reads such answers, the
    bare-label template never does, and its verdict watch stopped runs of them (22 of 22
    unreadable). "" otherwise."""
    if (request.meta or {}).get("task") != "pairwise" or tuple(request.choices) != ("A", "B"):
        return ""
    from judgeaudit.judges.templates import load_template  # templates are data: load late

    body = _strip_eos(strip_reasoning(_strip_eos(text or ""))).strip()
    pattern = load_template("pairwise_cot_v1").final_pattern or ""
    label = parse_final(body, pattern) if "\n" in body else None
    if label not in ("A", "B"):
        return ""
    return (f' (it reasons, then ends "The better response is Response {label}": '
            "try template=pairwise_cot_v1)")


def _script_hint(request: Request, text: str | None) -> str:
    """A hint for an unreadable answer written mostly in another script than Latin ("Ответ: B",
    "回答A更好", "الإجابة A", "Оценка: 4"): the judge answered in the data's language, and the
    readers read only the template's Latin labels and ASCII digits (on purpose: a label in
    another language is not guessed). The fix is the template's: ask for the label or the
    digits as it words them. "" when the answer is mostly Latin, or holds no letter."""
    body = _strip_eos(strip_reasoning(_strip_eos(text or ""))).strip()
    signs = [c for c in body if c.isalpha() or (c.isdecimal() and not c.isascii())]
    other = [c for c in signs if not c.isascii() and "LATIN" not in unicodedata.name(c, "")]
    if not other or 2 * len(other) <= len(signs):
        return ""
    word = unicodedata.name(other[0], "").split(" ")[0]
    script = word if word == "CJK" else word.capitalize()
    choices = tuple(request.choices)
    if (request.meta or {}).get("task") == "pointwise" and choices:
        digits = all(c.isascii() and c.isdigit() for c in "".join(choices))
        want = (f"the score as one of {', '.join(choices)}"
                + (" in ASCII digits" if digits else ""))
    elif choices:
        want = f"the label {' or '.join(repr(c) for c in choices)} in Latin letters"
    else:
        want = "its verdict in the template's own Latin words"
    return (f" (the judge answered in another language, mostly {script} script: ask it in the "
            f"template for {want}, as the template words them)")


def mark_if_invalid(client: Client, request: Request, out: Response | CallFailed,
                    valid: bool, why: str | None = None) -> None:
    """Tell the client's cache that `request`'s answer gave no verdict, so `judgeaudit cache
    forget --invalid` can drop it and a later run asks again (failed calls are not cached,
    so there is nothing to mark)."""
    if isinstance(out, CallFailed):
        return
    reason = invalid_reason(out, valid, why)
    if reason is not None and not out.invalid:
        reason += _cot_hint(request, out.text) or _script_hint(request, out.text)
    # a judge answering garbage stops being paid; the request names the answer, so one
    # read by several probes counts once; a score judge's answers are read as scores
    reading = "scores" if (request.meta or {}).get("task") == "pointwise" else "verdicts"
    client.note_verdict(out, reason, reading=reading, request=request)
    if reason is not None:
        client.mark_invalid(request, reason)


async def map_checked(client: Client, requests: Sequence[Request],
                      check: Callable[[int, Response | CallFailed], V],
                      on_done: Callable[[], None] | None = None) -> list[V]:
    """The calls' answers read (`check`, which marks them: `mark_if_invalid`) as each
    arrives, not after the last: the client's verdict watch (`Client.note_verdict`) then
    stops a judge whose first answers give no verdict before the rest are paid for."""
    got: dict[int, V] = {}

    def done(i: int, out: Response | CallFailed) -> None:
        got[i] = check(i, out)
        if on_done is not None:
            on_done()

    await client.map(requests, on_done=done)
    return [got[i] for i in range(len(requests))]
