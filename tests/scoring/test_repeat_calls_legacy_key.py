"""scoring-bias's "--repeats N adds K paid calls" counts the repeats the cache answers under
the key an older version gave them as cached, not paid. A judge spec whose base_url is not
written in the one form the key names it by (here `URL/`) reads an old cache's answers under
the old key (`Client._legacy_hit`), so such a run sends none of them; the line looked the
new key up only and announced every one as a paid call, with its cost.

The cache is filled by a run of the code before the key named the server in one form: its
key is the old one (`base.legacy_request_key`, the spec's parameters as given), which is
what `request_key` gave then. Real loopback server counting requests, real SQLite cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judgeaudit.llm.client as client_mod
from judgeaudit.llm.base import legacy_request_key

from .test_repeat_calls import PRICE_IN, PRICE_OUT, N, _invoke, at_emit  # noqa: F401


def test_repeats_the_cache_holds_under_the_old_key_are_not_announced_as_paid(
        tmp_path: Path, fake_server, at_emit, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    srv = fake_server(answer=lambda p: "3", logprobs=False)
    spec = (f"openai:m?base_url={srv.openai_url}/&api_key=k&temperature=0"
            f"&price_in={PRICE_IN}&price_out={PRICE_OUT}")
    cache = tmp_path / "c.sqlite"
    new_key = client_mod.request_key
    with monkeypatch.context() as m:  # the old version's run: answers stored under old keys
        m.setattr(client_mod, "request_key",
                  lambda provider, request: legacy_request_key(provider, request)
                  or new_key(provider, request))
        first = _invoke("--judge", spec, "--repeats", "3", "--out", str(tmp_path / "old"),
                        "--cache", str(cache))
    assert first.exit_code == 0, first.output
    assert len(srv.requests) == 4 * N  # 3 baseline scorings + order_desc, each sent

    log = at_emit(srv)
    r = _invoke("--judge", spec, "--repeats", "3", "--out", str(tmp_path / "new"),
                "--cache", str(cache))
    assert r.exit_code == 0, r.output
    assert len(srv.requests) == 4 * N  # every answer came from the old keys: nothing sent
    res = json.loads((tmp_path / "new" / "results.json").read_text())
    assert res["calls"]["made"] == 0, res["calls"]
    rc = res["repeat_calls"]
    assert (rc["extra_calls"], rc["cached"]) == (0, 2 * N), rc
    assert rc["cost_usd_estimate"] == 0
    assert [m for m, _ in log.seen if "paid calls" in m] == []  # nothing to pay: not said
