"""`ingest` at the llm layer says where each bad line is: the line and custom_id of the first
answer not planned with the cache, the first error line in file order (answers are parsed a
chunk later than error lines are read), both lines of a repeated custom_id and whether their
answers differ; a plan given as the answers raises `PlanGivenAsAnswers` and stores nothing."""

from __future__ import annotations

import json

import pytest

from judgeaudit.llm import Cache
from judgeaudit.llm.plan import PlanGivenAsAnswers, ingest, is_request_line


def answer(key: str, text: str = "A", line_id: str = "b") -> dict:
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}]}
    return {"id": line_id, "custom_id": key, "error": None,
            "response": {"status_code": 200, "body": body}}


def request(key: str) -> dict:
    return {"custom_id": key, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "q"}]}}


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def cache(tmp_path):
    c = Cache(tmp_path / "c.sqlite")
    c.put_planned([(k, "openai", "m", json.dumps(["A", "B"])) for k in "abcde"])
    yield c
    c.close()


def test_ingest_reports_the_lines_of_repeats_unknowns_and_errors(tmp_path, cache):
    malformed = answer("b")
    malformed["response"]["body"]["choices"] = []
    failed = {"id": "x", "custom_id": "c", "error": None,
              "response": {"status_code": 500, "body": {"error": {"message": "boom"}}}}
    rows = [answer("a"), malformed, failed, answer("z" * 64), answer("d"),
            answer("a", line_id="again"), answer("d", "B"), answer("e")]
    rep = ingest(write(tmp_path / "out.jsonl", rows), cache, chunk=2)
    assert rep.ingested == 3 and rep.lines == 8
    assert rep.first_unknown == (4, "z" * 64)
    assert (rep.first_error_line, rep.first_error) == (2, "b: not a chat completion")
    assert (rep.duplicates, rep.duplicates_differing) == (2, 1)
    assert rep.duplicate_lines == [("a", 1, 6, False), ("d", 5, 7, True)]
    assert cache.get("d").text == "A"  # the first kept


def test_a_plan_given_as_the_answers_raises_and_stores_nothing(tmp_path, cache):
    assert is_request_line(request("a")) and not is_request_line(answer("a"))
    with pytest.raises(PlanGivenAsAnswers, match="is a plan of requests, not answers"):
        ingest(write(tmp_path / "plan.jsonl", [request(k) for k in "abc"]), cache)
    assert not cache.has(list("abc"))
    # Among answers a request line is counted and skipped, and does not make the answer to
    # its custom_id a repeat.
    rep = ingest(write(tmp_path / "mixed.jsonl", [request("a"), answer("a"), answer("b")]),
                 cache)
    assert (rep.ingested, rep.requests, rep.request_lines, rep.duplicates) == (2, 1, [1], 0)


def test_an_answer_after_an_error_line_of_its_custom_id_is_stored(tmp_path, cache):
    """An output file joined with a rerun's: the first run's error line kept, the rerun's
    answer dropped as a repeat (work paid for, lost). Now the answer replaces the error,
    which no longer counts, and the first error is the first one left."""
    def failed(key):
        return {"id": "x", "custom_id": key, "error": None,
                "response": {"status_code": 500, "body": {"error": {"message": "boom"}}}}
    rows = [failed("a"), answer("b"), failed("c"), answer("a"), answer("c"), failed("d"),
            failed("a")]
    rep = ingest(write(tmp_path / "out.jsonl", rows), cache, chunk=2)
    assert rep.ingested == 3 and cache.get("a").text == "A" and cache.get("c").text == "A"
    assert (rep.errors_answered, rep.first_answered) == (2, ("a", 1, 4))
    assert rep.errors == {"server": 1} and rep.first_error_line == 6
    assert rep.duplicates == 1 and rep.duplicate_lines == [("a", 4, 7, True)]  # answer kept
