"""`--config RUN_DIR` of a run whose --judge held api_key= (s45 verify): results.json keeps
the spec masked (api_key=***), and the re-run was refused before --judge given again or the
key in the environment could count: "give --judge again (or put the key in the environment)"
exited 2 with the option given again, and with $OPENAI_API_KEY set."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.cli.main import app
from tests import test_rerun_data as _data

# the first run and its helpers are test_rerun_data's (one audit of a 40-row file, --n 30)
runner, JUDGE, _doc, _text = _data.runner, _data.JUDGE, _data._doc, _data._text
first = _data.first


def _masked(first: Path) -> Path:
    """The first run as if its judge had held a key: results.json keeps it masked."""
    doc = _doc(first)
    doc["settings"]["judge"] = "openai:gpt-4o?api_key=***&base_url=http://127.0.0.1:9/v1"
    (first / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return first


def test_a_masked_judge_given_again_runs(first, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _masked(first)
    res = runner.invoke(app, ["audit", "--config", str(first), "--judge", JUDGE,
                              "--out", str(tmp_path / "m2")])
    assert res.exit_code == 0, res.output
    assert _doc(tmp_path / "m2")["settings"]["judge"] == JUDGE
    assert _doc(tmp_path / "m2")["calls"]["made"] == 0  # the first run's answers, cached


def test_a_masked_judge_without_a_key_names_the_option_and_the_variable(first, tmp_path,
                                                                         monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    _masked(first)
    res = runner.invoke(app, ["audit", "--config", str(first), "--out", str(tmp_path / "m2")])
    assert res.exit_code == 2
    text = _text(res)
    assert "$OPENAI_API_KEY is not set" in text and "give --judge again" in text
    assert not (tmp_path / "m2" / "results.json").exists()


def test_the_key_in_the_environment_stands_in_for_the_masked_one(monkeypatch):
    from judgeaudit.config import ConfigError, settle_masked

    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    spec, note = settle_masked("judge", "openai:m?api_key=***&base_url=http://h/v1", "w: ")
    assert spec == "openai:m?base_url=http://h/v1" and "$OPENAI_API_KEY" in note
    assert settle_masked("judge", "openai:m?api_key=***", "")[0] == "openai:m"
    spec, _ = settle_masked("judges", "openai:a?x=1&api_key=***,sim?seed=1", "")
    assert spec == "openai:a?x=1,sim?seed=1"
    with pytest.raises(ConfigError, match="had a secret"):  # nothing stands in for a token
        settle_masked("data", "hf:x?token=***", "")
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ConfigError, match=r"\$OPENAI_API_KEY is not set"):
        settle_masked("judge", "openai:m?api_key=***", "")
