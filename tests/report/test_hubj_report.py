"""The HUB-J report pages (discover, quantify, mitigate) render from results.json alone, and
text that came from models or data (factor names, definitions, rewrites, raw answers) is
escaped."""

from __future__ import annotations

import pytest

from judgeaudit.report.html import render_report

EVIL = '<script>alert(1)</script><img src=x onerror="alert(2)">'


def _est(v: float, n: int = 10) -> dict:
    return {"value": v, "ci95": [v - 0.1, v + 0.1], "n": n}


def _stats() -> dict:
    return {"G_score": {"calls": 4, "strict": 2, "repaired": 1, "retried": 1, "recovered": 0,
                        "failed": 1, "call_errors": 0,
                        "examples": [{"item_id": "x1", "raw": EVIL, "error": "bad"}]}}


def discover_doc() -> dict:
    row = {"factor": EVIL, "definition": EVIL, "n": 12, "mean_delta": 0.5,
           "ci95": [0.1, 0.9], "t": 2.5, "p_t": 0.02, "p_wilcoxon": 0.03,
           "share_positive": 0.6, "max_abs_r_pre_discovered": 0.4,
           "max_abs_r_within_set": None}
    return {"command": "discover", "judges": ["recorded:a", "recorded:b"], "data": "d",
            "splits": {"n_items": 100, "per_judge": {"recorded:a": {"agree": 70, "disagree":
                       20, "neutral": 10, "invalid": 0, "missing": 0}},
                       "consensus_agree": 60, "consensus_disagree": 15},
            "discover": {"features": [{}] * 6, "covered_share": 0.83,
                         "factors": [{"name": EVIL, "definition": EVIL, "coverage": 5}]},
            "validation": {"sets": {"found": {"factors": [row]},
                                    "pre_discovered": {"factors": [{**row, "factor": "beauty",
                                                                    "mean_delta": None,
                                                                    "ci95": [None, None]}]}}},
            "json_stats": _stats(), "calls": {"made": 3, "cached": 1}, "seconds": 1.0}


def quantify_doc() -> dict:
    by = {str(lv): _est(0.1 * lv) for lv in range(1, 6)}
    return {"command": "quantify", "judges": ["j1", "j2"], "levels": [1, 2, 3, 4, 5],
            "factors": [{"name": "verbosity", "definition": EVIL}],
            "per_judge": {j: {"verbosity": {"by_level": by, "l_star": 5,
                                            "susceptibility": _est(0.5)}}
                          for j in ("j1", "j2")},
            "profile": {"j1": {"verbosity": 0.5}, "j2": {"verbosity": None}},
            "rewrites": {"total": 10, "kept": 8, "failed": 1, "answer_changed": 1,
                         "string_check_flags": 0, "on_violation": "drop"},
            "answer_change_rate": _est(0.1), "calibration_items": ["a"], "test_items": ["b"],
            "rewrite_examples": [{"item_id": "a", "factor": "verbosity", "level": 3,
                                  "kept": True, "same_answer": True, "original": "plain",
                                  "rewritten": "plain " + EVIL}],
            "json_stats": _stats(), "calls": {"made": 1}, "seconds": 2.0}


def mitigate_doc() -> dict:
    fit = {"win": _est(0.3), "bc": _est(0.25), "bias_share": _est(0.05), "n": 40,
           "theta": {"value": -1.0, "se": 0.2}, "phi": {"value": 1.2, "se": 0.4},
           "psi": {"value": 0.9, "se": 0.3}}
    return {"command": "mitigate", "judges": ["j1", "j2"], "per_judge": {"j1": fit},
            "not_fitted": {"j2": {"win": _est(0.0), "reason": "every verdict goes the same way"}},
            "factor": {"name": "verbosity", "definition": EVIL}, "candidate": "rejected",
            "other_controls": {"length": {"j1": {"bc": _est(0.27)}}},
            "stage1": {"sigma_gamma": 0.7}, "counts": {"queries": 40},
            "json_stats": _stats(), "calls": {"made": 1}, "seconds": 2.0}


@pytest.mark.parametrize(("doc", "needles"), [
    (discover_doc(), ["Bias discovery", "Found factors", "Validation on held-out"]),
    (quantify_doc(), ["Flip rate by level", "Profile", "Rewrite examples", "<svg"]),
    (mitigate_doc(), ["Bias-controlled win rates", "not fitted", "0.270"]),
])
def test_hubj_pages_render_and_escape_model_text(doc, needles):
    html = render_report(doc)
    for n in needles:
        assert n in html
    assert "<script>alert" not in html and 'onerror="alert' not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "G-module answers" in html and "Failed answers of" in html


def test_an_estimate_names_its_interval_method_when_the_file_has_one():
    old = render_report(mitigate_doc())  # written before estimates named their interval
    assert 'title="interval:' not in old
    doc = mitigate_doc()
    doc["per_judge"]["j1"]["bc"] = {**_est(0.25), "se": 0.05, "method": "delta"}
    doc["per_judge"]["j1"]["win"] = {**_est(0.3), "method": EVIL}
    html = render_report(doc)
    assert 'title="interval: delta"' in html
    assert "<script>alert" not in html and 'onerror="alert' not in html
