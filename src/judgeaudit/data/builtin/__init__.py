"""`builtin:NAME` — generated datasets with known answers, so every probe runs on a fresh
machine with no download. Seeded (`seed`, default 0) and deterministic; the item order and
the presentation order are randomised with labels split evenly between 1 and 2.

Names (a few hundred items each, one- or two-sentence responses for small CPU judges):
- `facts` (the default): a factual question, a correct vs a plausible wrong statement
  (212 facts: capitals, chemical symbols, units, astronomy, science, geography, history,
  culture, language, everyday knowledge).
- `arithmetic`: +, -, x with small numbers and unit conversions, correct vs off-by-some
  (250 problems).
- `mixed`: facts + arithmetic.
- `format`: correct plain vs correct markdown and correct terse vs correct padded (ties,
  label 0, equal quality), and correct plain vs wrong markdown, correct terse vs wrong padded
  (label = the correct one); metadata `variant` and `styled_side` (320 pairs).
- `graded` (pointwise): answers degraded to quality levels 1-5, score = level, with a
  default 1-5 rubric (300 items).

Ids `builtin:<name>:<i>`, stable for a given seed. `seeds=0-2` (or `seeds=0,1,2`) concatenates
the set under several seeds (the same questions, other wrong answers, orders and labels) with
ids `builtin:<name>:<i>@<seed>`: more items for a probe that needs them, e.g. an adaptive audit
of an unbiased judge, which clears a probe after about 400 items.

metadata: `answer` (the correct final answer as text), `wrong_answer` (where a wrong answer is
shown), `topic`, `source`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from judgeaudit.data.builtin.graded import graded
from judgeaudit.data.builtin.pairs import arithmetic, facts, format_set, mixed
from judgeaudit.data.loaders._common import check_params, int_param
from judgeaudit.data.registry import DataError, register_loader
from judgeaudit.data.schema import Item

DEFAULT = "facts"
DATASETS: dict[str, Callable[[int], Sequence[Item]]] = {
    "facts": facts,
    "arithmetic": arithmetic,
    "mixed": mixed,
    "format": format_set,
    "graded": graded,
}


def generate(name: str = DEFAULT, seed: int = 0) -> list[Item]:
    """The built-in dataset `name` for `seed` (what `load("builtin:NAME?seed=S")` returns)."""
    if name not in DATASETS:
        raise DataError(f"builtin:{name}", None, f"unknown built-in dataset; known: "
                        f"{', '.join(DATASETS)}")
    return list(DATASETS[name](seed))


MAX_SEEDS = 100


def seeds_param(source: str, raw: str) -> list[int]:
    """`seeds=A-B` (inclusive) or `seeds=A,B,...`: distinct integers >= 0, at most MAX_SEEDS."""
    try:
        if "-" in raw:
            lo, hi = (int(x) for x in raw.split("-"))
            seeds = list(range(lo, hi + 1))
        else:
            seeds = [int(x) for x in raw.split(",")]
    except ValueError:
        seeds = []
    if (not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds)
            or len(seeds) > MAX_SEEDS):
        raise DataError(source, None, f"parameter 'seeds': expected a range A-B or a list "
                                      f"A,B,... of at most {MAX_SEEDS} distinct integers >= 0, "
                                      f"got {raw!r}")
    return seeds


@register_loader("builtin")
def load_builtin(name: str, params: dict[str, str]) -> list[Item]:
    source = f"builtin:{name}"
    check_params(source, params, ("seeds",))
    if not params.get("seeds"):
        return generate(name or DEFAULT, int_param(source, params, "seed", 0))
    if params.get("seed"):
        raise DataError(source, None, "give seed or seeds, not both")
    return [it.model_copy(update={"id": f"{it.id}@{s}"})
            for s in seeds_param(source, params["seeds"]) for it in generate(name or DEFAULT, s)]
