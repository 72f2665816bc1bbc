"""A config file's errors name the line of the key they are about (README promises file, key,
line and what was expected; the line was missing): a value of the wrong type, an unknown
key, and an unknown probe under `probes` or `fail_on`. tomllib gives no positions for valid
TOML, so the line is read off the file (`config.key_lines`); a key under a [table] is not a
setting and gets no line."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.config import ConfigError, key_lines, load_config_file

runner = CliRunner()


def test_a_wrong_value_and_an_unknown_key_name_their_line(tmp_path):
    bad = tmp_path / "gate.toml"
    bad.write_text('# the release gate\njudge = "sim"\n\n  n = "forty"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"gate\.toml: line 4: key 'n': expected an "
                                          r"integer >= 1, got 'forty'"):
        load_config_file(bad, "audit")
    bad.write_text('judge = "sim"\n"fial_on" = "biased"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"gate\.toml: line 2: unknown key 'fial_on'.*did "
                                          r"you mean fail_on\?"):
        load_config_file(bad, "audit")


def test_key_lines_reads_top_level_keys_only(tmp_path):
    f = tmp_path / "c.toml"
    f.write_text('a = 1\n\'b\' = 2\n[t]\nc = 3\n', encoding="utf-8")
    assert key_lines(f) == {"a": 1, "b": 2}
    assert key_lines(tmp_path / "missing.toml") == {}


def test_an_unknown_probe_in_the_file_names_its_line(tmp_path):
    bad = tmp_path / "audit.toml"
    bad.write_text('judge = "sim"\nn = 5\nfail_on = "positon"\n', encoding="utf-8")
    r = runner.invoke(app, ["audit", "--config", str(bad), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2, r.output
    text = " ".join(r.output.split())
    assert "line 3: key 'fail_on': unknown probe 'positon'; did you mean position?" in text
