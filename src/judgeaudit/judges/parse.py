"""Strict verdict and score parsing. Anything that is not clearly one verdict is invalid
(None) and counted by the caller: never coerced to a guess."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
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


class _NotJson:
    """Marks an answer that is not a JSON object (read as plain text)."""


_NOT_JSON = _NotJson()


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
        # Nested objects come back as pair lists too: not a scalar, so never read.
        return json.loads(body, object_pairs_hook=list)
    except ValueError:  # broken, trailing text, a second object, a second fence
        return None


def _json_scalar(value: Any) -> str | None:
    """A JSON value as the text it stands for: strings as they are, integers and finite
    numbers in decimal; None for null, true/false (not 1/0), lists and objects."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    return None


def _read_json(pairs: list[tuple[str, Any]], keys: frozenset[str],
               read: Callable[[str], V | None], allow_float: bool = True) -> V | None:
    """The one value the object's verdict-like (score-like) keys agree on, or None: none of
    `keys` present, or one of them unreadable (by `read`), or two that disagree."""
    got: list[V | None] = []
    for k, v in pairs:
        if _KEY_SEP.sub("_", str(k).strip().lower()) not in keys:
            continue
        if isinstance(v, float) and not allow_float:
            got.append(None)
            continue
        text = _json_scalar(v)
        got.append(None if text is None else read(text))
    if not got or any(g is None for g in got) or any(g != got[0] for g in got):
        return None
    return got[0]


def parse_choice(
    text: str, choices: tuple[str, ...] = ("A", "B"), allow_tie: bool = False
) -> str | None:
    """Return the single choice `text` names, "tie" (if allowed), or None.

    Accepts e.g. "A", " A.", "**B**", "[[A]]", "Response A", "Output (b)", "A is better",
    "B\\nExplanation: ...", a whole answer that is one lower-case letter ("b", "**a**"), a
    JSON object (bare or in a ```json fence) whose verdict-like keys ("verdict", "winner",
    "choice", ...) all name the same one choice in any of these forms, and any of these after
    a reasoning model's closed thinking block (`strip_reasoning`). Rejects "C", "A or B",
    "Both", "A and B", prose that names both, "a good answer" (a lower-case letter in prose
    is the article), JSON naming both, none or an unknown value, or with verdict keys that
    disagree.
    """
    text = strip_reasoning(text)
    if not text or not text.strip():
        return None
    obj = _json_object(text)
    if obj is None:
        return None
    if isinstance(obj, list):
        return _read_json(obj, _VERDICT_KEYS,
                          lambda v: _parse_plain_choice(v, choices, allow_tie),
                          allow_float=False)
    return _parse_plain_choice(text, choices, allow_tie)


def _parse_plain_choice(text: str, choices: tuple[str, ...], allow_tie: bool) -> str | None:
    """`parse_choice` on an answer in plain text (no JSON)."""
    if not text or not text.strip():
        return None
    first_line = text.strip().splitlines()[0]
    tokens = [t for t in _STRIP.split(first_line) if t]
    if not tokens:
        return None
    lowered = [t.lower() for t in tokens]
    # Letters match case-sensitively ("a" is usually the article), except right after a
    # label word: "Output (b)", "response a".
    labelled = lowered[0] in {"response", "output", "answer", "assistant"} and len(tokens) > 1
    if labelled:
        tokens, lowered = tokens[1:], lowered[1:]
    head = tokens[0]
    by_lower = {c.lower(): c for c in choices}
    named = {t for t in tokens if t in choices}
    hit = by_lower.get(head.lower()) if labelled else (head if head in choices else None)
    if hit is not None:
        named.add(hit)
        # The first token is a choice; refuse if another choice is also named ("A or B").
        if len(named) > 1:
            return None
        return hit
    if allow_tie and lowered[0] in _TIE_WORDS and not named:
        return "tie"
    # ...and when the whole answer is that one letter in lower case ("b", "**a**."): there
    # it cannot be the article. "a\nThe first one." is not the whole answer.
    whole = [t for t in _STRIP.split(text) if t]
    if len(whole) == 1 and whole[0].lower() in by_lower:
        return by_lower[whole[0].lower()]
    return None


_SCORE_RE = re.compile(
    r"^\s*(?:score\s*[:=]?\s*)?\**\s*(\d+\.\d+|[A-Za-z0-9]+)\s*\**\s*(?:/\s*(\d+))?\s*[.)]?\s*$",
    re.I,
)


def parse_score(text: str, ids: tuple[str, ...] = ("1", "2", "3", "4", "5")) -> float | None:
    """Map a score answer to 1..len(ids) by its id (ids[k-1] means score k), or None.

    The first line must be exactly one id (optionally "Score: 4", "4/5", "**4**"); roman
    numerals and letter ids compare case-insensitively. Where the ids are the numerals 1..K,
    a decimal within the range ("3.5", from judges that average) is taken as given (a
    float); a "/N" suffix must name the scale's top, K. A JSON object (bare or in a ```json
    fence) is read by its score-like keys ("score", "rating", "grade", ...): they must all
    give the same score, each under these same rules ({"score": 4}, {"score": "4/5"}). A
    reasoning model's closed thinking block before the score is skipped (`strip_reasoning`).
    """
    text = strip_reasoning(text)
    if not text or not text.strip():
        return None
    obj = _json_object(text)
    if obj is None:
        return None
    if isinstance(obj, list):
        return _read_json(obj, _SCORE_KEYS, lambda v: _parse_plain_score(v, ids))
    return _parse_plain_score(text, ids)


def _parse_plain_score(text: str, ids: tuple[str, ...]) -> float | None:
    """`parse_score` on an answer in plain text (no JSON)."""
    if not text or not text.strip():
        return None
    m = _SCORE_RE.match(text.strip().splitlines()[0])
    if not m:
        return None
    token, top = m.group(1).lower(), m.group(2)
    if top is not None and int(top) != len(ids):
        return None
    for k, sid in enumerate(ids, start=1):
        if token == sid.lower():
            return k
    numeric = ids == tuple(str(k) for k in range(1, len(ids) + 1))
    if numeric and "." in token:
        v = float(token)
        if 1 <= v <= len(ids):
            return int(v) if v.is_integer() else v
    return None


def invalid_reason(out: Response, valid: bool) -> str | None:
    """Why an answer the call did return gives no verdict (None when it gives one): the
    client's own mark (over the size cap), else an empty or unparseable answer."""
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
    return f"unparseable answer: {text[:80]!r}"


def mark_if_invalid(client: Client, request: Request, out: Response | CallFailed,
                    valid: bool) -> None:
    """Tell the client's cache that `request`'s answer gave no verdict, so `judgeaudit cache
    forget --invalid` can drop it and a later run asks again (failed calls are not cached,
    so there is nothing to mark)."""
    if isinstance(out, CallFailed):
        return
    reason = invalid_reason(out, valid)
    client.note_verdict(out, reason)  # a judge answering garbage stops being paid
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
