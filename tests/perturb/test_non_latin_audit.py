"""End to end: an audit (--full, the sim judge) of pairs written in Chinese, Arabic, Russian
and Hindi. Every probe whose perturbation adds English to a response leaves every item out:
it says so by name under the table, its verdict is not_run with n = 0 (the report says "Not
measured"), never "underpowered" or "not biased"; the probes that add no English to one
response (bandwagon, compassion, position, cot, format_sensitivity) still measure all
items."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from judgeaudit.audit.shift_probe import left_out_notes
from judgeaudit.cli.main import app
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.perturb import PerturbResult

# (question, right answer, wrong answer): "how much is two plus two?" in four scripts.
PAIRS = {
    "zh": ("二加二等于几？", "二加二等于四。", "二加二等于五。"),
    "ar": ("كم يساوي اثنان زائد اثنين؟", "اثنان زائد اثنين يساوي أربعة.",
           "اثنان زائد اثنين يساوي خمسة."),
    "ru": ("Сколько будет два плюс два?", "Два плюс два равно четырём.",
           "Два плюс два равно пяти."),
    "hi": ("दो और दो कितने होते हैं?", "दो और दो चार होते हैं।", "दो और दो पाँच होते हैं।"),
}
# probe -> what its reason calls the English it would add
LEFT_OUT = {
    "verbosity": "the padding", "authority": "the citation", "beauty": "the heading",
    "injection": "the note to the judge", "distraction": "the detail about the author",
    "diversity": "the identity statement", "fallacy": "the flawed reasoning",
    "sycophancy": "the certainty claims", "sentiment_cheerful": "the tone lines",
    "sentiment_angry": "the tone lines", "sentiment_fearful": "the tone lines",
    "refinement_aware": "the refinement framing line",
    "sycophancy_pass": "the certainty claims",
}
MEASURED = ("bandwagon", "compassion", "position", "cot", "format_sensitivity")


def _write(path) -> int:
    n = 0
    with path.open("w", encoding="utf-8") as f:
        for k in range(3):
            for lang, (q, good, bad) in PAIRS.items():
                label = 1 + k % 2
                r1, r2 = (good, bad) if label == 1 else (bad, good)
                f.write(json.dumps({"id": f"{lang}{k}", "prompt": q, "response_1": r1,
                                    "response_2": r2, "label": label},
                                   ensure_ascii=False) + "\n")
                n += 1
    return n


def test_probes_that_would_add_english_say_they_measured_nothing(tmp_path):
    data = tmp_path / "non_latin.jsonl"
    n = _write(data)
    out = tmp_path / "a"
    r = CliRunner().invoke(app, ["audit", "--judge", "sim?seed=0", "--data", f"jsonl:{data}",
                                 "--full", "--out", str(out), "--no-cache"])
    assert r.exit_code == 0, r.output
    doc = json.loads((out / "results.json").read_text(encoding="utf-8"))
    probes = doc["probes"]
    for name, what in LEFT_OUT.items():
        p = probes[name]
        assert p["n"] == 0 and p["verdict"] == "not_run", (name, p["n"], p["verdict"])
        assert p["dropped"]["perturbation_not_applicable"] == n, (name, p["dropped"])
        note = (f"not run: the perturbation left out every item ({n}): {what} would be "
                f"English in a text 100% of whose letters are not Latin script ({n})")
        assert note in p["notes"], (name, p["notes"])
        assert f"{name}: {note}" in " ".join(r.output.split()), name  # named under the table
    for name in MEASURED:
        assert probes[name]["n"] == n and probes[name]["verdict"] != "not_run", name
    nothing = set(LEFT_OUT) & set(doc["summary"].get("not_biased", []))
    assert not nothing, f"left-out probes counted as not biased: {sorted(nothing)}"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert html.count("Not measured: the perturbation left out every item") == len(LEFT_OUT)


def _result(preserved: bool, na: bool, why: str) -> PerturbResult:
    it = PairwiseItem(id="x", prompt="q", response_1="a", response_2="b", label=1)
    return PerturbResult(it, "response_2", "", preserved, why, it, not_applicable=na)


def test_every_item_left_out_for_mixed_reasons_is_not_run_with_both():
    rs = [_result(False, True, "verbosity not applicable to response_2: the padding ..."),
          _result(False, False, "response_2: a new number 5")]
    assert left_out_notes(rs) == [
        "not run: the perturbation left out every item (2): the padding ... (1); the "
        "answer-preservation check failed (1)"]


def test_some_items_left_out_keeps_the_two_notes():
    rs = [_result(False, True, "x not applicable to response_2: the padding ..."),
          _result(False, False, "response_2: a new number 5"), _result(True, False, "")]
    assert left_out_notes(rs) == [
        "1 perturbation(s) failed the answer-preservation check and were dropped",
        "1 item(s) not perturbed, left out: the padding ... (1)"]


def test_adaptive_rounds_go_on_past_a_round_with_nothing_to_perturb(tmp_path):
    """Adaptive: a round of 20 items all in another script is no sign the probe cannot run
    (a panel-less self_preference is): later rounds hold the English items it applies to.
    Stopped at round 1 it said "not_run" beside n = 0, or n = 1 or 2 at round 2 or 3."""
    from judgeaudit.data import load

    data = tmp_path / "mostly_non_latin.jsonl"
    rows = [json.loads(line) for line in _lines()] * 20
    rows = [{**r, "id": f"{r['id']}_{i}"} for i, r in enumerate(rows)]
    english = load("builtin:facts")[:12]
    rows += [{"id": it.id, "prompt": it.prompt, "response_1": it.response_1,
              "response_2": it.response_2, "label": it.label} for it in english]
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    out = tmp_path / "ad"
    r = CliRunner().invoke(app, ["audit", "--judge", "sim?seed=0", "--data", f"jsonl:{data}",
                                 "--probes", "verbosity", "--adaptive", "--max-n",
                                 str(len(rows)), "--out", str(out), "--no-cache"])
    assert r.exit_code == 0, r.output
    p = json.loads((out / "results.json").read_text(encoding="utf-8"))["probes"]["verbosity"]
    assert p["n"] == len(english) and p["verdict"] != "not_run", (p["n"], p["verdict"])
    assert p["dropped"]["perturbation_not_applicable"] == len(rows) - len(english)


def test_adaptive_with_nothing_to_perturb_is_not_run(tmp_path):
    data = tmp_path / "non_latin.jsonl"
    n = _write(data)
    out = tmp_path / "ad"
    r = CliRunner().invoke(app, ["audit", "--judge", "sim?seed=0", "--data", f"jsonl:{data}",
                                 "--probes", "verbosity,bandwagon", "--adaptive", "--max-n",
                                 str(n), "--out", str(out), "--no-cache"])
    assert r.exit_code == 0, r.output
    probes = json.loads((out / "results.json").read_text(encoding="utf-8"))["probes"]
    assert probes["verbosity"]["verdict"] == "not_run" and probes["verbosity"]["n"] == 0
    assert probes["bandwagon"]["n"] == n


def _lines() -> list[str]:
    return [json.dumps({"id": lang, "prompt": q, "response_1": good, "response_2": bad,
                        "label": 1}, ensure_ascii=False) for lang, (q, good, bad) in
            PAIRS.items()]
