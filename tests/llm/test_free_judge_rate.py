"""A judge that costs nothing (the embedded model: provider `local`, price (0, 0), no
price_in) is "free", not "at list prices" (field finding, s44): its calls were named at list
prices, and summed with a judge priced at its spec's price_in/price_out the run's rate read
"mixed" ("list, batch or the spec's"). The sim judge priced at (0, 0) stands in for the
embedded model (which is not run here) beside a real loopback server priced by the spec."""

from __future__ import annotations

from fakeserver import FakeLLMServer

from judgeaudit.cli.format import usage_text
from judgeaudit.data import PairwiseItem
from judgeaudit.judges import make_judge
from judgeaudit.llm import make_provider
from judgeaudit.llm.client import CallStats, price_rate
from judgeaudit.llm.plan import cost_at

PAIRS = [PairwiseItem(id=f"p{i}", prompt=f"question {i}", response_1=f"one {i}",
                      response_2=f"two {i}", label=1) for i in range(4)]


def test_the_embedded_model_is_free_not_at_list_prices():
    local = make_provider("local", "qwen-0.5b", {})  # built, not loaded: no model is run
    assert local.price_per_mtok == (0.0, 0.0)
    assert price_rate(local) == "free"
    # a spec that prices it (price_in=0) is the spec's, as any price_in is
    priced = make_provider("openai", "m", {"api_key": "k", "base_url": "http://127.0.0.1:9/v1",
                                           "price_in": "0", "price_out": "0"})
    assert price_rate(priced) == "spec"


async def test_a_free_judge_beside_a_spec_priced_one_reads_at_the_spec_prices():
    free = make_judge("sim?seed=1")
    free.client.provider.price_per_mtok = (0.0, 0.0)  # as the embedded model's
    await free.pairwise.judge(PAIRS)
    assert free.client.stats.price_rate == "free", free.client.stats
    assert free.client.stats.cost_usd == 0.0
    alone = usage_text({**free.client.stats.as_dict(), "prompt_tokens": 10})
    assert "list prices" not in alone, alone
    with FakeLLMServer() as srv:
        spec = (f"openai:m?base_url={srv.openai_url}&api_key=k&price_in=100&price_out=400"
                "&logprobs=off")
        paid = make_judge(spec)
        await paid.pairwise.judge(PAIRS)
    assert paid.client.stats.price_rate == "spec"
    both = CallStats.merge([free.client.stats, paid.client.stats])
    assert both.price_rate == "spec", both.price_rate  # not "mixed" (list, batch or spec's)
    assert both.cost_usd == paid.client.stats.cost_usd > 0
    said = usage_text(both.as_dict())
    assert "at the judge spec's prices (" in said, said
    assert "list" not in said, said
    # a plan or ingest summing the two by rate names the spec's prices only
    assert cost_at(0.5, {"free": 0.0, "spec": 0.5}, lambda x: f"${x:.2f}") == (
        "$0.50 at the judge spec's prices")
    assert cost_at(0.0, {"free": 0.0}, lambda x: f"${x:.2f}") == (
        "$0.00 at no charge (the judge costs nothing)")
