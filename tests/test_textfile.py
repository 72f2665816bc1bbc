"""Compressed data files (`judgeaudit.textfile`): datasets often ship as `items.jsonl.gz`,
which read as "not valid UTF-8 (byte 0x8b at column 2)" (jsonl:) or "unsupported file type
'.gz'" (hf:). gzip, bzip2 and xz files are now opened by their first bytes, for every loader
and for replay verdict files, and a damaged archive says so."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma

import pytest

import judgeaudit
from judgeaudit.data import DataError, load
from judgeaudit.textfile import TextProblem, data_suffix, decode_text, decompressed

RECORDS = [{"id": f"q{i}", "prompt": f"question {i} café", "response_1": "a", "response_2": "b",
            "label": 1} for i in range(4)]
JSONL = "".join(json.dumps(r) + "\n" for r in RECORDS).encode()
PACK = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}


@pytest.mark.parametrize("ext", sorted(PACK))
def test_each_compression_is_opened_by_its_first_bytes(ext):
    assert decode_text(PACK[ext](JSONL)) == JSONL.decode()
    assert decode_text(PACK[ext](b"\xef\xbb\xbf" + JSONL)) == JSONL.decode()  # BOM dropped
    assert data_suffix(f"items.jsonl{ext}") == ".jsonl"
    assert data_suffix("items.JSONL") == ".jsonl" and data_suffix("items") == ""


@pytest.mark.parametrize("ext", sorted(PACK))
def test_compressed_jsonl_loads_as_jsonl_and_as_hf(tmp_path, ext):
    f = tmp_path / f"items.jsonl{ext}"
    f.write_bytes(PACK[ext](JSONL))
    for spec in (f"jsonl:{f}", f"hf:{f}"):
        items = load(spec)
        assert [it.id for it in items] == ["q0", "q1", "q2", "q3"]
        assert items[0].prompt == "question 0 café"


def test_a_compressed_csv_and_replay_file_run_end_to_end(tmp_path):
    data = tmp_path / "items.csv.gz"
    data.write_bytes(gzip.compress(b"id;prompt;response_1;response_2;label\n"
                                   + b"".join(f"q{i};p{i};a;b;1\n".encode() for i in range(4))))
    verdicts = tmp_path / "mine.csv.gz"
    verdicts.write_bytes(gzip.compress(b"qid,pos,pick\n" + b"".join(
        f"q{i},{o},first\n".encode() for i in range(4) for o in ("12", "21"))))
    res = judgeaudit.evaluate(
        f"replay:{verdicts}?item=qid&order=pos&verdict=pick&verdict_map=first:1,second:2",
        f"hf:{data}", cache=False)
    assert res.ok and res.calls["made"] == 8 and res.to_dict()["n_invalid"] == 0


def test_a_damaged_archive_says_so_and_names_the_file(tmp_path):
    with pytest.raises(TextProblem, match="a gzip file that cannot be decompressed"):
        decode_text(gzip.compress(JSONL)[:40])
    f = tmp_path / "cut.jsonl.gz"
    f.write_bytes(gzip.compress(JSONL)[:40])
    with pytest.raises(DataError, match=r"cut.jsonl.gz: a gzip file that cannot be "
                                        r"decompressed .*is it complete\?"):
        load(f"jsonl:{f}")


@pytest.mark.parametrize("ext", sorted(PACK))
def test_a_file_that_expands_past_the_limit_is_refused(ext):
    bomb = PACK[ext](b"\n" * 10_000)  # a few dozen bytes that expand 100-fold and more
    assert len(decompressed(bomb, limit=10_000)) == 10_000
    with pytest.raises(TextProblem, match="expands to more than 9,999 bytes"):
        decompressed(bomb, limit=9_999)


def test_text_that_is_not_utf8_is_still_named_by_line_and_column():
    with pytest.raises(TextProblem) as err:
        decode_text(gzip.compress(b'{"a": 1}\n{"b": "caf\xe9"}\n'))
    assert err.value.line == 2 and "byte 0xe9 at column 11" in err.value.problem
