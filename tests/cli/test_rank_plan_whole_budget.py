"""`rank --plan-only` with a rule whose picks do not depend on the answers (random,
roundrobin) plans the whole budget in one run: one plan, one ingest, then a run that makes no
call and equals a direct run. An adaptive rule (topk) still plans round by round
(tests/cli/test_rank_plan.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from fakeserver import FakeLLMServer

from judgeaudit.rank import acquisition
from judgeaudit.rank.loop import run_active
from tests.cli.test_plan_ingest import execute, invoke, stable

POOL = "builtin:controlled?seed=1&n=8&k=3"


@pytest.mark.parametrize("rule", ["random", "roundrobin"])
def test_an_answer_free_rule_plans_its_whole_budget_in_one_run(rule, tmp_path, monkeypatch,
                                                                no_keys):
    """A budget of 12 at --refit-every 4 took 3 plan-ingest cycles; now 1."""
    with FakeLLMServer() as srv:
        spec = f"openai:fake-model?base_url={srv.openai_url}&api_key=sk-plan-whole-1"
        args = ["rank", "--judge", spec, "--items", POOL, "--budget", "12", "--refit-every",
                "4", "--rule", rule, "--samples", "100", "--lam", "1"]

        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "direct.sqlite"))
        invoke(*args, "--out", tmp_path / "direct")
        direct = json.loads((tmp_path / "direct" / "results.json").read_text())
        n_direct = srv.count()
        sent = sorted(json.dumps(r.body, sort_keys=True) for r in srv.snapshot())

        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "planned.sqlite"))
        plan = tmp_path / "plan.jsonl"
        res = invoke("--plan-only", plan, *args, "--out", tmp_path / "planned")
        text = " ".join(res.output.split())
        assert srv.count() == n_direct  # planning calls nothing
        assert f"requests planned for comparisons 1-12 in this one run (the whole budget: " \
               f"the {rule} rule's picks do not depend on the answers)" in text
        assert "depends on their answers" not in text
        lines = [json.loads(x) for x in plan.read_text().splitlines()]
        assert len(lines) == len(sent) and "sk-plan-whole-1" not in plan.read_text()
        assert sorted(json.dumps(x["body"], sort_keys=True) for x in lines) == sent
        assert not (tmp_path / "planned" / "results.json").exists()
        execute(plan, tmp_path / "out.jsonl", srv.url)
        invoke("ingest", tmp_path / "out.jsonl", "--plan", plan)

        res = invoke("--plan-only", tmp_path / "plan2.jsonl", *args, "--out",
                     tmp_path / "planned")
        assert "nothing to plan" in res.output
        before = srv.count()
        invoke(*args, "--out", tmp_path / "replayed")
        assert srv.count() == before
    replayed = json.loads((tmp_path / "replayed" / "results.json").read_text())
    assert replayed["calls"]["made"] == 0 and replayed["calls"]["cached"] == 12
    assert stable(replayed) == stable(direct)


@pytest.mark.parametrize("rule", ["random", "roundrobin"])
def test_answer_free_rules_pick_the_same_pairs_whatever_the_answers(rule):
    """What planning the whole budget at once rests on: the same picks under two judges
    that always disagree, and under one that never answers."""
    assert acquisition.answer_free(rule) and not acquisition.answer_free("topk")
    picks = []
    for answer in (1.0, 0.0, np.nan):
        res = run_active(lambda i, j, f, a=answer: a, 8, 40, 3, rule=rule, refit_every=4,
                         n_samples=100, lam=1.0, seed=3)
        picks.append([(st["first"], st["second"]) for st in res.steps])
    assert picks[0] == picks[1] == picks[2]
