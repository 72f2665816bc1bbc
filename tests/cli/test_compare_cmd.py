"""`judgeaudit compare RUN_A RUN_B`: the table, results.json and report.html it writes, the
release gate (--fail-on worse: exit 1), bad input (exit 2: no folder, not an audit, different
data, bad options, --out on an input) and a failed input run (exit 3 with its message)."""

from __future__ import annotations

import json
import re

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli import compare_cmd
from judgeaudit.cli.main import app as main_app
from judgeaudit.report import read_results, write_results

runner = CliRunner()


def _app() -> typer.Typer:
    """The compare command on its own app (and on the main one once registered there)."""
    names = {c.name for c in main_app.registered_commands}
    if "compare" in names:
        return main_app
    app = typer.Typer()

    @app.callback()
    def _root() -> None:
        pass

    compare_cmd.register(app)
    return app


def probe(value, lo, hi, *, title="Position", per_item=None, n=200):
    doc = {"title": title, "metric": "m", "direction": "d", "no_bias_range": [-0.05, 0.05],
           "effect": {"value": value, "ci95": [lo, hi]}, "n": n, "p": 0.01, "q": 0.01,
           "verdict": "biased", "notes": []}
    if per_item is not None:
        doc["per_item"] = per_item
    return doc


def audit(probes, *, data="builtin:facts", n_items=200, judge="sim?position=1", status="ok",
          message=""):
    return {"command": "audit", "version": "0.1.0", "judge": judge, "data": data,
            "n_items": n_items, "template": {"name": "pairwise_v1", "sha256": "cd" * 32},
            "run": {"status": status, "message": message, "n_valid": n_items,
                    "n_planned": n_items, "calls_failed": 0, "calls_asked": 0},
            "alpha": 0.05, "summary": {"biased": []}, "probes": probes}


BIASED = {"position": probe(0.06, 0.04, 0.08),
          "verbosity": probe(0.0, -0.02, 0.02, title="Verbosity")}
FIXED = {"position": probe(0.0, -0.02, 0.02),
         "verbosity": probe(0.002, -0.018, 0.022, title="Verbosity")}


@pytest.fixture
def runs(tmp_path):
    def make(name: str, doc: dict) -> str:
        write_results(tmp_path / name / "results.json", doc)
        return str(tmp_path / name)

    return make


def invoke(*args: str):
    return runner.invoke(_app(), ["compare", *args])


def test_improved_writes_results_report_and_table(runs, tmp_path):
    a, b = runs("a", audit(BIASED)), runs("b", audit(FIXED, judge="sim?position=0.2"))
    out = tmp_path / "cmp"
    r = invoke(a, b, "--out", str(out), "--fail-on", "worse")
    assert r.exit_code == 0, r.output
    assert "improved" in r.output and "unpaired" in r.output
    assert "1 improved, 0 worse, 1 no change, 0 underpowered" in r.output
    res = read_results(out)
    assert res["command"] == "compare" and res["summary"]["improved"] == ["position"]
    assert res["runs"]["a"]["path"] == a and res["runs"]["b"]["judge"] == "sim?position=0.2"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Judge comparison" in html and "Unpaired comparison" in html
    # `judgeaudit report` rebuilds it from results.json alone
    rr = runner.invoke(main_app, ["report", str(out), "--out", str(tmp_path / "again.html")])
    assert rr.exit_code == 0, rr.output
    assert (tmp_path / "again.html").read_text(encoding="utf-8") == html


def test_worse_trips_the_gate(runs, tmp_path):
    a, b = runs("a", audit(FIXED)), runs("b", audit(BIASED))
    out = str(tmp_path / "cmp")
    assert invoke(a, b, "--out", out).exit_code == 0  # no gate asked
    r = invoke(a, b, "--out", out, "--fail-on", "worse")
    assert r.exit_code == 1 and "fail-on: position got worse" in r.output
    assert read_results(out)["summary"]["worse"] == ["position"]  # written before the gate
    assert invoke(a, b, "--out", out, "--fail-on", "position").exit_code == 1
    assert invoke(a, b, "--out", out, "--fail-on", "verbosity").exit_code == 0
    r = invoke(a, b, "--out", out, "--fail-on", "authority")
    assert r.exit_code == 2 and "not in both audits" in r.output


def test_paired_when_per_item_values_are_kept(runs, tmp_path):
    ids = [f"builtin:facts:{i}" for i in range(200)]
    va = {i: (0.5 if k % 5 == 0 else 0.0) for k, i in enumerate(ids)}
    vb = {i: (0.5 if k % 25 == 0 else 0.0) for k, i in enumerate(ids)}

    def mean(v: dict[str, float]) -> float:
        return sum(v.values()) / len(v)

    a = runs("a", audit({"position": probe(mean(va), 0.05, 0.15, per_item=va)}))
    b = runs("b", audit({"position": probe(mean(vb), 0.0, 0.04, per_item=vb)}))
    r = invoke(a, b, "--out", str(tmp_path / "cmp"))
    assert r.exit_code == 0, r.output
    assert "paired, n=200" in r.output and "paired by item id: position" in r.output
    p = read_results(tmp_path / "cmp")["probes"]["position"]
    assert p["pairing"] == "paired" and p["verdict"] == "improved"
    assert p["items"] == {"n_matched": 200, "n_only_a": 0, "n_only_b": 0, "n_up": 0,
                          "n_down": 32}


@pytest.mark.parametrize("case,needle", [
    ("missing", "no such folder"),
    ("empty", "no results file"),
    ("evaluate", "not an audit result"),
    ("data", "different data"),
    ("n", "different data"),
    ("json", "invalid JSON"),
])
def test_bad_input_exits_2(runs, tmp_path, case, needle):
    a = runs("a", audit(BIASED))
    if case == "missing":
        b = str(tmp_path / "nowhere")
    elif case == "empty":
        (tmp_path / "empty").mkdir()
        b = str(tmp_path / "empty")
    elif case == "evaluate":
        b = runs("ev", {"command": "evaluate", "judge": "sim", "data": "builtin:facts"})
    elif case == "data":
        b = runs("b", audit(FIXED, data="builtin:arithmetic"))
    elif case == "n":
        b = runs("b", audit(FIXED, n_items=40))
    else:
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad" / "results.json").write_text("{", encoding="utf-8")
        b = str(tmp_path / "bad")
    out = tmp_path / "cmp"
    r = invoke(a, b, "--out", str(out))
    assert r.exit_code == 2, r.output
    assert needle in r.output
    assert not (out / "results.json").exists()


def test_bad_options_exit_2(runs, tmp_path):
    a, b = runs("a", audit(BIASED)), runs("b", audit(FIXED))
    assert invoke(a, b, "--alpha", "1.5").exit_code == 2
    assert invoke(a, b, "--margin", "-0.1").exit_code == 2
    r = invoke(a, b, "--out", a)
    assert r.exit_code == 2 and "would be overwritten" in r.output
    assert read_results(a)["command"] == "audit"  # untouched
    (tmp_path / "file").write_text("x", encoding="utf-8")
    assert invoke(a, b, "--out", str(tmp_path / "file")).exit_code == 2


def test_failed_input_run_exits_3(runs, tmp_path):
    msg = "run failed: 80 of 80 calls failed (first error: HTTP 429)"
    a = runs("a", audit(BIASED))
    b = runs("b", audit({"position": probe(None, None, None)}, status="failed", message=msg))
    out = tmp_path / "cmp"
    r = invoke(a, b, "--out", str(out), "--fail-on", "worse")
    assert r.exit_code == 3, r.output
    assert msg in " ".join(r.output.split())
    res = read_results(out)
    assert res["run"]["status"] == "failed" and res["probes"] == {}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Run failed" in html and "HTTP 429" in html


def test_an_unfinished_audit_is_a_failed_input_not_a_wrong_file(runs, tmp_path):
    """An interrupted audit's folder holds an unfinished failed document without probes or
    n_items: it was "not an audit result (command 'audit')" (exit 2)."""
    a = runs("a", audit(BIASED))
    unfinished = {"command": "audit", "version": "0.1.0", "judge": "sim", "data": None,
                  "calls": {"made": 3, "cached": 0, "failed": 0},
                  "run": {"status": "failed", "message": "run failed: the run did not "
                          "finish (interrupted, killed, or still running)"}}
    b = runs("b", unfinished)
    r = invoke(a, b, "--out", str(tmp_path / "cmp"))
    assert r.exit_code == 3, r.output
    text = " ".join(r.output.split())
    assert "did not finish" in text and "re-run that audit" in text


def test_untrusted_text_is_escaped(runs, tmp_path):
    evil = "<img src=x onerror=alert(1)>[bold]x[/bold]"
    bad = {"position": probe(0.06, 0.04, 0.08, title=evil)}
    a = runs("a", audit(bad, judge=evil))
    b = runs("b", audit({"position": probe(0.0, -0.02, 0.02, title=evil)}, judge=evil))
    out = tmp_path / "cmp"
    r = invoke(a, b, "--out", str(out))
    assert r.exit_code == 0, r.output
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<img src=x" not in html and "&lt;img src=x" in html
    assert "[bold]x[/bold]" in " ".join(r.output.split())  # shown, not read as markup


def test_two_real_sim_audits(tmp_path, isolated_cache):
    """`judgeaudit audit` twice (sim position 2.0, then 0.0; position probe, all 212 items),
    then compare: the drop is improved; the other way round the gate trips. A drop this large
    is found unpaired too, as audits write their results today (1.0 -> 0.2 needs pairing:
    tests/audit/test_compare.py, benchmarks/compare_sim.py)."""
    outs = {}
    for name, pos in (("a", "2.0"), ("b", "0.0")):
        outs[name] = str(tmp_path / name)
        r = runner.invoke(main_app, ["audit", "--judge", f"sim?position={pos}&seed=0",
                                     "--data", "builtin:facts", "--probes", "position",
                                     "--full", "--out", outs[name], "--no-cache"])
        assert r.exit_code == 0, r.output
    r = invoke(outs["a"], outs["b"], "--out", str(tmp_path / "ab"), "--fail-on", "worse")
    assert r.exit_code == 0, r.output
    res = json.loads((tmp_path / "ab" / "results.json").read_text(encoding="utf-8"))
    assert res["probes"]["position"]["verdict"] == "improved"
    assert res["probes"]["position"]["q"] < 1e-4
    r = invoke(outs["b"], outs["a"], "--out", str(tmp_path / "ba"), "--fail-on", "worse")
    assert r.exit_code == 1, r.output


def test_adaptive_audits_compare_with_each_other_and_with_a_fixed_n_one(tmp_path,
                                                                       isolated_cache):
    """An adaptive audit judges as many items as its probes need, so two of them (or one
    and a fixed-n audit) rarely judged the same number: compare refused them ("different
    data: ... run with the same --data and --n", though --adaptive takes no --n). Items are
    matched by id instead, and the output says the runs are adaptive."""
    data = "builtin:facts?seeds=0-2"
    runs = {"fixed": ["--n", "60"], "ad1": ["--adaptive"],
            "ad2": ["--adaptive", "--seed", "1"]}
    for name, opts in runs.items():
        res = runner.invoke(main_app, ["audit", "--judge", "sim?position=0.2&length=1",
                                       "--data", data, *opts, "--out", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
    n = {k: read_results(tmp_path / k / "results.json")["n_items"] for k in runs}
    assert len(set(n.values())) > 1, n  # the cases this is about
    for a, b in (("fixed", "ad1"), ("ad1", "ad2")):
        res = runner.invoke(main_app, ["compare", str(tmp_path / a), str(tmp_path / b),
                                       "--out", str(tmp_path / f"{a}-{b}")])
        text = " ".join(res.output.split())
        assert res.exit_code == 0, res.output
        assert "adaptive: each probe compares the items both runs judged" in text


def test_a_probe_the_candidate_dropped_trips_the_gate(runs, tmp_path):
    """Audit B ran only position and verbosity of A's battery (the dropped injection probe is
    where its bias was): `--fail-on worse` passed (exit 0, "only in A, not compared"). Any
    gate now fails (exit 1) naming the probes B lacks, unless --allow-missing; a probe only
    in B never fails it."""
    full = {**BIASED, "injection": probe(0.0, -0.02, 0.02, title="Injection"),
            "authority": probe(0.0, -0.02, 0.02, title="Authority")}
    a, b = runs("a", audit(full)), runs("b", audit(BIASED))
    out = tmp_path / "cmp"
    r = invoke(a, b, "--out", str(out), "--fail-on", "worse")
    text = " ".join(r.output.split())
    assert r.exit_code == 1, r.output
    assert "fail-on: audit B lacks probe(s) audit A ran: injection, authority" in text
    assert "--allow-missing" in text and "got worse" not in text
    gate = read_results(out)["gate"]
    assert gate["outcome"] == "tripped" and gate["by"] == ["authority", "injection"]
    html = " ".join((out / "report.html").read_text(encoding="utf-8").split())
    assert "audit B lacks 2 probes audit A ran:" in html and "<code>injection</code>" in html
    assert gate["missing"] == ["injection", "authority"] and gate["worse"] == []
    # the opt-out: the probes both ran decide (none got worse); still listed
    r = invoke(a, b, "--out", str(out), "--fail-on", "worse", "--allow-missing")
    assert r.exit_code == 0, r.output
    assert "only in A, not compared: injection, authority" in " ".join(r.output.split())
    assert read_results(out)["gate"] == {"fail_on": "worse", "outcome": "passed", "by": [],
                                         "worse": [], "missing": [], "allow_missing": True}
    # a named probe gates on itself (only unnamed ones are missing) and on dropped ones
    assert invoke(a, b, "--out", str(out), "--fail-on", "position").exit_code == 1
    assert invoke(a, b, "--out", str(out), "--fail-on", "position",
                  "--allow-missing").exit_code == 0
    r = invoke(a, b, "--out", str(out), "--fail-on", "injection", "--allow-missing")
    assert r.exit_code == 1 and "injection" in r.output
    # no gate: exit 0, said; --allow-missing alone is refused (it would do nothing)
    assert invoke(a, b, "--out", str(out)).exit_code == 0
    r = invoke(a, b, "--out", str(out), "--allow-missing")
    assert r.exit_code == 2 and "--fail-on" in r.output
    # a worse probe and a dropped one: both said, exit 1
    c = runs("c", audit({**FIXED, "injection": probe(0.0, -0.02, 0.02, title="I")}))
    r = invoke(c, b, "--out", str(out), "--fail-on", "worse")
    text = " ".join(r.output.split())
    assert r.exit_code == 1 and "position got worse" in text and "lacks probe(s)" in text
    # probes only in B (the candidate ran more) pass the gate
    r = invoke(b, a, "--out", str(out), "--fail-on", "worse")
    assert r.exit_code == 0, r.output
    assert "only in B, not compared: injection, authority" in " ".join(r.output.split())


def test_unmatched_items_are_in_the_terminal_title_and_rows(runs, tmp_path):
    """Audits of a data file 10 of whose 40 ids changed: the title said "(40 items)" and each
    row "paired, n=30", never the 10 items of each run left out (only results.json and the
    report did). Audits of the same data at another --n were refused (exit 2): now paired."""
    ids = [f"j:{i}" for i in range(40)]
    va = {i: 0.0 for i in ids}
    vb = {(i + "-edited" if k < 10 else i): 0.0 for k, i in enumerate(ids)}
    a = runs("a", audit({"position": probe(0.0, -0.02, 0.02, per_item=va)}, n_items=40))
    b = runs("b", audit({"position": probe(0.0, -0.02, 0.02, per_item=vb)}, n_items=40))
    r = invoke(a, b, "--out", str(tmp_path / "cmp"))
    text = " ".join(r.output.split())
    assert r.exit_code == 0, r.output
    assert "(A 40 items, B 40: 30 matched by id, 10 only in A, 10 only in B)" in text
    assert "only A/B" in text and "10/10" in text and "paired, n=30" in text
    assert "10 only in A and 10 only in B are left out of the paired changes" in text
    res = read_results(tmp_path / "cmp")
    assert res["items"] == {"a": 40, "b": 40, "n_matched": 30, "n_only_a": 10, "n_only_b": 10}
    # --json carries the counts too (it had none)
    j = json.loads(invoke(a, b, "--out", str(tmp_path / "cmpj"), "--json").stdout)
    assert j["items"] == res["items"]
    assert (j["changes"]["position"]["n"], j["changes"]["position"]["n_only_a"],
            j["changes"]["position"]["n_only_b"]) == (30, 10, 10)
    # all matched: said in the title, no column
    r = invoke(a, a + "/results.json", "--out", str(tmp_path / "same"))
    assert "(40 items, all matched by id)" in " ".join(r.output.split())
    assert "only A/B" not in r.output
    # --n 30 of the same data beside --n 40: paired on the 30 shared ids
    c = runs("c", audit({"position": probe(0.0, -0.02, 0.02,
                                           per_item={i: 0.0 for i in ids[10:]})}, n_items=30))
    r = invoke(c, b, "--out", str(tmp_path / "n"))
    assert r.exit_code == 0, r.output
    assert "(A 30 items, B 40: 30 matched by id, 0 only in A, 10 only in B)" in " ".join(
        r.output.split())
    html = (tmp_path / "n" / "report.html").read_text(encoding="utf-8")
    assert "A judged 30 items, B 40" in html


def test_real_sim_audits_dropped_probe_and_another_n(tmp_path, isolated_cache):
    """The tester's cases on sim judges: A (position, injection; --n 60) against B that ran
    position only with injection planted: --fail-on worse exits 1 naming injection, 0 with
    --allow-missing. A at --n 80 with position planted against B at --n 120 without: paired
    on the 80 shared ids (exit 2 before), the drop found."""
    def audit_run(name, judge, *opts):
        r = runner.invoke(main_app, ["audit", "--judge", judge, "--data", "builtin:facts",
                                     *opts, "--out", str(tmp_path / name), "--no-cache"])
        assert r.exit_code == 0, r.output
        return str(tmp_path / name)

    a = audit_run("a", "sim?seed=0", "--probes", "position,injection", "--n", "60")
    bp = audit_run("bp", "sim?injection=3&seed=0", "--probes", "position", "--n", "60")
    r = invoke(a, bp, "--out", str(tmp_path / "c1"), "--fail-on", "worse")
    assert r.exit_code == 1, r.output
    assert "lacks probe(s) audit A ran: injection" in " ".join(r.output.split())
    r = invoke(a, bp, "--out", str(tmp_path / "c1"), "--fail-on", "worse", "--allow-missing")
    assert r.exit_code == 0, r.output
    a80 = audit_run("a80", "sim?position=2.0&seed=0", "--probes", "position", "--n", "80")
    b120 = audit_run("b120", "sim?position=0.0&seed=0", "--probes", "position", "--n", "120")
    r = invoke(a80, b120, "--out", str(tmp_path / "c2"), "--fail-on", "worse", "--json")
    assert r.exit_code == 0, r.output
    res = read_results(tmp_path / "c2")
    assert res["items"] == {"a": 80, "b": 120, "n_matched": 80, "n_only_a": 0,
                            "n_only_b": 40}
    assert res["probes"]["position"]["verdict"] == "improved"
    assert "80 matched by id, 0 only in A, 40 only in B" in " ".join(r.output.split())
    r = invoke(b120, a80, "--out", str(tmp_path / "c3"), "--fail-on", "worse")
    assert r.exit_code == 1 and "position got worse" in r.output


def test_terminal_columns_are_over_the_matched_items(runs, tmp_path):
    """A judged 40 items, B those and 40 more at +0.5: the table showed B's own +0.250 (80
    items) beside a change of -0.100 from A's +0.100, which did not add up. Now the columns
    are on the 40 matched items (B +0.000, so B - A is the change), said in the headers and
    caption, and each audit's own effect is a line of its own with its n."""
    ids = [f"i{k}" for k in range(80)]
    va = {i: (0.5 if k % 5 == 0 else 0.0) for k, i in enumerate(ids[:40])}
    vb = {i: (0.0 if k < 40 else 0.5) for k, i in enumerate(ids)}
    a = runs("a", audit({"position": probe(0.1, 0.05, 0.15, per_item=va, n=40)}, n_items=40))
    b = runs("b", audit({"position": probe(0.25, 0.2, 0.3, per_item=vb, n=80)}, n_items=80))
    r = invoke(a, b, "--out", str(tmp_path / "cmp"))
    assert r.exit_code == 0, r.output
    text = " ".join(r.output.split())
    row = next(line for line in r.output.splitlines() if line.strip(" │|").startswith(
        "position"))
    cells = [c.strip() for c in re.split(r"[│|]", row) if c.strip()]
    assert cells[1].startswith("+0.100") and cells[2].startswith("+0.000"), cells
    assert cells[3].startswith("-0.100"), cells
    assert "A matched [95% CI]" in text and "so B - A is the change" in text
    assert ("position, each audit over all its own items (not the change's items): A +0.100 "
            "[+0.050, +0.150] (n=40), B +0.250 [+0.200, +0.300] (n=80); the table's A and B "
            "are over the 40 matched items") in text
    res = read_results(tmp_path / "cmp")["probes"]["position"]
    assert res["b"]["n"] == 40 and res["b"]["own"]["n"] == 80
    j = json.loads(invoke(a, b, "--out", str(tmp_path / "j"), "--json").stdout)
    assert j["changes"]["position"]["value"] == pytest.approx(-0.1)
    # every item matched: the plain headers, no own-items line
    r = invoke(a, a, "--out", str(tmp_path / "same"))
    assert "matched [95% CI]" not in r.output and "all its own items" not in r.output


def test_terminal_shows_acting_characters_as_escapes(runs, tmp_path):
    """A plugin's probe name or a folder name with an ESC sequence or a right-to-left
    override recoloured the terminal or reversed the line: shown as escapes now."""
    name = "plug\x1b[31mred\u202e"
    ids = [f"i{k}" for k in range(20)]
    vals = dict.fromkeys(ids, 0.0)
    a = runs("a\x1b[2Jx", audit({name: probe(0.0, -0.02, 0.02, per_item=vals, n=20)},
                                n_items=20, judge="sim\x1b]0;title\x07"))
    b = runs("b", audit({name: probe(0.0, -0.02, 0.02, per_item=vals, n=20),
                         "only\x1b[1mb": probe(0.0, -0.02, 0.02, per_item=vals, n=20)},
                        n_items=20))
    r = invoke(a, b, "--out", str(tmp_path / "cmp"))
    assert r.exit_code == 0, r.output
    assert "\x1b" not in r.output and "\u202e" not in r.output
    text = " ".join(r.output.split())
    assert "plug\\x1b[31mred\\u202e" in text and "only\\x1b[1mb" in text
