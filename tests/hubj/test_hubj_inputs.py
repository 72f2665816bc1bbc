"""What the HUB-J commands are given is used or refused, never silently dropped: a judge
given twice (`--judges sim,sim` studied one judge), and a discover result beside factors
that do not come from it (`--factors verbosity --factors-from RUN` read the file, then
ignored it). The discover results are real ones, made with a sim judge and the scripted
G-modules of `test_discover_stages`."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from tests.hubj.test_discover_stages import _pairs, _StageScript  # noqa: F401 (registers it)

runner = CliRunner()


@pytest.fixture(autouse=True)
def _stub(stub_embedder, isolated_cache):
    pass


@pytest.fixture
def run_dir(tmp_path):
    """A real discover output folder: one found factor, 'longer response'."""
    res = runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm",
                              "test-hubj-stages:ok", "--data", _pairs(tmp_path / "p.jsonl", 8),
                              "--iterations", "1", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert [f["name"] for f in doc["discover"]["factors"]] == ["longer response"]
    return tmp_path / "o"


# ---- a judge given twice --------------------------------------------------------------------

@pytest.mark.parametrize(("cmd", "judges", "said"), [
    ("discover", "sim,sim", "--judges: sim given twice; give each judge once"),
    ("discover", "sim?seed=1&length=2,sim?length=2&seed=1",
     "--judges: sim?seed=1&length=2 and sim?length=2&seed=1 are the same judge"),
    ("quantify", "simhubj,simhubj", "--judges: simhubj given twice"),
    ("mitigate", "sim?length=2,sim,sim?length=2", "--judges: sim?length=2 given twice"),
])
def test_a_judge_given_twice_is_refused_naming_it(cmd, judges, said, tmp_path):
    extra = {"discover": ["--llm", "test-hubj-stages:ok"], "quantify": [],
             "mitigate": ["--scorer", "simhubj?score_from=length"]}[cmd]
    res = runner.invoke(app, [cmd, "--judges", judges, *extra, "--data",
                              _pairs(tmp_path / "p.jsonl", 8, 8), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert said in " ".join(res.output.split()), res.output
    assert not (tmp_path / "o" / "results.json").exists()  # refused before any work


def test_distinct_judges_are_kept(tmp_path):
    res = runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0,sim?length=4&noise=0",
                              "--llm", "test-hubj-stages:ok", "--data",
                              _pairs(tmp_path / "p.jsonl", 8), "--iterations", "1",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert len(doc["judges"]) == 2


def test_the_api_names_the_field_of_a_judge_given_twice(tmp_path):
    with pytest.raises(ValueError, match=r"^judges: sim given twice; give each judge once$"):
        judgeaudit.discover(["sim", "sim"], _pairs(tmp_path / "p.jsonl", 8),
                            llm="test-hubj-stages:ok")


# ---- --factors beside --factors-from -------------------------------------------------------

def _quantify(tmp_path, run_dir, *factors: str):
    return runner.invoke(app, ["quantify", "--judges", "simhubj", "--data",
                               _pairs(tmp_path / "q.jsonl", 0, 12), *factors,
                               "--factors-from", str(run_dir), "--out", str(tmp_path / "q")])


@pytest.mark.parametrize(("factors", "said"), [
    (["--factors", "verbosity"], "none of its factors ('longer response') is named by "
     "--factors verbosity, so the file would be ignored; give --factors found (its factors) "
     "or --factors found,verbosity (its factors and these), or leave out --factors-from"),
    ([], "is named by --factors verbosity,authority (the default), so the file would be "
     "ignored"),
])
def test_factors_from_that_would_be_ignored_is_refused(factors, said, tmp_path, run_dir):
    """They ran on verbosity (and authority) alone, the discover result read and unused."""
    res = _quantify(tmp_path, run_dir, *factors)
    assert res.exit_code == 2, res.output
    assert said in " ".join(res.output.split()), res.output


def test_found_among_other_factors_uses_both(tmp_path, run_dir):
    """`found,verbosity` was "unknown factor 'found'"."""
    res = _quantify(tmp_path, run_dir, "--factors", "found,verbosity")
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "q" / "results.json").read_text())
    assert [f["name"] for f in doc["factors"]] == ["longer response", "verbosity"]
    found = json.loads((run_dir / "results.json").read_text())
    # the found factor's criteria are the discover run's own
    assert doc["criteria"]["longer response"] == found["criteria"]["longer response"]


def test_a_found_factor_named_again_is_given_twice(tmp_path, run_dir):
    res = _quantify(tmp_path, run_dir, "--factors", "found,longer response")
    assert res.exit_code == 2, res.output
    assert "--factors: longer response given twice (once through found)" in res.output


def test_mitigate_factor_not_from_the_file_is_refused(tmp_path, run_dir):
    res = runner.invoke(app, ["mitigate", "--judges", "sim", "--scorer", "simhubj",
                              "--data", _pairs(tmp_path / "m.jsonl", 4, 4),
                              "--factors-from", str(run_dir), "--out", str(tmp_path / "m")])
    assert res.exit_code == 2, res.output
    assert ("is named by --factor verbosity (the default), so the file would be ignored; "
            "give --factor 'longer response', or leave out --factors-from"
            in " ".join(res.output.split())), res.output


def test_the_api_refuses_it_naming_its_fields(tmp_path, run_dir):
    doc = json.loads((run_dir / "results.json").read_text())
    with pytest.raises(ValueError, match=r"^factors_from: none of its factors \('longer "
                       r"response'\) is named by factors verbosity, so"):
        judgeaudit.quantify("simhubj", _pairs(tmp_path / "q.jsonl", 0, 12),
                            factors="verbosity", factors_from=doc)


def test_a_failed_discover_run_is_refused_with_its_reason(tmp_path):
    """A discover run with nothing to discover from has no 'discover' section: 'found' with
    it raised KeyError."""
    res = runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm",
                              "test-hubj-stages:ok", "--data", _pairs(tmp_path / "p.jsonl", 0, 6),
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 3, res.output
    q = _quantify(tmp_path, tmp_path / "o", "--factors", "found")
    assert q.exit_code == 2, q.output
    assert "that discover run failed (run failed: no consensus disagreement" in q.output
