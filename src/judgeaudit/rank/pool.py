"""Ranking pools: N candidate responses to one prompt (or to several prompts, each ranked
within its prompt), with their true quality where known and the covariates a judge may be
biased on.

`load_pool(spec)` accepts
- `builtin:controlled[?seed=0&n=30&k=5&topic=moon&design=balanced]`: the controlled
  benchmark (judgeaudit.rank.controlled): true quality = #true - #false statements; extra
  numeric fields `verbosity` (the 0/1 elaboration switch), `n_true`, `n_false`,
  `n_statements`.
- `jsonl:PATH` (or a bare path ending in .jsonl): one JSON object per line,
  `{"id": str, "prompt": str, "response": str, "quality": number (optional), ...}`; any
  other numeric field (e.g. `"tokens": 312`) can be used as a covariate by name. Items with
  the same prompt form one group; comparisons are made only within a group, and each
  group has its own top-k. "The same prompt" is `prompt_key`: Unicode NFC, line endings as
  LF, outer whitespace stripped; items whose prompts differ only there are judged under
  their group's first prompt, with a note. Prompts differing in anything else (whitespace
  inside, invisible characters) stay apart, with a note when that is all they differ in.

Covariates (`Pool.covariates(names)`), one column per name, centred over the pool (only
differences between items enter the model):
- text features of judgeaudit.llm.features, computed from the response text: `length`
  (log(1 + words): the unit of the `sim` judge's `length` coefficient, so a planted value is
  directly comparable), `markdown`, `authority`, `confidence`, `sentiment`, `self`,
  `injection`;
- `words`: the word count standardised over the pool (z-score);
- any numeric field of the items (user-supplied, or the builder's `verbosity`, ...); a
  field named like a computed covariate is refused when that covariate is asked for.
Each column's standard deviation is reported so c can be read per SD as well.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from judgeaudit.data.fingerprint import fingerprint
from judgeaudit.data.loaders._common import read_jsonl
from judgeaudit.data.registry import DataError
from judgeaudit.data.spec import parse_spec
from judgeaudit.llm import features
from judgeaudit.rank.controlled import BANKS, DESIGNS, build_controlled_pool
from judgeaudit.rank.membership import group_index, group_k, topk_set

TEXT_COVARIATES: tuple[str, ...] = tuple(c for c in features.COVARIATES if c != "bandwagon")
DERIVED_COVARIATES: tuple[str, ...] = ("words",)
RESERVED_FIELDS = frozenset({"id", "prompt", "response", "quality"})
DEFAULT_COVARIATES: tuple[str, ...] = ("length", "markdown")


@dataclass(frozen=True)
class PoolItem:
    id: str
    prompt: str
    text: str
    quality: float | None = None
    fields: dict[str, float] = field(default_factory=dict)  # numeric extras, by name
    # extras given with a value that is no finite number ("abc", NaN, true), as written: a
    # covariate asked for by that name names the value, not a missing field
    unread: dict[str, Any] = field(default_factory=dict)
    line: int | None = None  # the item's line in its file, for a message about it


@dataclass
class CovariateInfo:
    name: str
    source: str  # "text" (llm.features), "derived" or "field"
    mean: float
    sd: float

    @property
    def constant(self) -> bool:
        return self.sd == 0.0


@dataclass
class Pool:
    items: list[PoolItem]
    source: str
    k: int | None = None  # the pool's suggested k (the controlled benchmark: 5)
    meta: dict[str, Any] = field(default_factory=dict)
    # what loading said about the file (empty responses of a JSON Lines pool, counted), for
    # the run's notes
    notes: list[str] = field(default_factory=list)
    # the items' content fingerprint (`judgeaudit.data.fingerprint`), set from the items
    fingerprint: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        if len(self.items) < 2:
            raise DataError(self.source, None, f"a ranking pool needs at least 2 items, got "
                                               f"{len(self.items)}")
        seen: set[str] = set()
        for it in self.items:
            if it.id in seen:
                raise DataError(self.source, None, f"duplicate item id {it.id!r}")
            seen.add(it.id)
        # which items, not only which spec (a builtin:controlled built for another --k kept
        # one record): the fingerprint of the items as given, before prompts are folded; the
        # record (results' `pool`, shown in the report) keeps its whole, the results the rest
        self.fingerprint = fingerprint(self.items)
        self.meta = {**self.meta, "sha256": self.fingerprint["sha256"]}
        self.items, folded = _fold_prompts(self.items)
        prompts = list(dict.fromkeys(it.prompt for it in self.items))
        self._group_of = {p: g for g, p in enumerate(prompts)}
        sizes = [0] * len(prompts)
        for it in self.items:
            sizes[self._group_of[it.prompt]] += 1
        self.notes = [*self.notes, *_folded_note(self.source, folded, self._group_of, sizes),
                      *_near_note(self.source, prompts)]

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def ids(self) -> list[str]:
        return [it.id for it in self.items]

    @property
    def n_groups(self) -> int:
        return len(self._group_of)

    @property
    def groups(self) -> np.ndarray | None:
        """Group label per item (by prompt), or None when every item answers one prompt."""
        if self.n_groups == 1:
            return None
        return np.array([self._group_of[it.prompt] for it in self.items])

    def small_groups(self, k: int) -> list[tuple[str, int]]:
        """Prompt groups of at most k items, with their sizes: their top set is capped at
        size - 1 (`group_k`), so a ranking names fewer than k of them, which said nothing."""
        if self.groups is None:
            return []
        sizes: dict[str, int] = {}
        for it in self.items:
            sizes[it.prompt] = sizes.get(it.prompt, 0) + 1
        return [(prompt, n) for prompt, n in sizes.items() if n <= k]

    @property
    def has_quality(self) -> bool:
        return all(it.quality is not None for it in self.items)

    @property
    def quality(self) -> np.ndarray:
        if not self.has_quality:
            missing = [it.id for it in self.items if it.quality is None]
            raise DataError(self.source, None, f"true quality unknown for {len(missing)} "
                            f"item(s) (e.g. {missing[0]!r}); add a numeric 'quality' field")
        return np.array([it.quality for it in self.items], dtype=float)

    def true_topk(self, k: int) -> np.ndarray:
        """Indices of the true top-k (per group, k per group as in the ranking)."""
        q, g = self.quality, self.groups
        out = [idx[topk_set(q[idx], group_k(k, idx.shape[0]) if g is not None else k)]
               for idx in group_index(g, self.n_items)]
        return np.sort(np.concatenate(out))

    def ambiguous_topk(self, k: int) -> list[int]:
        """Groups whose true top-k is not unique (a quality tie across the k-th place)."""
        q, groups = self.quality, self.groups
        bad = []
        for g, idx in enumerate(group_index(groups, self.n_items)):
            kg = group_k(k, idx.shape[0]) if groups is not None else k
            if 0 < kg < idx.shape[0]:
                qs = np.sort(q[idx])[::-1]
                if qs[kg - 1] == qs[kg]:
                    bad.append(g)
        return bad

    def available_covariates(self) -> list[str]:
        numeric = sorted({k for it in self.items for k in it.fields})
        return [*TEXT_COVARIATES, *DERIVED_COVARIATES, *numeric]

    def _refuse_unread(self, name: str) -> None:
        """A covariate field whose value on some item is no number: the file, the item's
        line, the column (field) and the value as written (it was called missing)."""
        bad = [it for it in self.items if name in it.unread]
        if not bad:
            return
        it = bad[0]
        what = "column" if self.meta.get("kind") == "csv" else "field"
        more = f"; {len(bad) - 1} more item(s) like it" if len(bad) > 1 else ""
        raise DataError(str(self.meta.get("path", self.source)), it.line,
                        f"{what} {name!r}: expected a finite number, got {it.unread[name]!r} "
                        f"(item {it.id!r}; covariate {name!r} needs a number for every item"
                        f"{more})")

    def _refuse_shadowed(self, name: str) -> None:
        """A file's own column named like a covariate computed from the text (`length`,
        `words`, ...): its values were silently replaced by the computed ones."""
        it = next((it for it in self.items if name in it.fields or name in it.unread), None)
        if it is None:
            return
        what = "column" if self.meta.get("kind") == "csv" else "field"
        raise DataError(str(self.meta.get("path", self.source)), it.line,
                        f"{what} {name!r} has the name of a covariate computed from each "
                        f"response's text, which would replace its values; rename the {what} "
                        f"(e.g. {name + '_given'!r}) and ask for that name to use your values, "
                        f"or leave it out to use the computed {name!r}")

    def covariates(self, names: list[str] | tuple[str, ...]) -> tuple[np.ndarray,
                                                                       list[CovariateInfo]]:
        """(N, M) centred covariate matrix and what each column is."""
        cols, info = [], []
        for name in names:
            if name in TEXT_COVARIATES or name in DERIVED_COVARIATES:
                self._refuse_shadowed(name)
            if name in TEXT_COVARIATES:
                v = np.array([features.covariates(it.text)[name] for it in self.items])
                src = "text"
            elif name == "words":
                w = np.array([features.word_count(it.text) for it in self.items], dtype=float)
                v = (w - w.mean()) / (w.std() or 1.0)
                src = "derived"
            else:
                self._refuse_unread(name)
                missing = [it.id for it in self.items if name not in it.fields]
                if len(missing) == self.n_items:
                    raise DataError(self.source, None, f"unknown covariate {name!r}; available: "
                                    f"{', '.join(self.available_covariates())}")
                if missing:
                    raise DataError(self.source, None, f"covariate {name!r} is missing for "
                                    f"{len(missing)} item(s) (e.g. {missing[0]!r}); every "
                                    "item needs it")
                v = np.array([it.fields[name] for it in self.items], dtype=float)
                src = "field"
            mean, sd = float(v.mean()), float(v.std())
            cols.append(v - mean)
            info.append(CovariateInfo(name, src, mean, sd))
        X = np.column_stack(cols) if cols else np.zeros((self.n_items, 0))
        return X, info


def parse_covariates(text: str | None) -> list[str]:
    """'length,markdown' -> ['length', 'markdown']; '' or 'none' -> []."""
    if text is None:
        return list(DEFAULT_COVARIATES)
    names = [t.strip() for t in text.split(",") if t.strip()]
    if names in (["none"], ["-"]):
        return []
    if len(set(names)) != len(names):
        raise ValueError(f"covariates: a name is repeated in {text!r}")
    return names


# ---- prompt groups ------------------------------------------------------------------------

def prompt_key(prompt: str) -> str:
    """The text a prompt group is keyed by: Unicode NFC, CRLF/CR line endings as LF, outer
    whitespace stripped. These differ between copies of one prompt for reasons no reader can
    see (an editor's normalization form, a file written on Windows, a trailing space), and
    split one prompt's items into groups with a top-k each. Whitespace inside the prompt is
    kept: there it can be the content (a code block's indentation, a poem's lines), and two
    prompts differing in it may ask different things; `_near_note` says when that is all
    two groups differ in."""
    return unicodedata.normalize("NFC", prompt.replace("\r\n", "\n").replace("\r", "\n")
                                 ).strip()


def _fold_prompts(items: list[PoolItem]) -> tuple[list[PoolItem], list[tuple[PoolItem, str]]]:
    """Items with each prompt replaced by the first prompt of its `prompt_key` (so a group's
    items are judged under one prompt, as `rank.live.pair_item` requires), and the items
    whose prompt was replaced, as given, with the prompt they now carry."""
    first: dict[str, str] = {}
    out, folded = [], []
    for it in items:
        rep = first.setdefault(prompt_key(it.prompt), it.prompt)
        if rep == it.prompt:
            out.append(it)
        else:
            folded.append((it, rep))
            out.append(replace(it, prompt=rep))
    return out, folded


def _what_differs(given: str, rep: str) -> list[str]:
    """What a prompt differs in from the prompt of its group it was folded into."""
    nl = lambda t: t.replace("\r\n", "\n").replace("\r", "\n")  # noqa: E731
    nfc = lambda t: unicodedata.normalize("NFC", t)  # noqa: E731
    out = []
    if nl(given).strip() != nl(rep).strip():
        out.append("Unicode normalization, NFC vs NFD")
    if nl(nfc(given)) != nl(nfc(rep)):
        out.append("outer whitespace")
    if nfc(given).strip() != nfc(rep).strip():
        out.append("line endings, CRLF vs LF")
    return out


def prompt_label(prompt: str, n: int = 6) -> str:
    """A prompt's first words, quoted (invisible characters as their escapes), for a group's
    label."""
    words = prompt.split()
    return repr(" ".join(words[:n]) + (" ..." if len(words) > n else ""))


def _char(text: str, i: int) -> str:
    if i >= len(text):
        return "the prompt's end"
    c = text[i]
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed character')} ({c!r})"


def prompt_difference(a: str, b: str, a_name: str, b_name: str) -> str:
    """Where prompts ``a`` and ``b`` first differ (compared as `prompt_key`s): the character
    position (1-based) and the two characters by code point and name, so a difference no
    label shows (a second space, a no-break space, a zero-width joiner, a word past the
    label's) is named."""
    a, b = prompt_key(a), prompt_key(b)
    i = next((j for j, (x, y) in enumerate(zip(a, b, strict=False)) if x != y),
             min(len(a), len(b)))
    return f"character {i + 1} is {_char(a, i)} in {a_name}, {_char(b, i)} in {b_name}"


def _folded_note(source: str, folded: list[tuple[PoolItem, str]], group_of: dict[str, int],
                 sizes: list[int]) -> list[str]:
    """A note on the items `_fold_prompts` moved into a group whose first prompt they did
    not match exactly: how many, in what their prompts differed, which groups."""
    if not folded:
        return []
    kinds: dict[str, int] = {}
    groups: dict[int, list[PoolItem]] = {}
    for it, rep in folded:
        for kind in _what_differs(it.prompt, rep):
            kinds[kind] = kinds.get(kind, 0) + 1
        groups.setdefault(group_of[rep], []).append(it)
    shown = "; ".join(
        (f"g{g} " if len(sizes) > 1 else "") + f"{prompt_label(its[0].prompt)} ({len(its)} of "
        f"its {sizes[g]} items, first {its[0].id!r}"
        + (f", line {its[0].line}" if its[0].line is not None else "") + ")"
        for g, its in list(groups.items())[:3]) + ("; ..." if len(groups) > 3 else "")
    what = ", ".join(f"{kind} ({n} item{'s' if n > 1 else ''})" for kind, n in kinds.items())
    n = len(folded)
    return [f"{source}: {n} of {sum(sizes)} items give their prompt in another form than the "
            f"first item of its group, differing only in {what}; they are ranked in that "
            f"group and judged under its first item's prompt (a prompt group is its prompt in "
            f"Unicode NFC with outer whitespace stripped): {shown}"]


def _invisible(c: str) -> bool:
    return c.isspace() or unicodedata.category(c) in ("Cf", "Cc")


def _near_note(source: str, prompts: list[str]) -> list[str]:
    """A note on prompt groups whose prompts differ only in whitespace inside them or in
    invisible characters (a zero-width joiner, a byte order mark): ranked apart, which is
    right when they are different prompts and splits one prompt's top-k when they are not."""
    by: dict[str, list[int]] = {}
    for g, p in enumerate(prompts):
        by.setdefault("".join(c for c in p if not _invisible(c)), []).append(g)
    near = [gs for gs in by.values() if len(gs) > 1]
    if not near:
        return []
    shown = "; ".join(
        f"g{gs[0]} {prompt_label(prompts[gs[0]])} and " + ", ".join(
            f"g{g} ({prompt_difference(prompts[g], prompts[gs[0]], f'g{g}', f'g{gs[0]}')})"
            for g in gs[1:6]) + (", ..." if len(gs) > 6 else "")
        for gs in near[:3]) + ("; ..." if len(near) > 3 else "")
    return [f"{source}: {sum(len(gs) for gs in near)} prompt groups have prompts that differ "
            f"only in whitespace inside them or in invisible characters: {shown}; they are "
            "ranked as different prompts, each with its own top-k; if they are one prompt, "
            "give its items the same prompt text"]


# ---- loaders --------------------------------------------------------------------------------

def _int(source: str, params: dict[str, str], key: str, default: int, lo: int) -> int:
    raw = params.get(key)
    if raw in (None, ""):
        return default
    try:
        v = int(raw)
    except ValueError:
        raise DataError(source, None, f"parameter {key!r}: expected an integer, got {raw!r}")\
            from None
    if v < lo:
        raise DataError(source, None, f"parameter {key!r}: expected >= {lo}, got {v}")
    return v


def controlled_pool(params: dict[str, str], source: str = "builtin:controlled",
                    k_option: str | None = None) -> Pool:
    """The controlled benchmark pool of a spec's parameters. ``k_option``: the caller's
    option that set k (`--k` on the command line, `k` in Python) when k is not the spec's
    own `&k=`, so a message about k names what the user gave."""
    allowed = {"seed", "n", "k", "topic", "design"}
    bad = sorted(set(params) - allowed)
    if bad:
        raise DataError(source, None, f"unknown parameter(s) {', '.join(bad)}; allowed: "
                                      f"{', '.join(sorted(allowed))}")
    seed = _int(source, params, "seed", 0, 0)
    n = _int(source, params, "n", 30, 3)
    k = _int(source, params, "k", 5, 1)
    topic = params.get("topic") or None
    if topic is not None and topic not in BANKS:
        raise DataError(source, None, f"parameter 'topic': expected one of "
                                      f"{', '.join(sorted(BANKS))}, got {topic!r}")
    design = params.get("design") or "balanced"
    if design not in DESIGNS:
        raise DataError(source, None, f"parameter 'design': expected one of "
                                      f"{', '.join(DESIGNS)}, got {design!r}")
    k_name = k_option if k_option is not None and "k" in params else "&k="
    if k_option is not None and "k" in params:
        k_given = f" (given as {k_option})"
    else:
        k_given = "" if "k" in params else " (its default)"
    n_given = "" if "n" in params else " (its default)"
    if k >= n:
        raise DataError(source, None, f"need k < n, got k={k}{k_given}, n={n}{n_given}: give "
                                      f"a smaller {k_name} or a larger &n=")
    try:
        cp = build_controlled_pool(topic=topic, n_items=n, k=k, seed=seed, design=design)
    except RuntimeError as exc:
        raise DataError(source, None, f"{exc}; try a larger &n= or a smaller {k_name}") \
            from None
    items = [PoolItem(id=it.id, prompt=cp.question, text=it.text, quality=float(it.quality),
                      fields={"verbosity": float(it.verbosity), "n_true": float(it.n_true),
                              "n_false": float(it.n_false),
                              "n_statements": float(it.n_true + it.n_false)})
             for it in cp.items]
    return Pool(items=items, source=source, k=k,
                meta={"kind": "controlled", "topic": cp.topic, "seed": seed, "design": design,
                      "k": k, "n": n})


def _number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def _pool_file(path: str, kind: str) -> Path:
    """The file a `kind:PATH` pool names, refused when no path is given or it does not
    exist."""
    if not path:
        raise DataError(kind, None, f"no path given; expected {kind}:PATH")
    p = Path(path).expanduser()
    if not p.exists():
        raise DataError(str(p), None, "no such file")
    return p


def jsonl_pool(path: str, source: str | None = None) -> Pool:
    p = _pool_file(path, "jsonl")
    return _records_pool(p, read_jsonl(p), source or f"jsonl:{path}", "jsonl")


def csv_pool(path: str, source: str | None = None) -> Pool:
    """A pool from a CSV file (comma, semicolon or tab separated, `textfile.read_csv`): the
    columns id, prompt, response, quality (optional) and numeric covariate columns, as a
    JSON Lines pool's fields; numbers are read from their text, an empty cell is no value.
    A spreadsheet's pool was refused as "kind must be a word"."""
    from judgeaudit.data.loaders._common import read_text
    from judgeaudit.textfile import TextProblem, read_csv

    p = _pool_file(path, "csv")
    src = source or f"csv:{path}"
    try:
        rows = read_csv(read_text(p))[1]
    except TextProblem as e:
        raise DataError(str(p), e.line, e.problem) from None
    # column names as written after a comma and a space ("id, prompt, response") are the
    # names without it: they read as missing fields
    return _records_pool(p, [(line, {k.strip(): v if k.strip() in ("id", "prompt", "response")
                                     else _csv_number(v) for k, v in rec.items()})
                             for line, rec in rows], src, "csv")


def _csv_number(text: Any) -> Any:
    """A CSV cell as a number where it reads as one, None where empty, else the text (which
    `_records_pool` then refuses for quality, and `Pool.covariates` for a covariate asked
    for by its column's name)."""
    t = str(text).strip()
    if not t:
        return None
    try:
        return float(t)
    except ValueError:
        return t


def _records_pool(p: Path, records: Any, src: str, kind: str) -> Pool:
    """A pool from (line, record) pairs, each record checked as a pool item. An empty
    response follows the data loaders' rule (`data.loaders.hf`, `data.loaders.jsonl`): in a
    CSV an empty cell is a missing value, refused; in JSON Lines "" is an empty answer, read
    as given but counted in the pool's notes (it ran without a word)."""
    items = []
    seen: dict[str, int] = {}
    lines: list[Any] = []  # each item's line, for a message about it
    empty: list[tuple[Any, str]] = []  # (line, id) of each item with an empty response
    for lineno, obj in records:
        lines.append(lineno)
        for key in ("id", "prompt", "response"):
            if key not in obj:
                raise DataError(str(p), lineno, f"field {key!r}: missing (required)")
            if not isinstance(obj[key], str):
                raise DataError(str(p), lineno, f"field {key!r}: expected a string, got "
                                                f"{type(obj[key]).__name__}")
        if not obj["id"]:
            raise DataError(str(p), lineno, "field 'id': must not be empty")
        if obj["id"] in seen:
            first = (f"items[{seen[obj['id']]}]" if kind == "list"
                     else f"line {seen[obj['id']]}")
            raise DataError(str(p), lineno, f"field 'id': {obj['id']!r} already used at "
                                            f"{first}")
        seen[obj["id"]] = lineno
        if not obj["response"].strip():
            if kind == "csv":
                raise DataError(str(p), lineno, "field 'response': empty; a response must not "
                                "be empty (in a CSV an empty cell is a missing value, and a "
                                "comparison with a missing answer says nothing about the "
                                "judge)")
            empty.append((lineno, obj["id"]))
        quality = None
        if obj.get("quality") is not None:
            quality = _number(obj["quality"])
            if quality is None:
                raise DataError(str(p), lineno, f"field 'quality': expected a finite number, "
                                                f"got {obj['quality']!r}")
        extras = {k: v for k, v in obj.items() if k not in RESERVED_FIELDS}
        numbers = {k: _number(v) for k, v in extras.items()}
        items.append(PoolItem(id=obj["id"], prompt=obj["prompt"], text=obj["response"],
                              quality=quality,
                              fields={k: v for k, v in numbers.items() if v is not None},
                              unread={k: v for k, v in extras.items()
                                      if v is not None and numbers[k] is None},
                              line=lineno))
    if not items:
        raise DataError(str(p), None, "no items (empty file)")
    known = [it.quality is not None for it in items]
    if any(known) and not all(known):
        first = next(i for i, k in enumerate(known) if not k)
        raise DataError(str(p), lines[first], f"'quality' is given for some items but not for "
                                      f"{items[first].id!r}: give it for all or none")
    notes = []
    if empty:
        line, iid = empty[0]
        notes.append(f"{src}: {len(empty)} of {len(items)} items have an empty response "
                     f"(first: {iid!r}, line {line}); they are judged as empty answers")
    return Pool(items=items, source=src, meta={"kind": kind, "path": str(p)}, notes=notes)


class PoolRecords(str):
    """A pool given as Python records (the API's ``items=[{"id", "prompt", "response",
    "quality"?, ...}, ...]``, as `scoring_bias` takes its data): a string, so the Config and
    the results document hold its description ("a list of 25 items"), carrying the records
    `load_pool` builds the pool from."""

    records: list[Any]

    def __new__(cls, records: Any) -> PoolRecords:
        rows = list(records)
        self = super().__new__(cls, f"a list of {len(rows)} items")
        self.records = rows
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # copies keep the records
        return (PoolRecords, (self.records,))


def records_pool(records: PoolRecords) -> Pool:
    """The pool of `PoolRecords`, each record checked as a JSON Lines pool's line is; a
    problem names the record as items[i]."""
    rows = []
    for i, rec in enumerate(records.records):
        if not isinstance(rec, Mapping):
            raise ValueError(f"items[{i}]: expected a dict with id, prompt and response, got "
                             f"{type(rec).__name__}")
        rec = dict(rec)
        if isinstance(rec.get("id"), int) and not isinstance(rec.get("id"), bool):
            rec["id"] = str(rec["id"])  # as a JSON Lines file's 1 would be read
        rows.append((i, rec))
    if len(rows) < 2:
        raise ValueError(f"items: a ranking pool needs at least 2 items, got {len(rows)}")
    try:
        return _records_pool(Path("items"), rows, str(records), "list")
    except DataError as e:
        where = "" if e.where is None else f"[{e.where}]"
        raise ValueError(f"items{where}: {e.problem}") from None


def bare_pool_path(text: str) -> bool:
    """A pool given as a file path without a kind (`pool.jsonl`, `pool.csv`, `pool.tsv`, in
    any case, and compressed: `pool.jsonl.gz`, `.bz2`, `.xz`, as the readers open them),
    which is no spec to parse. `POOL.JSONL` and `pool.jsonl.gz` said "kind must be a
    word". `PoolRecords` (the API's list of items) are no spec to parse either: True, so
    rank-eval's plan (`rank.run_eval.plan_cases`) takes them as one fixed pool."""
    if isinstance(text, PoolRecords):
        return True
    t = text.strip()
    return (_bare_kind(t) is not None
            and not t.lower().startswith(("jsonl:", "csv:", "builtin:")))


def _bare_kind(path: str) -> str | None:
    """The pool kind a file path's suffix names ("jsonl", "csv"), or None."""
    from judgeaudit.textfile import data_suffix

    return {".jsonl": "jsonl", ".csv": "csv", ".tsv": "csv"}.get(data_suffix(path))


def load_pool(spec: str, k: int | None = None, k_option: str = "k") -> Pool:
    """A ranking pool from `builtin:controlled[?...]`, `jsonl:PATH` or `PATH.jsonl`,
    `csv:PATH` or `PATH.csv`/`.tsv`. `k`:
    the top-k size asked for (`--k`); a built-in pool without its own `&k=` is built for it
    (its design keeps the k-th and (k+1)-th qualities apart). `k_option`: that option's name
    as the caller typed it (`--k` or `k`), for a message about it. `PoolRecords` (the API's
    list of items) are built as they are."""
    if isinstance(spec, PoolRecords):
        return records_pool(spec)
    text = spec.strip()
    if bare_pool_path(text):
        return (jsonl_pool if _bare_kind(text) == "jsonl" else csv_pool)(text, source=text)
    sp = parse_spec(text)
    if sp.kind == "builtin":
        if sp.name != "controlled":
            raise DataError(text, None, "the built-in ranking pool is builtin:controlled")
        params = dict(sp.params)
        from_caller = k is not None and "k" not in params
        if from_caller:
            params["k"] = str(k)
        return controlled_pool(params, source=text, k_option=k_option if from_caller else None)
    if sp.kind == "jsonl":
        if sp.params:
            raise DataError(text, None, f"jsonl pools take no parameters, got "
                                        f"{', '.join(sp.params)}")
        return jsonl_pool(sp.name, source=text)
    if sp.kind == "csv":
        if sp.params:
            raise DataError(text, None, f"csv pools take no parameters, got "
                                        f"{', '.join(sp.params)}")
        return csv_pool(sp.name, source=text)
    raise DataError(text, None, "unknown pool kind; expected builtin:controlled[?seed=&n=&k=&"
                                "topic=&design=], jsonl:PATH or csv:PATH")


def load_trusted(path: str | Path, pool: Pool) -> np.ndarray:
    """Trusted labels for the gate: JSON Lines `{"better": ID, "worse": ID}` or a CSV with
    columns better,worse. Returns rows (better index, worse index, 1)."""
    from judgeaudit.data.loaders._common import read_text
    from judgeaudit.textfile import TextProblem, read_csv

    p = Path(path).expanduser()
    if not p.exists():
        raise DataError(str(p), None, "no such file")
    index = {it.id: i for i, it in enumerate(pool.items)}
    rows: list[tuple[int, dict[str, Any]]]
    if _bare_kind(str(p)) == "csv":  # trusted.csv.gz too (it was read as JSON Lines)
        try:
            header, rows = read_csv(read_text(p))
        except TextProblem as e:
            raise DataError(str(p), e.line, e.problem) from None
        if not {"better", "worse"} <= set(header):
            raise DataError(str(p), 1, "expected a header with columns better,worse")
    else:
        rows = read_jsonl(p)
    out = []
    for lineno, rec in rows:
        ij = []
        for key in ("better", "worse"):
            if key not in rec:
                raise DataError(str(p), lineno, f"field {key!r}: missing (required)")
            v = str(rec[key])
            if v not in index:
                raise DataError(str(p), lineno, f"field {key!r}: {v!r} is not an item id of "
                                                f"the pool {pool.source}")
            ij.append(index[v])
        if ij[0] == ij[1]:
            raise DataError(str(p), lineno, "better and worse name the same item")
        out.append((ij[0], ij[1], 1.0))
    if not out:
        raise DataError(str(p), None, "no trusted pairs")
    return np.array(out, dtype=float)
