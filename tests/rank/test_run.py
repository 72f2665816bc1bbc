"""The rank pipelines outside the CLI: inputs checked before any call with the caller's option
names, `--plan-only` stopping the active loop at the first planned round, and both commands
run one after another in one Session."""

from __future__ import annotations

import pytest

import judgeaudit
from judgeaudit.config import RankConfig, RankEvalConfig
from judgeaudit.judges import make_judge
from judgeaudit.llm import Cache
from judgeaudit.llm.plan import Planner
from judgeaudit.rank.live import PlannedStop, rank_live
from judgeaudit.rank.pool import load_pool
from judgeaudit.rank.run import prepare_rank
from judgeaudit.rank.run_eval import parse_seeds, prepare_rank_eval
from judgeaudit.session import Session

POOL = "builtin:controlled?seed=2&n=8&k=3"


@pytest.mark.parametrize("cli, name", [(True, "--budget"), (False, "budget")])
def test_messages_name_the_option_as_the_caller_typed_it(cli, name):
    with pytest.raises(ValueError, match=f"^{name} must be in 1..56"):
        prepare_rank(RankConfig.model_construct(items=POOL, budget=57), cli=cli)


def test_ranges_are_the_configs_in_the_api_and_the_cli():
    """Types and ranges are checked once, from RankConfig / RankEvalConfig: by the API's
    arguments and the CLI's options alike, before any call."""
    from typer.testing import CliRunner

    from judgeaudit.cli.main import app

    for call, needle in [
        (lambda: judgeaudit.rank("sim", POOL, refit_every=0, cache=False),
         "^refit_every: expected an integer >= 1"),
        (lambda: judgeaudit.rank("sim", POOL, max_failed=2, cache=False),
         "^max_failed: expected a number >= 0.0 and <= 1.0"),
        (lambda: judgeaudit.rank_eval("sim", POOL, tau=0, cache=False),
         "^tau: expected a number > 0"),
    ]:
        with pytest.raises(ValueError, match=needle):
            call()
    out = CliRunner().invoke(app, ["rank", "--items", POOL, "--refit-every", "0", "--no-cache"])
    assert out.exit_code == 2 and "--refit-every: expected an integer >= 1" in out.output


def test_prepare_checks_before_any_call():
    inp = prepare_rank(RankConfig.model_construct(items=POOL, budget=12, covariates=["length"],
                                                   lam=2))
    assert inp.k == 3 and inp.covariates == ["length"] and (inp.lam_start, inp.eb_lam) == (2, False)
    with pytest.raises(ValueError, match="unknown covariate"):
        prepare_rank(RankConfig.model_construct(items=POOL, covariates="lenght"))
    ev = prepare_rank_eval(RankEvalConfig.model_construct(
        oracle="sim", items="builtin:controlled?n=6&k=2", budgets="8,4", seeds=[3, 1]))
    assert ev.budgets == [4, 8] and ev.seeds == [3, 1] and len(ev.jobs) == 2
    assert ev.n_calls == 2 * 30 and ev.judges == ["sim?seed=3", "sim?seed=1"]
    assert parse_seeds(3) == [0, 1, 2] and parse_seeds("2-4") == [2, 3, 4]
    with pytest.raises(ValueError, match="--seeds: expected a count"):
        parse_seeds("4-2")


async def test_plan_only_stops_the_loop_at_the_first_planned_round(tmp_path):
    cache = Cache(tmp_path / "c.sqlite")
    bundle = make_judge("sim?quality=1&length=1", cache=cache)
    planner = Planner(tmp_path / "plan.jsonl")
    planner.bind(cache)
    bundle.client.planner = planner
    pool = load_pool(POOL)
    with pytest.raises(PlannedStop, match=r"ranking round 1 \(comparisons 1-5\)") as exc:
        await rank_live(bundle, pool, k=3, budget=20, refit_every=5, n_samples=50)
    assert exc.value.round == 1 and exc.value.n_planned == 5 and planner.n == 5
    assert bundle.client.stats.made == 0
    await bundle.aclose()


async def test_rank_and_rank_eval_share_a_session(tmp_path):
    async with Session(cache=tmp_path / "c.sqlite") as s:
        r = await judgeaudit.arank("sim?quality=1&seed=1", POOL, budget=10, samples=50,
                                   session=s)
        e = await judgeaudit.arank_eval("sim?quality=1&seed=1", POOL, budgets=[6],
                                        rules="topk", seeds=1, samples=50, session=s)
        assert r.calls["made"] == 10 and e.calls["cached"] == 10  # rank's verdicts reused
        assert e.calls["made"] == 56 - 10 and s.calls()["made"] == 56
        assert r.ok and e.ok and e["recall"]["bias_aware"]["topk"]["6"]["n"] == 1
