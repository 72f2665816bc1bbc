"""`--max-cost USD` on every command that calls a judge (and `max_cost=` in the Python API and
config files): no call is sent that could take the run's spend at list prices past it, and
the run says so. Before, only an adaptive audit could be capped; a paying user could only
estimate with --plan-only and hope. A real OpenAI-shaped server on loopback whose answers
carry token counts; the price is given in the judge spec."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from fakeserver import FakeLLMServer, write_pairs
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.session import Session

runner = CliRunner()
# 100 USD per million prompt tokens: a judge call of ~43 words costs about $0.0043.
PRICE = "price_in=100&price_out=0"


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch, isolated_cache):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def spec_of(srv) -> str:
    return f"openai:m?base_url={srv.openai_url}&api_key=k&{PRICE}"


def results(out) -> dict:
    return json.loads((out / "results.json").read_text())


def test_evaluate_stops_sending_at_the_cap_and_fails_saying_why(tmp_path):
    write_pairs(tmp_path / "pairs.jsonl", 30)  # 60 calls, about $0.26 uncapped
    out = tmp_path / "ev"
    with FakeLLMServer() as srv:
        res = runner.invoke(app, ["evaluate", "--judge", spec_of(srv), "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--max-cost", "0.05",
                                  "--concurrency", "2", "--out", str(out)])
        sent = srv.count()
    assert res.exit_code == 3, res.output
    doc = results(out)
    calls = doc["calls"]
    per_call = calls["cost_usd"] / calls["made"]
    # Sent while the calls under way could not take the spend past the cap: under it, and
    # short of it by less than what 3 calls hold (2 under way and the one refused; each holds
    # its prompt at characters / 4, under 2 x what the fake server counts).
    assert sent == calls["made"] and calls["cost_usd"] <= 0.05 < calls["cost_usd"] + 6 * per_call
    assert calls["not_sent"] == 60 - sent and calls["failed"] == 60 - sent
    assert "not sent: the spend cap is reached" in doc["run"]["message"]
    assert "max_cost $0.05" in doc["run"]["message"]
    text = " ".join(res.output.split())
    assert "the spend cap is reached" in text and f"({60 - sent} not sent)" in text


def test_a_cap_the_run_stays_under_changes_nothing(tmp_path):
    write_pairs(tmp_path / "pairs.jsonl", 5)
    with FakeLLMServer() as srv:
        args = ["evaluate", "--judge", spec_of(srv), "--data",
                f"jsonl:{tmp_path / 'pairs.jsonl'}"]
        capped = runner.invoke(app, [*args, "--max-cost", "10", "--out", str(tmp_path / "a"),
                                     "--no-cache"])
        free = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--no-cache"])
        assert srv.count() == 20
    assert capped.exit_code == 0 and free.exit_code == 0
    a, b = results(tmp_path / "a"), results(tmp_path / "b")
    assert a["calls"]["not_sent"] == 0 and a["accuracy"] == b["accuracy"]


@pytest.mark.parametrize("command", [["evaluate"], ["audit", "--adaptive"]])
def test_a_judge_whose_price_is_unknown_is_refused_before_any_call(tmp_path, command):
    """Also an adaptive audit: before, its rounds read the spend as $0 and never stopped."""
    remote = "openai:m?base_url=http://10.255.255.1:8000/v1&api_key=k"  # may bill; price?
    res = runner.invoke(app, [*command, "--judge", remote, "--max-cost", "1",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    text = " ".join(res.output.split())
    assert "max_cost cannot cap what its calls cost" in text
    assert "price_in=USD&price_out=USD" in text


def test_rank_reads_the_cap_from_its_config_file(tmp_path):
    cfg = tmp_path / "rank.toml"
    with FakeLLMServer() as srv:
        cfg.write_text(f'judge = "{spec_of(srv)}"\nitems = "builtin:controlled?seed=1&n=12&k=3"'
                       f'\nbudget = 60\nmax_cost = 0.3\nout = "{tmp_path / "rank"}"\n')
        res = runner.invoke(app, ["rank", "--config", str(cfg)])
        sent = srv.count()
    calls = results(tmp_path / "rank")["calls"]
    assert sent == calls["made"] > 0 and calls["cost_usd"] <= 0.3
    assert calls["not_sent"] > 0, res.output


def adaptive_audit(tmp_path, *opts: str, srv: FakeLLMServer | None = None):
    """An adaptive audit of position and verbosity on 30 pairs in rounds of 5 with `opts`
    (its budget): the CLI result, its results document and the calls the server (`srv`, else
    a new one) was sent by it."""
    if srv is None:
        with FakeLLMServer() as new:
            return adaptive_audit(tmp_path, *opts, srv=new)
    write_pairs(tmp_path / "pairs.jsonl", 30)
    out = tmp_path / "ad"
    before = srv.count()
    res = runner.invoke(app, ["audit", "--adaptive", "--judge", spec_of(srv), "--data",
                              f"jsonl:{tmp_path / 'pairs.jsonl'}", "--probes",
                              "position,verbosity", "--round-size", "5", *opts,
                              "--out", str(out)])
    return res, results(out), srv.count() - before


def test_an_adaptive_audit_keeps_to_the_cap_between_rounds(tmp_path):
    """An adaptive audit's rounds keep to the cap themselves: no round starts that would pass
    it by the previous round's cost, so none is cut half-way, no call fails, the run stops by
    max_cost and the spend stays under it."""
    res, doc, _sent = adaptive_audit(tmp_path, "--max-cost", "1.2")
    assert res.exit_code == 0, res.output
    assert doc["adaptive"]["stopped_by"] == "max_cost"
    assert doc["calls"]["not_sent"] == 0 and doc["calls"]["failed"] == 0
    # No round started that would pass the cap by the previous round's cost (before, rounds
    # ran until the cap was spent, so the last one passed it).
    assert doc["adaptive"]["rounds"] >= 2  # a round costs about $0.44 here
    assert doc["calls"]["cost_usd"] <= 1.2


def test_an_adaptive_audit_whose_first_round_costs_more_than_the_cap_stays_under_it(tmp_path):
    """The first round has no earlier round to estimate its cost from; the cap still holds
    it call by call, as in every other command (before, it ran whole: $0.44 against $0.2).
    The calls not sent are counted and the run says the cap stopped it."""
    res, doc, sent = adaptive_audit(tmp_path, "--max-cost", "0.2", "--concurrency", "2")
    calls = doc["calls"]
    assert sent == calls["made"] > 0 and calls["cost_usd"] <= 0.2, res.output
    assert calls["not_sent"] > 0 and "the spend cap is reached" in calls["not_sent_why"]
    assert doc["adaptive"]["stopped_by"] == "max_cost"
    assert {p["adaptive"]["stop_reason"] for p in doc["probes"].values()} <= {
        "budget", "rejected", "cleared"}
    # The cost that runs the cut round whole, from the cost per call sent: 40 calls of about
    # $0.0044 each, so about $0.18 (a call's prompt costs the same here, its answer nothing).
    need = re.search(r"the first round asked for 40 judge calls \(5 items per probe\): a "
                     r"--max-cost of about \$([0-9.]+)", " ".join(doc["run"]["message"].split()))
    assert need and float(need[1]) == pytest.approx(40 * calls["cost_usd"] / sent, abs=0.01)


def test_an_adaptive_audits_max_calls_holds_its_first_round_call_by_call(tmp_path):
    """--max-calls, like --max-cost, held call by call: the first round, which has no earlier
    round to estimate from, sends no more than max_calls calls (before, it ran whole: 40
    calls against 12), the rest are counted as not sent, and the run says why."""
    with FakeLLMServer() as srv:
        res, doc, sent = adaptive_audit(tmp_path, "--max-calls", "12", "--concurrency", "2",
                                        srv=srv)
        calls = doc["calls"]
        assert sent == calls["made"] == 12, res.output
        # The run names the budget that runs the cut round whole: the round's calls are
        # known once it ran (12 sent + 28 not sent). With it the round runs whole, sending
        # only the 28 (the 12 sent are cached).
        assert ("the first round asked for 40 judge calls (5 items per probe): a --max-calls "
                "of at least 40 runs it whole") in " ".join(doc["run"]["message"].split())
        again, doc_again, sent_again = adaptive_audit(tmp_path, "--max-calls", "40", srv=srv)
    assert again.exit_code == 0 and doc_again["calls"]["not_sent"] == 0, again.output
    assert sent_again == 28 and doc_again["calls"]["cached"] == 12
    assert doc_again["adaptive"]["rounds"] == 1
    assert calls["not_sent"] > 0 and "the call cap is reached" in calls["not_sent_why"]
    assert res.exit_code == 3 and "the call cap is reached" in doc["run"]["message"]
    assert doc["adaptive"]["stopped_by"] == "max_calls" and doc["adaptive"]["rounds"] == 1
    assert {p["adaptive"]["stop_reason"] for p in doc["probes"].values()} <= {
        "budget", "rejected", "cleared"}
    # A budget that rounds stay inside is left alone: no call fails, the rounds stop it.
    res, doc, sent = adaptive_audit(tmp_path, "--max-calls", "100")
    assert res.exit_code == 0 and doc["calls"]["not_sent"] == 0, res.output
    assert doc["adaptive"]["stopped_by"] == "max_calls" and sent <= 100


def test_the_python_api_takes_the_cap(tmp_path):
    write_pairs(tmp_path / "pairs.jsonl", 30)
    with FakeLLMServer() as srv:
        res = judgeaudit.evaluate(spec_of(srv), f"jsonl:{tmp_path / 'pairs.jsonl'}",
                                  max_cost=0.05, cache=False, concurrency=1)
        assert not res.ok and "spend cap is reached" in res.reason
        assert srv.count() == res.calls["made"] < 60
        summary = res.summary()["calls"]  # what --json prints: the spend and the reason too
        assert summary["not_sent"] == 60 - srv.count() and summary["cost_usd"] <= 0.05
        assert "spend cap is reached" in summary["not_sent_why"]
        with pytest.raises(ValueError, match="max_cost: expected"):
            judgeaudit.evaluate(spec_of(srv), "builtin:facts", max_cost=-1)
        sess = Session(cache=False)
        with pytest.raises(ValueError, match="max_cost: set these on the Session"):
            asyncio.run(judgeaudit.aevaluate(spec_of(srv), "builtin:facts", max_cost=1,
                                             session=sess))
        assert srv.count() == res.calls["made"]  # the refused runs sent nothing
