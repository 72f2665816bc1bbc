"""quantify with nothing to test on: refused before any call when the item count tells,
else a failed run (exit 3) that records the calls it made (T4's findings)."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
LONG = " ".join(["word"] * 120)


def _items(path, n_agree: int, n_disagree: int) -> str:
    """Items where sim?length=5 (it picks the longer response) agrees with the humans
    (`n_agree`) or not (`n_disagree`)."""
    rows = [{"id": f"a{i}", "prompt": f"p {i}", "response_1": f"fine {i}",
             "response_2": f"{LONG} {i}", "label": 2} for i in range(n_agree)]
    rows += [{"id": f"d{i}", "prompt": f"q {i}", "response_1": f"ok {i}",
              "response_2": f"{LONG} {i}", "label": 1} for i in range(n_disagree)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def _quantify(tmp_path, data: str, *extra: str):
    return runner.invoke(app, ["quantify", "--judges", "sim?length=5&noise=0", "--generator",
                               "simhubj", "--data", data, "--factors", "verbosity", *extra,
                               "--out", str(tmp_path / "o")])


def test_n_cal_as_large_as_the_pool_is_refused_before_any_call(tmp_path, isolated_cache):
    """--pool 4 --n-cal 4 (--limit 12 passed the old check): judged, then susceptibility
    n = 0, ok, exit 0."""
    res = _quantify(tmp_path, _items(tmp_path / "d.jsonl", 8, 0), "--pool", "4", "--n-cal",
                    "4", "--limit", "12")
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "4 usable items (--pool 4), but quantify needs at least 5: --n-cal 4" in text
    assert not (tmp_path / "o" / "results.json").exists()


def test_one_agreement_item_leaves_none_to_test_on_a_failed_run(tmp_path, isolated_cache):
    res = _quantify(tmp_path, _items(tmp_path / "d.jsonl", 1, 5), "--json")
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["run"]["status"] == "failed"
    assert ("1 agreement item found, and the calibration share 0.17 (at least one item) "
            "takes 1 to pick l* on, leaving none to test on: quantify needs at least 2") in (
        doc["run"]["message"])
    assert doc["calls"]["made"] + doc["calls"]["cached"] == 12  # 6 items, both orders
    assert (tmp_path / "o" / "report.html").exists()


def test_no_agreement_item_after_judging_is_a_failed_run_with_its_calls(tmp_path,
                                                                        isolated_cache):
    """It exited 2 (bad input) after the judge calls, its results.json saying the run did
    not finish with 0 calls made, no report.html, and --json without calls."""
    res = _quantify(tmp_path, _items(tmp_path / "d.jsonl", 0, 6), "--json")
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    run = doc["run"]
    assert run["status"] == "failed" and not run.get("unfinished")
    assert "quantify: no agreement items" in run["message"] and "of the 6 items" in (
        run["message"])
    assert doc["calls"]["made"] + doc["calls"]["cached"] == 12
    assert (tmp_path / "o" / "report.html").exists()
    out = json.loads(res.stdout.strip().splitlines()[-1])
    assert out["exit_code"] == 3 if "exit_code" in out else out["ok"] is False
    assert out["calls"]["made"] + out["calls"]["cached"] == 12
