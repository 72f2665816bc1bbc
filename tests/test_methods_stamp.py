"""Every results.json says which methods and build made it (`methods`, `build`), and `report`
and `compare` say when a result was made by older methods (or a newer judgeaudit).

Every build wrote version 0.1.0 and schema_version 1, so an old result could not be told from
a new one: `report` on a scoring-bias result of 11-26 recommended ref_1 with no word of the
Holm correction it was made without, and showed an audit's old interval under today's method;
`compare` set old and new intervals side by side. The results "from before the stamp" here
are real runs' documents written as an older build wrote them: no stamp, and (where that
build had none) no interval method names and no Holm section."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.methods import METHODS_VERSION, _git_commit, build, notes
from judgeaudit.report import read_results
from judgeaudit.result import Result

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[1]


def _strip_methods(x: Any) -> Any:
    """`x` without interval method names, as builds before them wrote estimates."""
    if isinstance(x, dict):
        return {k: _strip_methods(v) for k, v in x.items() if k not in ("method", "ci_method")}
    if isinstance(x, list):
        return [_strip_methods(v) for v in x]
    return x


def _old(doc: dict[str, Any], folder: Path, *, methods: bool = True,
         drop: tuple[str, ...] = ()) -> Path:
    """`doc` written as a build before the stamp wrote it: no `methods`, no `build` (and,
    with `methods=False`, no interval method names; `drop`: sections it did not have)."""
    doc = {k: v for k, v in doc.items() if k not in ("methods", "build", *drop)}
    if not methods:
        doc = _strip_methods(doc)
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps({"schema_version": 1, **doc}))
    return folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Real runs with the sim judge (audit twice on the same items, scoring-bias), written
    by this build (stamped), in a cache of their own."""
    tmp = tmp_path_factory.mktemp("runs")
    cache = str(tmp / "cache.sqlite")
    out = {}
    for name, spec in (("audit", "sim?position=0.4&seed=0"), ("audit2", "sim?seed=1")):
        res = judgeaudit.audit(spec, "builtin:facts", n=12, probes="position", cache=cache)
        out[name] = Path(res.to_json(tmp / name)).parent
    res = judgeaudit.scoring_bias("sim?order_bias=0.5&seed=0", "builtin:graded", limit=6,
                                  repeats=1, cache=cache)
    out["scoring"] = Path(res.to_json(tmp / "scoring")).parent
    return out


def _report(folder: Path) -> tuple[Any, dict[str, Any], str]:
    res = runner.invoke(app, ["report", str(folder), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    return res, summary, (folder / "report.html").read_text(encoding="utf-8")


# ---- the stamp ---------------------------------------------------------------------------

def test_every_results_file_says_the_methods_and_build_that_made_it(runs):
    doc = json.loads((runs["audit"] / "results.json").read_text())
    assert doc["methods"] == METHODS_VERSION
    assert doc["build"]["version"] == judgeaudit.__version__
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                          text=True)
    if head.returncode == 0 and (ROOT / ".git").exists():  # a checkout: its commit
        assert doc["build"]["commit"] == head.stdout.strip()
    assert list(doc)[:3] == ["schema_version", "methods", "build"]


def test_the_commit_is_read_from_git_files_and_never_fails_without_them(tmp_path):
    sha = "ab" * 20
    assert _git_commit(tmp_path) is None  # no pyproject: an installed package
    (tmp_path / "pyproject.toml").write_text("")
    assert _git_commit(tmp_path) is None  # no .git
    git = tmp_path / ".git"
    (git / "refs" / "heads").mkdir(parents=True)
    (git / "HEAD").write_text("ref: refs/heads/main\n")
    assert _git_commit(tmp_path) is None  # a branch with no commit yet
    (git / "packed-refs").write_text(f"# pack-refs\n{sha} refs/heads/main\n")
    assert _git_commit(tmp_path) == sha
    (git / "refs" / "heads" / "main").write_text("cd" * 20 + "\n")
    assert _git_commit(tmp_path) == "cd" * 20  # a loose ref wins over the packed one
    (git / "HEAD").write_text("ef" * 20 + "\n")
    assert _git_commit(tmp_path) == "ef" * 20  # detached
    wt = tmp_path / "wt"  # a worktree: .git is a file naming its gitdir
    (wt / "g").mkdir(parents=True)
    (wt / "pyproject.toml").write_text("")
    (wt / ".git").write_text("gitdir: g\n")
    (wt / "g" / "HEAD").write_text("ref: refs/heads/main\n")
    (wt / "g" / "commondir").write_text("../../.git\n")
    assert _git_commit(wt) == "cd" * 20
    (git / "HEAD").write_bytes(b"\xff\xfe")  # unreadable: no commit, no failure
    assert _git_commit(tmp_path) is None
    (git / "HEAD").unlink()
    assert _git_commit(tmp_path) is None
    assert build()["version"] == judgeaudit.__version__


def test_resaving_an_old_result_keeps_it_old(runs, tmp_path):
    old = _old(read_results(runs["audit"]), tmp_path / "old")
    Result.load(old).to_json(tmp_path / "again")
    again = json.loads((tmp_path / "again" / "results.json").read_text())
    assert again["methods"] == 0 and "build" not in again
    assert notes(read_results(tmp_path / "again"))


# ---- report -----------------------------------------------------------------------------

def test_report_on_a_current_result_says_nothing_of_methods(runs):
    res, summary, html = _report(runs["audit"])
    assert "warning:" not in res.stderr
    assert not any("methods" in w for w in summary.get("warnings") or [])
    assert 'id="methods-banner"' not in html
    assert f"methods {METHODS_VERSION}" in html  # the header names them


def test_report_on_an_audit_from_before_the_stamp_says_so_everywhere(runs, tmp_path):
    old = _old(read_results(runs["audit"]), tmp_path / "old_audit", methods=False)
    res, summary, html = _report(old)
    said = "made before judgeaudit recorded its methods"
    assert said in " ".join(res.stderr.split()) and "intervals from an older method" in \
        " ".join(res.stderr.split())
    assert "re-run `judgeaudit audit`" in " ".join(res.stderr.split())
    warning = summary["warnings"][0]
    assert said in warning and "intervals from an older method" in warning
    assert "'builtin:facts'" in warning  # the command to re-run names its data
    banner = html.split('id="methods-banner"', 1)[1].split("</div>", 1)[0]
    assert said in banner and "intervals from an older method" in banner
    assert html.index('id="methods-banner"') < html.index("<dt>Judge</dt>")  # at the top
    assert summary["effects"]["position"]["value"] is not None  # the numbers are still shown


def test_report_on_an_old_scoring_bias_names_the_missing_holm_correction(runs, tmp_path):
    old = _old(read_results(runs["scoring"]), tmp_path / "old_sb", drop=("multiplicity",))
    res, summary, html = _report(old)
    holm = "recommendation made without the Holm correction"
    assert holm in " ".join(res.stderr.split())
    assert holm in summary["warnings"][0]
    assert holm in html.split('id="methods-banner"', 1)[1].split("</div>", 1)[0]
    assert "intervals from an older method" not in summary["warnings"][0]  # they are named


def test_report_on_a_result_of_a_newer_judgeaudit_says_upgrade_and_shows_it(runs, tmp_path):
    doc = read_results(runs["audit"])
    folder = tmp_path / "newer"
    folder.mkdir()
    (folder / "results.json").write_text(json.dumps({**doc, "methods": METHODS_VERSION + 1}))
    res, summary, html = _report(folder)
    assert "written by a newer judgeaudit" in " ".join(res.stderr.split())
    assert "upgrade" in summary["warnings"][0]
    assert 'id="methods-banner"' in html
    assert summary["effects"]["position"]["value"] is not None


def test_rank_eval_recall_cells_without_a_method_are_named(runs):
    doc = {"schema_version": 1, "methods": 0, "command": "rank-eval", "oracle": "sim?seed=0",
           "recall": {"naive": {"topk": {"30": {"mean": 0.5, "se": 0.1, "n": 2}}}}}
    assert "recall intervals from an older method (mean +- 1.96 se" in notes(doc)[0]
    doc["recall"]["naive"]["topk"]["30"]["ci_method"] = "t"
    assert "recall intervals" not in notes(doc)[0]  # unstamped still, but the cells are new
    assert notes({**doc, "methods": METHODS_VERSION}) == []


# ---- compare -----------------------------------------------------------------------------

def test_compare_says_when_a_and_b_were_made_by_different_methods(runs, tmp_path):
    old = _old(read_results(runs["audit"]), tmp_path / "old_a", methods=False)
    res = runner.invoke(app, ["compare", str(old), str(runs["audit2"]), "--out",
                              str(tmp_path / "cmp"), "--json"])
    assert res.exit_code == 0, res.output
    err = " ".join(res.stderr.split())
    assert "A and B were made by different methods" in err
    assert "A (" in err and "made before judgeaudit recorded its methods" in err
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["methods_differ"] == {"a": 0, "b": METHODS_VERSION}
    assert any("different methods" in w for w in summary["warnings"])
    doc = json.loads((tmp_path / "cmp" / "results.json").read_text())
    assert doc["notes"][0].startswith("A and B were made by different methods")
    html = (tmp_path / "cmp" / "report.html").read_text(encoding="utf-8")
    assert "A and B were made by different methods" in html


def test_compare_of_two_current_results_says_nothing_of_methods(runs, tmp_path):
    res = runner.invoke(app, ["compare", str(runs["audit"]), str(runs["audit2"]), "--out",
                              str(tmp_path / "cmp"), "--json"])
    assert res.exit_code == 0, res.output
    assert "methods" not in res.stderr
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert "methods_differ" not in summary and "warnings" not in summary


@pytest.mark.parametrize("raw", ["1", 1.0, True, None, -3])
def test_a_stamp_that_cannot_be_read_is_not_called_missing(raw):
    """review12: `methods: "1"` (or 1.0, true, null) read as "no methods stamp" though the
    stamp is there; it is named as unreadable, and still taken as old."""
    said = notes({"command": "audit", "methods": raw})
    assert len(said) == 1
    assert "cannot be read" in said[0] and "no methods stamp" not in said[0]
    assert notes({"command": "audit", "methods": 0})[0].find("no methods stamp") > 0
