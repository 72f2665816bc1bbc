"""`rank` and `rank-eval` under `--plan-only` (each ranking round is a stage: plan it, answer it
elsewhere, ingest, re-run for the next; the final run makes no call and equals a direct run)
and with `--json` (one JSON object on stdout: the Result's summary)."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.result import Result
from tests.cli.test_plan_ingest import execute, invoke, stable

POOL = "builtin:controlled?seed=1&n=8&k=3"


def test_rank_plans_round_by_round_and_the_last_run_equals_a_direct_run(tmp_path, monkeypatch,
                                                                         no_keys):
    with FakeLLMServer() as srv:
        spec = f"openai:fake-model?base_url={srv.openai_url}&api_key=sk-plan-rank-1"
        args = ["rank", "--judge", spec, "--items", POOL, "--budget", "12", "--refit-every",
                "4", "--samples", "100", "--lam", "1"]

        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "direct.sqlite"))
        invoke(*args, "--out", tmp_path / "direct")
        direct = json.loads((tmp_path / "direct" / "results.json").read_text())
        n_direct = srv.count()
        assert n_direct == 12
        sent = sorted(json.dumps(r.body, sort_keys=True) for r in srv.snapshot())

        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "planned.sqlite"))
        planned: list[str] = []
        for r in (1, 2, 3):
            plan = tmp_path / f"plan{r}.jsonl"
            res = invoke("--plan-only", plan, *args, "--out", tmp_path / "planned")
            text = " ".join(res.output.split())
            assert srv.count() == n_direct + 4 * (r - 1)  # planning calls nothing
            assert f"ranking round {r} (comparisons {4 * r - 3}-{4 * r})" in text
            assert f"round {r + 1} depends on their answers" in text
            # and how to plan more per round (a rank tester ran 188 cycles for budget 1500)
            assert "(a round is --refit-every 4 comparisons: a larger value plans more" in text
            assert f"planned 4 requests to {plan} ({4 * (r - 1)} already cached)" in text
            assert not (tmp_path / "planned" / "results.json").exists()
            lines = [json.loads(x) for x in plan.read_text().splitlines()]
            assert len(lines) == 4 and "sk-plan-rank-1" not in plan.read_text()
            planned += [json.dumps(x["body"], sort_keys=True) for x in lines]
            execute(plan, tmp_path / f"out{r}.jsonl", srv.url)  # 4 calls: the executor
            invoke("ingest", tmp_path / f"out{r}.jsonl", "--plan", plan)
        assert sorted(planned) == sent  # exactly the requests of the direct run, in 3 rounds

        before = srv.count()
        res = invoke("--plan-only", tmp_path / "plan4.jsonl", *args, "--out",
                     tmp_path / "planned")
        assert "nothing to plan" in res.output
        invoke(*args, "--out", tmp_path / "replayed")
        assert srv.count() == before
        replayed = json.loads((tmp_path / "replayed" / "results.json").read_text())
        assert replayed["calls"]["made"] == 0 and replayed["calls"]["cached"] == 12
        assert stable(replayed) == stable(direct)


def test_rank_eval_plans_its_matrices_and_stops(tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "plan.jsonl"
    res = invoke("--plan-only", plan, "rank-eval", "--oracle", "sim?quality=1&seed=3",
                 "--items", "builtin:controlled?seed=1&n=5&k=2", "--budgets", "6",
                 "--rules", "topk", "--seeds", "2", "--samples", "50", "--out", tmp_path / "o")
    text = " ".join(res.output.split())
    assert "rank-eval verdict matrices: 20 requests planned" in text
    assert len(plan.read_text().splitlines()) == 20
    assert not (tmp_path / "o" / "results.json").exists()


@pytest.mark.parametrize("argv", [
    ["rank", "--judge", "sim?quality=1&length=1&position=0.3", "--items", POOL, "--budget",
     "10", "--samples", "100"],
    ["rank-eval", "--oracle", "sim?quality=1&length=1", "--items",
     "builtin:controlled?n=6&k=2", "--budgets", "4,8", "--rules", "topk,random", "--seeds",
     "2", "--samples", "50"],
], ids=["rank", "rank-eval"])
def test_json_prints_the_summary_alone_on_stdout(argv, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = invoke(*argv, "--json", "--out", tmp_path / "o")
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1, res.stdout
    summary = json.loads(lines[0])
    assert summary == Result.load(tmp_path / "o").summary()
    assert summary["command"] == argv[0] and summary["ok"] is True
    assert "results:" in res.stderr and "results:" not in res.stdout
    if argv[0] == "rank":
        assert len(summary["topk"]) == 3 and "c[length]" in summary["biases"]
    else:
        assert set(summary["recall"]) == {"naive", "bias_aware"}
        assert set(summary["recall"]["naive"]["topk"]) == {"4", "8"}
    assert (tmp_path / "o" / "report.html").is_file()


def test_json_of_a_failed_rank_is_printed_and_exits_3(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    with FakeLLMServer(rule=lambda rec, attempt: "429", retry_after="0") as srv:
        res = invoke("rank", "--judge", f"openai:m?base_url={srv.openai_url}&api_key=k",
                     "--items", POOL, "--budget", "4", "--samples", "50", "--lam", "1",
                     "--json", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 3
    summary = json.loads(res.stdout)
    assert summary["ok"] is False and summary["reason"].startswith("run failed")
    assert "Run failed" in (tmp_path / "o" / "report.html").read_text()
