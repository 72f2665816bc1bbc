"""A ranking stopped by the spend cap still takes the verdicts its cache holds: a1c6b4a
stopped picking at the first pick refused unsent, so on a cache holding 60 of a 10-item
pool's 90 ordered pairs a capped `--budget 90` run made 14 comparisons (10 cached) where the
loop before it made 64 (60 cached), and its warning said the 74 never picked "would have
been refused the same way". The loop now picks on while a pick left may be answered from the
cache (`rank.live.cache_answers`, read only) and stops when none can. Through a real loopback
OpenAI-shaped server (`fakeserver`) and real SQLite caches."""

from __future__ import annotations

import json
from pathlib import Path

from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.judges.factory import make_judge
from judgeaudit.llm.base import Response, legacy_request_key
from judgeaudit.llm.cache import Cache
from judgeaudit.rank.live import BridgeOracle, Verdict, cache_answers, pair_request
from judgeaudit.rank.pool import load_pool
from tests.rank import test_rank_not_sent as _not_sent

BUDGET = 90  # every ordered pair of 10 items
FILLED = 60  # pairs the cache holds before the capped run
REFIT = 8


# the rank CLI and the cleared key variables are test_rank_not_sent's fixtures
app, _no_keys = _not_sent.app, _not_sent._no_keys


def _pool(path: Path, n: int = 10, same: tuple[int, int] | None = None) -> str:
    """n items of one prompt; ``same``: two items given one text."""
    texts = ["word " * (3 + i % 4) + f"answer {i}" for i in range(n)]
    if same is not None:
        texts[same[1]] = texts[same[0]]
    path.write_text("\n".join(json.dumps(
        {"id": f"it-{i:02d}", "prompt": "Which answer is better?", "response": texts[i],
         "quality": float(i)}) for i in range(n)) + "\n")
    return f"jsonl:{path}"


def _rank(app, spec: str, items: str, cache: Path, out: Path, *extra: str):
    return CliRunner().invoke(app, [
        "rank", "--judge", spec, "--items", items, "--k", "3", "--samples", "200",
        "--covariates", "none", "--refit-every", str(REFIT), "--cache", str(cache),
        "--out", str(out), "--json", *extra])


def test_a_capped_ranking_takes_every_verdict_its_cache_holds(app, tmp_path):
    items = _pool(tmp_path / "pool.jsonl")
    with FakeLLMServer(answer="A") as srv:
        spec = (f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
                "&price_in=10000&price_out=10")  # about $1 a call: a cap of 5 sends ~4
        filled = tmp_path / "filled.sqlite"
        r = _rank(app, spec, items, filled, tmp_path / "fill", "--rule", "random",
                  "--budget", str(FILLED))
        assert r.exit_code == 0, r.output
        assert srv.count() == FILLED
        r = _rank(app, spec, items, filled, tmp_path / "capped",
                  "--rule", "topk", "--budget", str(BUDGET), "--max-cost", "5")
        paid = srv.count() - FILLED
    assert r.exit_code == 3, r.output  # most of the budget still failed unsent
    assert 0 < paid < REFIT
    doc = json.loads((tmp_path / "capped" / "results.json").read_text())
    # every cached verdict taken: a1c6b4a made 14 comparisons here, 10 of them cached
    assert doc["calls"]["cached"] == FILLED
    assert doc["n_comparisons"] == paid + FILLED
    assert doc["n_not_sent"] == BUDGET - paid - FILLED
    assert doc["calls"]["failed"] == doc["calls"]["not_sent"] == BUDGET - paid - FILLED
    comps = doc["comparisons"]
    assert len(comps) == BUDGET  # the budget covers every pair: each one was picked
    assert sum(c["not_sent"] for c in comps) == BUDGET - paid - FILLED
    assert doc["run"]["calls_asked"] == doc["run"]["n_planned"] == BUDGET
    warn = next(w for w in doc["warnings"] if "were not sent" in w)
    assert "never picked" not in warn, warn  # no pick was left out


def test_a_capped_ranking_on_an_empty_cache_stops_at_the_cap(app, tmp_path):
    """Nothing cached but the run's own answers: no pick left can be answered, so the loop
    stops in the round the cap refused a call (the CPU a1c6b4a saved)."""
    items = _pool(tmp_path / "pool.jsonl")
    with FakeLLMServer(answer="A") as srv:
        spec = (f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
                "&price_in=10000&price_out=10")
        r = _rank(app, spec, items, tmp_path / "empty.sqlite", tmp_path / "out",
                  "--budget", str(BUDGET), "--max-cost", "5")
        made = srv.count()
    assert r.exit_code == 3, r.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    refused = sum(c["not_sent"] for c in doc["comparisons"])
    assert 0 < made < REFIT and len(doc["comparisons"]) == made + refused <= 2 * REFIT
    assert doc["n_comparisons"] == made and doc["n_not_sent"] == BUDGET - made
    warn = next(w for w in doc["warnings"] if "were not sent" in w)
    assert (f"the cache held none of the pairs left: {BUDGET - made - refused} of them were "
            "never picked") in warn, warn


def _judge(tmp_path: Path, base_url: str = "http://127.0.0.1:9/v1"):
    cache = Cache(tmp_path / "c.sqlite")
    return make_judge(f"openai:m?base_url={base_url}&api_key=k&logprobs=off", cache=cache), cache


def _put(bundle, cache: Cache, pool, pairs, *, legacy: bool = False) -> None:
    for f, s in pairs:
        req = pair_request(bundle, pool, f, s)[0]
        key = (legacy_request_key(bundle.client.provider, req) if legacy
               else bundle.client.key(req))
        assert key is not None
        cache.put(key, "openai", "m", Response(text="A"))


def _verdict(f: int, s: int, kind: str | None = None) -> Verdict:
    return Verdict(f, s, "12", 1.0 if kind is None else None, "A" if kind is None else None,
                   "A", error_kind=kind, not_sent=kind is not None)


def test_cache_answers_names_the_picks_left_the_cache_holds(tmp_path):
    pool = load_pool(_pool(tmp_path / "pool.jsonl", n=6))
    bundle, cache = _judge(tmp_path)
    assert cache_answers(bundle, pool, []) == set()  # an empty cache answers nothing
    _put(bundle, cache, pool, [(0, 1), (2, 3), (4, 5), (5, 4)])
    # (0, 1) asked already (answered), (2, 3) refused unsent before it was cached: both
    # made; the other order of a cached pair is another request
    log = [_verdict(0, 1), _verdict(2, 3, "spend_cap")]
    assert cache_answers(bundle, pool, log) == {(4, 5), (5, 4)}
    # only the run's own answers in the cache: nothing left, without keying every pair
    bundle2, cache2 = _judge(tmp_path / "own")
    _put(bundle2, cache2, pool, [(0, 1), (1, 2)])
    assert cache_answers(bundle2, pool, [_verdict(0, 1), _verdict(1, 2)]) == set()


def test_cache_answers_reads_a_kept_refusal_a_legacy_key_and_a_repeated_request(tmp_path):
    pool = load_pool(_pool(tmp_path / "pool.jsonl", n=5))
    # a base_url not in the key's one form: a cache made before 6d2dcc3 holds its answers
    # under the legacy key, which the call reads (`Client._legacy_hit`)
    bundle, cache = _judge(tmp_path, "http://127.0.0.1:9/v1/")
    _put(bundle, cache, pool, [(1, 2)], legacy=True)
    req = pair_request(bundle, pool, 3, 4)[0]
    cache.put_refusals([(bundle.client.key(req), "too_long", "over the context")],
                       provider="openai", model="m")
    assert cache_answers(bundle, pool, []) == {(1, 2), (3, 4)}
    # two items of one text: a pick whose request the run answered already is answered
    # again (from the cache, or without one from the run's memo)
    dup = load_pool(_pool(tmp_path / "dup.jsonl", n=5, same=(0, 1)))
    for where in ("with", "without"):
        b2, c2 = _judge(tmp_path / where)
        if where == "without":
            b2.client.cache = None
        else:
            _put(b2, c2, dup, [(0, 2)])
        assert cache_answers(b2, dup, [_verdict(0, 2)]) == {(1, 2)}, where


def test_the_oracle_stops_the_loop_once_the_cached_picks_are_made(tmp_path):
    pool = load_pool(_pool(tmp_path / "pool.jsonl", n=5))
    bundle, cache = _judge(tmp_path)
    _put(bundle, cache, pool, [(1, 2), (3, 4)])
    oracle = BridgeOracle(bundle, pool, loop=None)  # type: ignore[arg-type]
    oracle.log = [_verdict(0, 1), _verdict(0, 2, "spend_cap")]
    assert not oracle.exhausted()  # the client still sends
    oracle.halted = True
    assert not oracle.exhausted()  # (1, 2) and (3, 4) would come from the cache
    oracle.log.append(_verdict(1, 2))
    assert not oracle.exhausted()
    oracle.log += [_verdict(2, 3, "spend_cap"), _verdict(3, 4)]
    assert oracle.exhausted()


def test_a_pool_too_large_to_scan_picks_on_to_the_budget(tmp_path, monkeypatch):
    """More pairs than `SCAN_MAX` to key: whether one is cached is not known, so the loop is
    not stopped (it picks on as before a1c6b4a)."""
    import judgeaudit.rank.live as live

    pool = load_pool(_pool(tmp_path / "pool.jsonl", n=5))
    bundle, cache = _judge(tmp_path)
    _put(bundle, cache, pool, [(0, 1), (1, 0)])  # answers of this judge, not this run's
    monkeypatch.setattr(live, "SCAN_MAX", 10)
    assert cache_answers(bundle, pool, [_verdict(2, 3, "spend_cap")]) is None
    oracle = BridgeOracle(bundle, pool, loop=None)  # type: ignore[arg-type]
    oracle.log, oracle.halted = [_verdict(2, 3, "spend_cap")], True
    assert not oracle.exhausted()
    oracle.log += [_verdict(0, 1), _verdict(1, 0)]
    assert not oracle.exhausted()
    monkeypatch.setattr(live, "SCAN_MAX", 100)
    assert cache_answers(bundle, pool, oracle.log) == set()
