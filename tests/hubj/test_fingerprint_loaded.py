"""The data fingerprint has one meaning whatever chose the items (s45 tester): the data the
run loaded, with the items it judged listed. `audit --n 10` recorded n_items 212 with a
sha256 over every loaded row but listed 10 items, while `--sample 30` (and evaluate's
--sample and --limit) hashed only the 30 drawn: one file audited two ways read as two data
sets, and the whole could not say "the same file" for a re-run that drew otherwise."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judgeaudit
from judgeaudit.audit.compare import compare
from judgeaudit.data.fingerprint import fingerprint, judged_ids, stamp
from judgeaudit.data.registry import load

JUDGE = "sim?position=1&length=0.5&seed=0"
PROBES = ["position", "verbosity"]
N = 24


@pytest.fixture
def data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    rows = [{"id": f"q{i}", "prompt": f"What is {i} + {i}?", "response_1": f"It is {2 * i}.",
             "response_2": f"It is {2 * i + 1}, I think.", "label": 1} for i in range(N)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows),
                                          encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return "jsonl:items.jsonl"


def _fp(doc: dict) -> dict:
    return doc["data_fingerprint"]


def test_every_selection_fingerprints_the_loaded_data_and_lists_what_it_judged(data):
    whole = fingerprint(load(data))
    runs = {
        "audit --n 5": judgeaudit.audit(judge=JUDGE, data=data, n=5, probes=PROBES,
                                        cache=False).to_dict(),
        "audit --sample 6": judgeaudit.audit(judge=JUDGE, data=data, sample=6, seed=1,
                                             probes=PROBES, cache=False).to_dict(),
        "evaluate --sample 7": judgeaudit.evaluate(judge=JUDGE, data=data, sample=7, seed=2,
                                                   cache=False).to_dict(),
        "evaluate --limit 8": judgeaudit.evaluate(judge=JUDGE, data=data, limit=8,
                                                  cache=False).to_dict(),
    }
    for name, doc in runs.items():
        fp = _fp(doc)
        assert fp["sha256"] == whole["sha256"] and fp["n_items"] == N, (name, fp)
        judged = judged_ids(doc)
        assert 0 < len(judged) < N, (name, judged)
        assert set(fp["items"]) == judged and fp["n_listed"] == len(judged), (name, fp)
        assert all(fp["items"][k] == whole["items"][k] for k in judged), name
    assert len(judged_ids(runs["evaluate --limit 8"])) == 8
    assert len(judged_ids(runs["evaluate --sample 7"])) == 7


def test_scoring_bias_with_limit_fingerprints_every_loaded_item():
    loaded = load("builtin:graded")
    doc = judgeaudit.scoring_bias(judge="sim?seed=0", data="builtin:graded", limit=4,
                                  perturbations="order_desc", cache=False).to_dict()
    fp = _fp(doc)
    assert fp["sha256"] == fingerprint(loaded)["sha256"] and fp["n_items"] == len(loaded) > 4
    assert fp["n_listed"] == 4 and set(fp["items"]) == set(doc["item_ids"])


def test_two_draws_of_one_file_are_the_same_data_to_compare(data):
    a = judgeaudit.audit(judge=JUDGE, data=data, sample=12, seed=1, probes=PROBES,
                         cache=False).to_dict()
    b = judgeaudit.audit(judge=JUDGE, data=data, sample=12, seed=2, probes=PROBES,
                         cache=False).to_dict()
    doc = compare(a, b)
    assert doc["data_match"]["same_content"] is True, doc["data_match"]
    assert doc["data_match"]["n_changed"] == 0


def test_stamp_lists_the_ids_it_is_given():
    items = load("builtin:facts")[:6]
    doc = stamp({"data": "x"}, items, listed=[items[1].id, items[4].id])
    fp = doc["data_fingerprint"]
    assert fp["n_items"] == 6 and fp["n_listed"] == 2
    assert set(fp["items"]) == {items[1].id, items[4].id}
