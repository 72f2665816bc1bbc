"""SummEval loader on small files written here in both released shapes (the paired JSONL and a
folder of per-system M<n>_outputs_annotations.jsonl files, 3 systems x 2 documents): gold
scores are the expert or crowd means for the chosen dimension, items keep their document and
system; bad records are named by file, line and field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.data import DataError, PointwiseItem, load


def _rec(i: int, model: str, expert: list[dict], crowd: list[dict], **kw) -> dict:
    rec = {"id": f"dm-test-{i:04x}", "model_id": model, "decoded": f"summary {i} by {model}",
           "text": f"Article {i}: a long news story.", "references": [f" ref summary {i} "],
           "filepath": f"cnndm/dailymail/stories/{i:04x}.story",
           "expert_annotations": expert, "turker_annotations": crowd}
    rec.update(kw)
    return rec


def _ann(c: int, s: int, f: int, r: int) -> dict:
    return {"coherence": c, "consistency": s, "fluency": f, "relevance": r}


EXPERT = [_ann(2, 5, 4, 3), _ann(3, 5, 5, 3), _ann(1, 4, 5, 4)]
CROWD = [_ann(4, 4, 4, 4), _ann(5, 3, 4, 4), _ann(3, 4, 3, 5), _ann(4, 4, 4, 4), _ann(4, 5, 5, 3)]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    p = tmp_path / "model_annotations.aligned.paired.jsonl"
    rows = [_rec(1, "M11", EXPERT, CROWD), _rec(1, "M8", CROWD[:3], EXPERT),
            _rec(2, "M11", [_ann(5, 5, 5, 5)] * 3, [_ann(1, 1, 1, 1)] * 5)]
    p.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    return p


def test_expert_means_per_aspect(path: Path) -> None:
    items = load(f"summeval:{path}")
    assert [it.id for it in items] == ["summeval:dm-test-0001:M11", "summeval:dm-test-0001:M8",
                                       "summeval:dm-test-0002:M11"]
    it = items[0]
    assert isinstance(it, PointwiseItem)
    assert it.score == pytest.approx(2.0)  # (2 + 3 + 1) / 3 experts, coherence
    assert it.response == "summary 1 by M11" and "Article 1" in it.prompt
    assert it.reference == "ref summary 1" and it.rubric.startswith("Coherence")
    assert sorted(it.rubric_levels) == ["1", "2", "3", "4", "5"]
    assert it.metadata["crowd_mean"]["coherence"] == pytest.approx(4.0)
    assert it.metadata["expert_scores"]["fluency"] == [4.0, 5.0, 5.0]
    rel = load(f"summeval:{path}?aspect=relevance")[0]
    assert rel.score == pytest.approx(10 / 3) and rel.rubric.startswith("Relevance")


def test_crowd_gold_and_folder(path: Path) -> None:
    crowd = load(f"summeval:{path}?scores=crowd&aspect=consistency")
    assert crowd[0].score == pytest.approx(4.0) and crowd[2].score == 1.0
    assert len(load(f"summeval:{path.parent}?limit=2")) == 2


@pytest.mark.parametrize("mutate,msg", [
    (lambda r: r.pop("text"), "paired release"),
    (lambda r: r["expert_annotations"][1].update(coherence=7), r"expert_annotations\[1\]"),
    (lambda r: r.update(turker_annotations=[]), "turker_annotations"),
    (lambda r: r.update(decoded=None), "'decoded'"),
    (lambda r: r.update(references="x"), "references"),
])
def test_bad_records_are_named(tmp_path: Path, mutate, msg: str) -> None:
    good = _rec(1, "M1", EXPERT, CROWD)
    bad = _rec(2, "M1", [dict(a) for a in EXPERT], CROWD)
    mutate(bad)
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DataError, match=rf"s.jsonl:2: .*{msg}"):
        load(f"summeval:{p}")


def test_bad_params(path: Path) -> None:
    with pytest.raises(DataError, match="aspect"):
        load(f"summeval:{path}?aspect=style")
    with pytest.raises(DataError, match="unknown parameter"):
        load(f"summeval:{path}?score=expert")


# ---- the per-system layout: a folder of M<n>_outputs_annotations.jsonl -------------------------

SYSTEMS = ("M0", "M2", "M11")  # M2 before M11: numeric order, not text order
DOCS = ("dm-test-aaaa", "cnn-test-bbbb")


def _expert(system: int, doc: int) -> list[dict]:
    """Three experts whose coherence mean is system + doc + 1 (distinct per summary)."""
    c = system + doc + 1
    return [_ann(c, 5, 4, 2), _ann(c, 4, 4, 3), _ann(c, 3, 5, 4)]


def _sys_rec(s: int, d: int, **kw) -> dict:
    rec = {"id": DOCS[d], "model_id": SYSTEMS[s], "decoded": f"summary of {DOCS[d]} by "
           f"{SYSTEMS[s]}", "text": f"Article {DOCS[d]}.", "references": [f"ref {DOCS[d]}"],
           "expert_annotations": _expert(s, d), "turker_annotations": [_ann(3, 3, 3, 3)] * 5}
    rec.update(kw)
    return rec


def _write(path: Path, recs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return path


@pytest.fixture
def systems(tmp_path: Path) -> Path:
    """3 systems x 2 documents, one file per system, plus files the loader must ignore."""
    d = tmp_path / "summeval"
    d.mkdir()
    for s, name in enumerate(SYSTEMS):
        _write(d / f"{name}_outputs_annotations.jsonl", [_sys_rec(s, k) for k in range(2)])
    (d / "README.md").write_text("not data")
    (d / "M5_outputs_annotations.jsonl.bak").write_text("not data either")
    return d


def test_per_system_folder_keeps_system_and_document(systems: Path) -> None:
    items = load(f"summeval:{systems}")
    assert [it.id for it in items] == [f"summeval:{doc}:{m}" for m in SYSTEMS for doc in DOCS]
    by_doc: dict[str, list[str]] = {}
    by_sys: dict[str, list[float]] = {}
    for it in items:
        assert isinstance(it, PointwiseItem)
        md = it.metadata
        assert it.response == f"summary of {md['doc_id']} by {md['model_id']}"
        assert f"Article {md['doc_id']}." in it.prompt
        by_doc.setdefault(md["doc_id"], []).append(md["model_id"])
        by_sys.setdefault(md["model_id"], []).append(it.score)
    assert by_doc == {doc: list(SYSTEMS) for doc in DOCS}  # summary level: one per system
    # gold = the expert mean of the dimension: coherence is system + doc + 1
    assert by_sys == {"M0": [1.0, 2.0], "M2": [2.0, 3.0], "M11": [3.0, 4.0]}
    assert items[0].metadata["file"] == "M0_outputs_annotations.jsonl"
    assert items[0].metadata["line"] == 1 and items[1].metadata["line"] == 2


def test_dimension_parameter_and_its_older_name(systems: Path) -> None:
    rel = load(f"summeval:{systems}?dimension=relevance")
    assert [it.score for it in rel] == [3.0] * 6 and rel[0].rubric.startswith("Relevance")
    assert rel[0].metadata["dimension"] == "relevance"
    assert load(f"summeval:{systems}?aspect=relevance") == rel
    assert load(f"summeval:{systems}?aspect=relevance&dimension=relevance") == rel
    with pytest.raises(DataError, match="'dimension' .fluency. and 'aspect' .relevance. "
                                        "disagree"):
        load(f"summeval:{systems}?aspect=relevance&dimension=fluency")
    with pytest.raises(DataError, match="parameter 'dimension': expected one of"):
        load(f"summeval:{systems}?dimension=style")


def test_both_layouts_give_the_same_items(systems: Path, tmp_path: Path) -> None:
    paired = _write(tmp_path / "paired.jsonl",
                    [_sys_rec(s, k) for s in range(3) for k in range(2)])
    a, b = load(f"summeval:{systems}"), load(f"summeval:{paired}")
    strip = ("file", "line")
    assert [(i.id, i.score, i.prompt, i.response, {k: v for k, v in i.metadata.items()
                                                   if k not in strip}) for i in a] == \
           [(i.id, i.score, i.prompt, i.response, {k: v for k, v in i.metadata.items()
                                                   if k not in strip}) for i in b]


def test_one_per_system_file(systems: Path) -> None:
    items = load(f"summeval:{systems / 'M2_outputs_annotations.jsonl'}")
    assert [it.metadata["model_id"] for it in items] == ["M2", "M2"]


def test_model_id_from_the_file_name_and_contradictions(systems: Path) -> None:
    f = systems / "M2_outputs_annotations.jsonl"
    recs = [_sys_rec(1, 0), _sys_rec(1, 1)]
    del recs[0]["model_id"]
    recs[1]["model_id"] = None
    _write(f, recs)
    assert [it.id for it in load(f"summeval:{f}")] == [f"summeval:{d}:M2" for d in DOCS]
    recs[1]["model_id"] = "M8"
    _write(f, recs)
    with pytest.raises(DataError, match=r"M2_outputs_annotations.jsonl:2: field 'model_id': "
                                        r"'M8' in the file of system 'M2'"):
        load(f"summeval:{systems}")


def test_missing_article_comes_from_another_system(systems: Path) -> None:
    before = load(f"summeval:{systems}")
    for s, name in enumerate(SYSTEMS[1:], start=1):  # only M0 carries the articles
        f = systems / f"{name}_outputs_annotations.jsonl"
        _write(f, [_sys_rec(s, 0, text=""), {k: v for k, v in _sys_rec(s, 1).items()
                                              if k != "text"}])
    after = load(f"summeval:{systems}")
    assert [i.prompt for i in after] == [i.prompt for i in before]
    assert [i.metadata["article_from_other_record"] for i in after] == [False] * 2 + [True] * 4
    # no record of document 1 has its article: the first record lacking it is named
    _write(systems / "M0_outputs_annotations.jsonl", [_sys_rec(0, 0), _sys_rec(0, 1, text=None)])
    with pytest.raises(DataError, match=r"M0_outputs_annotations.jsonl:2: field 'text' \(the "
                                        r"source article\): missing, and no other record of "
                                        r"document 'cnn-test-bbbb'.*paired release"):
        load(f"summeval:{systems}")


def test_crowd_ratings_are_optional_unless_they_are_the_gold(systems: Path) -> None:
    f = systems / "M11_outputs_annotations.jsonl"
    _write(f, [_sys_rec(2, 0), {k: v for k, v in _sys_rec(2, 1).items()
                                if k != "turker_annotations"}])
    items = load(f"summeval:{systems}")
    assert items[-1].metadata["crowd_mean"] is None and items[-1].score == 4.0
    with pytest.raises(DataError, match=r"M11_outputs_annotations.jsonl:2: field "
                                        r"'turker_annotations': .*missing"):
        load(f"summeval:{systems}?scores=crowd")


def test_duplicate_summary_across_lines_names_both(systems: Path) -> None:
    f = systems / "M2_outputs_annotations.jsonl"
    _write(f, [_sys_rec(1, 0), _sys_rec(1, 1), _sys_rec(1, 0)])
    with pytest.raises(DataError, match=r"M2_outputs_annotations.jsonl:3: .*duplicate item id "
                                        r"'summeval:dm-test-aaaa:M2' \(first at line 1\)"):
        load(f"summeval:{systems}")


def test_layout_choice_in_a_folder(systems: Path) -> None:
    with pytest.raises(DataError, match=r"model_annotations.aligned.paired.jsonl: no such file"):
        load(f"summeval:{systems}?layout=paired")
    _write(systems / "model_annotations.aligned.paired.jsonl", [_sys_rec(0, 0)])
    assert len(load(f"summeval:{systems}")) == 1  # the paired file wins by default
    assert len(load(f"summeval:{systems}?layout=paired")) == 1
    assert len(load(f"summeval:{systems}?layout=systems")) == 6
    with pytest.raises(DataError, match="parameter 'layout'"):
        load(f"summeval:{systems}?layout=both")


def test_folder_without_summeval_files(tmp_path: Path) -> None:
    (tmp_path / "M1_outputs.jsonl").write_text("{}\n")
    with pytest.raises(DataError, match=r"no SummEval file in this folder; expected "
                                        r"model_annotations.aligned.paired.jsonl or per-system"):
        load(f"summeval:{tmp_path}")
    with pytest.raises(DataError, match=r"expected per-system files"):
        load(f"summeval:{tmp_path}?layout=systems")


def test_shared_data_summeval_if_present(shared_data: Path) -> None:
    """The shared data has no SummEval today (see its README); this runs when it is added."""
    folder = shared_data / "summeval"
    if not folder.exists():
        pytest.skip(f"no SummEval in the shared data ({folder} absent)")
    items = load(f"summeval:{folder}")
    docs = {it.metadata["doc_id"] for it in items}
    systems = {it.metadata["model_id"] for it in items}
    assert len(items) == len({it.id for it in items}) <= len(docs) * len(systems)
    assert all(1 <= it.score <= 5 and it.prompt and it.response is not None for it in items)
