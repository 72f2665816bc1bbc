"""`mitigate --apply` finds the fit's judge however either spec is written (`_judge_key`): a fit
made with `simhubj` was refused for `simhubj?seed=0`, the same judge ("no fit for judge
'simhubj?seed=0' in --apply; fitted judges: simhubj"), though the two answer every request
alike (one cache identity: the re-run made no call). Real runs of the simulated HUB-J judge."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def _pairs(path) -> str:
    long = " ".join(["word"] * 60)
    rows = [{"id": f"i{i}", "prompt": f"q {i}", "response_1": f"ok {i}" + " word" * (i % 7),
             "response_2": f"{long} {i}" + " more" * (i % 5), "label": 1 + (i % 3 == 0)}
            for i in range(40)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def _mitigate(data: str, judge: str, out, *extra: str):
    return runner.invoke(app, ["mitigate", "--judges", judge, "--data", data, "--scorer",
                               "simhubj?score_from=length", *extra, "--out", str(out)])


def test_apply_takes_the_fit_of_the_same_judge_written_another_way(tmp_path, isolated_cache):
    data = _pairs(tmp_path / "p.jsonl")
    fit = tmp_path / "fit"
    res = _mitigate(data, "simhubj", fit, "--factor", "length")
    assert res.exit_code == 0, res.output
    fitted = json.loads((fit / "results.json").read_text())["per_judge"]
    assert list(fitted) == ["simhubj"]

    res = _mitigate(data, "simhubj?seed=0", tmp_path / "a", "--apply", str(fit))
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    assert doc["run"]["status"] == "ok"
    assert doc["judges"] == ["simhubj?seed=0"]  # named as this run gave it
    assert doc["applied"]["judge"] == "simhubj?seed=0"
    assert doc["applied"]["phi"] == fitted["simhubj"]["phi"]["value"]  # the fit's parameters
    assert doc["calls"]["made"] == 0  # the same judge: its verdicts are the fit's, cached

    # another judge is still refused, naming the fitted ones, before any call
    res = _mitigate(data, "simhubj?seed=1", tmp_path / "b", "--apply", str(fit))
    assert res.exit_code == 2, res.output
    assert ("no fit for judge 'simhubj?seed=1' in --apply; fitted judges: simhubj"
            in " ".join(res.output.split()))
