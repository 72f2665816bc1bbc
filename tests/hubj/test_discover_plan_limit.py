"""What shrinks discover's plan: its first step judges every labelled item of --data, so
--limit (discovery items) and --holdout-limit (held-out items), which cap the G-module steps
after it, left the plan as it was (1,568 judge requests at --limit 2 as at --limit 30) while
the plan advised "a small pilot (--n 5 or --limit 10)". The plan now names the data SPEC's
`limit=N`, which does shrink it. Planned against a real loopback server, which gets no
request."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
LONG = " ".join(["word"] * 40)


@pytest.fixture(autouse=True)
def _env(stub_embedder, isolated_cache, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _items(path, n: int = 30) -> str:
    rows = [{"id": f"i{i}", "prompt": f"q {i}", "response_1": f"ok {i}",
             "response_2": f"{LONG} {i}", "label": 1 + i % 2} for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def _plan(tmp_path, srv, data: str, limit: str):
    judge = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
    res = runner.invoke(app, ["--plan-only", str(tmp_path / f"plan{limit}.jsonl"), "discover",
                              "--judges", judge, "--llm", judge, "--data", data, "--limit",
                              limit, "--holdout-limit", limit, "--json", "--out",
                              str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    return res, json.loads(res.stdout.strip().splitlines()[-1])["planned"]


def test_the_plan_names_the_data_limit_that_shrinks_it(tmp_path):
    data = _items(tmp_path / "d.jsonl")
    with FakeLLMServer() as srv:
        small, n_small = _plan(tmp_path, srv, data, "2")
        _big, n_big = _plan(tmp_path, srv, data, "30")
        limited, n_limited = _plan(tmp_path, srv, f"{data}?limit=5", "2")
        assert srv.count() == 0
    assert n_small == n_big == 2 * 30  # every item, both orders: --limit changes nothing
    assert n_limited == 2 * 5  # the data's limit does
    text = " ".join(small.output.split())
    assert ("--limit and --holdout-limit cap only the G-module steps after them (discovery "
            "and held-out items), so they do not shrink this plan: for a small pilot limit "
            f"the data itself, --data '{data}?limit=50' (its first 50 items)") in text, text
    assert "so they do not shrink this plan" not in " ".join(limited.output.split())


def test_discovers_pilot_advice_names_the_data_limit_not_limit(tmp_path):
    """The generic advice "plan a small pilot (--n 5 or --limit 10)" stood next to the note
    that --limit does not shrink discover's plan (field finding, s44): for discover it names
    the data spec's ?limit=N; evaluate's advice is unchanged (tests/cli/test_plan_message)."""
    data = _items(tmp_path / "d.jsonl")
    with FakeLLMServer() as srv:
        res, _n = _plan(tmp_path, srv, data, "2")
        assert srv.count() == 0
    text = " ".join(res.output.split())
    assert ("plan a small pilot (the data spec's ?limit=N, e.g. --data 'SPEC?limit=10'), "
            "execute and ingest it") in text, text
    assert "--n 5 or --limit 10" not in text, text
