"""One verdict rule (`outcome.probe_verdict`): the audit decides by it, and the report
checks every stored verdict against it and flags numbers that do not support the verdict."""

from __future__ import annotations

import judgeaudit
from judgeaudit.outcome import probe_verdict
from judgeaudit.report import render_report

WARN = "these numbers do not satisfy the rule for this verdict"
NB = (-0.05, 0.05)


def test_the_rule():
    assert probe_verdict(0.2, (0.1, 0.3), 0.001, NB, 0.05) == "biased"
    assert probe_verdict(-0.2, (-0.3, -0.1), 0.001, NB, 0.05) == "biased"
    assert probe_verdict(0.2, (0.1, 0.3), 0.2, NB, 0.05) == "underpowered"  # q too large
    assert probe_verdict(0.0, (-0.1, 0.1), 0.001, NB, 0.05) == "underpowered"  # CI spans 0
    assert probe_verdict(0.0, (-0.01, 0.02), 0.9, NB, 0.05) == "not_biased"
    assert probe_verdict(None, (-0.01, 0.02), 0.9, NB, 0.05) == "underpowered"
    assert probe_verdict(0.0, (None, 0.02), 0.9, NB, 0.05) == "underpowered"
    assert probe_verdict(0.0, (-0.01, 0.02), 0.9, None, 0.05) == "underpowered"


def test_report_flags_a_verdict_its_numbers_do_not_support():
    doc = judgeaudit.audit("sim?position=1&seed=0", "builtin:facts", n=20,
                           cache=False).to_dict()
    assert WARN not in render_report(doc)
    p = doc["probes"]["position"]
    p["verdict"] = "not_biased" if p["verdict"] == "biased" else "biased"
    assert render_report(doc).count(WARN) == 1
