"""An answer the judge cannot read is one unreadable answer, however many probes read it.
`Client.note_verdict` counted each reading, and the audit reads its baseline verdicts once per
probe that uses them (`CallStats.shared`): an audit against a server that sent 100 unreadable
answers said "120 unreadable answers", and the watch that stops a judge answering garbage
stopped after 2 answers read 3 times each, saying "the first 4 answers could not be read".
Against a real loopback server and a real SQLite cache."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer, default_answer, write_pairs
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.data import PairwiseItem
from judgeaudit.judges import PairwiseJudge
from judgeaudit.llm import Cache, Client, RetryPolicy, make_provider

pytestmark = pytest.mark.usefixtures("no_key_env")
runner = CliRunner()
GARBAGE = "I cannot tell."


def _garbling(sent: list[str]):
    """Unreadable answers to every fourth item ("question item 0", 4, 8, ...), recorded in
    `sent` as the server sends them; the usual A/B verdict to the others."""
    def answer(prompt: str) -> str:
        m = re.search(r"question item (\d+)\b", prompt)
        if m and int(m.group(1)) % 4 == 0:
            sent.append(prompt)
            return GARBAGE
        return default_answer(prompt)
    return answer


def _audit(srv: FakeLLMServer, data, out, max_failed: str):
    spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
    return runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                               "--probes", "position,verbosity,authority", "--n", "40",
                               "--max-failed", max_failed, "--out", str(out)])


def test_an_audit_counts_each_unreadable_answer_once(tmp_path, isolated_cache):
    data = tmp_path / "pairs.jsonl"
    write_pairs(data, 40)
    sent: list[str] = []
    with FakeLLMServer(answer=_garbling(sent), logprobs=False) as srv:
        res = _audit(srv, data, tmp_path / "a", "0.2")
        garbage, served = len(sent), srv.served()
        # the same audit from the cache: the same answers, nothing sent
        again = _audit(srv, data, tmp_path / "b", "0.3")
        assert srv.served() == served and len(sent) == garbage
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    calls = doc["calls"]
    assert calls["shared"] > 0  # the probes did share answers (the case in question)
    # each unreadable answer the server sent, once (the cache asked each request once)
    assert calls["unreadable"] == garbage == Cache(isolated_cache).count_invalid()
    assert calls["unreadable"] <= calls["made"] + calls["cached"] - calls["shared"]
    assert f"; {garbage} unreadable answers of" in " ".join(res.output.split())
    # the run's outcome counts the same distinct answers as the calls line (it read only the
    # baseline's 80 until tests/cli/test_audit_gate_counts_all_answers.py): a quarter of
    # the items unreadable in every order and rewrite trips --max-failed 0.2 ...
    run = doc["run"]
    read = calls["made"] + calls["cached"] - calls["shared"]
    assert (run["status"], run["answers"], run["unreadable"]) == ("failed", read, garbage)
    assert garbage / read == 0.25
    assert run["message"].startswith(f"run failed: {garbage} of {read} answers could not be "
                                     "read as a verdict (more than --max-failed 0.2")
    # ... and not 0.3; the answers from the cache are counted once too
    assert again.exit_code == 0, again.output
    doc = json.loads((tmp_path / "b" / "results.json").read_text())
    assert doc["calls"]["unreadable"] == garbage and doc["calls"]["made"] == 0
    assert (doc["run"]["status"], doc["run"]["unreadable"]) == ("ok", garbage)


async def test_the_watch_stops_after_k_answers_not_k_readings(tmp_path):
    """stop_after=4: one item's two answers read three times (three probes sharing its
    baseline) are two answers; the judge is stopped once four answers were unreadable."""
    items = [PairwiseItem(id=f"p{i}", prompt=f"question item {i}", response_1=f"one {i}",
                          response_2=f"two {i}") for i in range(3)]
    with FakeLLMServer(answer=GARBAGE, logprobs=False) as srv:
        provider = make_provider("openai", "fake", {"base_url": srv.openai_url,
                                                    "api_key": "k", "logprobs": "off"})
        cache = Cache(tmp_path / "c.sqlite")
        client = Client(provider, cache, retry=RetryPolicy(max_retries=0, stop_after=4))
        judge = PairwiseJudge(client)
        for _ in range(3):
            verdicts = await judge.judge(items[:1])
            assert verdicts[0].winner is None
        assert client.stopped is None, client.stopped
        assert (client.stats.unreadable, srv.served()) == (2, 2)
        await judge.judge(items[1:2])
        assert client.stopped is not None
        assert "the first 4 answers could not be read as verdicts" in client.stopped
        assert (client.stats.unreadable, srv.served()) == (4, 4)
        late = await judge.judge(items[2:])  # not sent: the judge answers nothing readable
        assert srv.served() == 4 and all(o.error is not None for o in late[0].orders)
        await client.aclose()
        cache.close()
