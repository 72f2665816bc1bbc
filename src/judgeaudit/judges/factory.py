"""Judge SPEC -> provider + client + judge. `kind[:name][?key=value&...]`; the judge-level
parameters (`template`, `orders`) are taken here, the rest go to the provider."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from judgeaudit.data.schema import Item, PairwiseItem, PointwiseItem
from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.judges.pointwise import RubricJudge
from judgeaudit.judges.templates import item_field_drops
from judgeaudit.llm import Cache, Client, RetryPolicy, make_provider
from judgeaudit.llm.base import check_params
from judgeaudit.llm.registry import provider_class
from judgeaudit.spec import Spec, parse_spec

# Judge-level parameters, read here for every provider (`judgeaudit judges` lists them).
JUDGE_PARAM_HELP = {
    "template": ("pairwise prompt template: a built-in name (default pairwise_v1; see the "
                 "templates below) or a .txt file with '### system' and '### user' sections; "
                 "its user section must use {prompt}, {response_a} and {response_b} and may "
                 "use {reference_block} (the item's reference answer; a run whose items carry "
                 "one warns and counts them when the template has none), no other "
                 "placeholder (a literal brace is written {{ or }}), and the answer is "
                 "read for the labels A, B unless it declares others under '### labels'; "
                 "a tie label it asks for is declared under '### ties' (e.g. 'C, tie') and "
                 "read as a tie verdict"),
    "orders": ("both | one: judge each pair in both orders, or in one order picked at random "
               "per item (seeded); a replay judge asks the orders its file records "
               "(default both)"),
    "score_template": ("pointwise scoring template: a built-in name (default pointwise_v1) "
                       "or a .txt file whose user section must use {prompt} and {response} "
                       "and may use {reference_block}, {rubric} and {levels} (without one, "
                       "a run whose items carry that text warns and counts them); scores are "
                       "read on 1..5, so a template asking for another scale is refused"),
}
JUDGE_PARAMS = set(JUDGE_PARAM_HELP)
# Default model name per provider when the spec gives none.
DEFAULT_MODEL = {"local": "qwen-1.5b", "sim": "default", "simhubj": "default"}


@dataclass
class JudgeBundle:
    spec: Spec
    client: Client
    pairwise: PairwiseJudge
    rubric: RubricJudge

    @property
    def public_spec(self) -> str:
        return self.spec.public(self.client.provider.secret_params)

    def check_items(self, items: Sequence[Item]) -> list[str]:
        """Before any call: the text of the items a user's template cannot show, one warning
        per field (`item_field_drops`), for the run to say and record: pairs for the
        pairwise template, single responses for the scoring one."""
        pairs = [it for it in items if isinstance(it, PairwiseItem)]
        points = [it for it in items if isinstance(it, PointwiseItem)]
        out: list[str] = []
        if pairs:
            out += item_field_drops(self.pairwise.template, "pairwise", pairs)
        if points:
            out += item_field_drops(self.rubric.template, "pointwise", points)
        return out

    async def aclose(self) -> None:
        await self.client.aclose()


def make_judge(
    spec: str | Spec,
    *,
    cache: Cache | None = None,
    concurrency: int | None = None,
    retry: RetryPolicy | None = None,
    timeout: float | None = None,
    seed: int = 0,
) -> JudgeBundle:
    sp = parse_spec(spec) if isinstance(spec, str) else spec
    provider_params = {k: v for k, v in sp.params.items() if k not in JUDGE_PARAMS}
    cls = provider_class(sp.kind)  # an unknown provider is named before anything else
    known = getattr(cls, "known_params", None)
    if known:  # a typo is matched against the judge-level names too ("order" -> "orders")
        # "factor_NAME" stands for any factor_<name> (simhubj): the provider checks those
        open_ = tuple(k[:-4] for k in known if k.endswith("_NAME"))
        check_params(sp.kind, {k: v for k, v in sp.params.items()
                               if not (open_ and k.startswith(open_))},
                     [*known, *JUDGE_PARAMS])
    model = sp.name or DEFAULT_MODEL.get(sp.kind, "")
    if not model and sp.kind not in DEFAULT_MODEL:
        raise ValueError(f"judge spec {sp.public()!r} needs a model name, e.g. {sp.kind}:MODEL")
    provider = make_provider(sp.kind, model, provider_params)
    client = Client(provider, cache, concurrency=concurrency, retry=retry, timeout=timeout,
                    seed=seed)
    orders = sp.params.get("orders", "both")
    if orders not in {"both", "one"}:
        raise ValueError(f"judge parameter orders={orders!r}: expected 'both' or 'one'")
    pairwise = PairwiseJudge(client, sp.params.get("template", "pairwise_v1"),
                             both_orders=orders == "both", seed=seed)
    rubric = RubricJudge(client, sp.params.get("score_template", "pointwise_v1"))
    return JudgeBundle(sp, client, pairwise, rubric)
