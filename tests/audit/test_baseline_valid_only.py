"""The audit's baseline accuracy counts an unreadable (or failed) verdict as wrong, as
evaluate's `accuracy (invalid = wrong)` does, and now says so, beside the accuracy over the
pairs whose every verdict could be read (evaluate's `accuracy (valid only)`) and how many
verdicts were invalid. The report read "accuracy 0.433 [0.274, 0.608] (n = 30)" of a judge
7 of whose 60 answers were unreadable, with no word of it."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

from typer.testing import CliRunner

from judgeaudit.audit.battery import _baseline_section
from judgeaudit.cli.main import app
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict, to_canonical
from judgeaudit.report import render_report

FIXTURE = Path(__file__).parents[1] / "report" / "fixtures" / "audit_results.json"


def _wilson(s: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The textbook Wilson score interval (Wilson 1927), written out here."""
    p = s / n
    center = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return center - half, center + half


def _verdict(item_id: str, *choices: str | None) -> PairwiseVerdict:
    orders = []
    for order, choice in zip(("12", "21"), choices, strict=True):
        orders.append(OrderVerdict(order=order, raw=choice or "I cannot decide", choice=choice,
                                   winner=to_canonical(choice, order)))
    return PairwiseVerdict(item_id, orders)


def test_the_baseline_gives_accuracy_invalid_as_wrong_and_over_valid_pairs_exactly():
    items = [PairwiseItem(id=f"i{k}", prompt="p", response_1="a", response_2="b", label=lab)
             for k, lab in enumerate([1, 2, 1, 2, None])]
    base = [_verdict("i0", "A", "B"),   # label 1 named in both orders: credit 1
            _verdict("i1", "B", None),  # right, then unreadable: 0.5; not a valid pair
            _verdict("i2", "B", "B"),   # wrong in order 12, right in order 21: 0.5
            _verdict("i3", None, None),  # both unreadable: 0; not a valid pair
            _verdict("i4", None, None)]  # no label: in neither
    b = _baseline_section(items, base)
    acc, valid = b["accuracy"], b["accuracy_valid"]
    assert (acc["value"], acc["n"]) == (0.5, 4)  # (1 + 0.5 + 0.5 + 0) / 4
    assert (valid["value"], valid["n"]) == (0.75, 2)  # (1 + 0.5) / 2
    for got, want in zip(valid["ci95"], _wilson(1.5, 2), strict=True):
        assert math.isclose(got, want, rel_tol=1e-9)
    for got, want in zip(acc["ci95"], _wilson(2.0, 4), strict=True):
        assert math.isclose(got, want, rel_tol=1e-9)
    assert (b["n_verdicts"], b["n_invalid"]) == (8, 3)  # labelled pairs' order verdicts


def test_the_audits_baseline_agrees_with_evaluate_on_a_judge_with_unreadable_answers(
        tmp_path, isolated_cache):
    judge = "sim?invalid=0.15&seed=3"
    a = CliRunner().invoke(app, ["audit", "--judge", judge, "--data", "builtin:facts",
                                 "--probes", "position", "--n", "40", "--out",
                                 str(tmp_path / "a")])
    e = CliRunner().invoke(app, ["evaluate", "--judge", judge, "--data", "builtin:facts",
                                 "--limit", "40", "--out", str(tmp_path / "e")])
    assert a.exit_code == 0 and e.exit_code == 0, a.output + e.output
    audit = json.loads((tmp_path / "a" / "results.json").read_text())
    ev = json.loads((tmp_path / "e" / "results.json").read_text())
    base = audit["baseline"]
    assert base["n_invalid"] == ev["n_invalid"] > 0 and base["n_verdicts"] == 80
    assert base["accuracy"] == ev["accuracy"]
    assert base["accuracy_valid"] == ev["accuracy_valid"]
    assert base["accuracy_valid"]["n"] < base["accuracy"]["n"] == 40

    page = " ".join(re.sub(r"<[^>]+>", " ", (tmp_path / "a" / "report.html").read_text())
                    .split())
    v = base["accuracy_valid"]
    assert "Unperturbed verdicts on labelled pairs: accuracy (invalid = wrong) " in page
    assert (f"accuracy (valid only) {v['value']:.3f} 95% CI [{v['ci95'][0]:.3f}, "
            f"{v['ci95'][1]:.3f}] (n = {v['n']})") in page
    assert f"{base['n_invalid']} of 80 verdicts invalid" in page


def test_an_older_audit_report_labels_its_accuracy_and_shows_no_valid_only_figure():
    doc = json.loads(FIXTURE.read_text(encoding="utf-8"))
    doc["items"] = {"given": 30, "pairwise": 30, "used": 30}
    doc["baseline"] = {"accuracy": {"value": 0.433, "ci95": [0.274, 0.608], "n": 30},
                       "decisive_accuracy": {"value": 0.5, "ci95": [0.3, 0.7], "n": 40}}
    page = " ".join(re.sub(r"<[^>]+>", " ", render_report(doc)).split())
    assert "accuracy (invalid = wrong) 0.433 95% CI [0.274, 0.608] (n = 30)" in page
    assert "valid only" not in page and "verdicts invalid" not in page
