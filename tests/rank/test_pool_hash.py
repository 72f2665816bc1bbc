"""A ranking pool's record says which items it held (upgradetest): since bcc3ea9
`builtin:controlled` is built for the --k asked, so `rank --items builtin:controlled --k 3`
ranked other texts (water-0-10 changed, the true top-3 moved) than at e1ec95e, while
results.json's `pool` stayed {'kind': 'controlled', 'topic': 'water', 'seed': 0, 'design':
'balanced'}: no k, no hash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import judgeaudit
from judgeaudit.rank.pool import load_pool


def test_the_controlled_pool_record_names_its_k_and_its_items():
    p3, p5 = load_pool("builtin:controlled", k=3), load_pool("builtin:controlled", k=5)
    assert p3.meta["k"] == 3 and p5.meta["k"] == 5 and p3.meta["n"] == 30
    assert p3.meta["sha256"] == p3.fingerprint["sha256"] != p5.meta["sha256"]
    assert p3.fingerprint["items"]["water-0-10"] != p5.fingerprint["items"]["water-0-10"]
    assert load_pool("builtin:controlled?k=3").meta["sha256"] == p3.meta["sha256"]


def _pool_file(path: Path, order: list[int]) -> Path:
    rows = [{"id": f"a{i}", "prompt": "Name a prime.", "response": f"{2 * i + 3} is one."}
            for i in range(6)]
    path.write_text("".join(json.dumps(rows[i]) + "\n" for i in order), encoding="utf-8")
    return path


def test_a_jsonl_pool_is_known_by_its_content_not_its_path_or_order(tmp_path, monkeypatch):
    f = _pool_file(tmp_path / "pool.jsonl", list(range(6)))
    g = _pool_file(tmp_path / "shuffled.jsonl", [5, 3, 1, 0, 2, 4])
    monkeypatch.chdir(tmp_path)
    rel, absolute = load_pool("jsonl:pool.jsonl"), load_pool(f"jsonl:{f}")
    assert rel.meta["sha256"] == absolute.meta["sha256"] == load_pool(f"jsonl:{g}").meta["sha256"]
    h = tmp_path / "edited.jsonl"
    h.write_text(f.read_text(encoding="utf-8").replace("7 is one", "7 is one too"),
                 encoding="utf-8")
    edited = load_pool(f"jsonl:{h}")
    assert edited.meta["sha256"] != rel.meta["sha256"]
    assert [k for k, v in edited.fingerprint["items"].items()
            if v != rel.fingerprint["items"][k]] == ["a2"]


def test_rank_results_keep_the_pool_k_and_fingerprint():
    docs = {k: judgeaudit.rank("sim?length=1&seed=0", "builtin:controlled", k=k, budget=12,
                               samples=100, cache=False).to_dict() for k in (3, 5)}
    for k, doc in docs.items():
        assert doc["pool"]["k"] == k
        assert doc["pool"]["sha256"] == doc["data_fingerprint"]["sha256"]
        assert doc["data_fingerprint"]["n_items"] == 30 == len(doc["data_fingerprint"]["items"])
    assert docs[3]["pool"]["sha256"] != docs[5]["pool"]["sha256"]


@pytest.mark.parametrize("spec", ["builtin:controlled?n=7&k=2"])
def test_rank_eval_results_keep_each_pool(spec):
    doc = judgeaudit.rank_eval("sim?quality=1&length=1", spec, budgets=[6], rules=["topk"],
                               seeds=1, samples=100, cache=False).to_dict()
    (name, pool), = doc["pools"].items()  # one seed: the spec drawn for it
    assert name.startswith(spec)
    assert pool["k"] == 2 and pool["data_fingerprint"]["n_items"] == 7
    assert pool["sha256"] == pool["data_fingerprint"]["sha256"]
