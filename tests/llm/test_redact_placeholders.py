"""Placeholder keys (EMPTY, ollama, none, sk-no-key-required, ...: the README's list) and an
elision (`api_key=...`) are shown as written, never masked: the missing-key error read "pass
api_key=*** in the judge spec" and a spec with `api_key=EMPTY` was echoed as `api_key=***`,
though neither hides anything. A real key stays masked in the same texts."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.redact import redact
from judgeaudit.spec import public_spec

REAL = "sk-proj-Abc123Def456Ghi789"
runner = CliRunner()


@pytest.mark.parametrize("value", ["EMPTY", "empty", "none", "dummy", "ollama", "lm-studio",
                                   "not-needed", "sk-no-key-required", "..."])
def test_a_placeholder_key_is_shown_and_a_real_one_beside_it_masked(value):
    text = f"openai:m?base_url=http://h/v1&api_key={value} then api_key={REAL}"
    shown = redact(text)
    assert f"api_key={value} " in shown, shown
    assert REAL not in shown and "api_key=***" in shown
    spec = public_spec(f"openai:m?base_url=http://h/v1&api_key={value}")
    assert spec.endswith(f"api_key={value}"), spec
    assert REAL not in public_spec(f"openai:m?api_key={REAL}")
    for header in (f"Authorization: Bearer {value}", f"x-api-key: {value}"):
        assert redact(header) == header


def test_the_hint_s_elision_and_a_bearer_placeholder_stay_real_keys_do_not():
    assert redact("pass api_key=... in the judge spec") == "pass api_key=... in the judge spec"
    assert REAL not in redact(f"Authorization: Bearer {REAL}")
    assert REAL not in redact(f"token={REAL}") and REAL not in redact(REAL)


def test_the_missing_key_error_says_api_key_dots(tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = runner.invoke(app, ["evaluate", "--judge", "openai:gpt-4o-mini", "--limit", "2",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code != 0
    assert "pass api_key=... in the judge spec" in res.output, res.output
    assert "api_key=***" not in res.output


def test_a_spec_with_api_key_empty_is_echoed_as_written(tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    with FakeLLMServer() as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=EMPTY"
        res = runner.invoke(app, ["evaluate", "--judge", judge, "--limit", "2",
                                  "--max-cost", "1", "--json", "--out", str(tmp_path / "o")])
        assert res.exit_code == 0, res.output
        assert "api_key=EMPTY" in res.output and "api_key=***" not in res.output
        kept = json.loads((tmp_path / "o" / "results.json").read_text())
        assert kept["judge"].endswith("api_key=EMPTY"), kept["judge"]
        assert json.loads(res.stdout.strip().splitlines()[-1])["judge"] == kept["judge"]
    with FakeLLMServer(api_keys=[REAL]) as srv:  # a real key: masked in the same places
        judge = f"openai:m?base_url={srv.openai_url}&api_key={REAL}"
        res = runner.invoke(app, ["evaluate", "--judge", judge, "--limit", "2",
                                  "--max-cost", "1", "--json", "--out", str(tmp_path / "r")])
        assert res.exit_code == 0, res.output
        assert REAL not in res.output and "api_key=***" in res.output
        assert REAL not in (tmp_path / "r" / "results.json").read_text()
