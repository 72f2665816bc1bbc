"""A config file's errors name the line for a key under a `[table]` and for an option
conflict, through the real CLI (`judgeaudit CMD --config f.toml ...`).

No command's settings take a table (each is a top-level `key = value`; `judgeaudit schema`
lists none of type object), and TOML puts every key written below a `[table]` header into
that table: a setting there ("n" after a `[notes]` table) was refused as "unknown key
'notes'" or "key 'judge': expected a string, got {'model': ...}" with no line, since the
line finder (`config.key_lines`) reads top-level keys only. A conflict between two keys of
the file ("n = 10 and sample = 20 cannot be given together"), the note that sets a file's
key aside for a flag typed, and a command's message about a file's key named no line either.
"""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
SIM = ["--judge", "sim?position=1.5&seed=0", "--probes", "position", "--no-cache"]


def _run(tmp_path, text: str, *args: str, command: str = "audit"):
    cfg = tmp_path / "f.toml"
    cfg.write_text(text, encoding="utf-8")
    res = runner.invoke(app, [command, "--config", str(cfg), *args,
                              "--out", str(tmp_path / "o")])
    return res, cfg, " ".join(res.output.split())


@pytest.mark.parametrize(("text", "needles"), [
    # a setting written below a table header belongs to it; its wrong value is said too
    ('judge = "sim"\n\n[judge_settings]\nn = "x"\n',
     ["line 4: [judge_settings] key 'n': expected a top-level key, not one of a table",
      "n expects an integer >= 1, got 'x'", "above the first [table] header (line 3)"]),
    ('n = 5\n[notes]\ntext = "why"\nprobes = ["position"]\n',
     ["line 4: [notes] key 'probes': expected a top-level key"]),
    ('judge = "sim"\n[foo.bar]\nn = 0\n',
     ["line 3: [foo.bar] key 'n': expected a top-level key",
      "n expects an integer >= 1, got 0"]),
    # a table named as a setting, and an unknown one (with the closest setting)
    ('[judge]\nmodel = "x"\n',
     ["line 1: [judge]: expected `judge = ...` (a string) as a top-level key, got a table "
      "(key 'model' at line 2)"]),
    ('judge = "sim"\n[judeg]\nbar = 1\n',
     ["line 2: [judeg]: unknown table 'judeg' for `audit` (key 'bar' at line 3); did you "
      "mean judge?", "`audit` takes no tables"]),
    # a multi-line string's lines are no keys or headers
    ('note = """\n[x]\nn = 5\n"""\n\n[extra]\nn = "x"\n',
     ["line 7: [extra] key 'n': expected a top-level key"]),
])
def test_a_key_under_a_table_names_its_line_and_table(tmp_path, text, needles):
    res, cfg, out = _run(tmp_path, text, *SIM)
    assert res.exit_code == 2, res.output
    assert f"--config {cfg}: line" in out, out
    for needle in needles:
        assert needle in out, out
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_table_in_another_commands_file_names_its_line(tmp_path):
    res, cfg, out = _run(tmp_path, 'oracle = "sim"\n[rank]\nbudgets = [30]\n',
                         command="rank-eval")
    assert res.exit_code == 2, res.output
    assert (f"--config {cfg}: line 3: [rank] key 'budgets': expected a top-level key, not "
            "one of a table; `rank-eval` takes no tables") in out, out


@pytest.mark.parametrize(("text", "needle"), [
    ("# gate\nn = 10\n\nsample = 20\n",
     "lines 2, 4: n = 10 and sample = 20 cannot be given together (both choose the items)"),
    ("seed = 1\nmax_n = 60\n",
     "line 2: max_n = 60 applies only with adaptive = true, and adaptive is not set"),
    ("adaptive = false\nseed = 1\nround_size = 5\n",
     "lines 1, 3: round_size = 5 applies only with adaptive = true, and the file sets "
     "adaptive = false"),
])
def test_two_keys_of_the_file_that_conflict_name_their_lines(tmp_path, text, needle):
    res, cfg, out = _run(tmp_path, text, *SIM)
    assert res.exit_code == 2, res.output
    assert f"--config {cfg}: {needle}" in out, out


def test_a_files_key_set_aside_for_a_flag_names_its_line_and_the_flag(tmp_path, isolated_cache):
    res, cfg, out = _run(tmp_path, "seed = 0\nadaptive = true\nmax_n = 60\n", *SIM, "--n", "10")
    assert res.exit_code == 0, res.output
    assert (f"note: --config {cfg}: adaptive = true, max_n = 60 set aside for --n (lines 2, 3 "
            "of the file)") in out, out


def test_a_commands_message_about_a_files_key_names_its_line(tmp_path):
    """The command's own checks: the file's key first (rank-eval's budgets against the pool
    --items gives), and the file's key named after a flag typed (audit's --probes needing a
    panel the file's adaptive = true cannot take)."""
    res, cfg, out = _run(tmp_path, 'oracle = "sim"\n\nbudgets = [500]\n', "--items",
                         "builtin:controlled?n=6", command="rank-eval")
    assert res.exit_code == 2, res.output
    assert f"--config {cfg}: line 3: key 'budgets' must be in 1..30" in out, out
    res, cfg, out = _run(tmp_path, 'judge = "sim"\nadaptive = true\n', "--probes",
                         "self_preference", "--no-cache")
    assert res.exit_code == 2, res.output
    assert "probe self_preference needs --panel" in out, out
    assert f"(adaptive = true: from --config {cfg}, line 2)" in out, out
