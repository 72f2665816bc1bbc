"""`Result.to_frame()` carries each estimate's `method`: how its interval was made, or why
there is none. discover's validation rows showed value 0.0, ci NaN, n 10 and nothing else,
while results.json said `method: "none: every item's Delta is the same ..."`. The column is
in both tables ("metrics" for every command, "probes" for audit)."""

from __future__ import annotations

import math

import pytest

import judgeaudit
from judgeaudit.result import Result

pd = pytest.importorskip("pandas")

NONE = ("none: every item's Delta is the same, so the t interval would be a point and the "
        "t-test undefined")


def discover_doc() -> dict:
    """The validation section of a discover run whose factors moved no verdict (as a real
    run wrote it: /tmp/apitest's discover on pandalm, 10 held-out items)."""
    row = {"value": 0.0, "ci95": [None, None], "n": 10, "method": NONE, "mean_delta": 0.0,
           "p_wilcoxon": 1.0}
    return {"schema_version": 1, "command": "discover",
            "validation": {"n_items": 10, "sets": {
                "found": {"factors": [{"factor": "longer response", **row}],
                          "r_within": {"longer response": {"longer response": {
                              "value": None, "ci95": [None, None], "n": 10}}}},
                "pre_discovered": {"factors": [{"factor": "verbosity", **row}]}}}}


def test_a_nan_interval_carries_its_reason():
    f = Result.from_document(discover_doc()).to_frame().set_index("metric")
    row = f.loc["validation.sets.found.factors.longer response"]
    assert row.value == 0.0 and math.isnan(row.ci_lo) and math.isnan(row.ci_hi)
    assert row.n == 10 and row.method == NONE
    assert f.loc["validation.sets.pre_discovered.factors.verbosity", "method"] == NONE
    # an estimate whose document names no method has none in the table either
    assert pd.isna(f.loc["validation.sets.found.r_within.longer response.longer response",
                         "method"])


def test_every_metric_of_a_real_run_names_its_method():
    res = judgeaudit.evaluate("sim?position=0.5&seed=0", "builtin:facts", limit=12,
                              cache=False)
    f = res.to_frame()
    assert list(f.columns) == ["metric", "value", "ci_lo", "ci_hi", "n", "method"]
    assert f["method"].tolist() == [e.method for e in res.estimates().values()]
    assert f["method"].notna().any()


def test_an_audit_s_probes_name_their_effect_s_method():
    res = judgeaudit.audit("sim?position=1&seed=0", "builtin:facts", probes="position", n=12,
                           cache=False)
    f = res.to_frame()
    assert f.columns[-1] == "method"
    row = f.set_index("probe").loc["position"]
    assert row.method == res["probes"]["position"]["effect"].get("method")
