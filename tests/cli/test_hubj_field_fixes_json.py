"""--json carries what the terminal and report show (tester's finding 5): mitigate's bias
share, phi and each judge's invalid count; quantify's string-check flags, split, the items
left out and the Holm-adjusted p."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def _data(shared_data) -> str:
    return f"pandalm:{shared_data / 'pandalm_testset'}"


def _json(output: str) -> dict:
    return json.loads(output[output.index("{"):])


def test_mitigate_json_has_bias_share_phi_and_invalid(shared_data, tmp_path, isolated_cache):
    judge = "sim?quality=1&length=1&invalid=0.1&seed=1"
    res = runner.invoke(app, ["mitigate", "--judges", judge, "--data", _data(shared_data),
                              "--scorer", "simhubj?score_from=length", "--factor", "length",
                              "--limit", "200", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    s = _json(res.stdout)["per_judge"][judge]
    assert s["bias_share"]["value"] == doc["per_judge"][judge]["bias_share"]["value"]
    assert s["phi"]["value"] == doc["per_judge"][judge]["phi"]["value"]
    assert s["n_invalid"] == doc["counts"][f"invalid:{judge}"] > 0
    assert _json(res.stdout)["human_filter"]["left_out"]["tie"] == doc["human_filter"][
        "left_out"]["tie"]


def test_quantify_json_has_flags_split_and_adjusted_p(shared_data, tmp_path, isolated_cache):
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data", _data(shared_data),
                              "--limit", "24", "--out", str(tmp_path), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    s = _json(res.stdout)
    assert s["rewrites"]["string_check_flags"] == doc["rewrites"]["string_check_flags"] > 0
    assert s["splits"]["per_judge"][judge]["agree"] == doc["splits"]["per_judge"][judge]["agree"]
    assert s["human_filter"]["loaded"] == doc["human_filter"]["loaded"]
    t = s["susceptibility"][judge]["verbosity"]["vs_repeat_noise"]
    assert t["p_adjusted"] == doc["per_judge"][judge]["verbosity"]["vs_repeat_noise"]["p_adjusted"]
    assert s["multiplicity"]["method"] == "holm"
