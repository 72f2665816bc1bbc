"""discover stops after a G-module step whose failures pass --max-failed, before the next
step is paid for: G_extract failing 10 of 10 was followed by 400 G_score requests before
exit 3. Against a real loopback server (the G-module LLM) counting what it was sent."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.hubj.baselines import BASELINE_SETS

runner = CliRunner()
N_BASE = len({f.name for s in BASELINE_SETS.values() for f in s.values()})
MARKS = {"G_extract": "why an automatic judge disagreed", "G_construct": "candidate bias factors",
         "G_assign": "map an observed feature", "G_crit": "Likert criteria",
         "G_score": "rate how strongly"}
GOOD = {"G_extract": '{"features": [{"name": "longer response", "reason": "more words", '
                     '"definition": "The response has many more words."}]}',
        "G_construct": '{"factors": [{"name": "longer response", "definition": "The response '
                       'has many more words."}]}',
        "G_assign": '{"factor": 1}', "G_crit": json.dumps({str(k): f"level {k}"
                                                          for k in range(1, 6)}),
        "G_score": '{"score": 3}'}


@pytest.fixture(autouse=True)
def _stub(stub_embedder, isolated_cache, monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def module_of(text: str) -> str:
    return next(m for m, mark in MARKS.items() if mark in text)


def answers(garbage: str):
    """The G modules answered well, except `garbage`'s, answered in prose."""
    def answer(text: str) -> str:
        m = module_of(text)
        return "It is rather strong, I would say." if m == garbage else GOOD[m]
    return answer


def _pairs(path, n: int) -> str:
    """n items where the humans prefer the short response, which sim?length=5 never picks
    (n consensus disagreements), and 4 where they prefer the long one."""
    long = " ".join(["word"] * 120)
    rows = [{"id": f"d{i}", "prompt": f"q {i}", "response_1": f"ok {i}",
             "response_2": f"{long} {i}", "label": 1} for i in range(n)]
    rows += [{"id": f"a{i}", "prompt": f"p {i}", "response_1": f"fine {i}",
              "response_2": f"{long} {i}", "label": 2} for i in range(4)]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def _discover(tmp_path, srv, *extra: str):
    llm = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
    return runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm", llm,
                               "--data", _pairs(tmp_path / "p.jsonl", 20), "--iterations",
                               "1", "--limit", "5", "--holdout-limit", "5", *extra,
                               "--json", "--out", str(tmp_path / "o")])


def _sent(srv) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in srv.requests:
        if r.path.endswith("/chat/completions"):
            m = module_of(r.prompt_text)
            out[m] = out.get(m, 0) + 1
    return out


def test_a_failed_g_extract_stops_the_run_before_g_score_is_paid_for(tmp_path):
    with FakeLLMServer(answer=answers("G_extract"), logprobs=False) as srv:
        res = _discover(tmp_path, srv)
        sent = _sent(srv)
    assert res.exit_code == 3, res.output
    # 5 G_extract calls, each re-asked once after its unreadable answer; nothing after it
    # (the old code went on to 2 x 5 held-out items x the baseline factors G_score calls,
    # each re-asked: 400 requests at the tester's 10 x 10)
    assert sent == {"G_extract": 10}, sent
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    stop = doc["stopped_after"]
    assert stop["step"] == "G_extract" and stop["calls"] == 5 and stop["requests"] == 10
    assert stop["failed"] == 5
    score = next(x for x in stop["not_sent"] if x["module"] == "G_score")
    assert score["calls"] == 2 * 5 * N_BASE
    msg = doc["run"]["message"]
    assert "5 of 5 G_extract requests got no usable answer (--max-failed 0.2 allows 1" in msg
    assert "after 5 re-asks (10 requests in all)" in msg, msg
    assert ("so the run stopped after the G_extract step, before paying for the next steps, "
            "which were not sent: G_construct and G_assign (factor discovery, up to 1 "
            "round); G_crit (") in msg, msg
    assert (f"G_score ({2 * 5 * N_BASE} calls, 2 per held-out item and factor: 5 items x "
            f"{N_BASE} baseline factors") in msg, msg
    assert "validation" not in doc and "discover" not in doc
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["exit_code"] == 3 and "stopped after the G_extract step" in summary["reason"]


def test_a_failed_g_crit_stops_the_run_before_g_score(tmp_path):
    with FakeLLMServer(answer=answers("G_crit"), logprobs=False) as srv:
        res = _discover(tmp_path, srv)
        sent = _sent(srv)
    assert res.exit_code == 3, res.output
    assert "G_score" not in sent and sent["G_crit"] == 2, sent  # one factor, re-asked once
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["stopped_after"]["step"] == "G_crit"
    n_factors = 1 + N_BASE
    assert doc["stopped_after"]["not_sent"] == [
        {"module": "G_score", "calls": 2 * 5 * n_factors,
         "what": f"2 per held-out item and factor: 5 items x {n_factors} factors"}]
    assert doc["discover"]["factors"][0]["name"] == "longer response"


def test_a_run_whose_steps_pass_goes_on_to_validation(tmp_path):
    with FakeLLMServer(answer=answers("none"), logprobs=False) as srv:
        res = _discover(tmp_path, srv)
        sent = _sent(srv)
    assert res.exit_code == 0, res.output
    assert sent["G_score"] == 2 * 5 * (1 + N_BASE), sent
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert "stopped_after" not in doc and doc["validation"]["n_items"] == 5
