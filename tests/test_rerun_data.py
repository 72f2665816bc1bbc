"""`--config RUN_DIR` on data changed since the run (s45 verify): a file edited, or a relative
path read from another folder, was judged under the run's settings with exit 0 and no word,
though the data fingerprints differed. Now the recorded --data reading other data is refused
before any call, --data given again is a warning, and results.json says what it re-ran
(`rerun_of`)."""

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


def test_a_rerun_on_the_same_data_records_what_it_re_ran(first, tmp_path):
    res = runner.invoke(app, ["audit", "--config", str(first), "--out", str(tmp_path / "m2")])
    assert res.exit_code == 0, res.output
    doc = _doc(tmp_path / "m2")
    assert doc["rerun_of"] == {"folder": str(first), "data_same": True}
    assert doc["calls"]["made"] == 0


def test_a_rerun_on_changed_data_is_refused_before_any_call(first, tmp_path):
    rows = _rows()
    for r in rows[:40]:  # the tester's edit: labels swapped in rows 0-39
        r["response_1"], r["response_2"] = r["response_2"], r["response_1"]
        r["label"] = 2
    _write(tmp_path / "d.jsonl", rows)
    res = runner.invoke(app, ["audit", "--config", str(first), "--out", str(tmp_path / "m2"),
                              "--cache", str(tmp_path / "fresh.sqlite")])
    assert res.exit_code == 2, res.output
    text = _text(res)
    assert f"--config {first}: the recorded data" in text
    assert "30 of the 30 items that run judged have other content" in text
    assert "give --data" in text
    assert not (tmp_path / "m2" / "results.json").exists()
    assert not (tmp_path / "fresh.sqlite").exists()  # refused before the cache was opened


def test_data_given_again_on_changed_data_is_a_warning(first, tmp_path):
    rows = _rows()
    rows[0]["label"] = 2
    _write(tmp_path / "e.jsonl", rows)
    res = runner.invoke(app, ["audit", "--config", str(first), "--data",
                              f"jsonl:{tmp_path / 'e.jsonl'}", "--json",
                              "--out", str(tmp_path / "m2")])
    assert res.exit_code == 0, res.output
    doc = _doc(tmp_path / "m2")
    assert doc["rerun_of"]["data_same"] is False and doc["rerun_of"]["n_changed"] == 1
    said = [w for w in doc["warnings"] if "--data differs from that run's data" in w]
    assert said and "1 of the 30 items" in said[0]
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert any("--data differs" in w for w in summary["warnings"])


def test_a_relative_data_path_read_from_another_folder_is_refused(tmp_path, monkeypatch):
    """jsonl:d.jsonl recorded as typed: re-run from another folder, it named another file."""
    for name, start in (("a", 0), ("b", 100)):
        (tmp_path / name).mkdir()
        _write(tmp_path / name / "d.jsonl",
               [{**r, "id": f"q{start + i}"} for i, r in enumerate(_rows(20))])
    monkeypatch.chdir(tmp_path / "a")
    res = runner.invoke(app, ["audit", "--judge", JUDGE, "--data", "jsonl:d.jsonl", "--n", "10",
                              "--probes", "position", "--no-cache", "--out", "m1"])
    assert res.exit_code == 0, res.output
    monkeypatch.chdir(tmp_path / "b")
    res = runner.invoke(app, ["audit", "--config", str(tmp_path / "a" / "m1"), "--no-cache",
                              "--out", "m2"])
    assert res.exit_code == 2, res.output
    assert "0 of the 10 items that run judged have other content now and 10 are not loaded" \
        in _text(res)
    assert not (tmp_path / "b" / "m2" / "results.json").exists()
