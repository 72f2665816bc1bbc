"""A spend cap that stops a batch-mode run says the sum that stopped it in figures a user can
check: spent + held + the next request's ceiling over the cap. A batch's requests are cheap
(a ceiling of $0.00003), and the message said "the next call could cost up to $0.0000"."""

from __future__ import annotations

import re

import pytest
from fakebatch import FakeBatchServer
from fakeserver import judge_request

from judgeaudit.llm import Cache, CallFailed, Client, SpendCap, make_provider
from judgeaudit.llm.plan import body_ceiling, plan_body

pytestmark = pytest.mark.usefixtures("no_key_env")


async def test_the_cap_message_adds_up(tmp_path):
    with FakeBatchServer() as srv:
        p = make_provider("openai", "fake", {
            "base_url": srv.openai_url, "api_key": "k", "batch": "on", "poll": "0.02",
            "batch_wait": "0.05", "price_in": "0.15", "price_out": "0.60"})
        ceiling = body_ceiling(plan_body(judge_request(10), p), p.price_per_mtok)[2]
        assert ceiling < 5e-5  # shown as $0.0000 before
        client = Client(p, Cache(tmp_path / "c.sqlite"))
        client.spend_cap = SpendCap(10.5 * ceiling)
        outs = await client.map([judge_request(i) for i in range(40)])
        await client.aclose()
    why = next(str(o) for o in outs if isinstance(o, CallFailed) and o.kind == "spend_cap")
    assert "up to $0.0000;" not in why  # what it said
    # each term named, spent or held only when above zero (review9 item 2)
    m = re.search(r"could cost up to \$([0-9.e-]+), and (?:\$([0-9.e-]+) spent \+ )?"
                  r"(?:\$([0-9.e-]+) held by calls under way \+ )?"
                  r"\$([0-9.e-]+) for it is over the cap", why)
    assert m, why
    nxt, spent, held, again = (float(g or 0) for g in m.groups())
    assert nxt == again and spent + held + nxt > 10.5 * ceiling
