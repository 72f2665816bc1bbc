"""rank's terminal says the too-long refusals apart from unreadable answers ("5 invalid"
read as garbage answers), and --plan-only's stop message is not cut mid-word."""

from __future__ import annotations

import json

from fakeserver import FakeLLMServer

from tests.cli.test_plan_ingest import invoke
from tests.cli.test_rank_plan_too_long3 import _pool


def test_the_terminal_says_too_long_apart_from_unreadable(tmp_path, monkeypatch, no_keys):
    pool = tmp_path / "pool.jsonl"
    _pool(pool)
    with FakeLLMServer(rule=lambda req, a: "too_long" if "LONGITEM" in req.prompt_text
                       else None, answer="A") as srv:
        res = invoke("rank", "--judge", f"openai:fake?base_url={srv.openai_url}&api_key=k"
                     "&logprobs=off", "--items", f"jsonl:{pool}", "--k", "2", "--budget", "20",
                     "--samples", "100", "--covariates", "none", "--no-cache", "--out",
                     tmp_path / "o")
    text = " ".join(res.output.split())
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    n = doc["too_long"]["n_calls"]
    assert n >= 2
    assert (f"20 comparisons ({n} too long for the judge, 0 unreadable: left out of the fit"
            in text)
    assert "invalid: left out" not in text


def test_the_plan_only_stop_message_is_whole(tmp_path, monkeypatch, no_keys):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    pool = tmp_path / "pool.jsonl"
    _pool(pool)
    with FakeLLMServer(answer="A") as srv:
        res = invoke("--plan-only", tmp_path / "p.jsonl", "rank", "--judge",
                     f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off",
                     "--items", f"jsonl:{pool}", "--k", "2", "--budget", "20", "--rule",
                     "topk", "--samples", "100", "--covariates", "none", "--out",
                     tmp_path / "o")
    text = " ".join(res.output.split())
    # cut at 200 characters it read "... plans more per round, so fe)"
    assert ("a larger value plans more per round, so fewer plan-ingest cycles, at some cost in "
            "how closely the picks follow the verdicts)); that is expected") in text


def test_first_line_cuts_only_a_very_long_line_at_a_word():
    from judgeaudit.cli.plan_cmd import first_line

    assert first_line("one two\nthree") == "one two"
    cut = first_line("word " * 200, limit=52)
    assert cut.endswith("word...") and len(cut) <= 55
