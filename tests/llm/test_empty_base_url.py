"""An empty `base_url=` (or a bare `base_url` with no `=`) was read as "not given": every call,
with its key, went to the provider's default host ($OPENAI_BASE_URL or api.openai.com), not
the server the user meant. It is refused when the judge is made, naming the parameter; the
CLI exits 2. The "default host" here is a real loopback server named by $OPENAI_BASE_URL /
$ANTHROPIC_BASE_URL, so a call that went there anyway is counted, not sent abroad."""

from __future__ import annotations

import pytest
from fakeserver import write_pairs
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.llm import make_provider

pytestmark = pytest.mark.usefixtures("no_key_env", "isolated_cache")

EMPTY = "base_url is empty: give the server's URL, or leave the parameter out"
ITEMS = [{"id": f"e{i}", "prompt": f"empty base_url {i}", "response_1": "a",
          "response_2": "b", "label": 1} for i in range(2)]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_base_url_is_refused_when_the_provider_is_made(provider, value):
    with pytest.raises(ValueError, match=EMPTY):
        make_provider(provider, "m", {"base_url": value, "api_key": "k"})


@pytest.mark.parametrize(("provider", "env"), [("openai", "OPENAI_BASE_URL"),
                                               ("anthropic", "ANTHROPIC_BASE_URL")])
@pytest.mark.parametrize("tail", ["base_url=&api_key=EMPTY", "base_url&api_key=EMPTY"])
def test_the_api_sends_no_call_to_the_default_host(fake_server, monkeypatch, provider, env,
                                                   tail):
    srv = fake_server()
    monkeypatch.setenv(env, srv.openai_url if provider == "openai" else srv.anthropic_url)
    with pytest.raises(ValueError, match=EMPTY):
        judgeaudit.evaluate(f"{provider}:m?{tail}", ITEMS, cache=False, retry=0)
    assert srv.count() == 0


def test_a_base_url_that_is_given_still_works(fake_server):
    srv = fake_server()
    res = judgeaudit.evaluate(f"openai:m?base_url={srv.openai_url}&api_key=k", ITEMS,
                              cache=False)
    assert srv.count() >= len(ITEMS) and res.ok  # both orders per item


def test_the_cli_exits_2_naming_the_parameter(tmp_path, fake_server, monkeypatch):
    srv = fake_server()
    monkeypatch.setenv("OPENAI_BASE_URL", srv.openai_url)
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 2)
    r = CliRunner().invoke(app, ["evaluate", "--judge", "openai:m?base_url=&api_key=EMPTY",
                                 "--data", f"jsonl:{data}", "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    assert "base_url is empty" in " ".join(r.output.split())
    assert srv.count() == 0
