"""A too-long refusal ingest kept could be asked again only by deleting every answer of its
provider (`cache clear`): `cache forget --invalid` forgot 0, `cache stats` did not count it,
and a run failing on it did not say it came from the cache. A user who gave the server a
longer context was stuck."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm import CallFailed, Client, make_provider
from judgeaudit.llm.cache import Cache
from tests.llm.test_client import judge_request


async def test_forget_invalid_drops_kept_refusals_and_stats_count_them(tmp_path):
    path = tmp_path / "c.sqlite"
    cache = Cache(path)
    client = Client(make_provider("sim", "default", {}), cache)
    req = judge_request(1)
    key = client.key(req)
    cache.put_refusals([(key, "too_long", "context length exceeded")])
    with pytest.raises(CallFailed) as err:
        await client.call(req)
    assert err.value.kind == "too_long"
    assert "a refusal kept in the cache from an earlier run or ingest" in str(err.value)
    assert "cache forget --invalid" in str(err.value)
    assert cache.stats().refusals == 1
    await client.aclose()
    cache.close()
    runner = CliRunner()
    out = runner.invoke(app, ["cache", "stats", "--cache", str(path)]).output
    assert "1 too-long refusal kept from runs or ingest (not sent again" in " ".join(out.split())
    out = runner.invoke(app, ["cache", "forget", "--invalid", "--cache", str(path)]).output
    assert "forgot 1 invalid answer or too-long refusal" in " ".join(out.split())
    again = Cache(path)
    assert again.refusal(key) is None and again.stats().refusals == 0
    again.close()
