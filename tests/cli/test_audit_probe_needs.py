"""`judgeaudit audit` with a probe that needs more than a pairwise judge (self_preference: a
panel, and a judge that writes answers of its own): asked for by name without them, it is
refused before any call (exit 2); under --full it is reported "not run", as before."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


@pytest.mark.parametrize("extra, said", [
    ([], "probe self_preference needs --panel: other judges to compare the judge with"),
    (["--adaptive"], "--adaptive takes no panel, so audit it without --adaptive"),
    (["--panel", "sim?seed=2", "--judge", "sim"],
     "--judge sim: sim cannot serve task 'generate' (only pairwise, pointwise, binary); probe "
     "self_preference needs a model that writes text"),
])
def test_self_preference_without_what_it_needs_is_refused_before_any_call(extra, said,
                                                                          tmp_path,
                                                                          isolated_cache):
    """self_preference named in --probes needs a panel and a judge that writes its own
    answers. Before, the audit judged every item (16 calls here) and then reported the probe
    as "not run", exit 0 (under --adaptive: always, as it takes no panel)."""
    from fakeserver import FakeLLMServer, write_pairs

    write_pairs(tmp_path / "pairs.jsonl", 8)
    with FakeLLMServer() as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["audit", "--judge", judge, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--probes",
                                  "position,self_preference", *extra, "--out",
                                  str(tmp_path / "out")])
        asked = srv.count()
    assert res.exit_code == 2, res.output
    assert said in " ".join(res.output.split())
    assert asked == 0


def test_a_full_audit_without_a_panel_still_runs_and_says_self_preference_was_not_run(
        tmp_path, isolated_cache):
    """--full takes every probe, self_preference included; without a panel it is not run and
    says so, as before (only a probe asked for by name is refused)."""
    res = runner.invoke(app, ["audit", "--judge", "sim", "--full", "--out",
                              str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert "not run" in doc["probes"]["self_preference"]["notes"][0]
    # The terminal says why too: its row alone reads n = 0, "underpowered".
    assert ("self_preference: not run: needs --panel with at least one other judge"
            in " ".join(res.output.split()))


def test_the_panel_agreement_line_carries_its_interval(tmp_path, isolated_cache):
    """It showed the share and n only; the Wilson interval was in results.json alone."""
    res = runner.invoke(app, ["audit", "--judge", "sim", "--n", "20", "--panel", "sim?seed=3",
                              "--probes", "position", "--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    agree = json.loads((tmp_path / "p" / "results.json").read_text())["panel"]["agreement"]
    lo, hi = agree["ci95"]
    assert (f"panel agreement {100 * agree['value']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}] "
            f"(n = {agree['n']})") in " ".join(res.output.split())
