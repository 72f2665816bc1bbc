"""`--config FILE.toml`, `--json` and `judgeaudit schema` end to end with the sim judge: a
checked-in audit config re-runs the audit, flags override the file, a bad file is a clear
exit 2, and `--json` prints exactly one JSON object on stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.config import AuditConfig

runner = CliRunner()

AUDIT_TOML = """\
# an audit checked into a repo: re-run it with `judgeaudit audit --config audit.toml`
config_version = 1
judge = "sim:biased?seed=0"
data = "builtin:facts"
probes = "position,verbosity"
n = 20
seed = 3
out = "{out}"
no_cache = true
"""


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _invoke(args: list[str]):
    return runner.invoke(app, args)


def test_audit_config_file_runs_and_flags_override_it(tmp_path):
    out = tmp_path / "from-file"
    cfg = _write(tmp_path / "audit.toml", AUDIT_TOML.format(out=out.as_posix()))
    res = _invoke(["audit", "--config", str(cfg), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["judge"].startswith("sim:biased") and set(doc["probes"]) == {"position",
                                                                             "verbosity"}
    summary = json.loads(res.stdout)  # exactly one JSON object on stdout
    assert summary["command"] == "audit" and summary["n_items"] == doc["n_items"]

    other = tmp_path / "override"
    res = _invoke(["audit", "--probes", "position", "--config", str(cfg), "--out", str(other),
                   "--n", "12"])  # flags before or after --config: the flag wins
    assert res.exit_code == 0, res.output
    doc2 = json.loads((other / "results.json").read_text())
    assert set(doc2["probes"]) == {"position"}
    assert doc2["n_items"] == 12 and doc["n_items"] == 20
    assert doc2["judge"] == doc["judge"]  # the rest still from the file


@pytest.mark.parametrize(("text", "needles"), [
    ("nn = 3\n", ["unknown key 'nn'", "audit", "known keys"]),
    ("n = 0\n", ["key 'n'", "expected an integer >= 1", "got 0"]),
    ("n = \"30\"\n", ["key 'n'", "expected an integer >= 1", "got '30'"]),
    ("full = 1\n", ["key 'full'", "expected true or false"]),
    ("alpha = 1.5\n", ["key 'alpha'", "< 1.0"]),
    ("config_version = 2\n", ["key 'config_version'", "expected 1"]),
    ("n = [\n", ["not valid TOML"]),
])
def test_a_bad_config_file_is_a_clear_usage_error(tmp_path, text, needles):
    cfg = _write(tmp_path / "bad.toml", text)
    res = _invoke(["audit", "--config", str(cfg), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    msg = " ".join(res.output.split())
    assert str(cfg) in msg or "bad.toml" in msg
    for needle in needles:
        assert needle in msg
    assert not (tmp_path / "o" / "results.json").exists()


def test_config_lists_numbers_and_a_bom_read_as_the_options_do(tmp_path):
    """TOML lists for comma-separated options, numbers for options that hold numbers as
    text, and a UTF-8 BOM (Windows Notepad) are read as the command line's forms; all three
    were refused ("expected a string", "not valid TOML")."""
    audit = tmp_path / "audit.toml"
    audit.write_bytes(b"\xef\xbb\xbfjudge = \"sim\"\nprobes = [\"position\", \"verbosity\"]\n"
                      b"n = 12\nno_cache = true\n")
    res = _invoke(["audit", "--config", str(audit), "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    assert set(json.loads((tmp_path / "a" / "results.json").read_text())["probes"]) == {
        "position", "verbosity"}
    cfg = _write(tmp_path / "re.toml",
                 'oracle = "sim?seed=2"\nitems = "builtin:controlled?n=6&k=2"\n'
                 'budgets = [6, 12]\nrules = ["topk", "random"]\nseeds = 2\nlam = 2.0\n'
                 'samples = 50\nno_cache = true\n')
    res = _invoke(["rank-eval", "--config", str(cfg), "--out", str(tmp_path / "e")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "e" / "results.json").read_text())
    assert doc["budgets"] == [6, 12] and doc["rules"] == ["topk", "random"]
    assert doc["seeds"] == [0, 1] and doc["config"]["lam"] == 2.0
    bad = _write(tmp_path / "bad.toml", 'probes = ["position", 3.5, true]\n')
    res = _invoke(["audit", "--config", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "key 'probes'" in " ".join(res.output.split())


def test_missing_config_file(tmp_path):
    res = _invoke(["evaluate", "--config", str(tmp_path / "nope.toml")])
    assert res.exit_code == 2 and "no such file" in res.output


def test_rank_and_rank_eval_read_a_config_and_flags_override_it(tmp_path):
    """rank and rank-eval take `--config` the way every other command does: the file's
    settings are the defaults and the command-line flags win."""
    cfg = _write(tmp_path / "rank.toml",
                 'judge = "sim?seed=1"\nitems = "builtin:controlled?n=8&k=2"\nbudget = 30\n'
                 'samples = 100\nno_cache = true\n')
    out = tmp_path / "r"
    res = _invoke(["rank", "--config", str(cfg), "--budget", "10", "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["config"]["budget"] == 10 and doc["config"]["samples"] == 100
    assert doc["judge"] == "sim?seed=1" and doc["n_items"] == 8

    ecfg = _write(tmp_path / "rank-eval.toml",
                  'oracle = "sim?seed=2"\nitems = "builtin:controlled?n=6&k=2"\n'
                  'budgets = "6,12"\nrules = "topk,random"\nseeds = "2"\nsamples = 50\n'
                  'no_cache = true\n')
    out = tmp_path / "e"
    res = _invoke(["rank-eval", "--config", str(ecfg), "--rules", "random", "--out", str(out),
                   "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["rules"] == ["random"] and doc["budgets"] == [6, 12] and doc["seeds"] == [0, 1]
    assert json.loads(res.stdout)["command"] == "rank-eval"

    bad = _write(tmp_path / "bad.toml", "budget = 0\n")
    res = _invoke(["rank", "--config", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    msg = " ".join(res.output.split())
    assert "key 'budget'" in msg and "expected an integer >= 1" in msg
    assert not (tmp_path / "o").exists()


def test_the_judge_option_is_judge_in_every_command(tmp_path):
    """rank-eval names its judge --oracle and the HUB-J commands --judges; `--judge`, which
    every other command takes, now works there too (before: "No such option: --judge
    (Possible options: --budgets)")."""
    out = tmp_path / "e"
    res = _invoke(["rank-eval", "--judge", "sim?seed=2", "--items",
                   "builtin:controlled?n=6&k=2", "--budgets", "6", "--rules", "random",
                   "--seeds", "1", "--samples", "50", "--no-cache", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert json.loads((out / "results.json").read_text())["oracle"] == "sim?seed=2"
    for command in ("discover", "quantify", "mitigate"):
        res = _invoke([command, "--help"])
        assert "--judges,--judge" in res.output.replace(" ", ""), command


def test_entry_point_subprocess_config_and_json(tmp_path):
    """The installed entry point: --config and --json, stdout is one JSON object."""
    out = tmp_path / "sub"
    cfg = _write(tmp_path / "audit.toml", AUDIT_TOML.format(out=out.as_posix()))
    proc = subprocess.run(
        [sys.executable, "-m", "judgeaudit.cli.main", "audit", "--config", str(cfg),
         "--probes", "position", "--json"],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,
        env={**os.environ, "COLUMNS": "100"})
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["command"] == "audit" and list(summary["verdicts"]) == ["position"]
    assert "results:" in proc.stderr  # the human output stays on stderr


def test_json_for_evaluate_scoring_bias_and_compare(tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", "--judge", "sim?seed=0", "--limit", "10", "--out",
                              str(tmp_path / "e"), "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["command"] == "evaluate" and s["ok"] and s["accuracy"]["n"] == 10

    res = runner.invoke(app, ["scoring-bias", "--judge", "sim?order_bias=0.5", "--limit", "5",
                              "--perturbations", "order_desc", "--repeats", "2", "--out",
                              str(tmp_path / "s"), "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["command"] == "scoring-bias" and s["n_items"] == 5

    for name in ("a", "b"):
        r = runner.invoke(app, ["audit", "--judge", "sim:biased?seed=0", "--probes",
                                "position", "--n", "15", "--out", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
    res = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out",
                              str(tmp_path / "c"), "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["command"] == "compare" and set(s["verdicts"]) == {"position"}
    assert s["verdicts"]["position"] in ("no_change", "underpowered")


def test_json_for_a_failed_run_still_prints_the_summary(tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", "--judge", "sim?seed=0", "--limit", "5",
                              "--min-valid", "50", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 3, res.output
    s = json.loads(res.stdout)
    assert s["ok"] is False and s["reason"]


def test_compare_reads_its_run_arguments_from_a_config(tmp_path):
    for name in ("a", "b"):
        r = runner.invoke(app, ["audit", "--judge", "sim?seed=0", "--probes", "position",
                                "--n", "10", "--no-cache", "--out", str(tmp_path / name)])
        assert r.exit_code == 0, r.output
    cfg = _write(tmp_path / "cmp.toml", f'run_a = "{(tmp_path / "a").as_posix()}"\n'
                                        f'run_b = "{(tmp_path / "b").as_posix()}"\n'
                                        f'out = "{(tmp_path / "c").as_posix()}"\n')
    res = runner.invoke(app, ["compare", "--config", str(cfg)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "c" / "results.json").exists()


def test_schema_command_prints_and_writes_schemas(tmp_path):
    res = runner.invoke(app, ["schema", "audit"])
    assert res.exit_code == 0, res.output
    schema = json.loads(res.stdout)
    assert schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(AuditConfig.model_fields)
    assert schema["properties"]["n"]["anyOf"][0]["minimum"] == 1
    # an empty gate turned the gate off; the CLI refuses it and so does the schema
    import re

    text = next(a for a in schema["properties"]["fail_on"]["anyOf"] if a.get("type") == "string")
    assert [bool(re.search(text["pattern"], v)) for v in ("", " ", ",", " , ", "position")] == [
        False, False, False, False, True]

    res = runner.invoke(app, ["schema", "audit", "--result"])
    assert res.exit_code == 0 and json.loads(res.stdout)["properties"]["command"]["const"] == (
        "audit")

    res = runner.invoke(app, ["schema", "--out", str(tmp_path / "s")])
    assert res.exit_code == 0, res.output
    names = sorted(p.name for p in (tmp_path / "s").iterdir())
    assert "config-rank-eval.schema.json" in names and "result.schema.json" in names
    assert len(names) == 10

    res = runner.invoke(app, ["schema", "nope"])
    assert res.exit_code == 2 and "known: evaluate" in " ".join(res.output.split())


def test_the_readme_config_example_runs_as_written(tmp_path):
    """The README's audit.toml: a release gate on the planted position bias (exit 1)."""
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    block = re.search(r"```toml\n(# audit\.toml.*?)```", readme, re.S).group(1)
    cfg = _write(tmp_path / "audit.toml", block)
    res = _invoke(["audit", "--config", str(cfg), "--no-cache", "--out", str(tmp_path / "o")])
    assert res.exit_code == 1, res.output  # position is planted: the gate trips
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert set(doc["probes"]) == {"position", "verbosity"} and doc["n_items"] == 40
    assert doc["probes"]["position"]["verdict"] == "biased"


SIM = ["--judge", "sim?position=1.5&seed=0", "--probes", "position", "--no-cache"]


@pytest.mark.parametrize(("toml", "flags", "note", "n_items", "adaptive"), [
    ("sample = 20\n", ["--n", "10"], "sample = 20 set aside for --n", 10, False),
    ("adaptive = true\nmax_n = 60\n", ["--no-adaptive", "--n", "10"],
     "max_n = 60 set aside for --no-adaptive", 10, False),
    ("adaptive = true\nmax_n = 60\n", ["--n", "10"],
     "adaptive = true, max_n = 60 set aside for --n", 10, False),
    ("n = 10\n", ["--adaptive", "--max-n", "40", "--round-size", "20"],
     "n = 10 set aside for --adaptive", 40, True),
])
def test_a_flag_overrides_the_files_setting_it_excludes(tmp_path, toml, flags, note, n_items,
                                                        adaptive):
    """What the user typed wins over the file's setting of the other side of an exclusive
    pair (it was "error: --n and --sample both choose the items", exit 2), and one note
    says which of the file's keys were set aside."""
    cfg = _write(tmp_path / "x.toml", toml)
    out = tmp_path / "o"
    res = _invoke(["audit", *SIM, "--config", str(cfg), *flags, "--out", str(out)])
    assert res.exit_code == 0, res.output
    msg = " ".join(res.output.split())
    assert f"--config {cfg}: {note}" in msg
    doc = json.loads((out / "results.json").read_text())
    assert doc["n_items"] == n_items
    assert ("adaptive" in doc) == adaptive


@pytest.mark.parametrize(("toml", "flags", "needles"), [
    ("n = 10\nsample = 20\n", [], ["n = 10 and sample = 20 cannot be given together",
                                   "both choose the items"]),
    ("max_n = 60\n", [], ["max_n = 60 applies only with adaptive = true",
                          "adaptive is not set"]),
    ("adaptive = false\nround_size = 5\n", [], ["round_size = 5 applies only with adaptive",
                                                "the file sets adaptive = false"]),
    ("adaptive = true\npanel = \"sim\"\n", [], ["adaptive = true and panel = \"sim\""]),
])
def test_conflicts_within_the_file_name_the_file(tmp_path, toml, flags, needles):
    cfg = _write(tmp_path / "x.toml", toml)
    res = _invoke(["audit", *SIM, "--config", str(cfg), *flags, "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    msg = " ".join(res.output.split())
    assert f"--config {cfg}:" in msg
    for needle in needles:
        assert needle in msg
    assert not (tmp_path / "o" / "results.json").exists()


def test_conflicts_on_the_command_line_stay_the_commands_errors(tmp_path):
    cfg = _write(tmp_path / "x.toml", "seed = 1\n")
    res = _invoke(["audit", *SIM, "--config", str(cfg), "--n", "3", "--sample", "4",
                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    msg = " ".join(res.output.split())
    assert "--n and --sample both choose the items" in msg and "x.toml" not in msg


def test_scoring_bias_no_generate_references_sets_the_files_generator_aside(tmp_path):
    cfg = _write(tmp_path / "s.toml", 'generate_references = true\ngenerator = "sim"\n')
    res = _invoke(["scoring-bias", "--judge", "sim?order_bias=0.5", "--limit", "3",
                   "--perturbations", "order_desc", "--repeats", "1", "--no-cache",
                   "--config", str(cfg), "--no-generate-references",
                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert 'generator = "sim" set aside for --no-generate-references' in " ".join(
        res.output.split())


@pytest.mark.parametrize(("command", "text", "needles"), [
    ("audit", 'probes = ["position", "verbosty"]\n',
     ["key 'probes': unknown probe 'verbosty'", "did you mean verbosity?"]),
    ("audit", 'fail_on = "positon"\n', ["key 'fail_on': unknown probe 'positon'",
                                        "did you mean position?"]),
    ("audit", "probes = []\n", ["key 'probes'", "a non-empty list of names", "got []"]),
    ("audit", 'probes = ""\n', ["key 'probes'", "comma-separated names", "got ''"]),
    ("audit", "note = 5\n", ["key 'note': expected a string, got 5"]),
    ("audit", 'fail-on = "biased"\n', ["unknown key 'fail-on'", "did you mean fail_on?"]),
    ("audit", "nn = 3\n", ["unknown key 'nn'", "did you mean n?"]),
    ("rank-eval", 'budgets = [30, "x"]\n',
     ["key 'budgets'", "a non-empty list of integers >= 1", "'x' is not an integer >= 1"]),
    ("rank-eval", 'oracle = "sim"\nbudgets = "30,x"\n',
     ["key 'budgets': expected comma-separated integers"]),
])
def test_config_file_errors_name_the_file_and_the_key(tmp_path, command, text, needles):
    cfg = _write(tmp_path / "bad.toml", text)
    judge = ["--judge", "sim?seed=0"] if command == "audit" else []
    res = _invoke([command, *judge, "--no-cache", "--config", str(cfg), "--out",
                   str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    msg = " ".join(res.output.split())
    assert f"--config {cfg}: " in msg
    for needle in needles:
        assert needle in msg
    assert not (tmp_path / "o" / "results.json").exists()
