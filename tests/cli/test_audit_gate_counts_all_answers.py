"""The audit's --max-failed gate counts every distinct answer of the audited judge, as the
calls line does, not only its baseline's. A judge that reads its baseline prompts fine and
answers garbage on the perturbed ones (a probe's rewrite confuses it) had the calls line say
"120 unreadable answers of 240 (50.0%)" beside a run that passed, every probe with a verdict.
Real parts: an OpenAI-compatible server on loopback that cannot read long prompts."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer, default_answer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
N = 30


def _judge_that_cannot_read_longer_prompts(limit: int):
    def answer(text: str) -> str:
        return "Hmm, hard to say." if len(text) > limit else default_answer(text)
    return answer


def _audit(tmp_path, srv, name: str, max_failed: str = "0.2",
           probes: str = "position,verbosity"):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, N)
    out = tmp_path / name
    spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
    r = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                            "--probes", probes, "--n", str(N),
                            "--max-failed", max_failed, "--out", str(out), "--json"])
    return r, json.loads((out / "results.json").read_text())


def _longest_baseline_prompt(tmp_path) -> int:
    """The longest prompt the baseline sends (both orders of each pair: the position probe
    reads only those), from a run with its own cache and a judge that reads everything."""
    with FakeLLMServer(logprobs=False) as srv:
        r, _ = _audit(tmp_path, srv, "baseline_only", probes="position")
        assert r.exit_code == 0, r.output
        return max(len(rec.prompt_text) for rec in srv.snapshot())


@pytest.mark.usefixtures("no_keys")
def test_unreadable_answers_to_perturbed_prompts_fail_the_run(tmp_path, isolated_cache):
    limit = _longest_baseline_prompt(tmp_path)
    with FakeLLMServer(logprobs=False, answer=_judge_that_cannot_read_longer_prompts(limit)) \
            as srv:
        r, doc = _audit(tmp_path, srv, "audit")
    calls, run = doc["calls"], doc["run"]
    read = calls["made"] + calls["cached"] - calls["shared"]
    assert calls["unreadable"] / read > 0.2  # the calls line's share
    assert doc["run"]["n_valid"] == N  # the baseline itself was read, every item
    assert run["status"] == "failed", run
    assert run["unreadable"] == calls["unreadable"] and run["answers"] == read
    assert f"{calls['unreadable']} of {read} answers could not be read" in run["message"]
    assert r.exit_code != 0
    assert set(doc["summary"]["run_failed"]) == {"position", "verbosity"}

    # the same answers under a looser gate: the run stands, its verbosity probe counted them
    r2, doc2 = _audit(tmp_path, srv, "loose", max_failed="0.9")
    assert r2.exit_code == 0, r2.output
    assert doc2["run"]["status"] == "ok"
    assert doc2["calls"]["made"] == 0  # all from the cache
    assert doc2["probes"]["verbosity"]["n_invalid"] > 0
