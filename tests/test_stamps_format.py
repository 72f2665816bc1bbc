"""Every command's results.json stamps its run the same way: `started` in ISO 8601 UTC with
a Z ('2026-11-29T05:16:45Z'), `seconds` to 0.01 s. Commands differed (reprotest): audit
wrote '...Z', scoring-bias and HUB-J '+00:00', evaluate, rank and rank-eval no `started`;
`seconds` was 2.63 in some and 20.65396547317505 in others (compare). Older files, in any
of those forms, still read and render. Through the real CLI on simulated judges."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.report import render_report
from judgeaudit.results_file import read_results, write_results
from tests.cli.test_json_exit_code_always import _args

runner = CliRunner()
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _two_decimals(x: float) -> bool:
    return isinstance(x, int | float) and round(x, 2) == x


@pytest.mark.parametrize("kind", ["evaluate", "audit", "scoring-bias", "rank", "rank-eval",
                                  "quantify"])
def test_every_command_writes_started_and_seconds_in_one_format(kind, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    before = datetime.now(UTC).replace(microsecond=0)
    out = tmp_path / "o"
    res = runner.invoke(app, [*_args(kind, tmp_path), "--out", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads((out / "results.json").read_text())
    assert isinstance(doc.get("started"), str), f"{kind}: no started ({sorted(doc)})"
    assert STAMP.fullmatch(doc["started"]), f"{kind}: started {doc['started']!r}"
    when = datetime.strptime(doc["started"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before - timedelta(seconds=1) <= when <= datetime.now(UTC)
    assert _two_decimals(doc["seconds"]), f"{kind}: seconds {doc['seconds']!r}"


def test_compare_writes_them_in_the_same_format(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    for name in ("a", "b"):
        res = runner.invoke(app, [*_args("audit", tmp_path), "--out", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
    res = runner.invoke(app, ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--out",
                              str(tmp_path / "cmp")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "cmp" / "results.json").read_text())
    assert STAMP.fullmatch(doc["started"]) and _two_decimals(doc["seconds"]), doc["seconds"]


def test_the_python_api_returns_the_same_stamps():
    import judgeaudit

    doc = judgeaudit.scoring_bias("sim?seed=1", "builtin:graded", limit=6, repeats=1,
                                  cache=False).to_dict()
    assert STAMP.fullmatch(doc["started"]), doc["started"]  # it said '+00:00'
    assert _two_decimals(doc["seconds"])


def test_the_formats_and_what_they_leave_alone():
    from judgeaudit.results_file import run_stamps, seconds_value, started_value, utc_stamp

    assert utc_stamp(datetime(2026, 11, 29, 5, 16, 45, 123456, tzinfo=UTC)) == \
        "2026-11-29T05:16:45Z"
    east = timezone(timedelta(hours=2))
    assert utc_stamp(datetime(2026, 11, 29, 7, 16, 45, tzinfo=east)) == "2026-11-29T05:16:45Z"
    assert started_value("2026-11-29T05:16:45+00:00") == "2026-11-29T05:16:45Z"
    assert started_value("2026-11-29T05:16:45Z") == "2026-11-29T05:16:45Z"
    assert started_value("2026-11-29T07:16:45+02:00") == "2026-11-29T05:16:45Z"
    # no zone recorded, or not a time: left as written (no zone is made up)
    assert started_value("2026-11-29T05:16:45") == "2026-11-29T05:16:45"
    assert started_value("yesterday") == "yesterday" and started_value(None) is None
    assert seconds_value(20.65396547317505) == 20.65 and seconds_value(3) == 3
    assert seconds_value(None) is None
    assert run_stamps({"x": 1}) == {"x": 1}  # nothing added to a document without them


@pytest.mark.parametrize("started", ["2026-11-26T10:00:00+00:00", "2026-11-26T10:00:00Z"])
def test_older_files_in_either_form_still_read_and_render(started, tmp_path):
    res = runner.invoke(app, [*_args("audit", tmp_path), "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    doc.update(started=started, seconds=20.65396547317505)
    (tmp_path / "o" / "results.json").write_text(json.dumps(doc))
    back = read_results(tmp_path / "o")
    assert back["started"] == started and back["seconds"] == 20.65396547317505
    html = render_report(back)
    assert started in html
    # written again (a re-saved result), it takes the one format
    write_results(tmp_path / "again.json", back)
    again = json.loads((tmp_path / "again.json").read_text())
    assert again["started"] == "2026-11-26T10:00:00Z" and again["seconds"] == 20.65
