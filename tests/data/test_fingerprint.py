"""results.json says WHICH data a run judged (`data_fingerprint`), and `compare` matches audits
on it, not on the --data spec (reprotest): two different files both named
`jsonl:items.jsonl` (the second with labels swapped) were paired by id and compared with no
word, exit 0, while the same file named `jsonl:./orig.jsonl` or by its absolute path was
refused as "different data"."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

import judgeaudit
from judgeaudit.audit.compare import CompareError, check_same_data, compare
from judgeaudit.data import PairwiseItem
from judgeaudit.data.fingerprint import SHORT, difference, fingerprint, item_hash

JUDGE = "sim?position=1&length=0.5&seed=0"
PROBES = ["position", "verbosity"]


def _rows(n: int = 24) -> list[dict]:
    return [{"id": f"q{i}", "prompt": f"What is {i} + {i}?",
             "response_1": f"It is {2 * i}.", "response_2": f"It is {2 * i + 1}, I think.",
             "label": 1} for i in range(n)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _audit(spec: str, where: Path, monkeypatch: pytest.MonkeyPatch, n: int = 24) -> dict:
    """An audit of `spec` run from the folder `where` (a relative spec is read there)."""
    monkeypatch.chdir(where)
    return judgeaudit.audit(judge=JUDGE, data=spec, n=n, probes=PROBES, cache=False).to_dict()


# ---- the fingerprint itself -------------------------------------------------------------

def test_the_hash_covers_the_judged_fields_in_nfc_and_not_where_a_row_came_from():
    base = PairwiseItem(id="a", prompt="Caf\u00e9?", response_1="x", response_2="y", label=1)
    nfd = base.model_copy(update={"prompt": unicodedata.normalize("NFD", "Caf\u00e9?")})
    moved = base.model_copy(update={"metadata": {"source": "hf", "dataset": "other", "row": 7}})
    assert item_hash(nfd) == item_hash(base) == item_hash(moved)
    for change in ({"label": 2}, {"response_2": "y."}, {"prompt": "Cafe?"},
                   {"quality": (1.0, 0.0)}, {"reference": "z"}):
        assert item_hash(base.model_copy(update=change)) != item_hash(base), change


def test_the_whole_does_not_depend_on_the_order_and_lists_the_judged_items():
    items = [PairwiseItem(id=f"i{k}", prompt="p", response_1=str(k), response_2="-")
             for k in range(5)]
    fp, back = fingerprint(items), fingerprint(items[::-1])
    assert fp["sha256"] == back["sha256"] and fp["n_items"] == 5
    assert set(fp["items"]) == {f"i{k}" for k in range(5)}
    assert all(len(h) == SHORT for h in fp["items"].values())
    some = fingerprint(items, listed=["i1", "i3"])
    assert some["sha256"] == fp["sha256"] and some["n_listed"] == 2
    assert some["items"] == {"i1": fp["items"]["i1"], "i3": fp["items"]["i3"]}
    other = fingerprint([*items[:4], items[4].model_copy(update={"label": 2})])
    d = difference(fp, other)
    assert not d["same"] and d["changed"] == ["i4"] and d["n_same"] == 4


# ---- results record it -------------------------------------------------------------------

def test_an_audit_records_the_fingerprint_of_its_data(tmp_path, monkeypatch):
    _write(tmp_path / "items.jsonl", _rows())
    doc = _audit("jsonl:items.jsonl", tmp_path, monkeypatch, n=10)
    fp = doc["data_fingerprint"]
    assert list(doc).index("data_fingerprint") == list(doc).index("data") + 1
    assert fp["n_items"] == 24 and len(fp["sha256"]) == 64
    judged = {k for p in doc["probes"].values() for k in (p.get("per_item") or {})}
    assert judged and set(fp["items"]) == judged  # the short hashes of the items it judged
    assert fp["n_listed"] == len(judged) < 24


def test_evaluate_and_scoring_bias_record_the_fingerprint():
    ev = judgeaudit.evaluate(judge="sim?seed=0", data="builtin:facts", limit=6,
                             cache=False).to_dict()
    # the loaded data, with the items judged listed (as audit --n; s45 nfcmatch)
    fp = ev["data_fingerprint"]
    assert fp["n_items"] > 6 and fp["n_listed"] == len(fp["items"]) == 6
    sb = judgeaudit.scoring_bias(judge="sim?seed=0", data="builtin:graded", limit=4,
                                 perturbations="order_desc", cache=False).to_dict()
    assert sb["data_fingerprint"]["n_items"] > 4 and sb["data_fingerprint"]["n_listed"] == 4


# ---- compare matches on it -----------------------------------------------------------------

def test_two_files_of_one_name_with_swapped_labels_are_not_paired_unsaid(tmp_path, monkeypatch):
    rows = _rows()
    swapped = [dict(r, label=2) if i < 6 else r for i, r in enumerate(rows)]
    _write(tmp_path / "X" / "items.jsonl", rows)
    _write(tmp_path / "Y" / "items.jsonl", swapped)
    a = _audit("jsonl:items.jsonl", tmp_path / "X", monkeypatch)
    b = _audit("jsonl:items.jsonl", tmp_path / "Y", monkeypatch)
    assert a["data"] == b["data"] == "jsonl:items.jsonl"
    check_same_data(a, b)  # 18 items are the same: compared on those
    res = compare(a, b)
    assert res["data_match"]["n_changed"] == 6
    assert res["data_match"]["changed"] == sorted(f"q{i}" for i in range(6))
    assert res["warnings"] and "6 of the 24 items" in res["warnings"][0]
    assert "left out of every paired change" in res["warnings"][0]
    assert res["items"]["n_matched"] == 18 and res["items"]["n_changed"] == 6
    for p in res["probes"].values():
        assert p["items"]["n_matched"] == 18 and p["items"]["n_changed"] == 6
        assert p["a"]["n"] == p["b"]["n"] == 18
    from judgeaudit.cli.compare_cmd import items_header

    # the table's title said "(24 items, all matched by id)" (datahash's note)
    assert items_header(res) == ("A 24 items, B 24: 18 matched by id, 0 only in A, 0 only in "
                                 "B, 6 with the same id but other content (left out)")


def test_every_item_changed_is_refused(tmp_path, monkeypatch):
    rows = _rows()
    _write(tmp_path / "X" / "items.jsonl", rows)
    _write(tmp_path / "Y" / "items.jsonl", [dict(r, response_2=r["response_2"] + " Sure.")
                                            for r in rows])
    a = _audit("jsonl:items.jsonl", tmp_path / "X", monkeypatch)
    b = _audit("jsonl:items.jsonl", tmp_path / "Y", monkeypatch)
    with pytest.raises(CompareError, match="all 24 items in both .* same id but other content"):
        check_same_data(a, b)


def test_the_same_file_under_other_spellings_is_the_same_data(tmp_path, monkeypatch):
    path = _write(tmp_path / "orig.jsonl", _rows())
    a = _audit("jsonl:orig.jsonl", tmp_path, monkeypatch)
    for spec in ("jsonl:./orig.jsonl", f"jsonl:{path}"):
        b = _audit(spec, tmp_path, monkeypatch)
        check_same_data(a, b)  # refused before: "different data"
        res = compare(a, b)
        assert res["data_match"]["same_content"] is True and not res.get("warnings")
        assert any(f"'jsonl:orig.jsonl' and B {spec!r}" in n for n in res["notes"])
        assert all(p["change"]["value"] == 0 for p in res["probes"].values())


def test_results_without_a_fingerprint_compare_by_spec_with_a_note(tmp_path, monkeypatch):
    _write(tmp_path / "orig.jsonl", _rows())
    a = _audit("jsonl:orig.jsonl", tmp_path, monkeypatch)
    old = {k: v for k, v in a.items() if k != "data_fingerprint"}
    res = compare(old, a, a_path="old", b_path="new")
    assert res["data_match"]["matched_on"] == "spec"
    assert "A (old) records no data fingerprint" in res["notes"][-1]
    other = {**old, "data": "jsonl:./orig.jsonl"}
    with pytest.raises(CompareError, match="different data"):
        check_same_data(other, a)  # as before: the specs decide
