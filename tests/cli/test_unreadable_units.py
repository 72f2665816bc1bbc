"""The unreadable answers and their total in one unit: distinct answers. `Client.note_verdict`
counts each unreadable answer once however many probes read it, but the calls line, the report
header and the outcome's fallback divided that count by made + cached, which counts every
reading of a shared answer: an audit of `sim?invalid=0.3` said "208 unreadable answers of 1040
(20.0%)" for 208 of its 720 answers (28.9%). The total is now `answers_read` (made + cached -
shared); an older results.json is shown as it counted, never as what it did not count. Real
runs: the simulated judge, and a real OpenAI-compatible server on loopback with a real SQLite
cache."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest
from fakeserver import FakeLLMServer, default_answer
from typer.testing import CliRunner

from judgeaudit.cli.format import calls_text
from judgeaudit.cli.main import app
from judgeaudit.data import PairwiseItem
from judgeaudit.hubj.run import _judge_answers
from judgeaudit.judges import PairwiseJudge
from judgeaudit.llm import Cache, Client, RetryPolicy, make_provider
from judgeaudit.outcome import answers_read, assess, unreadable_share

runner = CliRunner()


def _said(output: str) -> str:
    return " ".join(output.split())


def _page_text(path) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", path.read_text(encoding="utf-8")).split())


def test_an_audit_puts_its_unreadable_answers_over_the_answers_it_read(tmp_path,
                                                                       isolated_cache):
    out = tmp_path / "audit"
    args = ["audit", "--judge", "sim?invalid=0.3", "--data", "builtin:facts", "--out",
            str(out)]
    r = runner.invoke(app, args)
    assert r.exit_code == 3, r.output  # the baseline's unreadable verdicts fail the run
    calls = json.loads((out / "results.json").read_text())["calls"]
    assert calls["shared"] > 0  # probes read the baseline's answers again
    # the distinct answers: what the cache holds, each asked once
    with sqlite3.connect(isolated_cache) as db:
        stored = db.execute("SELECT count(*) FROM calls").fetchone()[0]
    distinct = calls["made"] + calls["cached"] - calls["shared"]
    assert calls["answers_read"] == answers_read(calls) == distinct == stored
    bad = calls["unreadable"]
    assert bad == Cache(isolated_cache).count_invalid()
    line = f"{bad} unreadable answers of {distinct} ({100 * bad / distinct:.1f}%)"
    assert f"; {line}" in _said(r.output)
    assert line in _page_text(out / "report.html")
    readings = calls["made"] + calls["cached"]
    assert f"of {readings}" not in _said(r.output)  # not over the readings (20.0%)
    # the run's gate counts the same answers as the calls line: every distinct answer of
    # the judge (it counted only the baseline's 80, both orders of 40 items, until the
    # gate was aligned: tests/cli/test_audit_gate_counts_all_answers.py)
    run = json.loads((out / "results.json").read_text())["run"]
    assert (run["status"], run["answers"], run["unreadable"]) == ("failed", distinct, bad)

    # again from the cache: every call cached, the same answers and the same line
    again = runner.invoke(app, [*args[:-1], str(tmp_path / "again")])
    calls2 = json.loads((tmp_path / "again" / "results.json").read_text())["calls"]
    assert calls2["made"] == 0 and calls2["answers_read"] == distinct
    assert f"; {line}" in _said(again.output)

    # results.json written before: shown as it counted, the report rebuilt from it alone
    doc = json.loads((out / "results.json").read_text())
    old = {k: v for k, v in calls.items() if k not in ("answers_read", "shared")}
    cases = {
        # before re-reads were told apart: `unreadable` counted each reading too
        "readings": ({**old, "unreadable": 300},
                     "300 unreadable of {r} answers read, each reading counted "
                     f"({100 * 300 / readings:.1f}%)"),
        # shared counted, the total not stated: answers or readings, it does not say
        "either": ({**old, "shared": calls["shared"]},
                   f"{bad} unreadable, of {distinct} answers or of their {{r}} readings "
                   "(the document does not say which it counted)"),
    }
    for name, (c, want) in cases.items():
        folder = tmp_path / name
        folder.mkdir()
        (folder / "results.json").write_text(json.dumps({**doc, "calls": c}))
        rep = runner.invoke(app, ["report", str(folder)])
        assert rep.exit_code == 0, rep.output
        page = _page_text(folder / "report.html")
        assert want.format(r=f"{readings:,}") in page, name  # the page groups thousands
        assert f"; {want.format(r=readings)}" in calls_text({"calls": c}), name
        assert f"unreadable answers of {distinct}" not in page


def test_unreadable_share_says_what_each_document_counted():
    new = {"made": 720, "cached": 320, "shared": 320, "unreadable": 208, "answers_read": 720}
    assert unreadable_share(new) == {"n": 208, "of": 720, "unit": "answers",
                                     "share": 208 / 720}
    # nothing shared: answers and readings are one
    assert unreadable_share({"made": 4, "cached": 8, "shared": 0, "unreadable": 3})["unit"] == (
        "answers")
    # more unreadable than distinct answers: only readings can be (written before answers
    # were counted once), so over the readings
    assert unreadable_share({"made": 720, "cached": 320, "shared": 320, "unreadable": 900}) == {
        "n": 900, "of": 1040, "unit": "readings", "share": 900 / 1040}
    # none, or not counted: nothing said (not "0 unreadable")
    assert unreadable_share({"made": 5, "cached": 0, "shared": 0, "unreadable": 0}) is None
    assert unreadable_share({"made": 5, "cached": 0}) is None
    assert unreadable_share({"made": "x", "unreadable": 3}) is None  # edited by hand
    assert answers_read({"made": 3, "cached": 1}) == 4  # no `shared`: what was read


@pytest.mark.usefixtures("no_keys")
async def test_the_max_failed_fallback_divides_answers_by_answers(tmp_path):
    """A command whose outcome reads its judges' call counts (`assess` without `answers`:
    rank, scoring-bias, the HUB-J commands) over three probes' readings of one judge's
    answers, one item of four unreadable: 2 unreadable answers of 8 (25%) fails --max-failed
    0.2; over made + cached it was 2 of 24 (8.3%), and the run passed. Failed calls are no
    answers, and a request that failed and was answered later is one answer."""
    def answer(prompt: str) -> str:
        return "I cannot tell." if re.search(r"question item 0\b", prompt) else (
            default_answer(prompt))

    def fail_item_9_once(rec, attempt: int) -> str | None:
        return "500" if "question item 9" in rec.prompt_text and attempt == 0 else None

    items = [PairwiseItem(id=f"p{i}", prompt=f"question item {i}", response_1=f"one {i}",
                          response_2=f"two {i}") for i in (0, 1, 2, 3, 9)]
    with FakeLLMServer(answer=answer, rule=fail_item_9_once, logprobs=False) as srv:
        provider = make_provider("openai", "fake", {"base_url": srv.openai_url,
                                                    "api_key": "k", "logprobs": "off"})
        cache = Cache(tmp_path / "c.sqlite")
        client = Client(provider, cache, retry=RetryPolicy(max_retries=0, stop_after=0))
        judge = PairwiseJudge(client)
        for _ in range(3):  # three probes reading the same baseline verdicts
            await judge.judge(items[:4])
        st = client.stats
        assert (st.made, st.cached, st.shared, st.unreadable) == (8, 16, 16, 2)
        run = assess(n_valid=3, n_planned=4, calls=st.as_dict(), max_failed=0.2)
        assert (run["status"], run["answers"], run["unreadable"]) == ("failed", 8, 2)
        assert run["message"].startswith("run failed: 2 of 8 answers could not be read as a "
                                         "verdict (more than --max-failed 0.2")
        assert assess(n_valid=3, n_planned=4, calls=st.as_dict(), max_failed=0.25)[
            "status"] == "ok"  # 25% is not more than 0.25

        # item 9: both orders fail once (no answer), then are answered, then read again
        for _ in range(3):
            await judge.judge(items[4:])
        st = client.stats
        assert (st.failed, st.made, st.shared) == (2, 10, 18)
        with sqlite3.connect(tmp_path / "c.sqlite") as db:
            assert st.answers_read == 10 == db.execute("SELECT count(*) FROM calls").fetchone()[0]
        assert assess(n_valid=4, n_planned=5, calls=st.as_dict(), max_failed=0.2)[
            "answers"] == 10
        # the HUB-J commands' judge answers are counted the same way (a client in two roles
        # once)
        assert _judge_answers([client, client]) == {"answers": 10, "unreadable": 2}
        await client.aclose()
        cache.close()
