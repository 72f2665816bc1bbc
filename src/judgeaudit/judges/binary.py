"""Binary verdicts on one response (PASS/FAIL, YES/NO): the production checks ask how often a
judge passes answers it should fail (sycophancy) and whether the label wording matters."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from judgeaudit.data.schema import PointwiseItem
from judgeaudit.judges.parse import (
    RAW_KEEP,
    call_failure,
    map_checked,
    mark_if_invalid,
    parse_choice,
)
from judgeaudit.judges.templates import Template, check_template, load_template
from judgeaudit.llm import CallFailed, Client, Message, Request, Response


@dataclass
class BinaryVerdict:
    item_id: str
    raw: str
    passed: bool | None           # None = invalid
    p_pass: float | None = None
    error: str | None = None
    failed: str | None = None     # "not_sent" / "call_failed" (`parse.call_failure`)

    def as_dict(self) -> dict:
        return asdict(self)


class BinaryJudge:
    def __init__(self, client: Client, template: Template | str = "binary_pass_fail_v1"):
        self.client = client
        self.template = load_template(template) if isinstance(template, str) else template
        check_template(self.template, "binary")  # before any call

    def request(self, item: PointwiseItem, repeat: int = 0) -> Request:
        t = self.template
        ref = f"\nReference answer:\n{item.reference}\n" if item.reference else ""
        user = t.render_user(prompt=item.prompt, response=item.response, reference_block=ref)
        return Request(
            messages=(Message("system", t.system), Message("user", user)),
            prefill=t.prefill, choices=(t.labels[0], t.labels[1]), max_tokens=8,
            meta={"task": "binary", "item_id": item.id, "prompt": item.prompt,
                  "response": item.response, "quality": item.quality,
                  "labels": list(t.labels[:2])},
            repeat=repeat,
        )

    def read(self, item_id: str, out: Response | CallFailed) -> BinaryVerdict:
        if isinstance(out, CallFailed):
            return BinaryVerdict(item_id, "", None, error=str(out), failed=call_failure(out))
        if out.invalid:  # e.g. over the response size cap: no verdict, whatever it says
            return BinaryVerdict(item_id, out.text[:RAW_KEEP], None, error=out.invalid)
        pos, neg = self.template.labels[0], self.template.labels[1]
        if out.probs and pos in out.probs and neg in out.probs:
            p = float(out.probs[pos])
            return BinaryVerdict(item_id, out.text, p >= float(out.probs[neg]), p)
        label = parse_choice(out.text.upper(), (pos.upper(), neg.upper()))
        passed = None if label is None else label == pos.upper()
        return BinaryVerdict(item_id, out.text, passed)

    async def judge(self, items: Sequence[PointwiseItem], *, repeat: int = 0,
                    on_done: Callable[[], None] | None = None) -> list[BinaryVerdict]:
        reqs = [self.request(it, repeat) for it in items]
        return await map_checked(self.client, reqs,
                                 lambda k, out: self.check(reqs[k], items[k].id, out), on_done)

    def check(self, request: Request, item_id: str, out: Response | CallFailed) -> BinaryVerdict:
        """`read`, marking an answer that gives no verdict as invalid in the client's cache."""
        verdict = self.read(item_id, out)
        mark_if_invalid(self.client, request, out, verdict.passed is not None)
        return verdict
