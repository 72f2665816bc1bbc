"""Pairwise judging: each item in both presentation orders by default, with the per-order
verdicts and probabilities kept. Orders that disagree make a tie; unparseable outputs and
failed calls are recorded as invalid, never coerced."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Literal

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.data.slots import render_order
from judgeaudit.judges.parse import (
    RAW_KEEP,
    call_failure,
    map_checked,
    mark_if_invalid,
    parse_choice,
    parse_final,
)
from judgeaudit.judges.templates import Template, check_template, load_template
from judgeaudit.llm import CallFailed, Client, Message, Request, Response
from judgeaudit.llm.base import limit_sent, no_verdict_why, stopped_at_limit

Order = Literal["12", "21"]
Winner = Literal[0, 1, 2]  # canonical: 1 = response_1, 2 = response_2, 0 = tie
REASONING_TOKENS = 384  # generation budget of reasoning (chain-of-thought) templates


@dataclass
class OrderVerdict:
    order: Order
    raw: str                      # what the judge said (or the error), kept for review
    choice: str | None            # presented label "A"/"B"/"tie", None = invalid
    winner: Winner | None         # canonical winner, None = invalid
    p_first: float | None = None  # P(shown-first response preferred), when known
    error: str | None = None      # call failure after retries
    # Why a call gave no answer (`parse.call_failure`): "not_sent" or "call_failed"; None
    # when the call answered (valid or not).
    failed: str | None = None
    # Where the verdict was read from probabilities: what the answer's text says, read as
    # text alone would be ("A"/"B"/"tie"; None = unreadable text, or no probabilities).
    text_choice: str | None = None
    # An answer with no verdict that stopped at the token limit (its `error` says "cut at
    # max_tokens (N)"): counted apart, as a larger max_tokens may give a verdict.
    cut: bool = False

    @property
    def valid(self) -> bool:
        return self.winner is not None

    @property
    def text_disagrees(self) -> bool:
        """The probabilities decided this verdict against a text naming another choice (a
        sampled minority token, a server whose logprobs and text come from different
        passes): the verdict stays the probabilities', and this is counted, not hidden."""
        return self.text_choice is not None and self.text_choice != self.choice


@dataclass
class PairwiseVerdict:
    item_id: str
    orders: list[OrderVerdict] = field(default_factory=list)

    @property
    def winner(self) -> Winner | None:
        """Consensus over orders: agreeing orders give their winner, disagreeing ones a tie
        (0); any invalid order makes the consensus invalid (None)."""
        ws = [o.winner for o in self.orders]
        if not ws or any(w is None for w in ws):
            return None
        return ws[0] if all(w == ws[0] for w in ws) else 0

    @property
    def consistent(self) -> bool | None:
        """Both orders valid and naming the same response; None if not both asked."""
        if len(self.orders) < 2:
            return None
        return all(o.valid for o in self.orders) and self.orders[0].winner == self.orders[1].winner

    @property
    def p1(self) -> float | None:
        """P(response_1 preferred), averaged over orders (position effect cancels)."""
        ps = []
        for o in self.orders:
            if o.p_first is None:
                return None
            ps.append(o.p_first if o.order == "12" else 1.0 - o.p_first)
        return sum(ps) / len(ps) if ps else None

    def as_dict(self) -> dict:
        return {"item_id": self.item_id, "winner": self.winner, "p1": self.p1,
                "orders": [{**asdict(o), "text_disagrees": o.text_disagrees}
                           for o in self.orders]}


def shown(item: PairwiseItem, order: Order) -> tuple[str, str]:
    if order == "12":
        return item.response_1, item.response_2
    return item.response_2, item.response_1


def to_canonical(choice: str | None, order: Order) -> Winner | None:
    if choice is None:
        return None
    if choice == "tie":
        return 0
    first = 1 if order == "12" else 2
    return first if choice == "A" else 3 - first  # type: ignore[return-value]


def unread_why(t: Template) -> str | None:
    """What an unreadable answer's message says of a user's template (None for a built-in):
    its file and the labels the answer is read for, as a template asking for others (1/2,
    X/Y) that also names A and B passes `check_template` and has every answer unreadable."""
    if t.source is None:
        return None
    if t.ties:  # its tie labels are read too
        return (f"no verdict label of template {t.source!r} ({', '.join(t.labels[:2])} or "
                f"the tie label {' or '.join(t.ties)}; a template asking for others declares "
                "them under '### labels' and '### ties')")
    return (f"no verdict label of template {t.source!r} ({' or '.join(t.labels[:2])}; a "
            "template asking for others declares them under '### labels')")


class PairwiseJudge:
    """A judge = a client (one provider behind cache/retries) + a prompt template."""

    def __init__(
        self,
        client: Client,
        template: Template | str = "pairwise_v1",
        *,
        both_orders: bool = True,
        seed: int = 0,
    ):
        self.client = client
        self.template = load_template(template) if isinstance(template, str) else template
        check_template(self.template, "pairwise")  # before any call
        self.both_orders = both_orders
        self.seed = seed
        # A judge that can only answer some orders (a one-order recording): asked those.
        self.order_of = getattr(getattr(client, "provider", None), "recorded_orders", None)

    def orders_for(self, item: PairwiseItem) -> list[Order]:
        if self.order_of is not None:
            got = self.order_of(item.id, item.prompt, (item.response_1, item.response_2))
            if got and (self.both_orders or len(got) == 1):
                return got  # type: ignore[return-value]
        if self.both_orders:
            return ["12", "21"]
        # One order, chosen at random per item (seeded) so position does not confound.
        rng = random.Random(f"{self.seed}:{item.id}")
        return [rng.choice(["12", "21"])]

    def request(self, item: PairwiseItem, order: Order, repeat: int = 0) -> Request:
        t = self.template
        # Fill letter slots ("Response B") with this template's labels for this order.
        item = render_order(item, order, labels=(t.labels[0], t.labels[1]))
        a, b = shown(item, order)
        quality = None
        if item.quality is not None:
            quality = list(item.quality) if order == "12" else [item.quality[1], item.quality[0]]
        return Request(
            messages=(
                Message("system", t.system),
                # {reference_block}: a user's template may show the item's reference answer
                Message("user", t.render_user(
                    prompt=item.prompt, response_a=a, response_b=b,
                    reference_block=(f"\nReference answer:\n{item.reference}\n"
                                     if item.reference else ""))),
            ),
            prefill="" if t.final_pattern else t.prefill,
            choices=() if t.final_pattern else (t.labels[0], t.labels[1]),
            max_tokens=REASONING_TOKENS if t.final_pattern else 8,
            temperature=0.0,
            meta={
                "task": "pairwise", "item_id": item.id, "order": order, "prompt": item.prompt,
                "shown": [a, b], "quality": quality, "label": item.label,
            },
            repeat=repeat,
        )

    @staticmethod
    def read(order: Order, out: Response | CallFailed, labels: tuple[str, ...] = ("A", "B"),
             final_pattern: str | None = None, shown: Sequence[str] = (),
             max_tokens: int | None = None, ties: tuple[str, ...] = ()) -> OrderVerdict:
        """Parse one order's output; `labels[0]` names the response shown first. `choice` is
        recorded as "A"/"B" (first/second shown) whatever the template's labels. An answer
        with no verdict that was cut at the token limit (`max_tokens`: the limit sent) or
        empty says so in `error` (`no_verdict_why`); `failed` stays None (it answered).
        `ties`: the template's tie labels ('### ties'); an answer naming one is "tie"."""
        if isinstance(out, CallFailed):
            return OrderVerdict(order, raw="", choice=None, winner=None, error=str(out),
                                failed=call_failure(out))
        if out.invalid:  # e.g. over the response size cap: no verdict, whatever it says
            cut = stopped_at_limit(out)
            why = no_verdict_why(out, max_tokens) if cut else None
            return OrderVerdict(order, out.text[:RAW_KEEP], None, None,
                                error=f"{why}: {out.invalid}" if why else out.invalid, cut=cut)
        first, second = labels[0], labels[1]
        if final_pattern:  # the last marked verdict, never a quote or an echo of `shown`
            label = parse_final(out.text, final_pattern, (first, second), shown,
                                tie_labels=ties)
        else:
            label = parse_choice(out.text, (first, second), allow_tie=True, tie_labels=ties)
        said = {first: "A", second: "B", "tie": "tie"}.get(label) if label else None
        if said == "tie" and ties:
            # a declared tie label: the probabilities cover the two verdict labels only, so
            # they cannot say tie; the text's tie is the verdict (no P(first) for it)
            return OrderVerdict(order, out.text, "tie", 0, text_choice="tie" if out.probs
                                else None)
        if out.probs and first in out.probs and second in out.probs:
            pa = float(out.probs[first])
            choice: str | None = "A" if pa >= out.probs[second] else "B"
            return OrderVerdict(order, out.text, choice, to_canonical(choice, order), pa,
                                text_choice=said)
        if said is None:
            return OrderVerdict(order, out.text, None, None, error=no_verdict_why(out, max_tokens),
                                cut=stopped_at_limit(out))
        return OrderVerdict(order, out.text, said, to_canonical(said, order))

    def check(self, request: Request, order: Order, out: Response | CallFailed) -> OrderVerdict:
        """`read` with this judge's labels, marking an answer that gives no verdict as
        invalid in the client's cache (so it can be forgotten and asked again)."""
        t = self.template
        verdict = self.read(order, out, t.labels, t.final_pattern,
                            tuple(request.meta.get("shown") or ()),
                            limit_sent(getattr(self.client, "provider", None), request),
                            t.ties)
        mark_if_invalid(self.client, request, out, verdict.valid, unread_why(t))
        return verdict

    async def judge(
        self,
        items: Sequence[PairwiseItem],
        *,
        repeat: int = 0,
        on_done: Callable[[], None] | None = None,
    ) -> list[PairwiseVerdict]:
        """Judge all items; `on_done` is called once per finished model call (progress)."""
        plan = [(i, o) for i, it in enumerate(items) for o in self.orders_for(it)]
        reqs = [self.request(items[i], o, repeat) for i, o in plan]
        read = await map_checked(self.client, reqs,
                                 lambda k, out: self.check(reqs[k], plan[k][1], out), on_done)
        verdicts = [PairwiseVerdict(it.id) for it in items]
        for (i, _o), ov in zip(plan, read, strict=True):
            verdicts[i].orders.append(ov)
        return verdicts

    def n_calls(self, items: Sequence[PairwiseItem]) -> int:
        return sum(len(self.orders_for(it)) for it in items)
