"""A bare file path given as a data SPEC gets the spec to give whatever the case of its
extension and with a compression suffix: `--data items.jsonl.gz` said "bad spec ...: kind
must be a word" while `--data items.jsonl` said "is a file path ... give jsonl:...". The
readers open .gz/.bz2/.xz files, so the spec suggested loads them."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from judgeaudit.data import load


@pytest.mark.parametrize(("given", "says"), [
    ("items.jsonl.gz", "give jsonl:items.jsonl.gz (our fields) or hf:items.jsonl.gz"),
    ("ITEMS.JSONL", "give jsonl:ITEMS.JSONL (our fields)"),
    ("./sub/items.jsonl.xz", "give jsonl:./sub/items.jsonl.xz"),
    ("table.csv.gz", "give hf:table.csv.gz (a table with prompt"),
    ("TABLE.CSV.BZ2", "give hf:TABLE.CSV.BZ2 (a table"),
    ("table.tsv", "give hf:table.tsv (a table"),
    ("rows.json.gz", "give hf:rows.json.gz"),
])
def test_a_compressed_or_upper_case_path_names_the_spec_to_give(given: str, says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{given!r} is a file path, not a data "
                                                    f"SPEC: {says}")):
        load(given)


def test_the_spec_suggested_for_a_gz_file_loads_it(tmp_path: Path) -> None:
    f = tmp_path / "items.jsonl.gz"
    rec = {"id": "a", "prompt": "p", "response_1": "x", "response_2": "y", "label": 1}
    f.write_bytes(gzip.compress((json.dumps(rec) + "\n").encode()))
    with pytest.raises(ValueError, match=re.escape(f"give jsonl:{f}")):
        load(str(f))
    assert [it.id for it in load(f"jsonl:{f}")] == ["a"]
    assert [it.label for it in load(f"hf:{f}")] == [1]


@pytest.mark.parametrize(("given", "kind"), [
    ("jsnl:h/nothere.jsonl", "jsnl"), ("hff:h/bad.csv", "hff"), ("jsonl2:x.jsonl", "jsonl2"),
])
def test_a_misspelt_kind_before_a_file_path_is_an_unknown_kind_not_a_path(given: str,
                                                                         kind: str) -> None:
    """`jsnl:items.jsonl` was taken for a bare path and told to give `jsonl:jsnl:items.jsonl`;
    the word before the colon is a kind, so it gets the kinds known (as `jsonl2:x` did)."""
    with pytest.raises(ValueError, match=re.escape(f"unknown data kind {kind!r}; known: ")) as e:
        load(given)
    assert "is a file path" not in str(e.value)
