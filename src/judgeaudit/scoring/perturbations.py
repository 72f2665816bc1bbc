"""Scoring-prompt perturbations ("Evaluating Scoring Bias in LLM-as-a-Judge", restated in
issue 5): the instance (instruction + response) never changes; what changes is how the scale
is presented, and the task-description sentences (T) change with it so the prompt stays
coherent.

- `baseline`: rubric ascending 1..5, Arabic ids, no reference answer.
- `order_desc`: rubric listed 5..1; `order_random`: a seeded per-item permutation (never the
  ascending or descending one).
- `ids_letters` (E..A: E worst, A best), `ids_roman` (i..v), and any user mapping
  (`ids:NAME=w,x,y,z,t`, ids listed for scores 1..5).
- `ref_1` .. `ref_5`: a reference answer labelled with score k. Ref-5 is the dataset's own
  reference where it has one; Ref-1..4 come from the generation-review pipeline
  (`judgeaudit.scoring.references`) or any {item_id: {k: text}} map.

Each perturbation yields one `PromptVariant` per item (None where it cannot apply, e.g. no
Ref-k text for that item), which `RubricJudge.request(item, variant=...)` renders.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.judges.pointwise import ARABIC_IDS, PromptVariant

K = 5
ASCENDING = tuple(range(1, K + 1))
DESCENDING = tuple(range(K, 0, -1))

# References: item id -> {score k: reference text}.
References = Mapping[str, Mapping[int, str]]


@dataclass(frozen=True)
class IdScheme:
    """Score ids: `ids[k-1]` names score k. `kind` is how T refers to one id."""

    name: str
    ids: tuple[str, ...]
    kind: str

    def __post_init__(self) -> None:
        if len(self.ids) != K or len(set(self.ids)) != K or not all(
                i.isascii() and i.isalnum() for i in self.ids):
            raise ValueError(f"id scheme {self.name!r}: need {K} distinct ids of ASCII "
                             f"letters or digits (A-Z, a-z, 0-9, so text answers parse), got "
                             f"{list(self.ids)}")
        if len({i.lower() for i in self.ids}) != K:
            raise ValueError(f"id scheme {self.name!r}: ids must differ ignoring case (answers "
                             "are parsed case-insensitively)")


ARABIC = IdScheme("arabic", ARABIC_IDS, "number")
LETTERS = IdScheme("letters", ("E", "D", "C", "B", "A"), "letter grade")
ROMAN = IdScheme("roman", ("i", "ii", "iii", "iv", "v"), "Roman numeral")
SCHEMES = {s.name: s for s in (ARABIC, LETTERS, ROMAN)}


def parse_scheme(text: str) -> IdScheme:
    """`NAME=w,x,y,z,t` (ids for scores 1..5) -> an IdScheme; errors say what was expected."""
    name, sep, rest = text.partition("=")
    name = name.strip()
    if not sep or not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"id mapping {text!r}: expected NAME=id1,id2,id3,id4,id5 (ids for "
                         "scores 1..5), e.g. grades=F,D,C,B,A")
    ids = tuple(x.strip() for x in rest.split(","))
    if len(ids) != K:
        raise ValueError(f"id mapping {text!r}: expected {K} comma-separated ids, got {len(ids)}")
    return IdScheme(name, ids, "label")


@dataclass(frozen=True)
class ScoringPerturbation:
    """One prompt template of the study: rubric order, id scheme, optional reference score."""

    name: str
    description: str
    order_kind: str = "ascending"        # ascending | descending | random
    scheme: IdScheme = ARABIC
    reference_score: int | None = None
    seed: int = 0

    def order_for(self, item_id: str) -> tuple[int, ...]:
        if self.order_kind == "ascending":
            return ASCENDING
        if self.order_kind == "descending":
            return DESCENDING
        rng = random.Random(f"scoring-order:{self.seed}:{item_id}")
        order = list(ASCENDING)
        while tuple(order) in (ASCENDING, DESCENDING):
            rng.shuffle(order)
        return tuple(order)

    def scale_note(self) -> str:
        ids = self.scheme.ids
        where = {"ascending": "from the lowest score to the highest",
                 "descending": "from the highest score to the lowest",
                 "random": "in no particular order"}[self.order_kind]
        return (f"The scale has five levels, each named by a {self.scheme.kind}: {ids[0]} is "
                f"the worst and {ids[-1]} the best ({', '.join(ids)} from worst to best). "
                f"The levels are listed {where}:")

    def answer_instruction(self) -> str:
        ids = self.scheme.ids
        ref = (" The reference answer is an example of the level it is labelled with; judge "
               "the response on its own merits." if self.reference_score is not None else "")
        return (f"Score the response with the level that fits it best.{ref} Answer with a "
                f"single {self.scheme.kind}: one of {', '.join(ids)}.")

    def variant_for(self, item: PointwiseItem,
                    references: References | None = None) -> PromptVariant | None:
        """This template's prompt pieces for `item`; None when it has no Ref-k text."""
        ref_text = None
        if self.reference_score is not None:
            ref_text = reference_text(item, self.reference_score, references)
            if ref_text is None:
                return None
        return PromptVariant(
            name=self.name, order=self.order_for(item.id), order_kind=self.order_kind,
            score_ids=self.scheme.ids, reference=ref_text,
            reference_score=self.reference_score, scale_note=self.scale_note(),
            answer_instruction=self.answer_instruction(),
        )

    def spec(self) -> dict[str, object]:
        """What defines this template (hashed into the results)."""
        return {"name": self.name, "order": self.order_kind, "ids": list(self.scheme.ids),
                "id_kind": self.scheme.kind, "reference_score": self.reference_score,
                "seed": self.seed if self.order_kind == "random" else None,
                "scale_note": self.scale_note(), "answer_instruction": self.answer_instruction()}

    def sha256(self, template_sha: str = "") -> str:
        blob = json.dumps({"template": template_sha, **self.spec()}, sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def reference_text(item: PointwiseItem, k: int, references: References | None) -> str | None:
    """The Ref-k text: from `references` first, else (k = 5) the dataset's own reference."""
    if references is not None:
        got = references.get(item.id, {})
        text = got.get(k) if k in got else got.get(str(k))  # type: ignore[call-overload]
        if text:
            return text
    if k == K and item.reference:
        return item.reference
    return None


def builtin(seed: int = 0) -> dict[str, ScoringPerturbation]:
    """Every built-in template, baseline first."""
    out = [
        ScoringPerturbation("baseline", "rubric 1..5 ascending, Arabic ids, no reference"),
        ScoringPerturbation("order_desc", "rubric listed 5..1", order_kind="descending"),
        ScoringPerturbation("order_random", "rubric in a seeded random order per item",
                            order_kind="random", seed=seed),
        ScoringPerturbation("ids_letters", "letter grades E (worst) .. A (best)", scheme=LETTERS),
        ScoringPerturbation("ids_roman", "Roman numerals i (worst) .. v (best)", scheme=ROMAN),
    ]
    out += [ScoringPerturbation(f"ref_{k}", f"reference answer labelled score {k}",
                                reference_score=k) for k in range(1, K + 1)]
    return {p.name: p for p in out}


DEFAULT_NAMES = tuple(builtin())


def resolve(names: Sequence[str] | None = None, *, seed: int = 0,
            id_maps: Sequence[str] = ()) -> list[ScoringPerturbation]:
    """The perturbations to run, baseline always first. `names` pick built-ins (None = all);
    `id_maps` add user id schemes as `ids_NAME` (each `NAME=w,x,y,z,t`)."""
    table = builtin(seed)
    for text in id_maps:
        sch = parse_scheme(text)
        name = f"ids_{sch.name}"
        if name in table:
            raise ValueError(f"id mapping {text!r}: {name!r} is already a perturbation name")
        table[name] = ScoringPerturbation(name, f"user ids {', '.join(sch.ids)}", scheme=sch)
    chosen = list(table) if names is None else list(dict.fromkeys(
        [n.strip() for n in names if n.strip()] + [f"ids_{parse_scheme(t).name}"
                                                   for t in id_maps]))
    unknown = [n for n in chosen if n not in table]
    if unknown:
        raise ValueError(f"unknown scoring perturbation(s) {unknown}; known: "
                         f"{', '.join(table)} (or add ids with NAME=w,x,y,z,t)")
    chosen = ["baseline"] + [n for n in chosen if n != "baseline"]
    return [table[n] for n in chosen]


__all__ = ["ARABIC", "DEFAULT_NAMES", "LETTERS", "ROMAN", "SCHEMES", "IdScheme", "References",
           "ScoringPerturbation", "builtin", "parse_scheme", "reference_text", "resolve"]
