"""System-level correlation names the systems whose item count is small beside the others'
(fewer than half the median system's items): every system's mean weighs the same there, so
a system cut to 2 of 80 items moved Pearson from 0.995 to 0.434 without a word. Each
system's n is on the terminal, and a correlation without an interval says why."""

from __future__ import annotations

import numpy as np
from rich.console import Console

from judgeaudit.audit.evaluate import summarize_pointwise
from judgeaudit.cli.format import evaluate_table
from judgeaudit.data import PointwiseItem
from judgeaudit.judges.pointwise import ScoreVerdict


def _run(sizes: dict[str, int], seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    items, verdicts = [], []
    for s, (name, n) in enumerate(sizes.items()):
        for k in range(n):
            gold = float(rng.integers(1, 6))
            said = float(min(5, max(1, gold + rng.integers(-1, 2) * (s % 2))))
            iid = f"{name}:{k}"
            items.append(PointwiseItem(id=iid, prompt="q", response="r", score=gold,
                                       metadata={"model": name}))
            verdicts.append(ScoreVerdict(iid, str(said), said))
    return summarize_pointwise(items, verdicts, n_boot=200, system_field="model")


def test_a_system_with_few_items_is_named_in_a_warning():
    res = _run({"a": 80, "b": 80, "c": 80, "d": 2})
    sysl = res["correlation"]["system"]
    assert sysl["small_systems"] == [{"system": "d", "n": 2}]
    assert sysl["median_system_n"] == 80
    assert "fewer than 50% of the median system's items" in sysl["small_system_rule"]
    (w,) = [w for w in res["warnings"] if w.startswith("system level")]
    assert "d (n = 2) has fewer than 50% of the median system's 80 items" in w


def test_systems_of_similar_size_give_no_warning():
    res = _run({"a": 80, "b": 60, "c": 45, "d": 80})
    assert res["correlation"]["system"]["small_systems"] == []
    assert not [w for w in res["warnings"] if w.startswith("system level")]


def test_the_terminal_shows_each_systems_n_and_why_an_interval_is_missing():
    res = _run({"a": 80, "b": 80, "c": 80, "d": 2})
    res.update(judge="j", data="d")
    con = Console(width=250, record=True)
    con.print(evaluate_table(res))
    out = con.export_text()
    assert "items per system by model: a 80, b 80, c 80, d 2 (small)" in out
    assert "small: a system with fewer than 50% of the median system's items (80)" in out


def test_a_missing_system_interval_says_why():
    # 4 systems whose judge means rank exactly as their gold means: every bootstrap resample
    # repeats the perfect rank order, so Spearman and Kendall have no interval
    items, verdicts = [], []
    said_by = [(1, 1), (1, 2), (3, 3), (5, 5)]  # means 1, 1.5, 3, 5: not a line, one order
    for s, name in enumerate("abcd"):
        for k, (gold, said) in enumerate(zip((1 + s, 2 + s), said_by[s], strict=True)):
            iid = f"{name}:{k}"
            items.append(PointwiseItem(id=iid, prompt="q", response="r", score=float(gold),
                                       metadata={"model": name}))
            verdicts.append(ScoreVerdict(iid, str(said), float(said)))
    res = summarize_pointwise(items, verdicts, n_boot=200, system_field="model")
    sysl = res["correlation"]["system"]
    assert sysl["spearman"]["ci95"] == [None, None] and sysl["spearman"]["value"] == 1.0
    res.update(judge="j", data="d")
    con = Console(width=250, record=True)
    con.print(evaluate_table(res))
    out = con.export_text()
    assert ("system level: no interval for Spearman and Kendall: a perfect correlation in the "
            "sample") in out
