"""A covariate value that is no number (a CSV cell `abc`, a JSON `"abc"`, NaN, true) is
refused as what it is, naming the file, the line, the column and the value: it was reported
as the covariate being missing. An empty cell (a JSON null) still reads as missing."""

import json

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli.rank_cmd import register
from judgeaudit.data.registry import DataError
from judgeaudit.rank.pool import load_pool

CSV = ("id,prompt,response,quality,tokens,model\n"
       "a,q,hello there,1,3,m1\n"
       "b,q,hi,2,abc,m2\n"
       "c,q,yo yo yo,3,,m3\n")


def test_a_csv_cell_that_is_no_number_is_named_with_file_line_column_and_value(tmp_path):
    path = tmp_path / "pool.csv"
    path.write_text(CSV)
    for spec in (str(path), f"csv:{path}"):
        pool = load_pool(spec)
        with pytest.raises(DataError) as e:
            pool.covariates(["tokens"])
        msg = str(e.value)
        assert msg.startswith(f"{path}:3: column 'tokens': expected a finite number, "
                              "got 'abc'"), msg
        assert "missing" not in msg and "item 'b'" in msg
        assert e.value.where == 3
    # a text column asked for as a covariate: not a number, not "unknown covariate"
    with pytest.raises(DataError, match=r"pool.csv:2: column 'model': expected a finite "
                                        r"number, got 'm1'.*2 more item"):
        load_pool(str(path)).covariates(["model"])
    # a cell that reads as a number but no finite one
    (tmp_path / "inf.csv").write_text(CSV.replace(",abc,", ",inf,"))
    with pytest.raises(DataError, match="inf.csv:3: column 'tokens': expected a finite "
                                        "number, got inf"):
        load_pool(str(tmp_path / "inf.csv")).covariates(["tokens"])
    # the column not asked for is no problem; an empty cell alone still reads as missing
    ok = tmp_path / "ok.csv"
    ok.write_text(CSV.replace(",abc,", ",4,"))
    pool = load_pool(str(ok))
    assert pool.covariates(["length"])[0].shape == (3, 1)
    with pytest.raises(DataError, match="covariate 'tokens' is missing for 1 item.*'c'"):
        pool.covariates(["tokens"])


@pytest.mark.parametrize("value, shown", [("abc", "'abc'"), ({"n": 1}, r"\{'n': 1\}"),
                                          (True, "True"), ([1], r"\[1\]")])
def test_a_jsonl_value_that_is_no_number_is_named_with_file_line_field_and_value(
        tmp_path, value, shown):
    rows = [{"id": "a", "prompt": "p", "response": "r", "tokens": 1},
            {"id": "b", "prompt": "p", "response": "s", "tokens": value},
            {"id": "c", "prompt": "p", "response": "t", "tokens": None}]
    path = tmp_path / "pool.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    pool = load_pool(f"jsonl:{path}")
    with pytest.raises(DataError, match=f"pool.jsonl:2: field 'tokens': expected a finite "
                                        f"number, got {shown}") as e:
        pool.covariates(["tokens"])
    assert str(path) in str(e.value) and "missing" not in str(e.value)


def test_rank_refuses_the_cell_before_any_call(tmp_path):
    path = tmp_path / "pool.csv"
    path.write_text(CSV)
    app = typer.Typer()
    register(app)
    r = CliRunner().invoke(app, ["rank", "--judge", "sim", "--items", str(path),
                                 "--covariates", "tokens", "--budget", "2",
                                 "--out", str(tmp_path / "o"),
                                 "--cache", str(tmp_path / "c.sqlite")])
    out = r.output.replace("\n", " ")
    assert r.exit_code == 2, r.output
    assert "pool.csv:3: column 'tokens': expected a finite number, got 'abc'" in out, out


@pytest.mark.parametrize("name", ["length", "words"])
def test_a_column_named_like_a_computed_covariate_is_refused_not_replaced(tmp_path, name):
    """A pool's own `length` (say, in tokens) was silently replaced by the length computed
    from the text when asked for; an unasked one stays harmless."""
    path = tmp_path / "pool.csv"
    path.write_text(f"id,prompt,response,{name}\na,q,hello there,120\nb,q,hi,7\n")
    pool = load_pool(str(path))
    with pytest.raises(DataError) as e:
        pool.covariates([name])
    assert str(e.value).startswith(f"{path}:2: column {name!r} has the name of a covariate "
                                   "computed from each response's text"), str(e.value)
    assert f"{name + '_given'!r}" in str(e.value)
    X, info = pool.covariates(["markdown"])  # a column nobody asks for: fine
    assert X.shape == (2, 1) and info[0].source == "text"
    jl = tmp_path / "pool.jsonl"
    jl.write_text("".join(json.dumps({"id": i, "prompt": "q", "response": "x y", name: 3})
                          + "\n" for i in "ab"))
    with pytest.raises(DataError, match=rf"pool.jsonl:1: field '{name}' has the name"):
        load_pool(str(jl)).covariates([name])


@pytest.mark.parametrize("name", ["pool.jsonl.gz", "POOL.JSONL", "pool.JsonL.xz", "pool.csv.gz",
                                  "POOL.CSV.BZ2", "pool.tsv.gz"])
def test_a_bare_pool_path_compressed_or_upper_case_is_read(tmp_path, name):
    """`--items pool.jsonl.gz` and `--items POOL.JSONL` said "bad spec: kind must be a word",
    though the readers open compressed files and the README says .gz files are read."""
    import bz2
    import gzip
    import lzma

    from judgeaudit.rank.pool import bare_pool_path

    rows = [{"id": k, "prompt": "q", "response": f"answer {k}", "quality": i}
            for i, k in enumerate("abc")]
    text = ("".join(json.dumps(r) + "\n" for r in rows) if ".jsonl" in name.lower() else
            "id,prompt,response,quality\n" + "".join(
                f"{r['id']},{r['prompt']},{r['response']},{r['quality']}\n" for r in rows))
    if ".tsv" in name:
        text = text.replace(",", "\t")
    data = text.encode()
    opener = {".gz": gzip.compress, ".bz2": bz2.compress, ".xz": lzma.compress}
    for suffix, pack in opener.items():
        if name.lower().endswith(suffix):
            data = pack(data)
    path = tmp_path / name
    path.write_bytes(data)
    assert bare_pool_path(str(path))
    pool = load_pool(str(path))
    assert pool.ids == ["a", "b", "c"] and pool.meta["kind"] == (
        "jsonl" if ".jsonl" in name.lower() else "csv")
    assert not bare_pool_path(f"jsonl:{path}") and not bare_pool_path("builtin:controlled")
