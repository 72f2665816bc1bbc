"""What the HUB-J outputs say about their own limits: mitigate names how coarse the factor
scorer's control was (the bias share is the part of the win rate those scores explain: a
5-level length score removed about half of a planted length bias, share 0.018 against
0.034), the report marks sigma_gamma of a marginal fit as fixed (it showed "sigma gamma =
1.000" as if estimated), and discover's novelty column gives the r it names with its
Fisher interval and n (results.json had them; the terminal showed a bare max |r|)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from judgeaudit.cli.hubj_cmd import _max_r
from judgeaudit.cli.main import app
from tests.hubj.test_discover_multiplicity import _pairs  # registers test-hubj-bh

runner = CliRunner()


def test_mitigate_says_how_coarse_the_scorer_was_and_apply_repeats_it(shared_data, tmp_path,
                                                                      isolated_cache):
    data = f"pandalm:{shared_data / 'pandalm_testset'}"
    base = ["mitigate", "--judges", "sim?length=2&seed=1", "--data", data, "--scorer",
            "simhubj?score_from=length", "--limit", "150"]
    res = runner.invoke(app, [*base, "--out", str(tmp_path / "fit")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "fit" / "results.json").read_text())
    k = len(np.unique(np.round(list(doc["delta"].values()), 9)))
    assert doc["control_resolution"] == {"distinct_values": k, "n_queries": len(doc["delta"])}
    assert k <= 9  # 5 levels: at most 9 score differences
    note = next(n for n in doc["notes"] if n.startswith("the bias share is the part"))
    assert f"took {k} distinct values on these {len(doc['delta'])} queries" in note
    assert any(n.startswith("one judge fitted") for n in doc["notes"])  # kept beside it
    assert note[:60] in " ".join(res.output.split())
    page = (tmp_path / "fit" / "report.html").read_text()
    assert "is fixed at 1, not estimated" in page  # the marginal fit's sigma_gamma
    assert "= 1.000" not in page.split('id="mitigate"')[1].split("</p>")[0]

    res = runner.invoke(app, [*base, "--apply", str(tmp_path / "fit"), "--out",
                              str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    a = json.loads((tmp_path / "a" / "results.json").read_text())["applied"]
    assert a["control_resolution"]["distinct_values"] == k
    assert f"difference took {k} distinct values here" in " ".join(res.output.split())


@pytest.mark.usefixtures("stub_embedder", "isolated_cache")
def test_discover_shows_the_largest_r_with_its_interval_and_n(tmp_path):
    res = runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm",
                              "test-hubj-bh:s1", "--data", _pairs(tmp_path / "p.jsonl", 60),
                              "--iterations", "1", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    out = " ".join(res.output.split())  # the header wraps in a narrow terminal
    assert all(w in out for w in ("max|r|", "[95%", "(with)"))
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    shown = 0
    for set_name, s in doc["validation"]["sets"].items():
        for row in s["factors"]:
            rs = s["r_vs_pre_discovered"][row["factor"]]
            skip = row["factor"] if set_name == "pre_discovered" else None
            cell = _max_r(rs, skip)
            if row["max_abs_r_pre_discovered"] is None:
                assert cell == "-"
                continue
            name, e = max(((n, e) for n, e in rs.items() if n != skip and e["r"] is not None),
                          key=lambda t: abs(t[1]["r"]))
            assert abs(e["r"]) == pytest.approx(row["max_abs_r_pre_discovered"])
            assert cell.startswith(f"{e['r']:+.2f}") and cell.endswith(f"n={e['n']} ({name})")
            lo, hi = e["ci95"]
            if lo is not None and not math.isnan(lo):
                assert f"[{lo:+.2f}, {hi:+.2f}]" in cell
                shown += 1
    assert shown >= 5  # intervals shown, not only |r| = 1 rows without one
