"""The one run-outcome rule for `rank`, `rank-eval`, `scoring-bias`, `discover`, `quantify` and
`mitigate`: a run whose judge calls all fail exits 3, says "run failed" and records it in
results.json (its report shows why instead of verdicts); bad numeric options and an `--out`
that is a file exit 2 before any call.

Judges are a real OpenAI-compatible server on loopback (tests/llm/fakeserver.py) answering 429
with `Retry-After: 0`, so an unreachable judge fails in milliseconds. HUB-J commands run on
the PandaLM test set from ../shared/data (skipped when absent)."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()
POOL = "builtin:controlled?seed=1&n=8&k=3"


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def always_429(rec, attempt):
    return "429"


def spec_of(srv) -> str:
    return f"openai:m?base_url={srv.openai_url}&api_key=k"


def pandalm(shared_data) -> str:
    return f"pandalm:{shared_data / 'pandalm_testset'}"


class StubEmbedder:
    """Stands in for MiniLM (slow to load): with every G-module call failing there are no
    features to embed."""

    name = "stub"

    def encode(self, texts):
        return np.zeros((len(texts), 4))


def _results(out) -> dict:
    return json.loads((out / "results.json").read_text())


def _assert_failed_run(res, out, report: bool = True) -> dict:
    assert res.exit_code == 3, res.output
    assert "run failed" in res.output
    doc = _results(out)
    assert doc["run"]["status"] == "failed"
    assert doc["run"]["message"].startswith("run failed:")
    assert doc["calls"]["failed"] > 0 and doc["run"]["calls_failed"] == doc["calls"]["failed"]
    if report:
        html = (out / "report.html").read_text()
        assert "Run failed" in html and "run failed:" in html
    return doc


# ---- every call failing: exit 3 ---------------------------------------------------------------

def test_rank_with_every_call_failing_exits_3(tmp_path):
    out = tmp_path / "rank"
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        res = runner.invoke(app, ["rank", "--judge", spec_of(srv), "--items", POOL,
                                  "--budget", "10", "--samples", "100", "--lam", "1",
                                  "--out", str(out)])
    doc = _assert_failed_run(res, out, report=False)  # rank writes no report
    assert doc["run"]["n_valid"] == 0 and doc["run"]["n_planned"] == 10
    assert "0 of 10 comparisons" in doc["run"]["message"]
    assert "ranking (" not in res.output  # no ranking shown for a failed run


def test_rank_eval_with_a_failing_oracle_exits_3_without_evaluating(tmp_path):
    out = tmp_path / "re"
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        res = runner.invoke(app, ["rank-eval", "--oracle", spec_of(srv), "--items",
                                  "builtin:controlled?seed=1&n=5&k=2", "--budgets", "6",
                                  "--rules", "topk", "--seeds", "2", "--samples", "50",
                                  "--out", str(out)])
    doc = _assert_failed_run(res, out, report=False)
    assert doc["run"]["n_planned"] == 20 and "recall" not in doc
    assert "api_key=k" not in json.dumps(doc)


def test_scoring_bias_with_every_call_failing_exits_3(tmp_path):
    out = tmp_path / "sc"
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        res = runner.invoke(app, ["scoring-bias", "--judge", spec_of(srv), "--data",
                                  "builtin:graded", "--limit", "3", "--perturbations",
                                  "order_desc", "--repeats", "1", "--out", str(out)])
    doc = _assert_failed_run(res, out)
    assert doc["run"]["n_valid"] == 0 and doc["run"]["n_planned"] == 6
    assert "recommended template" not in res.output


def test_quantify_with_every_judge_call_failing_exits_3(shared_data, tmp_path):
    out = tmp_path / "q"
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        res = runner.invoke(app, ["quantify", "--judges", spec_of(srv), "--data",
                                  pandalm(shared_data), "--factors", "verbosity", "--pool", "6",
                                  "--limit", "2", "--levels", "1,5", "--out", str(out)])
    doc = _assert_failed_run(res, out)
    # no agreement item because the judge never answered: a failed run, not bad input
    assert doc["run"]["n_valid"] == 0 and doc["per_judge"] == {}


def test_mitigate_with_a_failing_scorer_or_judge_exits_3(shared_data, tmp_path):
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        for name, judges, scorer in (("scorer", "sim?seed=1", spec_of(srv)),
                                     ("judge", spec_of(srv), "simhubj?score_from=length")):
            out = tmp_path / name
            res = runner.invoke(app, ["mitigate", "--judges", judges, "--scorer", scorer,
                                      "--data", pandalm(shared_data), "--factor", "length",
                                      "--limit", "8", "--out", str(out)])
            doc = _assert_failed_run(res, out)
            assert doc["run"]["n_valid"] == 0 and "per_judge" not in doc
            # the live judge's calls count beside the scorer's; a judge that gave no verdict
            # leaves the scorer unasked (its 16 calls would buy nothing)
            assert doc["run"]["calls_asked"] == (32 if name == "scorer" else 16)


def test_discover_with_every_g_module_call_failing_exits_3(shared_data, tmp_path, monkeypatch):
    monkeypatch.setattr("judgeaudit.hubj.embed.MiniLMEmbedder", StubEmbedder)
    out = tmp_path / "d"
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        res = runner.invoke(app, ["discover", "--recorded", "pandalm", "--llm", spec_of(srv),
                                  "--data", pandalm(shared_data), "--limit", "3",
                                  "--holdout-limit", "2", "--iterations", "1",
                                  "--out", str(out)])
    doc = _assert_failed_run(res, out)
    assert doc["run"]["n_valid"] == 0 and doc["run"]["n_planned"] > 0


# ---- partly failing: --max-failed decides -----------------------------------------------------

def test_partly_failing_rank_fails_over_max_failed_and_passes_under_it(tmp_path):
    def half_fail(rec, attempt):  # about half of the distinct comparisons never get an answer
        return "429" if hashlib.sha256(rec.prompt_text.encode()).digest()[0] % 2 else None

    with FakeLLMServer(rule=half_fail, retry_after="0", logprobs=False) as srv:
        # a fixed prior: empirical Bayes on half-missing verdicts is slow to settle
        args = ["rank", "--judge", spec_of(srv), "--items", POOL, "--budget", "16",
                "--samples", "100", "--lam", "1"]
        res = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
        assert res.exit_code == 3, res.output
        run = _results(tmp_path / "a")["run"]
        assert run["status"] == "failed" and 0.2 < run["failed_share"] < 0.9
        assert 0 < run["n_valid"] < 16 and "calls failed" in run["message"]
        res = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--max-failed", "0.9"])
        assert res.exit_code == 0, res.output
        assert _results(tmp_path / "b")["run"]["status"] == "ok"
        res = runner.invoke(app, [*args, "--out", str(tmp_path / "c"), "--max-failed", "0.9",
                                  "--min-valid", "16"])
        assert res.exit_code == 3 and "of 16 comparisons" in res.output, res.output


# ---- checked before any call: exit 2 ----------------------------------------------------------

BAD_OPTIONS = [
    (["rank", "--items", POOL, "--budget", "0"], "--budget"),
    (["rank", "--items", POOL, "--k", "0"], "--k"),
    (["rank", "--items", POOL, "--samples", "0"], "--samples"),
    (["rank", "--items", POOL, "--refit-every", "0"], "--refit-every"),
    (["rank", "--items", POOL, "--tau", "0"], "--tau"),
    (["rank", "--items", POOL, "--timeout", "0"], "--timeout"),
    (["rank", "--items", POOL, "--concurrency", "0"], "--concurrency"),
    (["rank", "--items", POOL, "--min-valid", "0"], "--min-valid"),
    (["rank", "--items", POOL, "--max-failed", "1.5"], "--max-failed"),
    (["rank-eval", "--samples", "-1"], "--samples"),
    (["rank-eval", "--max-failed", "-0.1"], "--max-failed"),
    (["scoring-bias", "--limit", "0"], "--limit"),
    (["scoring-bias", "--repeats", "0"], "--repeats"),
    (["scoring-bias", "--ref-attempts", "0"], "--ref-attempts"),
    (["scoring-bias", "--ref-tolerance", "5"], "--ref-tolerance"),
    (["scoring-bias", "--timeout", "-1"], "--timeout"),
    (["scoring-bias", "--min-valid", "0"], "--min-valid"),
    (["quantify", "--pool", "0"], "--pool"),
    (["quantify", "--limit", "0"], "--limit"),
    (["quantify", "--n-cal", "0"], "--n-cal"),
    (["quantify", "--min-agreement", "1.5"], "--min-agreement"),
    (["quantify", "--concurrency", "0"], "--concurrency"),
    (["quantify", "--max-failed", "2"], "--max-failed"),
    (["discover", "--holdout", "1"], "--holdout"),
    (["discover", "--clusters", "0"], "--clusters"),
    (["discover", "--tau", "2"], "--tau"),
    (["discover", "--limit", "0"], "--limit"),
    (["mitigate", "--limit", "0"], "--limit"),
    (["mitigate", "--min-agreement", "-0.5"], "--min-agreement"),
    (["mitigate", "--min-valid", "0"], "--min-valid"),
]
JUDGE_FLAG = {"rank": "--judge", "rank-eval": "--oracle", "scoring-bias": "--judge",
              "quantify": "--judges", "discover": "--llm", "mitigate": "--scorer"}


@pytest.mark.parametrize(("args", "needle"), BAD_OPTIONS)
def test_out_of_range_options_exit_2_before_any_call(args, needle, tmp_path):
    with FakeLLMServer() as srv:
        res = runner.invoke(app, [*args, JUDGE_FLAG[args[0]], spec_of(srv),
                                  "--out", str(tmp_path / "o")])
        assert srv.count() == 0
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert not (tmp_path / "o").exists()


def test_out_that_is_a_file_exits_2_before_any_call(tmp_path, shared_data):
    target = tmp_path / "taken"
    target.write_text("not a directory")
    data = pandalm(shared_data)
    with FakeLLMServer() as srv:
        s = spec_of(srv)
        for args in (["rank", "--judge", s, "--items", POOL, "--budget", "4"],
                     ["rank-eval", "--oracle", s, "--items", POOL, "--budgets", "4"],
                     ["scoring-bias", "--judge", s, "--limit", "2"],
                     ["quantify", "--judges", s, "--data", data, "--pool", "4"],
                     ["discover", "--judges", s, "--llm", s, "--data", data],
                     ["mitigate", "--judges", s, "--scorer", s, "--data", data]):
            res = runner.invoke(app, [*args, "--out", str(target)])
            assert res.exit_code == 2, (args[0], res.output)
            assert "not a directory" in res.output, args[0]
        assert srv.count() == 0
    assert target.read_text() == "not a directory"


def test_judge_key_is_masked_when_the_spec_is_refused(tmp_path):
    canary = "sk-canary-31d"
    spec = f"openai:m?base_url=http://127.0.0.1:9/v1&api_key={canary}&logprobs=bad"
    for args in (["rank", "--judge", spec, "--items", POOL, "--budget", "4"],
                 ["scoring-bias", "--judge", spec, "--limit", "2"]):
        res = runner.invoke(app, [*args, "--out", str(tmp_path / args[0])])
        assert res.exit_code == 2, res.output
        assert canary not in res.output and "logprobs" in res.output


# ---- quantify records the annotator agreement it filtered with -------------------------------

def test_quantify_min_agreement_reaches_the_results(shared_data, tmp_path):
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data", pandalm(shared_data),
                              "--factors", "verbosity", "--levels", "1,3", "--pool", "40",
                              "--limit", "6", "--min-agreement", "0.7",
                              "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = _results(tmp_path)
    assert doc["splits"]["min_annotator_agreement"] == 0.7
    assert doc["run"]["status"] == "ok" and doc["run"]["n_valid"] > 0


@pytest.mark.parametrize("command", ["audit", "evaluate"])
def test_a_fatal_call_leaves_this_runs_failure_in_the_folder_not_a_stale_result(tmp_path,
                                                                              command):
    """A run that a fatal call ends (here a revoked key: 401) exits 3 and wrote nothing, so a
    results.json from an earlier good run into the same --out stayed there, for a script or
    a dashboard to read as this run's. Its results.json (and report.html) now say it failed."""
    out = tmp_path / "out"
    args = [command, "--data", "builtin:facts", "--out", str(out)]
    args += ["--n", "10"] if command == "audit" else ["--limit", "10"]
    with FakeLLMServer() as srv:
        good = runner.invoke(app, [*args, "--judge", spec_of(srv)])
    assert good.exit_code == 0, good.output
    assert json.loads((out / "results.json").read_text())["run"]["status"] == "ok"
    with FakeLLMServer(api_keys={"the-right-key"}) as srv:
        bad = runner.invoke(app, [*args, "--judge", spec_of(srv), "--no-cache", "--json"])
    assert bad.exit_code == 3, bad.output
    summary = json.loads(bad.stdout)  # --json: the failure's summary, as any failed run's
    assert summary["ok"] is False and bad.stdout.count("\n") == 1
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["status"] == "failed" and "authentication failed" in doc["error"]
    assert doc["command"] == command and doc["calls"]["made"] == 0
    if command == "audit":
        assert "authentication failed" in (out / "report.html").read_text()
