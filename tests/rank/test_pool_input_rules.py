"""Rank pools and their messages: a k that does not fit builtin:controlled names the option
the user gave (--k, k, or the spec's &k=; it said "give a smaller &k=" to a user who gave
--k); an empty response follows the data loaders' rule (a CSV's empty cell refused, a JSON
Lines "" counted with a note; a CSV pool ran with one without a word); recall carries its
n in results.json."""

from __future__ import annotations

import json

import pytest
import typer
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.rank_cmd import register
from judgeaudit.data.registry import DataError
from judgeaudit.rank.pool import load_pool


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    register(a)
    return a


def _rank(app, tmp_path, *args):
    return CliRunner().invoke(app, ["rank", "--judge", "sim", *args, "--out",
                                    str(tmp_path / "o"), "--cache", str(tmp_path / "c.sqlite")])


def test_a_k_too_large_names_the_option_the_user_gave(app, tmp_path):
    r = _rank(app, tmp_path, "--items", "builtin:controlled", "--k", "40", "--budget", "10")
    assert r.exit_code == 2
    out = " ".join(r.output.split())
    assert "got k=40 (given as --k), n=30 (its default): give a smaller --k or a larger &n=" \
        in out and "&k=" not in out
    with pytest.raises(ValueError, match=r"got k=40 \(given as k\), n=30 \(its default\): "
                                         r"give a smaller k or a larger &n="):
        judgeaudit.rank("sim", "builtin:controlled", k=40, budget=10, cache=False)
    with pytest.raises(ValueError, match=r"\(given as k\).*give a smaller k "):
        judgeaudit.rank_eval("sim", "builtin:controlled?n=8", k=9, budgets=[4], seeds=1,
                             cache=False)
    # from the spec: the spec's parameter
    r = _rank(app, tmp_path, "--items", "builtin:controlled?k=40", "--budget", "10")
    out = " ".join(r.output.split())
    assert r.exit_code == 2 and "got k=40, n=30 (its default): give a smaller &k=" in out
    with pytest.raises(DataError, match=r"got k=5 \(its default\), n=5: give a smaller &k="):
        load_pool("builtin:controlled?n=5")


def test_an_empty_csv_response_cell_is_refused_with_its_line(app, tmp_path):
    bad = tmp_path / "bad8.csv"
    bad.write_text("id,prompt,response,quality\na,p,x,1\nb,p,,2\nc,p,z,3\n")
    r = _rank(app, tmp_path, "--items", str(bad), "--k", "1", "--budget", "6")
    assert r.exit_code == 2
    out = " ".join(r.output.split())
    assert "bad8.csv:3: field 'response': empty; a response must not be empty" in out
    with pytest.raises(DataError, match="field 'response': empty"):
        load_pool(f"csv:{bad}")
    spaces = tmp_path / "spaces.csv"
    spaces.write_text("id,prompt,response\na,p,x\nb,p,   \n")
    with pytest.raises(DataError, match=r"spaces.csv:3: field 'response': empty"):
        load_pool(str(spaces))


def test_an_empty_jsonl_response_is_counted_in_the_notes(app, tmp_path):
    path = tmp_path / "e.jsonl"
    path.write_text("".join(json.dumps({"id": i, "prompt": "p", "response": r, "quality": q})
                            + "\n" for i, r, q in (("a", "x", 1), ("b", "", 2), ("c", "z", 3),
                                                   ("d", " ", 4))))
    pool = load_pool(str(path))
    note = (f"{path}: 2 of 4 items have an empty response (first: 'b', line 2); they are "
            "judged as empty answers")
    assert pool.notes == [note]
    r = _rank(app, tmp_path, "--items", str(path), "--k", "1", "--budget", "6")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert note in doc["notes"]
    assert "2 of 4 items have an empty response" in " ".join(r.output.split())
    ev = judgeaudit.rank_eval("sim", str(path), k=1, budgets=[4], rules="topk", seeds=1,
                              samples=100, cache=False)
    assert note in ev["notes"]
    clean = tmp_path / "ok.jsonl"
    clean.write_text(path.read_text().replace('"response": ""', '"response": "y"')
                     .replace('"response": " "', '"response": "w"'))
    assert load_pool(str(clean)).notes == []


def test_recall_carries_its_n_in_results(app, tmp_path):
    r = _rank(app, tmp_path, "--items", "builtin:controlled?seed=1&n=12&k=3", "--budget", "30",
              "--samples", "100")
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert set(doc["recall_hits"]) == {"naive", "bias_aware"}
    for m, v in doc["recall"].items():
        h = doc["recall_hits"][m]
        assert h["n"] == len(doc["true_topk"]) == 3 and h["hits"] / h["n"] == pytest.approx(v)
