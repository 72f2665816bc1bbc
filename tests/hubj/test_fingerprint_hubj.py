"""discover, quantify and mitigate record which data they ran on (`data_fingerprint`, the
module and shape audit, evaluate, rank, scoring-bias and rank-eval use): their results named
only the --data spec, so two files of one name, or the same rows under two names, could not
be told apart or matched (s45 tester)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.data.fingerprint import METHOD, fingerprint
from judgeaudit.data.registry import load
from tests.hubj.test_discover_stages import _pairs

runner = CliRunner()
JUDGE = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"


@pytest.fixture(autouse=True)
def _setup(stub_embedder, isolated_cache):
    """MiniLM stood in for, the cache its own."""


def _rows(n: int = 16) -> list[dict]:
    return [{"id": f"q{i}", "prompt": f"What is {i} + {i}?", "response_1": f"It is {2 * i}.",
             "response_2": f"It is {2 * i + 1}, I think" + " and so on" * (7 * (i % 5)),
             "label": 1 + i % 2} for i in range(n)]


def _write(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return f"jsonl:{path}"


def _check(doc: dict, spec: str) -> None:
    """`doc` records the fingerprint of every item of `spec` (all usable here), as audit's."""
    fp = doc.get("data_fingerprint")
    assert isinstance(fp, dict), sorted(doc)
    assert fp == fingerprint(load(spec)), fp
    assert fp["method"] == METHOD and len(fp["sha256"]) == 64 and fp["n_items"] == len(fp["items"])


def test_quantify_records_its_data_fingerprint(tmp_path):
    spec = _write(tmp_path / "q.jsonl", _rows())
    doc = judgeaudit.quantify([JUDGE], spec, factors="verbosity", pool=40, limit=6,
                              levels=(1, 5), cache=False).to_dict()
    _check(doc, spec)
    # the same rows in another order under another name: the same fingerprint
    other = _write(tmp_path / "other.jsonl", _rows()[::-1])
    again = judgeaudit.quantify([JUDGE], other, factors="verbosity", pool=40, limit=6,
                                levels=(1, 5), cache=False).to_dict()
    assert again["data_fingerprint"]["sha256"] == doc["data_fingerprint"]["sha256"]


def test_mitigate_and_its_apply_record_their_data_fingerprint(tmp_path):
    spec = _write(tmp_path / "m.jsonl", _rows(30))
    fit = judgeaudit.mitigate(judges="sim?length=2&seed=1", data=spec,
                              scorer="simhubj?score_from=length", limit=60, cache=False)
    _check(fit.to_dict(), spec)
    fit.to_json(tmp_path / "fit.json")
    applied = judgeaudit.mitigate(judges="sim?length=2&seed=1", data=spec,
                                  scorer="simhubj?score_from=length", limit=60,
                                  apply=str(tmp_path / "fit.json"), cache=False).to_dict()
    assert applied["command"] == "mitigate-apply"
    _check(applied, spec)


def test_discover_records_its_data_fingerprint(tmp_path):
    spec = _pairs(tmp_path / "p.jsonl", 8)
    res = runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm",
                              "test-hubj-stages:ok", "--data", spec, "--iterations", "1",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code in (0, 3), res.output
    _check(json.loads((tmp_path / "o" / "results.json").read_text()), spec)
