"""Letter slots: text that must name a response by the letter it is shown under ("90% of
people believe Response B is better") carries `<<LETTER:response_1>>` / `<<LETTER:response_2>>`
naming the canonical response. Presentation order is chosen by the judge, which fills the
slots per order with `render_order` just before building each request."""

from __future__ import annotations

import re
from typing import Literal

from judgeaudit.data.schema import PairwiseItem

SLOT_RE = re.compile(r"<<LETTER:(response_[12])>>")


def slot(side: Literal["response_1", "response_2"]) -> str:
    if side not in ("response_1", "response_2"):
        raise ValueError(f"a letter slot names response_1 or response_2, not {side!r}")
    return f"<<LETTER:{side}>>"


def needs_order(item: PairwiseItem) -> bool:
    return any(SLOT_RE.search(t) for t in (item.prompt, item.response_1, item.response_2))


def render_order(item: PairwiseItem, order: str, labels: tuple[str, str] = ("A", "B")
                 ) -> PairwiseItem:
    """The item with its slots filled for one order: "12" shows response_1 first (as
    labels[0]), "21" shows response_2 first."""
    if order not in ("12", "21"):
        raise ValueError(f"order must be '12' or '21', not {order!r}")
    if not needs_order(item):
        return item
    first = "response_1" if order == "12" else "response_2"

    def fill(text: str) -> str:
        return SLOT_RE.sub(lambda m: labels[0] if m.group(1) == first else labels[1], text)

    return item.model_copy(update={"prompt": fill(item.prompt),
                                   "response_1": fill(item.response_1),
                                   "response_2": fill(item.response_2)})
