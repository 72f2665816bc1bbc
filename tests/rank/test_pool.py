"""Ranking pools: the controlled benchmark as a pool, the JSONL format with located errors,
covariates from the text and from fields, groups, trusted labels."""

import json

import numpy as np
import pytest

from judgeaudit.data.registry import DataError
from judgeaudit.llm import features
from judgeaudit.rank.controlled import build_controlled_pool
from judgeaudit.rank.pool import load_pool, load_trusted, parse_covariates


def _write(path, rows):
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_controlled_pool_matches_the_builder():
    pool = load_pool("builtin:controlled?seed=3&n=20&k=4&topic=heart")
    ref = build_controlled_pool(topic="heart", n_items=20, k=4, seed=3)
    assert pool.n_items == 20 and pool.k == 4 and pool.groups is None
    assert [it.text for it in pool.items] == [it.text for it in ref.items]
    np.testing.assert_array_equal(pool.quality, ref.quality)
    np.testing.assert_array_equal(pool.true_topk(4), ref.true_topk)
    assert pool.ambiguous_topk(4) == []
    X, info = pool.covariates(["verbosity", "n_statements"])
    np.testing.assert_allclose(X[:, 0], ref.verbosity - ref.verbosity.mean())
    assert info[0].source == "field" and info[0].sd == pytest.approx(ref.verbosity.std())


@pytest.mark.parametrize("spec, msg", [
    ("builtin:controlled?sed=1", "unknown parameter"),
    ("builtin:controlled?n=x", "parameter 'n': expected an integer"),
    ("builtin:controlled?topic=mars", "parameter 'topic': expected one of"),
    ("builtin:controlled?n=5&k=5", "need k < n, got k=5, n=5"),
    ("builtin:controlled?n=5", r"got k=5 \(its default\), n=5: give a smaller &k="),
    ("builtin:facts", "builtin:controlled"),
    ("hf:whatever", "unknown pool kind"),
])
def test_bad_specs(spec, msg):
    with pytest.raises(DataError, match=msg):
        load_pool(spec)


def test_text_covariates_are_the_features_of_the_text():
    pool = load_pool("builtin:controlled?seed=1")
    X, info = pool.covariates(["length", "words", "markdown"])
    L = np.array([features.length(it.text) for it in pool.items])
    np.testing.assert_allclose(X[:, 0], L - L.mean())
    assert info[0].mean == pytest.approx(L.mean()) and info[0].source == "text"
    w = np.array([features.word_count(it.text) for it in pool.items], dtype=float)
    np.testing.assert_allclose(X[:, 1], (w - w.mean()) / w.std())
    assert info[2].constant  # no markdown in the controlled answers
    with pytest.raises(DataError, match="unknown covariate 'wordz'; available: length"):
        pool.covariates(["wordz"])


def test_jsonl_pool_fields_groups_and_topk(tmp_path):
    rows = [{"id": f"a{i}", "prompt": "P1", "response": "x " * (i + 1), "quality": i,
             "tokens": 10 * i} for i in range(4)]
    rows += [{"id": f"b{i}", "prompt": "P2", "response": "**y** " * (i + 1), "quality": -i,
              "tokens": 3} for i in range(3)]
    pool = load_pool(str(_write(tmp_path / "pool.jsonl", rows)))
    assert pool.n_groups == 2
    np.testing.assert_array_equal(pool.groups, [0, 0, 0, 0, 1, 1, 1])
    # k = 2 per group (a group of 3 keeps k = min(2, 3 - 1))
    assert [pool.items[i].id for i in pool.true_topk(2)] == ["a2", "a3", "b0", "b1"]
    X, info = pool.covariates(["tokens"])
    assert info[0].source == "field" and X.shape == (7, 1)
    # a quality tie across the k-th place makes the true top-k ambiguous
    tie = [dict(r, quality=1) if r["id"] in ("a1", "a2") else r for r in rows[:4]]
    assert load_pool("jsonl:" + str(_write(tmp_path / "tie.jsonl", tie))).ambiguous_topk(2) \
        == [0]


def test_csv_pool_reads_as_the_same_jsonl_pool(tmp_path):
    """A spreadsheet's pool was refused ("kind must be a word"): CSV (any separator) gives
    the pool its JSON Lines twin gives, numbers read from their text."""
    import csv

    rows = [{"id": f"a{i}", "prompt": "P1", "response": "x " * (i + 1), "quality": i,
             "tokens": 10 * i} for i in range(4)]
    twin = load_pool(str(_write(tmp_path / "pool.jsonl", rows)))
    with (tmp_path / "pool.csv").open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]), delimiter=";")
        w.writeheader()
        w.writerows(rows)
    for spec in (str(tmp_path / "pool.csv"), f"csv:{tmp_path / 'pool.csv'}"):
        pool = load_pool(spec)
        assert [(it.id, it.prompt, it.text, it.quality, it.fields) for it in pool.items] == [
            (it.id, it.prompt, it.text, it.quality, it.fields) for it in twin.items]
    (tmp_path / "bad.csv").write_text("id,prompt,response,quality\na,p,r,high\n")
    with pytest.raises(DataError, match=":2: field 'quality': expected a finite number"):
        load_pool(str(tmp_path / "bad.csv"))
    # a header written with spaces after its commas read as missing fields
    (tmp_path / "spaced.csv").write_text("id, prompt, response, quality\na,p,r,1\nb,p,s,2\n")
    assert [it.quality for it in load_pool(str(tmp_path / "spaced.csv")).items] == [1.0, 2.0]
    # quality missing on one row: the message names its line (it named the item only)
    (tmp_path / "some.csv").write_text("id,prompt,response,quality\na,p,r,1\nb,p,s,\n")
    with pytest.raises(DataError, match=r"some.csv:3: 'quality' is given for some items but "
                                        "not for 'b'"):
        load_pool(str(tmp_path / "some.csv"))


@pytest.mark.parametrize("rows, where", [
    ([{"id": "a", "prompt": "p", "response": "r"}, {"prompt": "p", "response": "s"}],
     ":2: field 'id': missing"),
    ([{"id": "a", "prompt": "p", "response": "r"}, {"id": "a", "prompt": "p", "response": "s"}],
     ":2: field 'id': 'a' already used at line 1"),
    ([{"id": "a", "prompt": "p", "response": 3}], ":1: field 'response': expected a string"),
    ([{"id": "a", "prompt": "p", "response": "r", "quality": "high"}],
     ":1: field 'quality': expected a finite number"),
    ([{"id": "a", "prompt": "p", "response": "r", "quality": 1},
      {"id": "b", "prompt": "p", "response": "s"}], "given for some items but not for 'b'"),
])
def test_jsonl_errors_name_line_and_field(tmp_path, rows, where):
    path = _write(tmp_path / "bad.jsonl", rows)
    with pytest.raises(DataError, match=where.replace("(", r"\(")) as e:
        load_pool(f"jsonl:{path}")
    assert str(path) in str(e.value)


def test_missing_field_covariate_and_quality(tmp_path):
    rows = [{"id": "a", "prompt": "p", "response": "r", "tokens": 1},
            {"id": "b", "prompt": "p", "response": "s"}]
    pool = load_pool(f"jsonl:{_write(tmp_path / 'p.jsonl', rows)}")
    with pytest.raises(DataError, match="covariate 'tokens' is missing for 1 item"):
        pool.covariates(["tokens"])
    with pytest.raises(DataError, match="true quality unknown"):
        pool.true_topk(1)


def test_trusted_labels_jsonl_and_csv(tmp_path):
    pool = load_pool("builtin:controlled?n=6&k=2")
    a, b, c = pool.ids[:3]
    t = load_trusted(_write(tmp_path / "t.jsonl", [{"better": a, "worse": b},
                                                   {"better": c, "worse": a}]), pool)
    np.testing.assert_array_equal(t, [[0, 1, 1], [2, 0, 1]])
    (tmp_path / "t.csv").write_text(f"better,worse\n{b},{c}\n")
    np.testing.assert_array_equal(load_trusted(tmp_path / "t.csv", pool), [[1, 2, 1]])
    import gzip  # compressed, as every pool and data file may be (it was read as JSON Lines)
    (tmp_path / "t.csv.gz").write_bytes(gzip.compress(f"better,worse\n{b},{c}\n".encode()))
    np.testing.assert_array_equal(load_trusted(tmp_path / "t.csv.gz", pool), [[1, 2, 1]])
    (tmp_path / "s.csv").write_text(f"better;worse\r\n{b};{c}\r\n{a};zz\r\n")  # Excel, ";"
    with pytest.raises(DataError, match=r"s.csv:3: field 'worse': 'zz' is not an item id"):
        load_trusted(tmp_path / "s.csv", pool)
    with pytest.raises(DataError, match=":1: field 'worse': 'zz' is not an item id"):
        load_trusted(_write(tmp_path / "u.jsonl", [{"better": a, "worse": "zz"}]), pool)


def test_parse_covariates():
    assert parse_covariates(None) == ["length", "markdown"]
    assert parse_covariates("length, verbosity") == ["length", "verbosity"]
    assert parse_covariates("none") == []
    with pytest.raises(ValueError, match="repeated"):
        parse_covariates("length,length")


def test_a_builtin_pool_is_built_for_the_k_asked_for():
    """`--k 2` on builtin:controlled?n=4 failed on the pool's own default k=5, and `--k 3`
    on the default pool ranked against a top-3 tied at the boundary (it was built for 5)."""
    small = load_pool("builtin:controlled?n=4", k=2)
    assert small.k == 2 and small.n_items == 4 and small.ambiguous_topk(2) == []
    pool = load_pool("builtin:controlled?seed=0", k=3)
    assert pool.k == 3 and pool.ambiguous_topk(3) == []
    assert load_pool("builtin:controlled?seed=0&k=4", k=3).k == 4  # its own &k= wins
