"""`--config RUN_DIR` of a run whose --judge held api_key= (s45 verify): results.json keeps
the spec masked (api_key=***), and the re-run was refused before --judge given again or the
key in the environment could count: "give --judge again (or put the key in the environment)"
exited 2 with the option given again, and with $OPENAI_API_KEY set."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
JUDGE = "sim?position=1&length=0.5"


def _rows(n: int = 40) -> list[dict[str, Any]]:
    return [{"id": f"q{i}", "prompt": f"What is {i} + {i}?",
             "response_1": f"It is {2 * i}.", "response_2": f"It is {2 * i + 1}, I think.",
             "label": 1} for i in range(n)]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


def _doc(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def _text(res: Any) -> str:
    return " ".join(res.output.split())


@pytest.fixture
def first(tmp_path: Path) -> Path:
    """An audit of a 40-row jsonl file, --n 30, with its cache beside it."""
    _write(tmp_path / "d.jsonl", _rows())
    res = runner.invoke(app, ["audit", "--judge", JUDGE, "--data",
                              f"jsonl:{tmp_path / 'd.jsonl'}", "--n", "30", "--probes",
                              "position,verbosity", "--cache", str(tmp_path / "c.sqlite"),
                              "--out", str(tmp_path / "m1")])
    assert res.exit_code == 0, res.output
    return tmp_path / "m1"


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
