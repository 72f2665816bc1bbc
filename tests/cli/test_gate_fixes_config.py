"""A flag given on the command line wins over the `--config` file (CI tester, point 6):
`--cache X` was ignored for a file's `no_cache = true` (no file made), `--no-cache --cache X`
silently ran without a cache, and a file's `fail_on` could not be turned off."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
AUDIT = ["audit", "--judge", "sim?seed=0&position=3", "--n", "8"]


def _toml(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_cache_on_the_command_line_wins_over_a_files_no_cache(tmp_path):
    cfg = _toml(tmp_path / "f.toml", "no_cache = true\n")
    cache = tmp_path / "c.sqlite"
    res = runner.invoke(app, [*AUDIT, "--config", str(cfg), "--cache", str(cache),
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert cache.is_file() and cache.stat().st_size > 0
    text = " ".join(res.output.split())
    assert "no_cache = true set aside for --cache" in text


def test_no_cache_on_the_command_line_wins_over_a_files_cache(tmp_path):
    cache = tmp_path / "c.sqlite"
    cfg = _toml(tmp_path / "f.toml", f"cache = {json.dumps(str(cache))}\n")
    res = runner.invoke(app, [*AUDIT, "--config", str(cfg), "--no-cache",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert not cache.exists()
    assert "set aside for --no-cache" in " ".join(res.output.split())


def test_cache_and_no_cache_both_typed_is_a_usage_error(tmp_path):
    cache = tmp_path / "c.sqlite"
    res = runner.invoke(app, [*AUDIT, "--no-cache", "--cache", str(cache), "--json",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "--cache" in text and "--no-cache" in text and "give one" in text
    assert not cache.exists() and not (tmp_path / "o" / "results.json").exists()
    assert json.loads(res.stdout.splitlines()[-1])["exit_code"] == 2


def test_cache_and_no_cache_both_in_one_file_are_refused_naming_it(tmp_path):
    cfg = _toml(tmp_path / "f.toml", 'cache = "x.sqlite"\nno_cache = true\n')
    res = runner.invoke(app, [*AUDIT, "--config", str(cfg), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2
    assert f"--config {cfg}" in " ".join(res.output.split())


@pytest.mark.parametrize("gate", ["position", "biased"])
def test_fail_on_none_turns_off_a_files_gate(tmp_path, gate):
    """The file's gate trips (exit 1); `--fail-on none` on the command line turns it off."""
    cfg = _toml(tmp_path / "f.toml", f'fail_on = "{gate}"\nno_cache = true\nn = 30\n')
    on = runner.invoke(app, [*AUDIT[:-2], "--config", str(cfg), "--out", str(tmp_path / "a")])
    assert on.exit_code == 1, on.output
    off = runner.invoke(app, [*AUDIT[:-2], "--config", str(cfg), "--fail-on", "none", "--json",
                              "--out", str(tmp_path / "b")])
    assert off.exit_code == 0, off.output
    assert "gate" not in json.loads(off.stdout.splitlines()[0])
    # an empty value is still refused (`--fail-on "$GATE"` with GATE unset)
    empty = runner.invoke(app, [*AUDIT[:-2], "--config", str(cfg), "--fail-on", "",
                                "--out", str(tmp_path / "c")])
    assert empty.exit_code == 2 and "give none" in " ".join(empty.output.split())


def test_fail_on_none_in_the_help(tmp_path):
    for cmd in ("audit", "compare"):
        res = runner.invoke(app, [cmd, "--help"], terminal_width=200)
        # the help panel's border (│) may fall between two words of a wrapped line
        assert "'none': no gate" in " ".join(res.output.replace("│", " ").split()), cmd


def test_compare_fail_on_none_turns_off_a_files_gate(tmp_path):
    for name in ("a", "b"):
        res = runner.invoke(app, [*AUDIT, "--no-cache", "--out", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    del doc["probes"]["verbosity"]  # B lacks a probe A ran: any gate fails on it
    (tmp_path / "b" / "results.json").write_text(json.dumps(doc))
    cfg = _toml(tmp_path / "f.toml", 'fail_on = "worse"\n')
    args = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--config", str(cfg)]
    on = runner.invoke(app, [*args, "--out", str(tmp_path / "c1")])
    assert on.exit_code == 1, on.output
    off = runner.invoke(app, [*args, "--fail-on", "none", "--out", str(tmp_path / "c2")])
    assert off.exit_code == 0, off.output
