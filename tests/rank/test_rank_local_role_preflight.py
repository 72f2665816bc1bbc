"""`rank` and `rank-eval` check the embedded judge's [local] extra before any call, as the
other commands do (`commands.local_roles_ready`), and the stop names the option that set
the role: rank-eval built its oracle inside `run_rank_eval` and stopped at the first matrix
call with the provider's own message ("the local judge needs the [local] extra"), naming no
option, after its progress had started; rank's --judge (default local) the same.

The missing extra is simulated by replacing `judgeaudit.llm.local_model.missing_modules`
(what the local provider's check asks) with one that finds none of the modules the backend
needs, as on an install without [local]: the test venv has the real extra installed, and
uninstalling it would break the other helpers' runs. No model is loaded: every local call
here is refused or answered from the cache. Neither command has a paid role beside its
judge (rank-eval's one --oracle spec, rank's --judge), so there is no other role's request
to count; the loopback server (`fakeserver`) answers the planned local requests in the
cached case, where the check must let the run go on.
"""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli import plan_cmd
from judgeaudit.cli.main import app
from judgeaudit.llm import local_model as lm
from tests.hubj.test_local_role_preflight import _execute

plan_cmd.register(app)  # (idempotent; `ingest` fills the cache in the cached case)
runner = CliRunner()
WANTED = "the local judge needs the [local] extra: pip install 'judgeaudit[local]'"
POOL = "builtin:controlled?seed=0&n=6&k=2"  # 30 ordered pairs
EVAL = ["rank-eval", "--items", POOL, "--budgets", "10", "--seeds", "1", "--rules", "topk",
        "--samples", "50"]


@pytest.fixture
def no_extra(monkeypatch):
    """The [local] extra missing: every module the local backend needs is not found."""
    monkeypatch.setattr(lm, "missing_modules",
                        lambda backend, source: lm.required_modules(backend, source))


def _invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_rank_eval_stops_before_its_matrices_when_a_local_oracle_cannot_run(
        tmp_path, isolated_cache, no_extra):
    res = _invoke(*EVAL, "--oracle", "local", "--no-cache", "--out", tmp_path / "out")
    out = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert WANTED in out, out
    assert "--oracle is local; pass another --oracle SPEC to use another model" in out, out
    assert "judging all ordered pairs" not in out  # stopped before the matrices' progress
    assert "Traceback" not in out
    assert not (tmp_path / "out" / "results.json").exists()


def test_rank_eval_api_names_the_parameter(isolated_cache, no_extra):
    """`judgeaudit.rank_eval(...)` says `oracle`, as the API's other messages do."""
    import judgeaudit

    with pytest.raises(lm.MissingExtraError, match="oracle is local:qwen-0.5b; pass another "
                                                   "oracle SPEC"):
        judgeaudit.rank_eval(oracle="local:qwen-0.5b", items=POOL, budgets="10", seeds="1",
                             rules="topk", samples=50, cache=False)


def test_rank_stops_before_its_loop_when_the_default_judge_cannot_run(
        tmp_path, isolated_cache, no_extra):
    res = _invoke("rank", "--items", POOL, "--budget", "10", "--no-cache",
                  "--out", tmp_path / "out")
    out = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert WANTED in out, out
    assert "--judge defaults to local; pass --judge SPEC to use another model" in out, out
    assert not (tmp_path / "out" / "results.json").exists()


def test_a_cache_holding_the_local_oracles_answers_still_runs(tmp_path, isolated_cache,
                                                              no_extra):
    """The oracle's answers planned, answered elsewhere and ingested: the check lets the run
    replay them without [local] (it stops only a run whose first local call must fail)."""
    args = [*EVAL, "--oracle", "local"]
    with FakeLLMServer(answer=lambda prompt: "A" if len(prompt) % 2 else "B") as srv:
        plan = tmp_path / "plan.jsonl"
        res = _invoke("--plan-only", plan, *args, "--out", tmp_path / "planned")
        assert res.exit_code == 0, res.output
        answers = tmp_path / "answers.jsonl"
        assert _execute(plan, answers, srv.url) == 30
        res = _invoke("ingest", answers, "--plan", plan)
        assert res.exit_code == 0, res.output
        before = srv.count()
        res = _invoke(*args, "--out", tmp_path / "out")
        assert srv.count() == before
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["calls"]["made"] == 0 and doc["calls"]["cached"] == 30
