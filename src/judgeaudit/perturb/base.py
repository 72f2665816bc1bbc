"""The perturbation contract and registry.

A perturbation changes one side of a pairwise item (a response, or the instruction) in a way
that should not change which response is better: a citation, a tone, padding, markdown.
Each one is a registered class; `perturb_items` applies it to many items, seeded per item
(`random.Random(f"{seed}:{name}:{item.id}")`), so results are deterministic and do not
depend on item order. Every result says whether the answer-bearing content survived
(`preserved`); callers drop and count the ones that did not.

Order-dependent text. Some perturbations must name a response by its presented letter
("90% of people believe Response B is better", "answer B"), and presentation order is chosen
later by the judge. Such text carries a slot `<<LETTER:response_1>>` / `<<LETTER:response_2>>`
naming the canonical response (`slot(side)`, `judgeaudit.data.slots`, re-exported here); the
judge fills the slots per order with `render_order(item, order)` when it builds each request.
`apply` marks the item as having slots (a `LetterSlots` in its metadata) and picks a tag its
data does not contain, so only slots made here are ever filled, never data that looks like one.
"""

from __future__ import annotations

import abc
import random
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from judgeaudit.data.schema import PairwiseItem, PointwiseItem
from judgeaudit.data.slots import SLOT_RE as SLOT_RE  # re-exported for perturbations
from judgeaudit.data.slots import SLOTS_KEY, LetterSlots, free_tag, using_tag
from judgeaudit.data.slots import needs_order as needs_order
from judgeaudit.data.slots import render_order as render_order
from judgeaudit.data.slots import slot as slot
from judgeaudit.perturb.preserve import answer_preserved

Target = Literal["response_1", "response_2", "prompt"]
TargetSpec = Literal["worse", "better", "both", "response_1", "response_2", "prompt"]

SIDES: tuple[Target, Target] = ("response_1", "response_2")


class PerturbError(ValueError):
    """Bad use of a perturbation: unknown name or option, a target the item cannot give."""


class NotApplicable(PerturbError):
    """The text cannot take this perturbation: its cue is already there (markdown on a
    markdown answer, a citation on a cited one) or the added text would not fit it (English
    filler on a Chinese answer). Measuring such an item would score a broken or doubled cue
    as the bias, so it is left out and counted (`PerturbResult.not_applicable`)."""


# Scripts in which one character is a word or a syllable (Chinese, Japanese, Korean, Yi): a
# character of theirs standing alone is still language, not a symbol. Keys are the first word
# of the character's Unicode name (`_script`).
_WORD_CHARACTER_SCRIPTS = frozenset({"CJK", "IDEOGRAPHIC", "HIRAGANA", "KATAKANA",
                                     "KATAKANA-HIRAGANA", "HANGUL", "YI", "BOPOMOFO"})
_JOINERS = frozenset("\u200c\u200d")  # zero-width (non-)joiner: inside Persian, Indic words


def _script(c: str) -> str | None:
    """The script of letter `c` as the first word of its Unicode name ("LATIN", "GREEK",
    "CJK", ...), or None for a letter of no script (modifier letters such as the IPA stress
    mark ˈ)."""
    word = unicodedata.name(c, "").split(" ", 1)[0]
    return None if word in ("", "MODIFIER") else word


def _word_letters(text: str) -> tuple[int, int]:
    """(Latin, other) letters of the words of `text`: what `non_latin_share` compares.

    Why not every letter: math, units and notation borrow letters without their language
    (θ = π/4, 5 µg, 10 Ω, ℵ₀, Ｆｕｌｌ-width, 1ª), and counting them called English math
    Greek. So the text is NFKC-normalised first (full-width and mathematical letters,
    ordinal indicators, µ/Ω signs become the plain letters they stand for), then split into
    words: runs of letters of one script, with combining marks. A letter standing alone --
    no letter of its script or sign of its script next to it (θ, x, µ in µg, Δ in Δx) -- is a
    symbol and not counted, in any script; a word of two or more counts every letter (Greek
    prose is Greek). A script's own signs count toward a word's size (Hindi दो is a consonant
    and a vowel sign: a word), generic diacritics do not (θ̂, x̄ stay symbols). In Chinese,
    Japanese, Korean and Yi one character is a word or a syllable, so every one counts."""
    latin = other = 0
    key: str | None = None
    letters = size = 0

    def close() -> None:
        nonlocal latin, other
        if key is None or not (size >= 2 or key in _WORD_CHARACTER_SCRIPTS):
            return
        if key == "LATIN":
            latin += letters
        else:
            other += letters

    for c in unicodedata.normalize("NFKC", text):
        if c.isalpha():
            script = _script(c)
            if script is not None and script == key:
                letters += 1
                size += 1
                continue
            close()
            key, letters, size = script, (script is not None), (script is not None)
        elif key is not None and (unicodedata.category(c).startswith("M") or c in _JOINERS):
            if c not in _JOINERS and not unicodedata.name(c, "").startswith("COMBINING"):
                size += 1
        else:
            close()
            key, letters, size = None, 0, 0
    close()
    return latin, other


def non_latin_share(text: str) -> float:
    """Share of the letters in the words of `text` that are not Latin script (0.0 with no
    words): the language of its prose, with symbols (θ, µ, x) and look-alike forms
    (full-width Ｈｉ, 1ª) left out or read as Latin; `_word_letters` gives the rule."""
    latin, other = _word_letters(text)
    if latin + other == 0:
        return 0.0
    return other / (latin + other)


# Above this share of non-Latin letters a text is taken to be in another language: English
# added to it is a language switch as well as the cue.
MAX_NON_LATIN = 0.5


def english_misfit(text: str, what: str) -> str | None:
    """Why English `what` ("the padding") does not fit `text` (mostly not Latin script), or
    None when it does: the one detector every perturbation that adds English to a response
    uses (`Perturbation.adds_english`)."""
    share = non_latin_share(text)
    if share > MAX_NON_LATIN:
        return (f"{what} would be English in a text {share:.0%} of whose letters are not "
                "Latin script")
    return None


@dataclass(frozen=True)
class Option:
    """One option of a perturbation: default value, allowed values (None = any) and a
    one-line description. A None default means "chosen per item by the seeded rng"."""

    default: Any
    choices: tuple[Any, ...] | None = None
    doc: str = ""
    kind: type | None = None  # coerce string values (CLI) to this type


@dataclass(frozen=True)
class Edit:
    """What a text transform returns: the new text, the variant name, which phrasing of the
    library was used, strings added on purpose that may carry digits (`ignore` for the
    preservation check) and extra metadata."""

    text: str
    variant: str
    phrasing: int | dict[str, int] | None = None
    ignore: tuple[str, ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Side:
    """Facts about the side being changed, for transforms that need them."""

    target: Target
    item: PairwiseItem | PointwiseItem
    answer: str | None       # the answer this side gives, when the item says so
    competitor: str | None   # the other side's answer, when known

    @property
    def prompt(self) -> str:
        return self.item.prompt


@dataclass(frozen=True)
class PerturbResult:
    """One perturbed item. `changed` is the side changed (for "both": response_1, with
    response_2 in `also_changed`); `preserved` False means the answer-preservation check
    failed (or nothing changed) and `reason` says why: drop such results and count them."""

    item: PairwiseItem | PointwiseItem
    changed: Target | Literal["response"]
    variant: str
    preserved: bool
    reason: str | None
    original: PairwiseItem | PointwiseItem | None = None
    also_changed: tuple[Target, ...] = ()
    # The perturbation does not apply to this text (`Perturbation.not_applicable`): nothing
    # was changed; `reason` says why.
    not_applicable: bool = False


def worse_side(item: PairwiseItem) -> Target | None:
    return {1: "response_2", 2: "response_1"}.get(item.label or -1)  # type: ignore[return-value]


def other(side: Target) -> Target:
    return "response_2" if side == "response_1" else "response_1"


def resolve_target(item: PairwiseItem, target: str) -> tuple[Target, ...]:
    """Canonical side(s) for a target spec: worse/better need a label of 1 or 2."""
    if target in ("response_1", "response_2", "prompt"):
        return (target,)  # type: ignore[return-value]
    if target == "both":
        return SIDES
    if target in ("worse", "better"):
        w = worse_side(item)
        if w is None:
            raise PerturbError(
                f"item {item.id!r}: target {target!r} needs a label of 1 or 2, "
                f"the item has label {item.label!r}"
            )
        return (w,) if target == "worse" else (other(w),)
    raise PerturbError(
        f"unknown target {target!r}; expected worse, better, both, response_1, response_2, prompt"
    )


def side_answers(item: PairwiseItem | PointwiseItem, side: str) -> tuple[str | None, str | None]:
    """(answer of this side, answer of the other side) from item.metadata["answer"] (the
    correct answer) and ["wrong_answer"] (the worse response's answer), when known."""
    md = item.metadata
    right = md.get("answer")
    wrong = md.get("wrong_answer")
    right = None if right is None else str(right)
    wrong = None if wrong is None else str(wrong)
    if isinstance(item, PointwiseItem):
        return (right if side == "response" else None), None
    w = worse_side(item)
    if side == "prompt" or w is None:
        return None, None
    return (wrong, right) if side == w else (right, wrong)


class Perturbation(abc.ABC):
    """Base class. Subclasses set the class attributes and implement `transform` (one text
    in, one `Edit` out); `apply` does the rest (ids, metadata, the preservation check)."""

    name: ClassVar[str]
    title: ClassVar[str]
    description: ClassVar[str]
    target_default: ClassVar[Literal["worse", "better", "both", "prompt"]] = "worse"
    options: ClassVar[dict[str, Option]] = {}
    # Sides changed besides the target (compassion labels both responses).
    touches_other: ClassVar[bool] = False
    # Whether `apply_pointwise` makes sense (the transform reads no pairwise facts).
    pointwise: ClassVar[bool] = True
    # What this perturbation adds to a response in English ("the padding", "the tone
    # lines"), or None when it adds no English prose to the side it measures (it changes the
    # prompt, reformats, or labels both sides alike). On a text mostly in another script the
    # addition is a language switch as well as the cue, so such texts are left out
    # (`english_added`, `english_misfit`).
    adds_english: ClassVar[str | None] = None

    @abc.abstractmethod
    def transform(self, text: str, side: Side, rng: random.Random, **opts: Any) -> Edit:
        """Perturb one text. `opts` are validated and defaulted (None = choose with rng)."""

    def not_applicable(self, text: str, side: Side, **opts: Any) -> str | None:
        """Why `text` cannot take this perturbation (its cue is already there, or the added
        text would not fit it), or None. Checked before `transform`, so the item is left
        out and counted instead of being scored with a doubled or broken cue."""
        return None

    def english_added(self, **opts: Any) -> str | None:
        """What these options add to a response in English (None: nothing); by default
        `adds_english`. Perturbations whose English depends on an option override it."""
        return self.adds_english

    def _not_applicable(self, text: str, side: Side, opts: dict[str, Any]) -> str | None:
        """The cue already there (`not_applicable`), else English that would not fit."""
        why = self.not_applicable(text, side, **opts)
        if why is None and (what := self.english_added(**opts)) is not None:
            why = english_misfit(text, what)
        return why

    def _refuse(self, item: PairwiseItem | PointwiseItem, sides: Sequence[str],
                opts: dict[str, Any]) -> None:
        for s in sides:
            if isinstance(item, PointwiseItem):
                text, name = item.response, "response"
                side = Side("response_1", item, side_answers(item, "response")[0], None)
            else:
                text, name = getattr(item, s), s
                ans, comp = side_answers(item, s)
                side = Side(s, item, ans, comp)  # type: ignore[arg-type]
            why = self._not_applicable(text, side, opts) if text.strip() else None
            if why is not None:
                raise NotApplicable(f"{self.name} not applicable to {name}: {why}")

    def check(self, original: str, edit: Edit, side: Side) -> tuple[bool, str | None]:
        """Answer preservation; the default is `preserve.answer_preserved`."""
        return answer_preserved(
            original, edit.text, side.answer, competitor=side.competitor, ignore=edit.ignore
        )

    def other_edit(self, text: str, side: Side, rng: random.Random, edit: Edit,
                   **opts: Any) -> Edit | None:
        """For `touches_other` perturbations: the edit of the side not targeted."""
        return None

    # -- options -------------------------------------------------------------------------

    def resolve_options(self, options: dict[str, Any]) -> dict[str, Any]:
        unknown = set(options) - set(self.options)
        if unknown:
            known = ", ".join(f"{k} (default {o.default!r})" for k, o in self.options.items())
            raise PerturbError(
                f"perturbation {self.name!r}: unknown option(s) {sorted(unknown)}; "
                f"options: {known or 'none'}"
            )
        out: dict[str, Any] = {}
        for k, spec in self.options.items():
            v = options.get(k, spec.default)
            if v is not None and spec.kind is not None and not isinstance(v, spec.kind):
                try:
                    v = spec.kind(v)
                except (TypeError, ValueError):
                    raise PerturbError(
                        f"perturbation {self.name!r}: option {k}={v!r} is not a "
                        f"{spec.kind.__name__}"
                    ) from None
            if v is not None and spec.choices is not None and v not in spec.choices:
                raise PerturbError(
                    f"perturbation {self.name!r}: option {k}={v!r} not one of "
                    f"{', '.join(map(str, spec.choices))}"
                )
            out[k] = v
        return out

    def id_suffix(self, opts: dict[str, Any]) -> str:
        parts = [f"{k}={v}" for k, v in sorted(opts.items()) if v is not None]
        return f"~{self.name}" + (":" + ",".join(parts) if parts else "")

    # -- applying ------------------------------------------------------------------------

    def apply(
        self, item: PairwiseItem, target: Target | str, rng: random.Random, **options: Any
    ) -> PerturbResult:
        """Perturb `target` of one pairwise item (a canonical side, or worse/better/both)."""
        opts = self.resolve_options(options)
        sides = resolve_target(item, target)
        if self.target_default == "prompt" and sides != ("prompt",):
            raise PerturbError(f"perturbation {self.name!r} changes the prompt, not {target!r}")
        if self.target_default != "prompt" and "prompt" in sides:
            raise PerturbError(f"perturbation {self.name!r} changes a response, not the prompt")
        # The id names the options and, when not the default, the requested target.
        new_id = item.id + self.id_suffix(opts)
        if target != self.target_default:
            new_id += f"@{target}"

        self._refuse(item, sides, opts)  # NotApplicable: perturb_items counts it
        with using_tag(tag := free_tag(item)):
            return self._apply(item, target, rng, opts, sides, new_id, tag)

    def _apply(self, item: PairwiseItem, target: Target | str, rng: random.Random,
               opts: dict[str, Any], sides: tuple[Target, ...], new_id: str, tag: str
               ) -> PerturbResult:
        update: dict[str, str] = {}
        edits: list[Edit] = []
        also: list[Target] = []
        ok, reason = True, None
        for s in sides:
            text = getattr(item, s)
            ans, comp = side_answers(item, s)
            side = Side(s, item, ans, comp)
            edit = self.transform(text, side, rng, **opts)
            edits.append(edit)
            update[s] = edit.text
            good, why = self._checked(text, edit, side)
            if not good and ok:
                ok, reason = False, f"{s}: {why}"
            if self.touches_other and s != "prompt" and len(sides) == 1:
                o = other(s)
                oans, ocomp = side_answers(item, o)
                oside = Side(o, item, oans, ocomp)
                oedit = self.other_edit(getattr(item, o), oside, rng, edit, **opts)
                if oedit is not None:
                    update[o] = oedit.text
                    also.append(o)
                    good, why = self._checked(getattr(item, o), oedit, oside)
                    if not good and ok:
                        ok, reason = False, f"{o}: {why}"
        also.extend(sides[1:])
        variant = edits[0].variant
        phrasing: Any = edits[0].phrasing if len(edits) == 1 else [e.phrasing for e in edits]
        meta_extra: dict[str, Any] = {}
        for e in edits:
            meta_extra.update(e.meta)
        record = {
            "name": self.name, "target": target, "changed": sides[0],
            "also_changed": list(also), "variant": variant, "phrasing": phrasing,
            "options": {k: v for k, v in opts.items() if v is not None},
            "source_id": item.id, "preserved": ok, **meta_extra,
        }
        metadata = dict(item.metadata)
        metadata["perturbations"] = [*item.metadata.get("perturbations", []), record]
        metadata["perturbation"] = record
        slots = LetterSlots(tag)
        if any(slots.pattern().search(t) for t in update.values()):
            metadata[SLOTS_KEY] = slots  # render_order fills this item's slots, and only them
        new = item.model_copy(update={**update, "id": new_id, "metadata": metadata})
        return PerturbResult(new, sides[0], variant, ok, reason, item, tuple(also))

    def _checked(self, original: str, edit: Edit, side: Side) -> tuple[bool, str | None]:
        if not original.strip():
            return False, "the original text is empty"
        if edit.text == original:
            return False, "perturbation left the text unchanged"
        return self.check(original, edit, side)

    def apply_pointwise(
        self, item: PointwiseItem, rng: random.Random, **options: Any
    ) -> PerturbResult:
        """Perturb the response of a pointwise item (for the perturbations where that makes
        sense: `pointwise` is True)."""
        if not self.pointwise or self.target_default == "prompt":
            raise PerturbError(f"perturbation {self.name!r} has no pointwise form")
        opts = self.resolve_options(options)
        try:
            self._refuse(item, ("response",), opts)
        except NotApplicable as exc:
            return PerturbResult(item, "response", "", False, str(exc), item,
                                 not_applicable=True)
        ans, _ = side_answers(item, "response")
        side = Side("response_1", item, ans, None)
        edit = self.transform(item.response, side, rng, **opts)
        ok, reason = self._checked(item.response, edit, side)
        record = {
            "name": self.name, "target": "response", "changed": "response",
            "variant": edit.variant, "phrasing": edit.phrasing,
            "options": {k: v for k, v in opts.items() if v is not None},
            "source_id": item.id, "preserved": ok, **edit.meta,
        }
        metadata = dict(item.metadata)
        metadata["perturbations"] = [*item.metadata.get("perturbations", []), record]
        metadata["perturbation"] = record
        new = item.model_copy(update={
            "response": edit.text, "id": item.id + self.id_suffix(opts), "metadata": metadata,
        })
        return PerturbResult(new, "response", edit.variant, ok, reason, item)

    def info(self) -> dict[str, Any]:
        """What reports show about this perturbation."""
        return {
            "name": self.name, "title": self.title, "description": self.description,
            "target_default": self.target_default,
            "options": {k: {"default": o.default, "choices": list(o.choices or []), "doc": o.doc}
                        for k, o in self.options.items()},
        }


# -- registry --------------------------------------------------------------------------------

_REGISTRY: dict[str, type[Perturbation]] = {}


def register_perturbation(cls: type[Perturbation]) -> type[Perturbation]:
    """Class decorator: make a perturbation available by its `name`."""
    if getattr(cls, "name", None) in (None, ""):
        raise TypeError(f"{cls.__name__} has no name")
    clash = {"name", "target", "seed"} & set(cls.options)
    if clash:  # these are perturb_items' own keywords
        raise TypeError(f"{cls.__name__}: option name(s) {sorted(clash)} are reserved")
    _REGISTRY[cls.name] = cls
    return cls


def _load_builtin() -> None:
    import importlib
    import pkgutil

    import judgeaudit.perturb as pkg

    for mod in pkgutil.iter_modules(pkg.__path__):
        if mod.name not in ("base", "preserve"):
            importlib.import_module(f"{pkg.__name__}.{mod.name}")


def available() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get(name: str) -> Perturbation:
    _load_builtin()
    try:
        return _REGISTRY[name]()
    except KeyError:
        raise PerturbError(
            f"unknown perturbation {name!r}; available: {', '.join(sorted(_REGISTRY))}"
        ) from None


def item_rng(seed: int, name: str, item_id: str) -> random.Random:
    return random.Random(f"{seed}:{name}:{item_id}")


def perturb_items(
    items: Iterable[PairwiseItem],
    name: str,
    *,
    target: TargetSpec | None = None,
    seed: int = 0,
    **options: Any,
) -> list[PerturbResult]:
    """Apply perturbation `name` to every item, each with its own seeded rng. `target`
    defaults to the perturbation's `target_default`. Items whose target cannot be resolved
    (worse/better on an unlabelled or tied item) come back with preserved=False and the
    reason, so callers count them like other drops."""
    p = get(name)
    tgt = target or p.target_default
    p.resolve_options(options)  # bad options or targets fail here, once, not per item
    if (tgt == "prompt") != (p.target_default == "prompt"):
        where = "the prompt" if p.target_default == "prompt" else "a response"
        raise PerturbError(f"perturbation {name!r} changes {where}; target {tgt!r} is invalid")
    out: list[PerturbResult] = []
    for it in items:
        try:
            out.append(p.apply(it, tgt, item_rng(seed, name, it.id), **options))
        except PerturbError as exc:  # this item cannot take it (e.g. no label for "worse")
            out.append(PerturbResult(it, "prompt" if tgt == "prompt" else "response_1", "",
                                     False, str(exc), it,
                                     not_applicable=isinstance(exc, NotApplicable)))
    return out


def perturb_pointwise(
    items: Iterable[PointwiseItem], name: str, *, seed: int = 0, **options: Any
) -> list[PerturbResult]:
    """Pointwise counterpart of `perturb_items`: perturbs each item's response."""
    p = get(name)
    return [p.apply_pointwise(it, item_rng(seed, name, it.id), **options) for it in items]


def choose(rng: random.Random, library: Sequence[str]) -> tuple[int, str]:
    """A seeded pick from a phrasing library: (index, phrasing)."""
    i = rng.randrange(len(library))
    return i, library[i]

