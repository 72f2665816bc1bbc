"""The generation-review pipeline against two real loopback servers (generator and reviewer
as two providers): accepted references, retries, recorded failures, and a re-run from cache."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import pytest
from fakeserver import FakeLLMServer

from judgeaudit.data import load
from judgeaudit.data.schema import PointwiseItem
from judgeaudit.llm import Cache, Client, make_provider
from judgeaudit.scoring.references import (
    ReferencePipeline,
    as_references,
    best_chain,
    read_references,
    sibling_references,
    summarize,
    write_references,
)

ITEMS = [PointwiseItem(id=f"q:{i}", prompt=f"Question {i}?", response="r", reference=f"best {i}",
                       rubric="Good?", rubric_levels={str(k): f"desc {k}" for k in range(1, 6)})
         for i in range(3)]


class Generator:
    """Writes 'LEVEL k' for the asked k, except: k = 2 misses once per item, k = 1 always
    writes a level-3 text (so it never passes review)."""

    def __init__(self) -> None:
        self.seen: Counter[tuple[str, int]] = Counter()

    def __call__(self, prompt: str) -> str:
        k = int(re.search(r"deserves a score of (\d) exactly", prompt).group(1))
        q = re.search(r"Question (\d+)\?", prompt).group(1)
        self.seen[(q, k)] += 1
        if k == 1 or (k == 2 and self.seen[(q, k)] == 1):
            return f"Here is the response:\nLEVEL 3 answer to {q}"
        return f"LEVEL {k} answer to {q}"


def reviewer(prompt: str) -> str:
    m = re.search(r"Response:\nLEVEL (\d)", prompt)
    return m.group(1) if m else "no idea"


def _client(srv: FakeLLMServer, cache: Cache | None) -> Client:
    return Client(make_provider("openai", "fake", {"base_url": srv.openai_url, "api_key": "k"}),
                  cache)


def test_pipeline_accepts_retries_and_records_failures(fake_server, tmp_path) -> None:
    gen = fake_server(answer=Generator(), logprobs=False)
    rev = fake_server(answer=reviewer, logprobs=False)
    cache = Cache(tmp_path / "c.sqlite")
    pipe = ReferencePipeline(_client(gen, cache), _client(rev, cache), max_attempts=3)
    res = asyncio.run(pipe.run(ITEMS))
    by = {(r.item_id, r.score): r for r in res}
    assert len(res) == 12
    for q in range(3):
        assert by[(f"q:{q}", 3)].accepted and len(by[(f"q:{q}", 3)].attempts) == 1
        two = by[(f"q:{q}", 2)]
        assert two.accepted and [a.review_score for a in two.attempts] == [3, 2]
        assert two.text == f"LEVEL 2 answer to {q}"
        one = by[(f"q:{q}", 1)]
        assert not one.accepted and one.text is None
        assert [a.review_score for a in one.attempts] == [3, 3, 3]
        assert "not accepted after 3" in one.failure
    # The preface a model adds is stripped before review and storage.
    assert not any(a.text.startswith("Here is") for r in res for a in r.attempts)
    s = summarize(res)
    assert s["accepted"] == 9 and s["n"] == 12 and s["acceptance_rate"] == 0.75
    assert s["by_score"]["1"]["accepted"] == 0 and s["by_score"]["2"]["first_try"] == 0
    assert s["items_with_all"] == 0
    # 12 + 6 (k=1,2 retried) + 3 (k=1 again) generations; an identical candidate text is
    # reviewed once (the client serves the repeat): LEVEL 2, 3 and 4 per item.
    assert gen.count() == 21 and rev.count() == 9
    refs = as_references(res)
    assert refs["q:0"] == {2: "LEVEL 2 answer to 0", 3: "LEVEL 3 answer to 0",
                           4: "LEVEL 4 answer to 0"}
    path = write_references(tmp_path / "refs.json", res, {"generator": "g"})
    assert read_references(path) == refs
    assert json.loads(path.read_text())["summary"]["accepted"] == 9

    # A second run is served entirely from the cache.
    pipe2 = ReferencePipeline(_client(gen, cache), _client(rev, cache), max_attempts=3)
    res2 = asyncio.run(pipe2.run(ITEMS))
    assert gen.count() == 21 and rev.count() == 9
    assert [r.as_dict() for r in res2] == [r.as_dict() for r in res]


def test_tolerance_accepts_neighbours(fake_server) -> None:
    gen = fake_server(answer=Generator(), logprobs=False)
    rev = fake_server(answer=reviewer, logprobs=False)
    pipe = ReferencePipeline(_client(gen, None), _client(rev, None), max_attempts=1,
                             tolerance=1)
    res = asyncio.run(pipe.run(ITEMS[:1], scores=(2, 4)))
    assert all(r.accepted for r in res)


def test_bad_settings_and_files(tmp_path) -> None:
    with pytest.raises(ValueError, match="max_attempts"):
        ReferencePipeline(None, None, max_attempts=0)  # type: ignore[arg-type]
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"references": {"q:1": {"7": "x"}}}))
    with pytest.raises(ValueError, match=r"r.json: references\['q:1'\]\['7'\]"):
        read_references(bad)
    bad.write_text("{oops")
    with pytest.raises(ValueError, match="not JSON"):
        read_references(bad)


def test_graded_data_serves_its_own_levels_as_references() -> None:
    items = load("builtin:graded")
    refs = sibling_references(items)
    it = items[0]
    assert set(refs[it.id]) == {1, 2, 3, 4, 5}
    assert refs[it.id][it.metadata["level"]] == it.response


def test_order_review_accepts_what_a_saturated_reviewer_still_orders(fake_server) -> None:
    """The reviewer's absolute scores are all one level too high (score review would accept
    nothing below 5), but they keep the order: order review accepts Ref-1..3; Ref-4 ties with
    the score-5 reference and is refused."""
    seen: Counter[int] = Counter()

    def gen(prompt: str) -> str:
        k = int(re.search(r"deserves a score of (\d) exactly", prompt).group(1))
        seen[k] += 1
        return "LEVEL 3 text" if k == 2 and seen[k] == 1 else f"LEVEL {k} text"

    def rev(prompt: str) -> str:
        m = re.search(r"Response:\nLEVEL (\d)", prompt)
        return str(min(int(m.group(1)) + 1, 5)) if m else "?"

    item = ITEMS[0].model_copy(update={"reference": "LEVEL 5 reference"})
    g, r = fake_server(answer=gen, logprobs=False), fake_server(answer=rev, logprobs=False)
    strict = ReferencePipeline(_client(g, None), _client(r, None), max_attempts=2)
    assert summarize(asyncio.run(strict.run([item])))["accepted"] == 0
    seen.clear()
    order = ReferencePipeline(_client(g, None), _client(r, None), max_attempts=2,
                              review="order")
    res = {x.score: x for x in asyncio.run(order.run([item]))}
    assert [k for k in (1, 2, 3, 4) if res[k].accepted] == [1, 2, 3]
    # Ref-2's first text tied with Ref-3's (both reviewed 4): the chain held one of them, so
    # the missing level and its neighbours were retried and the new Ref-2 text fits.
    assert [a.review_value for a in res[2].attempts] == [4, 3]
    assert res[2].text == "LEVEL 2 text" and res[2].chosen_attempt == 1
    assert [res[k].text for k in (1, 3)] == ["LEVEL 1 text", "LEVEL 3 text"]
    assert "never ordered right" in res[4].failure and res[4].text is None
    with pytest.raises(ValueError, match="review"):
        ReferencePipeline(None, None, review="vibes")  # type: ignore[arg-type]


def test_best_chain_keeps_the_longest_strictly_ordered_pick() -> None:
    """One candidate per level, values rising with the level and below the anchor; longest
    first, then the widest closest gap, then earlier attempts."""
    cands = {1: [(0, 2.0), (1, 3.5)], 2: [(0, 3.0)], 3: [(0, 2.5), (1, 4.0)],
             4: [(0, 4.5)]}
    assert best_chain(cands, top=5.0) == {1: 0, 2: 0, 3: 1, 4: 0}
    assert best_chain(cands, top=4.2) == {1: 0, 2: 0, 3: 1}  # Ref-4 is not below the top
    # two equally long chains: the one with more room between neighbours wins
    assert best_chain({1: [(0, 1.0)], 2: [(0, 1.1), (1, 2.0)]}, top=3.0) == {1: 0, 2: 1}
    # without an anchor one level compares nothing; ties never count as ordered
    assert best_chain({1: [(0, 1.0)], 2: []}) == {}
    assert best_chain({1: [(0, 2.0)], 2: [(0, 2.0)]}, top=3.0) in ({1: 0}, {2: 0})
    assert best_chain({1: [], 2: []}, top=3.0) == {}


def test_items_asking_one_question_share_one_reference_set(fake_server) -> None:
    """Responses to one question (as in MT-Bench) need one Ref-k each, not one per response:
    the generator is asked once per level and every item gets the accepted texts."""
    gen = fake_server(answer=Generator(), logprobs=False)
    rev = fake_server(answer=reviewer, logprobs=False)
    # as MT-Bench's second turns: each instruction embeds that model's own first answer,
    # but the question's reference and rubric are one
    same = [ITEMS[0].model_copy(update={"id": f"q:0:{m}", "response": f"answer by {m}",
                                        "prompt": f"Question 0? (after {m}'s first turn)"})
            for m in ("a", "b", "c")]
    pipe = ReferencePipeline(_client(gen, None), _client(rev, None), max_attempts=1)
    res = asyncio.run(pipe.run([*same, ITEMS[1]], scores=(3, 4)))
    assert len(res) == 4 and gen.count() == 4  # two questions x two levels
    assert res[0].shared_by == ["q:0:a", "q:0:b", "q:0:c"]
    refs = as_references(res)
    assert set(refs) == {"q:0:a", "q:0:b", "q:0:c", "q:1"}
    assert refs["q:0:c"] == {3: "LEVEL 3 answer to 0", 4: "LEVEL 4 answer to 0"}
    s = summarize(res)
    assert s["questions_with_all"] == 2 and s["items_with_all"] == 4
