"""The evaluate report's system level names each system's item count (the small ones
marked) and, where a correlation has no interval, says why."""

from __future__ import annotations

import html as htmllib
import re

from judgeaudit import __version__
from judgeaudit.audit.evaluate import summarize_pointwise
from judgeaudit.data import PointwiseItem
from judgeaudit.judges.pointwise import ScoreVerdict
from judgeaudit.report import render_report


def _results() -> dict:
    items, verdicts = [], []
    said_by = {"a": (1, 1, 2), "b": (2, 2, 3), "c": (3, 4, 4), "d": (5,)}
    for s, (name, said) in enumerate(said_by.items()):
        for k, v in enumerate(said):
            iid = f"{name}:{k}"
            items.append(PointwiseItem(id=iid, prompt="q", response="r", score=float(1 + s),
                                       metadata={"model": name}))
            verdicts.append(ScoreVerdict(iid, str(v), float(v)))
    res = summarize_pointwise(items, verdicts, n_boot=200, system_field="model")
    return {"schema_version": 1, "command": "evaluate", "version": __version__, "judge": "j",
            "data": "d", "selection": {"kind": "all", "n": len(items), "of": len(items)},
            "calls": {}, "seconds": 0.0, "verdicts": [], **res}


def test_system_level_lists_items_per_system_and_why_no_interval():
    page = htmllib.unescape(re.sub(r"\s+", " ", render_report(_results())))
    assert "items per system: a 3, b 3, c 3, d 1 (small)" in page
    assert "small: a system with fewer than 50% of the median system's items" in page
    # 4 system means in the gold order: every resample repeats the perfect rank order
    assert "none: a perfect correlation in the sample" in page
