"""`judgeaudit.Result`: any command's results document as a typed, schema-versioned object:
the outcome (`ok`, `reason`), `Estimate`s, tables, the report, JSON in and out."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest

from judgeaudit.report import SCHEMA_VERSION, read_results, write_results
from judgeaudit.result import Result, RunFailed, RunOutcome, plain
from judgeaudit.stats.types import Estimate

FIXTURES = Path(__file__).parent / "report" / "fixtures"


def est(v, lo, hi, n):
    return {"value": v, "ci95": [lo, hi], "n": n}


def evaluate_doc(**kw) -> dict:
    doc = {
        "command": "evaluate", "version": "0.1.0", "judge": "sim?seed=0", "data": "builtin:x",
        "task": "pairwise", "n": 2, "n_invalid": 1,
        "accuracy": est(0.5, 0.1, 0.9, 2), "position_consistency": est(1.0, 0.3, 1.0, 2),
        "cohen_kappa": {"value": None, "ci95": [None, None], "n": 2},
        "per_order_accuracy": {"12": est(0.5, 0.1, 0.9, 2), "21": est(0.5, 0.1, 0.9, 2)},
        "breakdown": {"by": "source", "rows": [{"value": "a", "accuracy": est(1, 0.2, 1, 1)}]},
        "calls": {"made": 3, "cached": 1, "failed": 0},
        "run": {"status": "ok", "message": "", "n_valid": 2, "n_planned": 2, "errors": {}},
        "seconds": 0.1,
        "verdicts": [
            {"item_id": "a", "winner": 1, "p1": None, "orders": [
                {"order": "12", "raw": "A", "choice": "A", "winner": 1, "p_first": None,
                 "error": None},
                {"order": "21", "raw": "?", "choice": None, "winner": None, "p_first": None,
                 "error": None}]}],
    }
    doc.update(kw)
    return doc


FAILED_RUN = {"status": "failed", "message": "run failed: 4 of 4 calls failed (first error: x)",
              "n_valid": 0, "n_planned": 2, "calls_failed": 4, "errors": {"connection": 8}}


# ---- building ---------------------------------------------------------------------------

def test_from_document_splits_command_run_and_data():
    r = Result.from_document(evaluate_doc())
    assert r.schema_version == SCHEMA_VERSION and r.command == "evaluate"
    assert isinstance(r.run, RunOutcome) and r.run.status == "ok" and r.run.n_valid == 2
    assert "command" not in r.data and "run" not in r.data and r.data["n"] == 2
    assert r["accuracy"]["value"] == 0.5 and r["command"] == "evaluate"
    assert r["run"]["status"] == "ok" and r.get("missing", 7) == 7 and "n" in r
    assert dict(r) == r.to_dict() and r.judge == "sim?seed=0" and r.calls["made"] == 3


def test_values_are_made_plain_json_like_write_results():
    r = Result.from_document(evaluate_doc(extra={"nan": float("nan"), "np": np.float64(0.25),
                                                 "arr": np.arange(3), "tup": (1, 2),
                                                 "inf": float("inf"), 3: "int key"}))
    assert r.data["extra"] == {"nan": None, "np": 0.25, "arr": [0, 1, 2], "tup": [1, 2],
                               "inf": None, "3": "int key"}
    assert plain(np.int64(3)) == 3 and type(plain(np.int64(3))) is int
    json.dumps(r.to_dict(), allow_nan=False)


def test_documents_without_a_run_section_count_as_ok_and_old_audits_are_named():
    doc = json.loads((FIXTURES / "audit_results.json").read_text())
    doc.pop("command")
    r = Result.from_document(doc)
    assert r.command == "audit" and r.ok and r.reason is None


def test_another_schema_version_is_refused_with_how_to_fix_it(tmp_path):
    with pytest.raises(ValueError, match=r"schema_version 99 .*re-run the command"):
        Result.from_document({**evaluate_doc(), "schema_version": 99})
    p = tmp_path / "results.json"
    p.write_text(json.dumps({**evaluate_doc(), "schema_version": 0}))
    with pytest.raises(ValueError, match=r"schema_version 0.*re-run the command with this "
                                         r"judgeaudit \(version"):
        Result.load(p)
    with pytest.raises(FileNotFoundError):
        Result.load(tmp_path / "nothing")
    p.write_text("[1]")
    with pytest.raises(ValueError, match="JSON object"):
        Result.load(p)


def test_a_result_is_frozen():
    r = Result.from_document(evaluate_doc())
    with pytest.raises(Exception, match="frozen"):
        r.command = "audit"  # type: ignore[misc]


# ---- the outcome ------------------------------------------------------------------------

def test_failed_run_ok_reason_and_raise_for_status():
    ok = Result.from_document(evaluate_doc())
    assert ok.ok and ok.reason is None and ok.raise_for_status() is ok
    bad = Result.from_document(evaluate_doc(run=FAILED_RUN))
    assert bad.ok is False and bad.reason == FAILED_RUN["message"]
    assert bad.run.errors == {"connection": 8}
    with pytest.raises(RunFailed, match="4 of 4 calls failed") as exc:
        bad.raise_for_status()
    assert exc.value.result is bad
    assert "status='failed'" in repr(bad) and "verdicts" not in repr(bad)


# ---- numbers ----------------------------------------------------------------------------

def test_estimates_are_typed_and_keyed_by_path():
    e = Result.from_document(evaluate_doc()).estimates()
    assert e["accuracy"] == Estimate(0.5, (0.1, 0.9), 2)
    assert e["per_order_accuracy.21"].n == 2
    assert e["breakdown.rows.a.accuracy"] == Estimate(1.0, (0.2, 1.0), 1)
    k = e["cohen_kappa"]
    assert math.isnan(k.value) and math.isnan(k.ci95[0]) and k.n == 2
    assert not any(p.startswith("verdicts") for p in e)


def test_a_failed_runs_numbers_are_only_given_when_asked_for():
    """A failed run's summary withheld its numbers while estimates() and to_frame() gave them
    unmarked (a failed evaluate's accuracy 0.075 as a metric row)."""
    bad = Result.from_document(evaluate_doc(run=FAILED_RUN))
    for call in (bad.estimates, bad.to_frame, lambda: bad.to_frame("metrics")):
        with pytest.raises(RunFailed, match="4 of 4 calls failed.*failed_ok=True") as exc:
            call()
        assert exc.value.result is bad
    assert bad.estimates(failed_ok=True) == Result.from_document(evaluate_doc()).estimates()
    frame = bad.to_frame(failed_ok=True)
    assert frame.set_index("metric").loc["accuracy", "value"] == 0.5
    assert len(bad.to_frame("verdicts")) == 2  # records, not numbers: given either way
    with pytest.raises(ValueError, match="no probes"):  # the table's own error comes first
        bad.to_frame("probes")
    audit = Result.load(FIXTURES / "audit_results.json")
    failed_audit = audit.model_copy(update={"run": RunOutcome(**FAILED_RUN)})
    with pytest.raises(RunFailed):
        failed_audit.to_frame()
    with pytest.raises(RunFailed):
        failed_audit.estimates()
    assert failed_audit.to_frame(failed_ok=True).equals(audit.to_frame())


def test_audit_effects_take_the_probe_n():
    r = Result.load(FIXTURES / "audit_results.json")
    e = r.estimates()
    pos = r["probes"]["position"]
    assert e["probes.position.effect"].n == pos["n"]
    assert e["probes.position.effect"].value == pytest.approx(pos["effect"]["value"])


def test_summary_is_small_and_json_able():
    s = Result.from_document(evaluate_doc(run=FAILED_RUN)).summary()
    assert s["command"] == "evaluate" and s["ok"] is False and s["reason"].startswith("run")
    # a failed run's numbers are withheld (they were shown as if results); its counts stay
    assert s["accuracy"] is None and s["numbers"].startswith("withheld: the run failed")
    # every calls key, null when unknown: a script reading calls["cost_usd"] of a failed
    # run got a KeyError (README promises the key; tester t-docs)
    from judgeaudit.result import SUMMARY_CALLS

    assert s["calls"] == {**dict.fromkeys(SUMMARY_CALLS), "made": 3, "cached": 1, "failed": 0,
                          "from_cache": 1}
    assert len(json.dumps(s, allow_nan=False)) < 2000
    ok = Result.from_document(evaluate_doc()).summary()
    assert ok["accuracy"] == est(0.5, 0.1, 0.9, 2) and "numbers" not in ok
    a = Result.load(FIXTURES / "audit_results.json").summary()
    assert set(a["verdicts"]) == {"position", "verbosity", "authority", "bandwagon",
                                  "injection", "sentiment"}
    full = Result.load(FIXTURES / "audit_results.json")
    assert a["biased"] == full["summary"]["biased"]
    # The headline numbers, not only the verdicts: effect, interval, n and q per probe.
    pos = full["probes"]["position"]
    assert a["effects"]["position"] == {"value": pos["effect"]["value"],
                                        "ci95": pos["effect"]["ci95"], "n": pos["n"],
                                        "q": pos["q"], "n_invalid": pos.get("n_invalid"),
                                        "no_bias_range": pos.get("no_bias_range"),
                                        "small": False,
                                        "left_out": pos.get("dropped") or {}}
    assert set(a["effects"]) == set(a["verdicts"])
    json.dumps(a, allow_nan=False)


# ---- tables -----------------------------------------------------------------------------

def test_to_frame_probes_for_audit_metrics_otherwise():
    a = Result.load(FIXTURES / "audit_results.json")
    f = a.to_frame()
    assert list(f["probe"]) == list(a["probes"])
    assert f.loc[f.probe == "position", "n"].item() == a["probes"]["position"]["n"]
    assert {"effect", "ci_lo", "ci_hi", "p", "q", "verdict"} <= set(f.columns)
    m = Result.from_document(evaluate_doc()).to_frame()
    assert list(m.columns) == ["metric", "value", "ci_lo", "ci_hi", "n", "method"]
    row = m.set_index("metric").loc["accuracy"]
    assert (row.value, row.ci_lo, row.ci_hi, row.n) == (0.5, 0.1, 0.9, 2)
    with pytest.raises(ValueError, match="^an evaluate result has no probes"):  # not "a e"
        Result.from_document(evaluate_doc()).to_frame("probes")
    with pytest.raises(ValueError, match="^a rank result has no probes"):
        Result.from_document({"command": "rank"}).to_frame("probes")
    with pytest.raises(ValueError, match="table"):
        a.to_frame("nope")  # type: ignore[arg-type]


def test_to_frame_verdicts():
    v = Result.from_document(evaluate_doc()).to_frame("verdicts")
    assert list(v["order"]) == ["12", "21"] and list(v["valid"]) == [True, False]
    pw = Result.from_document(evaluate_doc(task="pointwise", verdicts=[
        {"item_id": "p", "score": 3.5, "gold": 4, "raw": "3.5", "error": None}]))
    assert pw.to_frame("verdicts").to_dict("records") == [
        {"item_id": "p", "score": 3.5, "gold": 4, "raw": "3.5", "error": None}]
    sc = Result.from_document({"command": "scoring-bias", "item_ids": ["i0", "i1"],
                               "scores": {"baseline": {"0": [1, None], "1": [2, 3]}}})
    f = sc.to_frame("verdicts")
    assert f[["template", "repeat", "item_id"]].to_dict("records") == [
        {"template": "baseline", "repeat": r, "item_id": i} for r in (0, 1) for i in ("i0", "i1")]
    assert f["score"].isna().tolist() == [False, True, False, False]
    assert f["score"].dropna().tolist() == [1, 2, 3]
    with pytest.raises(ValueError, match="^an audit result keeps no per-verdict"):
        Result.load(FIXTURES / "audit_results.json").to_frame("verdicts")


def test_to_frame_without_pandas_says_how_to_get_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        Result.from_document(evaluate_doc()).to_frame()


# ---- JSON and the report ----------------------------------------------------------------

def test_to_json_text_and_files_round_trip(tmp_path):
    r = Result.from_document(evaluate_doc(extra=float("nan")))
    text = r.to_json()
    assert isinstance(text, str) and json.loads(text) == r.to_dict()
    assert json.loads(text)["extra"] is None
    p = r.to_json(tmp_path / "out")  # a directory: results.json inside
    assert p == tmp_path / "out" / "results.json"
    assert read_results(p) == r.to_dict()
    assert Result.load(tmp_path / "out") == r
    q = r.to_json(tmp_path / "named.json")
    assert q == tmp_path / "named.json" and Result.load(q) == r


def test_load_reads_what_write_results_wrote(tmp_path):
    p = write_results(tmp_path / "results.json", evaluate_doc())
    r = Result.load(p)
    assert r.to_dict() == json.loads(p.read_text())


def test_report_writes_the_html_page(tmp_path):
    r = Result.load(FIXTURES / "audit_results.json")
    p = r.report(tmp_path / "rep")
    assert p == tmp_path / "rep" / "report.html"
    html = p.read_text()
    assert html.startswith("<!DOCTYPE html>") or "<html" in html[:200]
    assert html == r.html()
    q = Result.load(FIXTURES / "evaluate_results.json").report(tmp_path / "e.html")
    assert q.is_file()
    failed = Result.from_document(evaluate_doc(run=FAILED_RUN)).report(tmp_path / "f.html")
    assert "Run failed" in failed.read_text()
    with pytest.raises(ValueError, match="no report layout"):
        Result.from_document({"command": "mitigate-typo"}).report(tmp_path / "r.html")


def test_estimates_keep_se_and_method_and_read_old_files():
    doc = evaluate_doc()
    doc["accuracy"] = {"value": 0.6, "ci95": [0.4, 0.8], "n": 20, "method": "wilson"}
    doc["decisive_accuracy"] = {"value": 0.6, "ci95": [0.5, 0.7], "n": 20, "se": 0.05,
                                "method": "wald"}
    e = Result.from_document(doc).estimates()
    assert e["accuracy"] == Estimate(0.6, (0.4, 0.8), 20, method="wilson")
    assert e["decisive_accuracy"] == Estimate(0.6, (0.5, 0.7), 20, se=0.05, method="wald")
    assert e["accuracy"].as_dict() == doc["accuracy"]
    # a file without them (or with junk in them) reads as before
    doc["accuracy"] = {"value": 0.6, "ci95": [0.4, 0.8], "n": 20, "se": "x", "method": 3}
    assert Result.from_document(doc).estimates()["accuracy"] == Estimate(0.6, (0.4, 0.8), 20)


def test_summaries_give_intervals_and_n_not_bare_numbers():
    """compare's --json had only verdict lists, quantify's a bare profile, rank-eval's bare
    recall means and rank's biases as estimate/lo/hi without n."""
    cmp = Result.from_document({"command": "compare", "probes": {"position": {
        "verdict": "improved", "change": {"value": -0.2, "ci95": [-0.3, -0.1]},
        "items": {"n_matched": 40}, "p": 0.001, "q": 0.002}}}).summary()
    assert cmp["changes"]["position"] == {"value": -0.2, "ci95": [-0.3, -0.1], "n": 40,
                                          "p": 0.001, "q": 0.002}
    q = Result.from_document({"command": "quantify", "per_judge": {"j": {"verbosity": {
        "l_star": 3, "susceptibility": {"value": 0.5, "ci95": [0.2, 0.8], "n": 10}}}}}
                             ).summary()
    assert q["susceptibility"]["j"]["verbosity"] == {"value": 0.5, "ci95": [0.2, 0.8],
                                                     "n": 10, "l_star": 3,
                                                     "vs_repeat_noise": None}  # older doc
    re = Result.from_document({"command": "rank-eval", "recall": {"bt": {"topk": {
        "40": {"mean": 0.6, "se": 0.1, "n": 5}}}}}).summary()
    cell = re["recall"]["bt"]["topk"]["40"]
    assert cell["value"] == 0.6 and cell["n"] == 5 and cell["ci95"][0] == pytest.approx(0.404,
                                                                                      abs=1e-3)
    rk = Result.from_document({"command": "rank", "n_comparisons": 120, "models": {
        "bias_aware": {"c": {"length": {"estimate": 0.4, "lo": 0.1, "hi": 0.7}}}}}).summary()
    assert rk["biases"]["c[length]"] == {"value": 0.4, "ci95": [0.1, 0.7], "n": 120}


def test_compare_estimates_hold_each_probes_change_with_its_n():
    """The change B - A, compare's main number, was left out of estimates() and to_frame():
    its dict has no n (the count is the matched items)."""
    r = Result.from_document({"command": "compare", "probes": {
        "position": {"verdict": "improved", "change": {"value": -0.2, "ci95": [-0.3, -0.1]},
                     "items": {"n_matched": 40}, "p": 0.001, "q": 0.002,
                     "a": {"effect": {"value": 0.3, "ci95": [0.2, 0.4]}, "n": 40}},
        "verbosity": {"verdict": "no_change", "pairing": "unpaired",
                      "change": {"value": 0.1, "ci95": [-0.2, 0.4], "method": "wald"},
                      "items": {}}}})
    e = r.estimates()
    assert e["probes.position.change"] == Estimate(-0.2, (-0.3, -0.1), 40)
    assert e["probes.verbosity.change"] == Estimate(0.1, (-0.2, 0.4), 0, method="wald")
    assert e["probes.position.a.effect"].n == 40
    rows = r.to_frame().set_index("metric")
    assert rows.loc["probes.position.change", "n"] == 40
    assert rows.loc["probes.position.change", "value"] == -0.2


def test_discover_rows_are_named_by_their_factor_and_summarised_with_intervals():
    """discover's --json gave factor names only, and estimates() named the validation rows
    "validation.sets.found.factors.0" (the factor lost)."""
    doc = {"command": "discover", "discover": {"factors": [{"name": "bullets"}]},
           "validation": {"sets": {"found": {"factors": [
               {"factor": "bullets", "value": 0.5, "ci95": [0.1, 0.9], "n": 12,
                "p_wilcoxon": 0.01}]}}}}
    r = Result.from_document(doc)
    assert r.summary()["validation"] == {"bullets": {"value": 0.5, "ci95": [0.1, 0.9],
                                                     "n": 12, "p_wilcoxon": 0.01,
                                                     # an older document: no q, undecided
                                                     "q_wilcoxon": None,
                                                     "significant": None}}
    assert r.estimates()["validation.sets.found.factors.bullets"].n == 12


def test_recall_equal_over_seeds_has_no_point_interval():
    """Two seeds with the same recall gave [0.75, 0.75], which reads as certainty."""
    re = Result.from_document({"command": "rank-eval", "recall": {"bt": {"topk": {
        "40": {"mean": 0.75, "se": 0.0, "n": 2}}}}})
    cell = re.summary()["recall"]["bt"]["topk"]["40"]
    assert cell["value"] == 0.75 and cell["ci95"] == [None, None] and cell["n"] == 2


@pytest.mark.parametrize("arg, name", [(5, "int"), (None, "NoneType"), ({"command": "x"}, "dict"),
                                       (b"results.json", "bytes")])
def test_load_of_no_path_is_a_value_error_naming_the_type(arg, name):
    """Result.load(5), (None) or ({...}) raised a raw TypeError from opening it."""
    with pytest.raises(ValueError, match=f"^Result.load: expected a path to a results.json "
                                         f"or its folder, got {name}$"):
        Result.load(arg)


@pytest.mark.parametrize("value", ["no", 0, 1, None, [True]])
def test_failed_ok_must_be_a_bool(value):
    """to_frame(failed_ok="no") gave a failed run's numbers ("no" is truthy)."""
    bad = Result.from_document(evaluate_doc(run=FAILED_RUN))
    for call in (lambda: bad.to_frame(failed_ok=value), lambda: bad.to_frame("verdicts",
                 failed_ok=value), lambda: bad.estimates(failed_ok=value)):
        with pytest.raises(ValueError, match="failed_ok: expected True or False"):
            call()


def test_discover_summary_gives_q_and_significance_beside_p():
    """discover's summary had p (Wilcoxon) only, while the run decides on q (Benjamini-
    Hochberg over every factor it tested)."""
    row = {"factor": "bullets", "value": 0.5, "ci95": [0.1, 0.9], "n": 12,
           "p_wilcoxon": 0.01, "q_wilcoxon": 0.04, "significant": True}
    mult = {"method": "benjamini-hochberg", "alpha": 0.05, "decided_on": "q_wilcoxon",
            "m": 11, "over": "every factor validated in this run", "significant": ["bullets"]}
    s = Result.from_document({"command": "discover", "discover": {"factors": [
        {"name": "bullets"}]}, "validation": {"multiplicity": mult, "sets": {"found": {
            "factors": [row]}}}}).summary()
    assert s["validation"]["bullets"] == {"value": 0.5, "ci95": [0.1, 0.9], "n": 12,
                                          "p_wilcoxon": 0.01, "q_wilcoxon": 0.04,
                                          "significant": True}
    assert s["multiplicity"] == {"method": "benjamini-hochberg", "alpha": 0.05, "m": 11,
                                 "significant": ["bullets"]}


def test_quantify_summary_gives_repeat_noise_and_mitigate_its_estimator():
    noise = {"value": 0.1, "ci95": [0.03, 0.3], "n": 20, "method": "wilson", "n_invalid": 1}
    q = Result.from_document({"command": "quantify", "per_judge": {"j": {}},
                              "repeat_noise": {"j": noise}}).summary()
    assert q["repeat_noise"] == {"j": {"value": 0.1, "ci95": [0.03, 0.3], "n": 20,
                                       "n_invalid": 1}}
    assert "repeat_noise" not in Result.from_document(
        {"command": "quantify", "per_judge": {}}).summary()  # older results: none to give
    a = Result.from_document({"command": "mitigate-apply", "estimator": "marginal",
                              "applied": {"judge": "j"}}).summary()
    assert a["estimator"] == "marginal"
    old = Result.from_document({"command": "mitigate-apply", "applied": {"judge": "j"}})
    assert old.summary()["estimator"] is None  # not recorded: not guessed


def test_rank_summary_recall_carries_its_n_and_rank_eval_names_the_exact_interval():
    """rank's --json gave recall as a bare number (the terminal said "5 of 5"), and a
    rank-eval cell's exact pooled-hits interval was labelled "t over seeds" (tester t-data,
    reviewer t-review)."""
    import judgeaudit
    from judgeaudit.result import _over_seeds

    res = judgeaudit.rank("sim?quality=2&seed=1", "builtin:controlled?n=12&k=3&seed=1", k=3,
                          budget=40, samples=100, cache=False)
    rec = res.summary()["recall"]
    assert set(rec) == {"naive", "bias_aware"}
    for cell in rec.values():
        assert cell["n"] == 3 and cell["hits"] == round(cell["value"] * 3)
    e = _over_seeds({"mean": 1.0, "se": 0.0, "n": 4, "ci95": [0.63, 1.0],
                     "ci_method": "clopper_pearson", "hits": 8, "n_items": 8})
    assert e.method.startswith("exact (Clopper-Pearson)") and e.ci95 == (0.63, 1.0)
    assert _over_seeds({"mean": 0.5, "se": 0.1, "n": 4, "ci95": [0.2, 0.8]}).method == \
        "t over seeds"
