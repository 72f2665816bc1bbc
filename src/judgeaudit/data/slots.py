"""Letter slots: text that must name a response by the letter it is shown under ("90% of
people believe Response B is better") carries `<<LETTER:response_1>>` / `<<LETTER:response_2>>`
naming the canonical response. Presentation order is chosen by the judge, which fills the
slots per order with `render_order` just before building each request.

Only the perturbation layer can make slots: a slot is filled only in an item whose metadata
holds a `LetterSlots` (under `SLOTS_KEY`), an object no loader can build (JSON gives dicts,
lists, strings and numbers), and only with that item's own tag. The tag is `LETTER` unless the
item's data already contains `<<LETTER:`; then the first `LETTER-k` it does not contain
(`free_tag`). So data text that looks like a slot is never rewritten, in evaluate, an audit's
baseline or a probe, and an ordinary item's slots read as they always did."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Literal

from judgeaudit.data.schema import PairwiseItem

# Any slot of any tag (preserve.py strips them before counting numbers).
SLOT_RE = re.compile(r"<<LETTER(?:-\d+)?:(response_[12])>>")
SLOTS_KEY = "judgeaudit_letter_slots"
DEFAULT_TAG = "LETTER"
# The tag `slot()` writes with: set by the perturbation layer around a transform (`using_tag`).
_TAG: ContextVar[str] = ContextVar("judgeaudit_letter_tag", default=DEFAULT_TAG)


@dataclass(frozen=True)
class LetterSlots:
    """The mark of an item whose slots the perturbation layer made, and their tag."""

    tag: str = DEFAULT_TAG

    def pattern(self) -> re.Pattern[str]:
        return re.compile(rf"<<{re.escape(self.tag)}:(response_[12])>>")


def slot(side: Literal["response_1", "response_2"]) -> str:
    """The slot naming `side`, with the tag of the item being perturbed (`using_tag`)."""
    if side not in ("response_1", "response_2"):
        raise ValueError(f"a letter slot names response_1 or response_2, not {side!r}")
    return f"<<{_TAG.get()}:{side}>>"


def texts(item: PairwiseItem) -> tuple[str, str, str]:
    return item.prompt, item.response_1, item.response_2


def item_slots(item: PairwiseItem) -> LetterSlots | None:
    """The item's LetterSlots when the perturbation layer made it one, else None."""
    got = item.metadata.get(SLOTS_KEY)
    return got if isinstance(got, LetterSlots) else None


def free_tag(item: PairwiseItem) -> str:
    """The tag this item's slots use: the one it already has (a perturbation on top of
    another), else `LETTER`, else the first `LETTER-k` whose `<<TAG:` its text does not
    contain."""
    have = item_slots(item)
    if have is not None:
        return have.tag
    blob = "\n".join(texts(item))
    tag, k = DEFAULT_TAG, 1
    while f"<<{tag}:" in blob:
        k += 1
        tag = f"{DEFAULT_TAG}-{k}"
    return tag


@contextlib.contextmanager
def using_tag(tag: str) -> Iterator[None]:
    """`slot()` writes `tag` inside this block (the perturbation layer, per item)."""
    token = _TAG.set(tag)
    try:
        yield
    finally:
        _TAG.reset(token)


def needs_order(item: PairwiseItem) -> bool:
    """Whether the item has slots to fill (only a perturbed item can)."""
    slots = item_slots(item)
    if slots is None:
        return False
    pat = slots.pattern()
    return any(pat.search(t) for t in texts(item))


def render_order(item: PairwiseItem, order: str, labels: tuple[str, str] = ("A", "B")
                 ) -> PairwiseItem:
    """The item with its slots filled for one order: "12" shows response_1 first (as
    labels[0]), "21" shows response_2 first. An item without slots comes back as it is."""
    if order not in ("12", "21"):
        raise ValueError(f"order must be '12' or '21', not {order!r}")
    if not needs_order(item):
        return item
    pat = item_slots(item).pattern()  # type: ignore[union-attr]
    first = "response_1" if order == "12" else "response_2"

    def fill(text: str) -> str:
        return pat.sub(lambda m: labels[0] if m.group(1) == first else labels[1], text)

    return item.model_copy(update={"prompt": fill(item.prompt),
                                   "response_1": fill(item.response_1),
                                   "response_2": fill(item.response_2)})
