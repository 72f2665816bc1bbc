"""A results.json whose sections have the wrong type (edited by hand, damaged) is bad input:
exit 2 naming the file and the field, for `report` with and without --json and for `compare`
(CI tester, point 7). With `"probes": "x"`, `report --json` exited 3 ("a bug ... traceback
above", and no traceback), `report` exited 0 with an empty report, and `compare` said "not
an audit result (command 'audit')"."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("audit") / "a"
    res = runner.invoke(app, ["audit", "--judge", "sim?seed=0&position=1", "--n", "8",
                              "--no-cache", "--out", str(out)])
    assert res.exit_code == 0, res.output
    return out


def _damaged(src: Path, dst: Path, edit) -> Path:
    shutil.copytree(src, dst)
    doc = json.loads((dst / "results.json").read_text())
    edit(doc)
    (dst / "results.json").write_text(json.dumps(doc))
    return dst


def _set(*path: str, value):
    def edit(doc):
        for k in path[:-1]:
            doc = doc[k]
        doc[path[-1]] = value
    return edit


CASES = [
    (("probes",), "x", "field 'probes' is a string, expected an object"),
    (("summary",), [1], "field 'summary' is a list, expected an object"),
    (("probes", "position"), 5, "field 'probes.position' is a whole number, expected an "
                                "object"),
    (("probes", "verbosity", "effect"), "big", "field 'probes.verbosity.effect' is a string, "
                                              "expected an object or null"),
    (("probes", "position", "n"), "40", "field 'probes.position.n' is a string"),
    (("summary", "biased"), "position", "field 'summary.biased' is a string"),
    (("run",), None, "field 'run' is null, expected an object"),
]


@pytest.mark.parametrize(("path", "value", "said"), CASES)
def test_report_and_compare_name_the_file_and_the_field(audit_dir, tmp_path, path, value,
                                                        said):
    bad = _damaged(audit_dir, tmp_path / "bad", _set(*path, value=value))
    runs = {
        "report --json": ["report", str(bad), "--json", "--out", str(tmp_path / "r1.html")],
        "report": ["report", str(bad), "--out", str(tmp_path / "r2.html")],
        "compare": ["compare", str(bad), str(audit_dir), "--out", str(tmp_path / "c")],
        "compare as B": ["compare", str(audit_dir), str(bad), "--out", str(tmp_path / "c2")],
    }
    for what, args in runs.items():
        res = runner.invoke(app, args)
        text = " ".join(res.output.split())
        assert res.exit_code == 2, (what, res.output)
        assert str(bad / "results.json") in text and said in text, (what, text)
        assert "a bug" not in text and "not an audit result" not in text, what


def test_report_json_of_a_damaged_file_is_bad_input_not_a_bug(audit_dir, tmp_path):
    """The tester's case as a user runs it (the console entry point): exit 3 with "a bug
    ... traceback above" and no traceback; now exit 2 and --json's one object saying why."""
    import subprocess
    import sys

    bad = _damaged(audit_dir, tmp_path / "bad", _set("probes", value="x"))
    res = subprocess.run([sys.executable, "-m", "judgeaudit", "report", str(bad), "--json"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert "a bug" not in res.stderr and "field 'probes' is a string" in res.stderr
    out = json.loads(res.stdout.splitlines()[-1])
    assert out["ok"] is False and out["exit_code"] == 2
    assert str(bad / "results.json") in out["reason"]


def test_an_intact_result_still_reads(audit_dir, tmp_path):
    res = runner.invoke(app, ["report", str(audit_dir), "--json", "--out",
                              str(tmp_path / "r.html")])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout.splitlines()[-1])["command"] == "audit"
