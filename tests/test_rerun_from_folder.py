"""`--config RUN_DIR`: a run's output folder (or its results.json) re-runs that run. Each
command records every setting it ran with in results.json (`settings`: the seed, --full, n,
sample, template, ...), and `--config` reads them back as it reads a TOML file, flags
overriding them. Before, `--config results.json` failed "not valid TOML", and an audit's
--full was recorded nowhere (listing its probes instead exited 2, self_preference needs
--panel). A re-run into a new --out gives the same results, every answer from the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.config import CONFIGS

runner = CliRunner()

# stamps of a run that a re-run does not repeat: when, how long, by which commit, how the
# calls were answered (the re-run's are all from the cache, checked apart; an adaptive
# audit's adaptive.calls_by_source too)
STAMPS = ("seconds", "started", "calls", "build")

RUNS = {
    "audit": ["audit", "--judge", "sim?position=1&length=0.5", "--data", "builtin:facts",
              "--n", "12", "--seed", "2"],
    "audit_full": ["audit", "--judge", "sim?position=1&length=0.5", "--data", "builtin:facts",
                   "--full", "--n", "10"],
    "audit_adaptive": ["audit", "--judge", "sim?position=1", "--data", "builtin:facts",
                       "--adaptive", "--max-n", "60", "--round-size", "20",
                       "--probes", "position,verbosity"],
    "evaluate": ["evaluate", "--judge", "sim?position=0.8&length=1", "--data",
                 "builtin:facts", "--sample", "30", "--seed", "3"],
    "rank": ["rank", "--judge", "sim?length=1&position=0.3", "--items",
             "builtin:controlled?n=12", "--k", "3", "--budget", "40", "--rule", "random",
             "--seed", "2", "--samples", "300"],
    "scoring_bias": ["scoring-bias", "--judge", "sim?seed=0", "--data", "builtin:graded",
                     "--limit", "8", "--repeats", "2", "--seed", "1",
                     "--perturbations", "order_desc,order_random"],
}


def _run(args: list[str]) -> Any:
    res = runner.invoke(app, args)
    return res


def _doc(out: Path) -> dict[str, Any]:
    return json.loads((out / "results.json").read_text(encoding="utf-8"))


def _same(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without its stamps."""
    kept = {k: v for k, v in doc.items() if k not in STAMPS}
    if isinstance(kept.get("adaptive"), dict):  # its calls by source: sent, then cached
        kept["adaptive"] = {k: v for k, v in kept["adaptive"].items()
                            if k != "calls_by_source"}
    return kept


@pytest.mark.parametrize("name", list(RUNS))
def test_rerun_from_folder_gives_the_same_results_from_the_cache(tmp_path, name):
    cache = tmp_path / "c.sqlite"
    first, again = tmp_path / "first", tmp_path / "again"
    res = _run([*RUNS[name], "--cache", str(cache), "--out", str(first)])
    assert res.exit_code == 0, res.output
    doc = _doc(first)
    cmd = RUNS[name][0]
    # every setting of the command is recorded, as the run used it
    # (but out: the folder the results are in; two runs into two folders record the same)
    assert set(doc["settings"]) == set(CONFIGS[cmd].model_fields) - {"out"}
    for target in (first, first / "results.json"):  # the folder or its results.json
        res = _run([cmd, "--config", str(target), "--out", str(again)])
        assert res.exit_code == 0, res.output
        redo = _doc(again)
        assert redo.pop("rerun_of", {"data_same": True})["data_same"] is True  # (rank: none)
        assert _same(redo) == _same(doc) and redo["settings"] == doc["settings"]
        assert redo["calls"]["made"] == 0 and redo["calls"]["failed"] == 0


def test_full_is_recorded_and_rerun(tmp_path):
    """--full was recorded nowhere: the re-run must be a full audit again (its probes include
    the ones only --full adds, and self_preference is 'not run' as in the first run)."""
    cache = tmp_path / "c.sqlite"
    res = _run([*RUNS["audit_full"], "--cache", str(cache), "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    doc = _doc(tmp_path / "a")
    assert doc["settings"]["full"] is True and doc["settings"]["n"] == 10
    res = _run(["audit", "--config", str(tmp_path / "a"), "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert set(_doc(tmp_path / "b")["probes"]) == set(doc["probes"])


def test_flags_override_the_recorded_settings(tmp_path):
    """As for a TOML file: a flag wins over the folder's setting, and one that excludes a
    recorded setting sets it aside (--sample against the recorded n)."""
    cache = tmp_path / "c.sqlite"
    res = _run([*RUNS["audit"], "--cache", str(cache), "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    res = _run(["audit", "--config", str(tmp_path / "a"), "--seed", "5", "--sample", "15",
                "--out", str(tmp_path / "b")])
    assert res.exit_code == 0, res.output
    assert "n = 12 set aside for --sample" in res.output
    got = _doc(tmp_path / "b")["settings"]
    assert (got["seed"], got["sample"], got["n"]) == (5, 15, None)
    assert got["judge"] == "sim?position=1&length=0.5"


@pytest.fixture(scope="module")
def audit_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("rerun")
    res = _run([*RUNS["audit"], "--no-cache", "--out", str(tmp / "a")])
    assert res.exit_code == 0, res.output
    return tmp / "a"


def _edited(tmp_path: Path, run: Path, edit: Any) -> Path:
    doc = _doc(run)
    edit(doc)
    out = tmp_path / "old"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return out


def test_results_without_settings_are_refused(tmp_path, audit_run):
    old = _edited(tmp_path, audit_run, lambda d: d.pop("settings"))
    res = _run(["audit", "--config", str(old), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    assert f"--config {old}: results.json holds no 'settings'" in " ".join(res.output.split())
    assert not (tmp_path / "b").exists()


def test_settings_missing_a_field_name_it(tmp_path, audit_run):
    old = _edited(tmp_path, audit_run, lambda d: d["settings"].pop("full"))
    res = _run(["audit", "--config", str(old / "results.json"), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "settings lacks full" in text and "too old" in text


def test_a_results_folder_of_another_command_is_refused(tmp_path, audit_run):
    res = _run(["evaluate", "--config", str(audit_run), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "holds the results of 'audit', not of `evaluate`" in text
    assert f"judgeaudit audit --config {audit_run}" in text


def test_a_masked_secret_is_not_sent_as_the_key(tmp_path, audit_run, monkeypatch):
    """results.json never keeps a spec's key; a re-run must not send '***' as one."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # (else it stands in for the key)
    def edit(d: dict[str, Any]) -> None:
        d["settings"]["judge"] = "openai:gpt-4o?api_key=***"

    old = _edited(tmp_path, audit_run, edit)
    res = _run(["audit", "--config", str(old), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    assert "give --judge again" in " ".join(res.output.split())


def test_a_secret_in_a_spec_is_not_recorded(tmp_path):
    from judgeaudit.config import EvaluateConfig, recorded_settings

    cfg = EvaluateConfig.model_construct(
        judge="openai:gpt-4o?api_key=sk-secret123&base_url=http://u:pw@host/v1",
        **{k: f.default for k, f in EvaluateConfig.model_fields.items() if k != "judge"})
    text = json.dumps(recorded_settings(cfg))
    assert "sk-secret123" not in text and ":pw@" not in text
    assert recorded_settings(cfg)["judge"].startswith("openai:gpt-4o?api_key=***")


def test_a_folder_without_results_is_refused(tmp_path):
    (tmp_path / "empty").mkdir()
    res = _run(["audit", "--config", str(tmp_path / "empty"), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    assert "a directory without results.json" in " ".join(res.output.split())


def test_an_unfinished_runs_record_says_so(tmp_path, audit_run):
    """The record an interrupted run leaves holds no settings; it is not 'too old'."""
    def edit(d: dict[str, Any]) -> None:
        d.pop("settings")
        d["run"] = {"status": "failed", "unfinished": True,
                    "message": "run failed: the run did not finish"}
        d["error"] = "the run did not finish"

    old = _edited(tmp_path, audit_run, edit)
    res = _run(["audit", "--config", str(old), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "the record of a run that did not finish" in text and "too old" not in text


def test_settings_that_are_no_object_are_refused(tmp_path, audit_run):
    def edit(d: dict[str, Any]) -> None:
        d["settings"] = "seed=1"

    old = _edited(tmp_path, audit_run, edit)
    res = _run(["audit", "--config", str(old), "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    assert "results.json's 'settings' is not an object" in " ".join(res.output.split())
