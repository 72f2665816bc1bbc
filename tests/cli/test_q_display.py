"""The audit table shows a q (and a breakdown's p) that underflowed as a bound, never "0".

A tester's 20,000-item audit showed q = 0 for verbosity and authority: no test on finite
data gives 0 (`stats.tests.P_FLOOR`: such a p is recorded as 1e-300, "p < 1e-300")."""

from __future__ import annotations

import io
import re

from rich.console import Console

from judgeaudit.cli.format import audit_table
from judgeaudit.stats.tests import P_FLOOR


def _probe(q: float | None, rows: list[dict] | None = None) -> dict:
    return {"effect": {"value": 0.25, "ci95": [0.24, 0.25]}, "n": 20000, "q": q, "mde": 0.01,
            "verdict": "biased", "flag": {}, "dropped": {}, "breakdown": {"rows": rows or []}}


def _render(res: dict, width: int = 200) -> str:
    out = io.StringIO()
    Console(file=out, width=width).print(audit_table(res, width))
    return out.getvalue()


def test_a_q_at_the_floor_or_0_reads_as_a_bound_not_0() -> None:
    res = {"judge": "sim", "data": "builtin:facts",
           "probes": {"verbosity": _probe(P_FLOOR), "authority": _probe(0.0),
                      "injection": _probe(9e-288), "bandwagon": _probe(0.2)}}
    text = _render(res)
    rows = {name: next(ln for ln in text.splitlines() if name in ln) for name in res["probes"]}
    assert "< 1e-300" in rows["verbosity"] and "< 1e-300" in rows["authority"], text
    assert "9e-288" in rows["injection"] and "0.2" in rows["bandwagon"], text
    for width in (60, 200):  # a narrow terminal stacks n, q and MDE: the bound is whole
        text = _render(res, width)
        assert text.count("< 1e-300") == 2, text
        assert not re.search(r"(^|[│ ])0($|[│ ])", text, re.M), text  # no q reads a bare 0


def test_a_breakdown_p_at_the_floor_reads_as_a_bound() -> None:
    row = {"value": "chemistry", "effect": {"value": 0.3, "ci95": [0.28, 0.32]}, "n": 5000,
           "n_items": 5000, "p": P_FLOOR}
    res = {"judge": "sim", "data": "builtin:facts", "by": "topic",
           "probes": {"verbosity": _probe(P_FLOOR, [row])}}
    text = _render(res)
    line = next(ln for ln in text.splitlines() if "chemistry" in ln)
    assert "< 1e-300" in line, text
