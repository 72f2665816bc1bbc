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

Cost: every check is near-linear in the length of the two texts (a 1 MB response is checked
in well under a second). The word diff strips the common prefix and suffix first and runs
difflib only on the changed window, and only when that window is small (`_DIFF_MAX_CELLS`
word pairs); a larger window is aligned in linear time (see `insertions`).
"""

from __future__ import annotations

import difflib
import re
from collections import Counter, deque
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
    out: Counter[str] = Counter()
    for tok, n in Counter(_NUM.findall(_strip_slots(text))).items():  # normalise each once
        out[normalize_number(tok)] += n
    return out


def _last_number(text: str) -> str | None:
    """The text's last number, normalised."""
    tail = deque(_NUM.finditer(_strip_slots(text)), maxlen=1)
    return normalize_number(tail[0].group()) if tail else None


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


# Runs of word characters and hyphens: an entity (a `[A-Za-z][\w-]*` token) that occurs in
# a text occurs inside one of its runs.
_RUN = re.compile(r"[\w-]+")
# Above this many entities not found as whole words, look for them inside the text's distinct
# runs (one pass per entity length) rather than searching the whole text once per entity.
_SUBSTRING_SEARCHES = 16


def lost_entities(original: str, perturbed: str, limit: int = 5) -> list[str]:
    """The first `limit` (sorted) entities of `original` that no longer occur in `perturbed`,
    case-insensitively as substrings. Linear in the texts: entities still there as whole
    words are found in a set of the perturbed text's words; up to `_SUBSTRING_SEARCHES`
    others are searched for directly (each search reads the text), more are first looked
    for inside the text's distinct runs of word characters (one pass over them per distinct
    entity length); the search stops at `limit` lost entities."""
    ents = entities(original)
    if not ents:
        return []
    low = perturbed.lower()
    runs = set(_RUN.findall(low))
    cands = sorted(e for e in ents if e.lower() not in runs)
    if len(cands) > _SUBSTRING_SEARCHES:
        by_len: dict[int, set[str]] = {}
        for e in cands:
            by_len.setdefault(len(e.lower()), set()).add(e.lower())
        found: set[str] = set()
        for n, want in by_len.items():
            for r in runs:
                for i in range(len(r) - n + 1):
                    if r[i:i + n] in want:
                        found.add(r[i:i + n])
        cands = [e for e in cands if e.lower() not in found]
    lost: list[str] = []
    for e in cands:
        if e.lower() not in low:  # exact, also for letters whose lower case is not a \w
            lost.append(e)
            if len(lost) == limit:
                break
    return lost


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


# difflib runs on the changed window only when len(a) * len(b) (in words) is at most this:
# its cost grows about quadratically with the window; at this size it takes milliseconds on
# prose and ~0.2 s on a two-word vocabulary.
_DIFF_MAX_CELLS = 1_000_000
# Linear alignment: when an insertion starts, look this far past the first candidate word
# for a place where the next `_GRAM` original words follow in order (a better resync point).
_GRAM = 4
_LOOKAHEAD = 32


def _diff_opcodes(a: Sequence[str], b: Sequence[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib's word diff of a (small) window; one function so tests can count its use."""
    return difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()


def _common_affix(a: Sequence[str], b: Sequence[str]) -> tuple[int, int]:
    """Lengths of the common prefix and the common suffix (not overlapping the prefix)."""
    p = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        p += 1
    n = min(len(a), len(b)) - p
    s = 0
    while s < n and a[-1 - s] == b[-1 - s]:
        s += 1
    return p, s


def _is_subsequence(a: Sequence[str], b: Sequence[str]) -> bool:
    it = iter(b)
    return all(w in it for w in a)  # `in` advances the iterator: one pass over b


def _align_insertions(a: Sequence[str], b: Sequence[str]) -> list[str]:
    """The runs of `b` left over when `a` (a subsequence of `b`) is embedded in it, in
    O(len(b) + r * _LOOKAHEAD * _GRAM) time for r inserted runs. Words are matched left to
    right; where an insertion starts, the original resumes at the first later place where its
    next `_GRAM` words follow in order (within `_LOOKAHEAD` words of the first match of the
    next word, and no later than the last position that leaves room for the rest), else at
    that first match."""
    # last[i]: the rightmost position a[i] can take with a[i+1:] still embeddable after it
    last = [0] * len(a)
    j = len(b) - 1
    for i in range(len(a) - 1, -1, -1):
        while b[j] != a[i]:
            j -= 1
        last[i] = j
        j -= 1
    out: list[str] = []
    j = 0
    for i, w in enumerate(a):
        if b[j] != w:
            k0 = j
            while b[k0] != w:
                k0 += 1
            g = a[i:i + _GRAM]
            k = k0
            for c in range(k0, min(last[i], k0 + _LOOKAHEAD) + 1):
                if b[c] == w and b[c:c + len(g)] == g:
                    k = c
                    break
            out.append(" ".join(b[j:k]))
            j = k
        j += 1
    if j < len(b):
        out.append(" ".join(b[j:]))
    return out


def insertions(original: str, perturbed: str) -> list[str] | None:
    """The word runs inserted into `original` to make `perturbed`, or None when the change
    is not a pure insertion (some original word was removed or altered). Whitespace-only
    changes do not count.

    Near-linear: the common word prefix and suffix are stripped, a window whose original
    words are not all still there in order is answered None at once, and only a window of
    at most `_DIFF_MAX_CELLS` word pairs goes to difflib; a larger one (or one difflib
    cannot explain as insertions, though the words are all there in order) is aligned by
    `_align_insertions` in linear time. Which runs are reported can then differ from what a
    full diff would pick where the alignment is ambiguous; their words are the same."""
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
    p, s = _common_affix(a, b)
    am, bm = a[p:len(a) - s], b[p:len(b) - s]
    if not am:
        return [" ".join(bm)] if bm else []
    if len(am) >= len(bm) or not _is_subsequence(am, bm):
        return None
    if len(am) * len(bm) <= _DIFF_MAX_CELLS:
        out: list[str] = []
        for tag, _i1, _i2, j1, j2 in _diff_opcodes(am, bm):
            if tag == "equal":
                continue
            if tag != "insert":
                break
            out.append(" ".join(bm[j1:j2]))
        else:
            return out
    return _align_insertions(am, bm)


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
    orig_nums = numbers(original)
    if added is not None:
        extra = _remove(" ".join(added), ignore)
        new_nums = sorted(set(numbers(extra)) - set(orig_nums))
        if new_nums:
            return False, f"inserted text adds new number(s) {', '.join(new_nums)}"
        if competitor and contains_answer(extra, competitor):
            return False, f"inserted text mentions the competing answer {competitor!r}"
        if answer and contains_answer(original, answer) and not contains_answer(perturbed, answer):
            return False, f"answer {answer!r} no longer present"  # unreachable for insertions
        return True, None

    cleaned = _remove(perturbed, ignore)
    new_nums = sorted(set(numbers(cleaned)) - set(orig_nums))
    if new_nums:
        return False, f"new number(s) {', '.join(new_nums)} not in the original"
    if competitor and count_answer(cleaned, competitor) > count_answer(original, competitor):
        return False, f"competing answer {competitor!r} introduced"
    if answer and contains_answer(original, answer):
        if not contains_answer(perturbed, answer):
            return False, f"answer {answer!r} no longer present"
        return True, None
    # No usable answer string: the original's numbers and entities must all survive.
    lost = sorted(set(orig_nums) - set(numbers(perturbed)))
    if lost:
        return False, f"number(s) {', '.join(lost)} of the original are gone"
    lost_ents = lost_entities(original, perturbed, 5)
    if lost_ents:
        return False, f"entities {', '.join(lost_ents)} of the original are gone"
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
        target = _last_number(original)
    if target is None:
        ls = last_sentence(original)
        ok = ls in perturbed
        return (True, None) if ok else (False, "original final sentence not kept")
    if _is_number(target):
        got = _last_number(perturbed)
        want = normalize_number(target.lstrip("+-"))
        if got != want:
            return False, f"final number is {got or 'none'}, expected {want}"
        return True, None
    if not contains_answer(last_sentence(perturbed), target):
        return False, f"answer {target!r} not in the final sentence"
    return True, None
