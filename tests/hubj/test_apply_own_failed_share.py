"""`mitigate --apply` checks --max-failed against the judge's own calls and the factor
scorer's own, not their pool. The pool hid a judge: a served judge failing 53 of its 160
calls (33%) beside the scorer's 160 read 53 of 320 (16.6%) and exited 0 with a corrected
win rate. And a failing scorer's calls came back as a second, unnamed reason ("besides ...:
77 of 320 calls failed", all of them the scorer's). Now the run fails (exit 3) naming the
judge or the scorer with its own counts, and reports both roles' counts either way
(results.json's `run.calls_by_judge` and `run.scorer_calls`, a terminal line), as quantify
and mitigate without --apply do per judge (9a2b774).

Judges and scorers that fail are real loopback servers (`fakeserver`) refusing a fixed
share of prompts as too long; the others are simulated (`sim`, `simhubj`)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from tests.hubj.test_quantify_failed_judge import _human_picker, _masked

runner = CliRunner()
SIM_SCORER = "simhubj?score_from=length"
GOOD = "sim?length=1&seed=2"


@pytest.fixture(autouse=True)
def _own_cache(isolated_cache):
    """Every test here: the cache its own."""


def _data(shared_data) -> str:
    return f"pandalm:{shared_data / 'pandalm_testset'}"


def _failing(share: float, byte: int = 0) -> Callable[[Any, int], str | None]:
    """A rule refusing about `share` of the prompts as too long, the same ones every time."""
    def rule(req: Any, attempt: int) -> str | None:
        h = hashlib.sha256(req.prompt_text.encode()).digest()[byte]
        return "too_long" if h < 256 * share else None
    return rule


def _score_by_length(prompt: str) -> str:
    """A G_score answer: 1-5 by the rated response's length in words."""
    m = re.search(r"<response>\n(.*?)\n</response>", prompt, re.S)
    words = len((m.group(1) if m else "").split())
    return json.dumps({"score": 1 + min(4, words // 40)})


def _fit_then_apply(shared_data, tmp_path, judge: str, scorer: str, fit_judges: str,
                    before_apply: Callable[[], None]):
    """A mitigate fit (60 items, no failures), then --apply of `judge` on 80 items with a
    cache of its own (the fit's answers are not replayed), after `before_apply` sets the
    servers' rules."""
    base = ["mitigate", "--scorer", scorer, "--data", _data(shared_data), "--factor", "length"]
    fit = runner.invoke(app, [*base, "--judges", fit_judges, "--limit", "60",
                              "--out", str(tmp_path / "fit")])
    assert fit.exit_code == 0, fit.output
    before_apply()
    res = runner.invoke(app, [*base, "--judges", judge, "--limit", "80", "--apply",
                              str(tmp_path / "fit"), "--out", str(tmp_path / "ap"),
                              "--cache", str(tmp_path / "apply.sqlite"), "--json"])
    return res, json.loads((tmp_path / "ap" / "results.json").read_text())


def test_apply_fails_a_judge_past_max_failed_on_its_own_calls(shared_data, tmp_path):
    """The judge fails about a third of its calls (53 of 160 measured); pooled with the
    scorer's 160 clean ones the share was 16.6%, under 0.2, and the run exited 0."""
    with FakeLLMServer(answer=_human_picker(shared_data)) as srv:
        bad = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"

        def fail() -> None:
            srv.rule = _failing(0.35)
        res, doc = _fit_then_apply(shared_data, tmp_path, bad, SIM_SCORER, f"{GOOD},{bad}",
                                   fail)
    name = _masked(bad)
    run = doc["run"]
    assert res.exit_code == 3, res.output
    assert run["failed_share"] <= 0.2, run  # the pooled share alone passes
    own = run["calls_by_judge"][name]
    assert own["asked"] == 160 and own["failed"] > 0.2 * own["asked"], own
    assert run["scorer_calls"] == {"spec": SIM_SCORER, "asked": 160, "failed": 0}
    assert own["failed"] == run["calls_failed"]  # every failed call was the judge's
    assert run["judges_over_max_failed"] == [name]
    assert run["message"].startswith(
        f"run failed: judge {name}: {own['failed']} of its {own['asked']} calls failed "
        f"(--max-failed 0.2 allows 32; first error: "), run["message"]
    assert doc["applied"] is None  # a failed run is not corrected
    text = " ".join(res.output.split())
    assert (f"failed calls, each checked against --max-failed 0.2: judge {name} "
            f"{own['failed']} of 160 ({own['failed'] / 160:.1%}) ABOVE --max-failed; "
            f"scorer {SIM_SCORER} 0 of 160 (0.0%)") in text
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["exit_code"] == 3 and f"judge {name}: " in summary["reason"]


def test_apply_names_a_failing_scorer_once_not_the_pool(shared_data, tmp_path):
    """The served scorer fails about half its G_score prompts; the judge (simulated) none.
    The scorer was named, then "besides (counted over the scorer's calls too): 77 of 320
    calls failed", the same calls a second time as if another cause."""
    with FakeLLMServer(answer=_score_by_length) as srv:
        scorer = f"openai:s?base_url={srv.openai_url}&api_key=k&logprobs=off"

        def fail() -> None:
            srv.rule = _failing(0.5)
        res, doc = _fit_then_apply(shared_data, tmp_path, GOOD, scorer,
                                   f"{GOOD},sim?length=2&seed=3", fail)
    run = doc["run"]
    shown = _masked(scorer)
    assert res.exit_code == 3, res.output
    sc = run["scorer_calls"]
    assert sc["spec"] == shown and sc["asked"] == 160 and sc["failed"] > 0.2 * 160, sc
    assert run["calls_by_judge"] == {GOOD: {"asked": 160, "failed": 0}}
    assert run["judges_over_max_failed"] == []
    assert run["message"].startswith(f"run failed: the factor scorer (--scorer {shown}) "
                                     "failed: "), run["message"]
    assert f"of {run['calls_asked']} calls failed" not in run["message"]  # not the pool
    assert "besides" not in run["message"] and f"judge {GOOD}" not in run["message"]
    text = " ".join(res.output.split())
    assert (f"judge {GOOD} 0 of 160 (0.0%); scorer {shown} {sc['failed']} of 160 "
            f"({sc['failed'] / 160:.1%}) ABOVE --max-failed") in text


def test_apply_under_the_limit_reports_both_roles_and_passes(shared_data, tmp_path):
    """A judge failing about a tenth of its calls passes, and says so with the scorer's."""
    with FakeLLMServer(answer=_human_picker(shared_data)) as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"

        def fail() -> None:
            srv.rule = _failing(0.1)
        res, doc = _fit_then_apply(shared_data, tmp_path, judge, SIM_SCORER,
                                   f"{GOOD},{judge}", fail)
    name = _masked(judge)
    run = doc["run"]
    assert res.exit_code == 0, res.output
    own = run["calls_by_judge"][name]
    assert 0 < own["failed"] <= 0.2 * own["asked"], own
    assert run["status"] == "ok" and run["judges_over_max_failed"] == []
    assert doc["applied"]["n"] > 0
    text = " ".join(res.output.split())
    assert (f"judge {name} {own['failed']} of {own['asked']} "
            f"({own['failed'] / own['asked']:.1%}); scorer {SIM_SCORER} 0 of 160") in text
