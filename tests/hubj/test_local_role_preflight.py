"""A HUB-J command with a role the embedded judge plays (mitigate's --scorer, which defaults to
local; discover's --llm; quantify's --generator) stops before any call when the [local]
extra is missing and the cache holds no answer of that model: on an installed wheel without
the extra, `mitigate --recorded pandalm --judges openai:... --limit 60` sent its judge's 114
paid requests, then stopped at the scorer's first call ("the local judge needs the [local]
extra", exit 2). The README says a missing [local] "stops the run before anything is sent".

The judges are a real loopback OpenAI-compatible server (`fakeserver`) that counts the
requests it gets. The missing extra is simulated by replacing
`judgeaudit.llm.local_model.missing_modules` (what the local provider's check asks) with one
that finds none of the modules the backend needs, as on an install without [local]: the
test venv has the real extra installed, and uninstalling it would break the other helpers'
runs. No model is loaded: every local call here is refused or answered from the cache.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx
import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli import plan_cmd
from judgeaudit.cli.main import app
from judgeaudit.llm import local_model as lm

plan_cmd.register(app)  # (idempotent; `ingest` fills the cache in the cached case)
runner = CliRunner()
WANTED = "the local judge needs the [local] extra: pip install 'judgeaudit[local]'"


@pytest.fixture
def no_extra(monkeypatch):
    """The [local] extra missing: every module the local backend needs is not found."""
    monkeypatch.setattr(lm, "missing_modules",
                        lambda backend, source: lm.required_modules(backend, source))


def _pairs(path: Path, n: int = 40) -> str:
    long = " ".join(["word"] * 60)
    rows = [{"id": f"i{i}", "prompt": f"q {i}", "response_1": f"ok {i}" + " word" * (i % 7),
             "response_2": f"{long} {i}" + " more" * (i % 5), "label": 1 + (i % 3 == 0)}
            for i in range(n)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def _answer(prompt: str) -> str:
    """A judge that picks by the prompt's length, and a G_score answer (after its prefill
    '{"score": ') that grows with the response's length."""
    if "How strongly does the response show the property" in prompt:
        m = re.search(r"<response>\n(.*?)\n</response>", prompt, re.S)
        words = len((m.group(1) if m else "").split())
        return f"{min(5, 1 + words // 15)}}}"
    return "A" if len(prompt) % 2 else "B"


def _judge(srv: FakeLLMServer) -> str:
    return f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off&price_in=1&price_out=1"


def _invoke(*args: object):
    return runner.invoke(app, [str(a) for a in args])


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_mitigate_stops_before_its_judges_when_the_default_scorer_cannot_run(
        tmp_path, isolated_cache, no_extra):
    data = _pairs(tmp_path / "p.jsonl")
    with FakeLLMServer(answer=_answer) as srv:
        res = _invoke("mitigate", "--no-cache", "--judges", _judge(srv), "--data", data,
                      "--factor", "length", "--out", tmp_path / "out")
        assert srv.count() == 0  # not one paid judge request
    out = _flat(res.output)
    assert res.exit_code == 2, res.output
    assert WANTED in out, out
    assert "--scorer defaults to local; pass --scorer SPEC to use another model" in out, out
    assert "Traceback" not in out


def test_mitigate_names_a_given_local_scorer(tmp_path, isolated_cache, no_extra):
    data = _pairs(tmp_path / "p.jsonl")
    with FakeLLMServer(answer=_answer) as srv:
        res = _invoke("mitigate", "--judges", _judge(srv), "--data", data, "--factor",
                      "length", "--scorer", "local:qwen-0.5b", "--out", tmp_path / "out")
        assert srv.count() == 0
    assert res.exit_code == 2, res.output
    assert "--scorer is local:qwen-0.5b; pass another --scorer SPEC" in _flat(res.output)


def test_mitigate_apply_stops_before_its_judge(tmp_path, isolated_cache, no_extra):
    """--apply with a fit scored by local: the judge's verdicts were asked first."""
    data = _pairs(tmp_path / "p.jsonl")
    with FakeLLMServer(answer=_answer) as srv:
        judge = _judge(srv)
        fit = tmp_path / "fit"
        res = _invoke("mitigate", "--judges", judge, "--data", data, "--factor", "length",
                      "--scorer", "simhubj?score_from=length", "--out", fit)
        assert res.exit_code == 0, res.output
        # the same fit as if scored by the local model (phi's scale is the scorer's)
        doc = json.loads((fit / "results.json").read_text())
        doc["scorer"] = "local"
        (fit / "results.json").write_text(json.dumps(doc))
        before = srv.count()
        res = _invoke("mitigate", "--no-cache", "--judges", judge, "--data", data, "--apply",
                      fit, "--out", tmp_path / "applied")
        assert srv.count() == before
    assert res.exit_code == 2, res.output
    assert WANTED in _flat(res.output)


def test_quantify_stops_before_its_judges_when_the_generator_cannot_run(
        shared_data, tmp_path, isolated_cache, no_extra):
    with FakeLLMServer(answer=_answer) as srv:
        res = _invoke("quantify", "--no-cache", "--judges", _judge(srv), "--generator",
                      "local", "--data", f"pandalm:{shared_data / 'pandalm_testset'}",
                      "--factors", "verbosity", "--pool", "12", "--limit", "6",
                      "--out", tmp_path / "out")
        assert srv.count() == 0
    assert res.exit_code == 2, res.output
    assert "--generator is local; pass another --generator SPEC" in _flat(res.output)


def test_discover_stops_before_its_judges_when_the_default_llm_cannot_run(
        shared_data, tmp_path, isolated_cache, no_extra, stub_embedder):
    with FakeLLMServer(answer=_answer) as srv:
        res = _invoke("discover", "--no-cache", "--judges", _judge(srv), "--data",
                      f"pandalm:{shared_data / 'pandalm_testset'}", "--limit", "10",
                      "--out", tmp_path / "out")
        assert srv.count() == 0
    assert res.exit_code == 2, res.output
    assert "--llm defaults to local; pass --llm SPEC to use another model" in \
        _flat(res.output)


def _execute(plan: Path, out: Path, base: str) -> int:
    """Answer every plan line through the server at `base` (as `vllm run-batch` would)."""
    n = 0
    with httpx.Client(timeout=30) as http, open(plan) as f, open(out, "w") as w:
        for i, raw in enumerate(f):
            line = json.loads(raw)
            r = http.post(base + line["url"], json=line["body"],
                          headers={"Authorization": "Bearer EMPTY"})
            w.write(json.dumps({"id": f"b-{i}", "custom_id": line["custom_id"],
                                "response": {"status_code": r.status_code,
                                             "request_id": f"r{i}", "body": r.json()},
                                "error": None}) + "\n")
            n += 1
    return n


def test_a_cache_holding_the_local_scorers_answers_still_runs(tmp_path, isolated_cache,
                                                              no_extra):
    """The scorer's answers planned, answered elsewhere and ingested (the way to use the
    embedded model's answers without it): the run replays them, no [local] needed."""
    data = _pairs(tmp_path / "p.jsonl")
    with FakeLLMServer(answer=_answer) as srv:
        args = ["mitigate", "--judges", _judge(srv), "--data", data, "--factor", "length"]
        for round_ in (1, 2):  # the judges' requests, then the scorer's on what they judged
            plan = tmp_path / f"plan{round_}.jsonl"
            res = _invoke("--plan-only", plan, *args, "--out", tmp_path / "planned")
            assert res.exit_code == 0, res.output
            answers = tmp_path / f"answers{round_}.jsonl"
            assert _execute(plan, answers, srv.url) > 0
            res = _invoke("ingest", answers, "--plan", plan)
            assert res.exit_code == 0, res.output
        before = srv.count()
        res = _invoke(*args, "--out", tmp_path / "out")
        assert srv.count() == before  # every answer from the cache
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["scorer"] == "local" and doc["calls"]["made"] == 0
    assert doc["calls"]["cached"] > 0


def test_scoring_bias_stops_before_the_generator_when_the_reviewer_cannot_run(
        shared_data, tmp_path, isolated_cache, no_extra):
    """scoring-bias --generate-references: the reviewer is asked after the generator."""
    with FakeLLMServer(answer=_answer, logprobs=False) as srv:
        res = _invoke("scoring-bias", "--judge", _judge(srv), "--generator", _judge(srv),
                      "--reviewer", "local", "--data",
                      f"prometheus:{shared_data / 'prometheus_eval'}?set=mt_bench",
                      "--limit", "8", "--repeats", "1", "--perturbations", "ref_1,ref_4",
                      "--generate-references", "--no-cache", "--out", tmp_path / "out")
        assert srv.count() == 0
    assert res.exit_code == 2, res.output
    assert "--reviewer is local; pass another --reviewer SPEC" in _flat(res.output)


def test_audit_stops_before_the_judge_when_a_panel_judge_cannot_run(
        tmp_path, isolated_cache, no_extra):
    with FakeLLMServer(answer=_answer) as srv:
        res = _invoke("audit", "--judge", _judge(srv), "--panel", "local", "--data",
                      "builtin:facts", "--n", "10", "--no-cache", "--out", tmp_path / "out")
        assert srv.count() == 0
    assert res.exit_code == 2, res.output
    assert "--panel is local; pass another --panel SPEC" in _flat(res.output)
