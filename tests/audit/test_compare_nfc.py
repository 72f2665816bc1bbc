"""compare pairs items by their ids in Unicode NFC, as the data fingerprint, --sample and
--adaptive read them (s45 tester): the same 10 rows, ids NFC in one file and NFD in the
other, were "the same items" by fingerprint and then "0 matched by id, 10 only in A, 10 only
in B", paired n=0, exit 0. And an item whose content changed under an NFD id was paired
anyway: the fingerprint's changed ids are NFC, the per-item ids were compared raw."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest

import judgeaudit
from judgeaudit.audit.compare import check_same_data, compare

JUDGE = "sim?position=1&length=0.5&seed=0"
PROBES = ["position", "verbosity"]
N = 12


def _rows(form: str) -> list[dict]:
    """Rows whose ids hold an accented letter, written in `form` (NFC or NFD)."""
    return [{"id": unicodedata.normalize(form, f"caf\u00e9-{i}"), "prompt": f"What is {i} + {i}?",
             "response_1": f"It is {2 * i}.", "response_2": f"It is {2 * i + 1}, I think.",
             "label": 1} for i in range(N)]


def _audit(tmp: Path, name: str, rows: list[dict], monkeypatch: pytest.MonkeyPatch) -> dict:
    path = tmp / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    monkeypatch.chdir(tmp)
    return judgeaudit.audit(judge=JUDGE, data=f"jsonl:{name}.jsonl", probes=PROBES,
                            cache=False).to_dict()


def test_the_same_rows_with_nfd_ids_are_matched_to_their_nfc_ids(tmp_path, monkeypatch):
    a = _audit(tmp_path, "nfc", _rows("NFC"), monkeypatch)
    b = _audit(tmp_path, "nfd", _rows("NFD"), monkeypatch)
    ids_b = {k for p in b["probes"].values() for k in (p.get("per_item") or {})}
    assert ids_b and all(k != unicodedata.normalize("NFC", k) for k in ids_b)  # NFD kept
    assert a["data_fingerprint"]["sha256"] == b["data_fingerprint"]["sha256"]
    check_same_data(a, b)
    doc = compare(a, b, a_path="nfc", b_path="nfd")
    counts = doc["items"]
    assert counts["n_matched"] == counts["a"] == counts["b"] > 0, counts
    assert counts["n_only_a"] == counts["n_only_b"] == 0, counts
    for name, p in doc["probes"].items():
        assert p["pairing"] == "paired", name
        assert p["items"]["n_matched"] == a["probes"][name]["n"] > 0, (name, p["items"])
        assert p["items"]["n_only_a"] == p["items"]["n_only_b"] == 0, (name, p["items"])


def test_an_item_changed_under_an_nfd_id_is_left_out(tmp_path, monkeypatch):
    rows = _rows("NFD")
    changed = [dict(r) for r in rows]
    changed[3]["response_2"] = "It is 7, and here is a much longer answer to move it."
    a = _audit(tmp_path, "before", rows, monkeypatch)
    b = _audit(tmp_path, "after", changed, monkeypatch)
    doc = compare(a, b)
    key = unicodedata.normalize("NFC", rows[3]["id"])
    assert doc["data_match"]["changed"] == [key]
    counts = doc["items"]
    assert counts["n_changed"] == 1 and counts["n_matched"] == counts["a"] - 1, counts
    for name, p in doc["probes"].items():
        judged = a["probes"][name].get("per_item") or {}
        if rows[3]["id"] in judged:
            assert p["items"]["n_changed"] == 1, (name, p["items"])
            assert p["items"]["n_matched"] == len(judged) - 1, (name, p["items"])
