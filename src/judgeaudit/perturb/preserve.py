"""Answer-preservation checks: a perturbation may change how an answer looks, never what it
says. These are string-level checks, strict on purpose: a perturbation that fails one is
dropped (and counted) by the caller rather than measured as a bias.

Two cases, told apart by a word-level diff:
- additive (the perturbed text is the original plus inserted words, e.g. a citation, a tone
  wrapper, padding): the inserted words may add no number and no competing answer;
- rewrite (anything else: markdown, fallacy chains, LLM rewrites): the answer must still be
  there, no number may appear that the original did not have, and without a known answer the
  original's numbers and named entities must all survive.
Template-added strings that legitimately carry digits (citation years and DOIs, model names
such as "GPT-4") are passed as `ignore` and removed before the checks.
"""

from __future__ import annotations

import difflib
import re
from collections import Counter
from collections.abc import Iterable, Sequence

from judgeaudit.data.slots import SLOT_RE

# Order-dependent letter slots are not content: they carry no numbers.
_SLOT = SLOT_RE
_NUM = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)?", re.UNICODE)
_SENT_END = re.compile(r"(?<=[.!?])\s+")
# Capitalised words that start a sentence are not entities; these common ones never are.
_NOT_ENTITY = frozenset({
    "I", "A", "An", "The", "This", "That", "These", "Those", "It", "Its", "If", "In", "On",
    "At", "So", "But", "And", "Or", "As", "To", "For", "Of", "By", "Yes", "No", "Note",
    "Answer", "Response",
})


def _strip_slots(text: str) -> str:
    return _SLOT.sub(" ", text)


def normalize_number(tok: str) -> str:
    """`1,000` -> `1000`, `42.0` -> `42`, `007` -> `7`; a comma that is not a thousands
    separator is kept as a decimal comma."""
    t = tok
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?", t):
        t = t.replace(",", "")
    t = t.replace(",", ".")
    if re.fullmatch(r"\d+\.\d+", t):
        t = t.rstrip("0").rstrip(".")
    if re.fullmatch(r"\d+", t):
        t = str(int(t))
    return t


def numbers(text: str) -> Counter[str]:
    """The numbers in a text (normalised), with multiplicity."""
    return Counter(normalize_number(m.group()) for m in _NUM.finditer(_strip_slots(text)))


def words(text: str) -> Counter[str]:
    """Lower-cased word tokens with multiplicity (markup, including a code fence's language
    tag, and punctuation ignored)."""
    text = re.sub(r"```[\w+#.-]*", " ", _strip_slots(text))
    text = re.sub(r"[`*]", "", text)  # "`n`th" and "nth" are the same word
    return Counter(w.lower() for w in _WORD.findall(text))


def entities(text: str) -> set[str]:
    """Capitalised words that are not sentence-initial: a cheap proxy for named entities."""
    out: set[str] = set()
    for sent in _SENT_END.split(text):
        toks = re.findall(r"[A-Za-z][\w-]*", sent)
        for tok in toks[1:]:
            if tok[0].isupper() and tok not in _NOT_ENTITY:
                out.add(tok)
    return out


def last_sentence(text: str) -> str:
    parts = [p.strip() for p in _SENT_END.split(text.strip()) if p.strip()]
    return parts[-1] if parts else ""


def _is_number(s: str) -> bool:
    return bool(re.fullmatch(r"[-+]?\d+(?:[.,]\d+)*", s.strip()))


def contains_answer(text: str, answer: str) -> bool:
    """Whether `answer` occurs in `text`: as a number among its numbers, or as a
    case-insensitive whole-word phrase."""
    a = answer.strip()
    if not a:
        return True
    if _is_number(a):
        return normalize_number(a.lstrip("+-")) in numbers(text)
    pat = r"(?<!\w)" + r"\s+".join(re.escape(p) for p in a.split()) + r"(?!\w)"
    return re.search(pat, _strip_slots(text), re.IGNORECASE) is not None


def count_answer(text: str, answer: str) -> int:
    a = answer.strip()
    if _is_number(a):
        return numbers(text)[normalize_number(a.lstrip("+-"))]
    pat = r"(?<!\w)" + r"\s+".join(re.escape(p) for p in a.split()) + r"(?!\w)"
    return len(re.findall(pat, _strip_slots(text), re.IGNORECASE))


def insertions(original: str, perturbed: str) -> list[str] | None:
    """The word runs inserted into `original` to make `perturbed`, or None when the change
    is not a pure insertion (some original word was removed or altered). Whitespace-only
    changes do not count."""
    a, b = original.split(), perturbed.split()
    core = original.strip()
    # Fast path: the original as one block, on word boundaries ("5" inside "1.5" is not it).
    i = perturbed.find(core) if core else -1
    while i >= 0:
        j = i + len(core)
        if (i == 0 or perturbed[i - 1].isspace()) and (j == len(perturbed)
                                                       or perturbed[j].isspace()):
            return [s for s in (perturbed[:i].strip(), perturbed[j:].strip()) if s]
        i = perturbed.find(core, i + 1)
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    out: list[str] = []
    for tag, _i1, _i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            continue
        if tag != "insert":
            return None
        out.append(" ".join(b[j1:j2]))
    return out


def _remove(text: str, ignore: Iterable[str]) -> str:
    """`text` without the `ignore` strings, whitespace-insensitively (insertions come back
    with their whitespace collapsed)."""
    text = " ".join(text.split())
    for s in sorted({" ".join(s.split()) for s in ignore if s.strip()}, key=len, reverse=True):
        text = text.replace(s, " ")
    return text


def answer_preserved(
    original: str,
    perturbed: str,
    answer: str | None = None,
    *,
    competitor: str | None = None,
    ignore: Sequence[str] = (),
) -> tuple[bool, str | None]:
    """Whether `perturbed` still gives the same final answer as `original`.

    `answer`: the answer this text gives (the item's `answer`, or `wrong_answer` for the
    worse side), when known. `competitor`: the other side's answer, which must not be
    introduced. `ignore`: strings the template added on purpose that may contain digits
    (citations, model names). Returns (ok, reason); reason says what failed, or None.
    """
    if not perturbed.strip():
        return False, "perturbed text is empty"
    added = insertions(original, perturbed)
    if added is not None:
        extra = _remove(" ".join(added), ignore)
        new_nums = sorted(set(numbers(extra)) - set(numbers(original)))
        if new_nums:
            return False, f"inserted text adds new number(s) {', '.join(new_nums)}"
        if competitor and contains_answer(extra, competitor):
            return False, f"inserted text mentions the competing answer {competitor!r}"
        if answer and contains_answer(original, answer) and not contains_answer(perturbed, answer):
            return False, f"answer {answer!r} no longer present"  # unreachable for insertions
        return True, None

    cleaned = _remove(perturbed, ignore)
    new_nums = sorted(set(numbers(cleaned)) - set(numbers(original)))
    if new_nums:
        return False, f"new number(s) {', '.join(new_nums)} not in the original"
    if competitor and count_answer(cleaned, competitor) > count_answer(original, competitor):
        return False, f"competing answer {competitor!r} introduced"
    if answer and contains_answer(original, answer):
        if not contains_answer(perturbed, answer):
            return False, f"answer {answer!r} no longer present"
        return True, None
    # No usable answer string: the original's numbers and entities must all survive.
    lost = sorted(set(numbers(original)) - set(numbers(perturbed)))
    if lost:
        return False, f"number(s) {', '.join(lost)} of the original are gone"
    low = perturbed.lower()
    lost_ents = sorted(e for e in entities(original) if e.lower() not in low)
    if lost_ents:
        return False, f"entities {', '.join(lost_ents[:5])} of the original are gone"
    return True, None


def words_preserved(original: str, perturbed: str) -> tuple[bool, str | None]:
    """Every word of the original (with multiplicity) is still in the perturbed text; for
    reformatting (markdown) that must not drop content."""
    missing = words(original) - words(perturbed)
    if missing:
        return False, f"words lost: {', '.join(sorted(missing)[:8])}"
    return True, None


def final_answer_kept(
    original: str, perturbed: str, answer: str | None = None, *, competitor: str | None = None
) -> tuple[bool, str | None]:
    """For rewrites that may add intermediate numbers (flawed reasoning chains): the final
    answer is unchanged. A numeric answer (given, or the original's last number) must be the
    perturbed text's last number; a text answer must be in its last sentence. The competing
    answer must not be introduced."""
    if competitor and count_answer(perturbed, competitor) > count_answer(original, competitor):
        return False, f"competing answer {competitor!r} introduced"
    target = answer
    if target is None or not contains_answer(original, target):
        nums = [normalize_number(m.group()) for m in _NUM.finditer(_strip_slots(original))]
        target = nums[-1] if nums else None
    if target is None:
        ls = last_sentence(original)
        ok = ls in perturbed
        return (True, None) if ok else (False, "original final sentence not kept")
    if _is_number(target):
        nums = [normalize_number(m.group()) for m in _NUM.finditer(_strip_slots(perturbed))]
        want = normalize_number(target.lstrip("+-"))
        if not nums or nums[-1] != want:
            got = nums[-1] if nums else "none"
            return False, f"final number is {got}, expected {want}"
        return True, None
    if not contains_answer(last_sentence(perturbed), target):
        return False, f"answer {target!r} not in the final sentence"
    return True, None
