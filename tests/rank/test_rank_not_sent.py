"""A ranking the client stopped sending (the spend cap, a server that stopped answering) says
how many comparisons were made and how many picks were never sent, and why: a paying
tester's `rank --budget 100 --max-cost 20` printed "100 comparisons (49 invalid: left out
of the fit ...)" and the report's headline "100 comparisons" where the server got 51
requests. "Invalid" is kept for comparisons made that gave no verdict (an unreadable
answer). The fit is the one it was (the unsent picks were never in it), and the same command
with the cap raised pays only for the picks not sent. Through a real loopback OpenAI-shaped
server (`fakeserver`) and a real SQLite cache."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.rank_cmd import register

BAD = "ZZQ"  # an item whose comparisons the server answers unreadably
BUDGET = 40
CAP = 15.0  # USD: about 15 calls of the 40 at these prices


@pytest.fixture(scope="module")
def app() -> typer.Typer:
    a = typer.Typer()
    register(a)
    return a


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch):
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)


def _pool(path: Path, n: int = 10) -> str:
    """n items on one prompt, quality rising with the index; item 3 carries BAD."""
    path.write_text("\n".join(json.dumps(
        {"id": f"it-{i:02d}", "prompt": "Which answer is better?",
         "response": ("ZZQ " if i == 3 else "") + "word " * (3 + i % 4) + f"answer {i}",
         "quality": float(i)}) for i in range(n)) + "\n")
    return f"jsonl:{path}"


def _answer(prompt: str) -> str:
    return "maybe" if BAD in prompt else "A"


def _spec(srv: FakeLLMServer) -> str:
    return (f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
            "&price_in=10000&price_out=10")


def _rank(app, tmp_path: Path, items: str, spec: str, cap: float, out: str):
    return CliRunner().invoke(app, [
        "rank", "--judge", spec, "--items", items, "--budget", str(BUDGET), "--k", "3",
        "--samples", "200", "--covariates", "none", "--max-failed", "0.95",
        "--max-cost", str(cap), "--cache", str(tmp_path / "cache.sqlite"),
        "--out", str(tmp_path / out), "--json"])


def _line(output: str) -> str:
    return next(x for x in output.splitlines() if re.match(r"^\d+ comparisons \(", x))


def test_a_spend_cap_stop_counts_the_picks_not_sent_apart_from_invalid_verdicts(
        app, tmp_path):
    items = _pool(tmp_path / "pool.jsonl")
    with FakeLLMServer(answer=_answer) as srv:
        r = _rank(app, tmp_path, items, _spec(srv), CAP, "capped")
        sent = srv.snapshot()
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "capped" / "results.json").read_text())
    made = len(sent)
    assert 0 < made < BUDGET, made  # the cap stopped the ranking part-way
    unread = sum(BAD in x.prompt_text for x in sent)
    assert unread > 0  # some answers came back unreadable: those, and only those, invalid
    # results.json: the comparisons made are what the server got
    assert doc["n_comparisons"] == made
    assert doc["n_not_sent"] == BUDGET - made
    assert doc["n_invalid"] == unread
    assert doc["not_sent_why"].startswith("the spend cap is reached")
    comps = doc["comparisons"]
    # the picks made: the loop stops picking once the client refused one unsent (the rest
    # of the budget is never picked: counted in n_not_sent, no comparison of its own)
    refused = sum(c["not_sent"] for c in comps)
    assert 0 < refused <= 8 and len(comps) == made + refused  # --refit-every 8: one round
    assert not any(c["invalid"] for c in comps if c["not_sent"])
    assert doc["n_fitted"] == made - unread  # the fit: the verdicts of the calls made
    assert doc["calls"]["not_sent"] == BUDGET - made
    # the terminal line
    line = _line(r.stderr)
    assert line.startswith(f"{made} comparisons ({unread} invalid: left out of the fit"), line
    assert (f"{BUDGET - made} of the budget's {BUDGET} not sent (the spend cap is reached"
            in line), line
    warn = next(w for w in doc["warnings"] if "were not sent" in w)
    assert f"{BUDGET - made} of the budget's {BUDGET} comparisons were not sent, so the " \
           f"judge saw {made}: the spend cap is reached" in warn
    # --json
    summary = json.loads(r.stdout)
    assert summary["n_comparisons"] == made and summary["n_invalid"] == unread
    assert summary["calls"]["not_sent"] == BUDGET - made
    assert summary["calls"]["not_sent_why"].startswith("the spend cap is reached")
    assert summary["n_not_sent"] == BUDGET - made
    assert summary["not_sent_why"].startswith("the spend cap is reached")
    assert warn in summary["notes"]
    # the report's headline and its comparisons card
    html = (tmp_path / "capped" / "report.html").read_text()
    head = re.search(r'<p class="sub">(.*?)</p>', html, re.S).group(1)
    assert (f"under a budget of {BUDGET} comparisons ({made} made; {BUDGET - made} not "
            "sent: the spend cap is reached)") in head, head
    assert (f'id="not-sent">{BUDGET - made} of the budget\'s {BUDGET} not sent (the spend '
            "cap is reached)") in html


def test_the_same_command_with_the_cap_raised_pays_only_for_the_picks_not_sent(app, tmp_path):
    items = _pool(tmp_path / "pool.jsonl")
    with FakeLLMServer(answer=_answer) as srv:
        spec = _spec(srv)
        r1 = _rank(app, tmp_path, items, spec, CAP, "capped")
        first = srv.count()
        r2 = _rank(app, tmp_path, items, spec, 100.0, "resumed")
        second = srv.count() - first
    assert r1.exit_code == 0 and r2.exit_code == 0, r1.output + r2.output
    capped = json.loads((tmp_path / "capped" / "results.json").read_text())
    resumed = json.loads((tmp_path / "resumed" / "results.json").read_text())
    assert capped["n_not_sent"] > 0
    assert second == capped["n_not_sent"]  # the server got only the picks not sent
    assert resumed["calls"]["made"] == capped["n_not_sent"]
    assert resumed["calls"]["cached"] == capped["n_comparisons"]
    assert resumed["n_comparisons"] == BUDGET and resumed["n_not_sent"] == 0
    # the same picks, in the same order, up to where the cap stopped sending
    made = [(c["first"], c["second"]) for c in capped["comparisons"] if not c["not_sent"]]
    assert made == [(c["first"], c["second"]) for c in resumed["comparisons"]][:len(made)]
    assert "not sent" not in _line(r2.stderr)


def _stops_answering(after: int):
    """A server that answers the first `after` requests, then 500s every one."""
    seen = [0]

    def rule(req, attempt):
        seen[0] += 1
        return "500" if seen[0] > after else None

    return rule


def test_a_server_that_stopped_answering_leaves_picks_not_sent_not_invalid(tmp_path):
    """The breaker (`RetryPolicy.stop_after`): after calls in a row gave up, the client sends
    no more; the calls it sent and that failed are invalid (no verdict came back), the rest
    were never sent."""
    recs = [{"id": f"it-{i:02d}", "prompt": "q", "response": "word " * (3 + i % 4) + str(i),
             "quality": float(i)} for i in range(10)]
    with FakeLLMServer(rule=_stops_answering(12), answer="A") as srv:
        res = judgeaudit.rank(f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off",
                              recs, k=3, budget=BUDGET, samples=200, max_failed=0.95,
                              covariates="none", cache=False, retry=0, lam=1.0)
        got = srv.count()
    calls = res["calls"]
    assert calls["not_sent"] > 0, calls  # the breaker tripped
    assert res["n_comparisons"] == got  # every request the server got is a comparison made
    assert res["n_not_sent"] == BUDGET - got == calls["not_sent"]
    assert res["n_invalid"] == got - 12  # sent and failed: no verdict came back
    assert res["n_fitted"] == 12
    assert not res["not_sent_why"].startswith("the spend cap")
    assert any("were not sent" in w for w in res["warnings"])


def test_rank_eval_counts_the_pairs_not_sent_apart_from_invalid_verdicts(app, tmp_path):
    items = _pool(tmp_path / "pool.jsonl", n=6)  # 30 ordered pairs
    with FakeLLMServer(answer=_answer) as srv:
        r = CliRunner().invoke(app, [
            "rank-eval", "--oracle", _spec(srv), "--items", items, "--k", "2",
            "--rules", "random", "--seeds", "1", "--budgets", "6", "--samples", "100",
            "--covariates", "none", "--max-failed", "0.95", "--max-cost", "12",
            "--cache", str(tmp_path / "cache.sqlite"), "--out", str(tmp_path / "ev")])
        sent = srv.snapshot()
    doc = json.loads((tmp_path / "ev" / "results.json").read_text())
    made = len(sent)
    assert 0 < made < 30, made
    unread = sum(BAD in x.prompt_text for x in sent)
    assert unread > 0 and r.exit_code == 0, r.output
    assert doc["n_not_sent"] == 30 - made
    assert doc["n_invalid"] == unread
    assert doc["not_sent_why"].startswith("the spend cap is reached")
    m = doc["matrices"][0]
    assert (m["n_comparisons"], m["n_not_sent"], m["n_invalid"]) == (made, 30 - made, unread)
    assert any(f"{30 - made} of the 30 ordered pairs were not sent: the spend cap" in w
               for w in doc["warnings"])
    assert f"{unread} invalid verdicts (left out of every fit); {30 - made} pairs not " \
           "sent (the spend cap is reached); calls:" in r.stderr, r.stderr
