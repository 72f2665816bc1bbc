"""The compare page: its A and B effects are over the items the change is over (labelled
"matched items" when an audit judged items the other did not, its own effect then shown
apart and labelled), and every judged or user text on it is escaped: probe names from
plugins, data specs and folder paths, judge specs, titles, notes, template names."""

from __future__ import annotations

import re

import numpy as np

from judgeaudit.audit.compare import compare
from judgeaudit.report import render_report
from tests.report.test_html import ALLOWED, parse


def _probe(vals: dict[str, float], *, title: str = "Position", **extra) -> dict:
    v = float(np.mean(list(vals.values())))
    return {"title": title, "metric": "m", "direction": "d", "no_bias_range": [-0.05, 0.05],
            "effect": {"value": v, "ci95": [v - 0.05, v + 0.05]}, "n": len(vals), "p": 0.5,
            "q": 0.5, "verdict": "not_biased", "notes": [], "per_item": vals, "span": 0.5,
            **extra}


def _audit(probes: dict, *, data: str = "builtin:facts", judge: str = "sim", **extra) -> dict:
    n = max(len(p["per_item"]) for p in probes.values())
    return {"command": "audit", "version": "0.1.0", "judge": judge, "data": data,
            "n_items": n, "template": {"name": "pairwise_v1", "sha256": "ab" * 32},
            "run": {"status": "ok", "message": ""}, "alpha": 0.05,
            "summary": {"biased": []}, "probes": probes, **extra}


def _cell(page, row: int, col: int) -> str:
    return page.rows[row][col]


def test_columns_show_the_matched_effects_and_the_own_ones_apart():
    """A judged 40 items, B those 40 and 40 more at +0.5 each: B's column was +0.25 (its own,
    over 80) beside a change of -0.1 from A's +0.1; now B's column is 0.0 on the 40 matched,
    B - A = the change, and B's own +0.25 (n = 80) is a labelled row of its own."""
    ids = [f"i{k}" for k in range(80)]
    va = {i: (0.5 if k % 5 == 0 else 0.0) for k, i in enumerate(ids[:40])}  # mean +0.1
    vb = {i: (0.0 if k < 40 else 0.5) for k, i in enumerate(ids)}  # 0 on A's, +0.25 in all
    res = compare(_audit({"position": _probe(va)}), _audit({"position": _probe(vb)}))
    page = parse(render_report(res))
    head = page.rows[0]
    assert head[1] == "Effect A (matched items)" and head[2] == "Effect B (matched items)"
    assert _cell(page, 1, 1).startswith("+0.100") and _cell(page, 1, 2).startswith("+0.000")
    assert _cell(page, 1, 3) == "-0.100"  # the change: B - A of the two columns
    text = " ".join("".join(page.text).split())
    assert "Effect B, matched items+0.000" in text and "(n = 40)" in text
    assert "Effect B, all its own items+0.250" in text and "(n = 80; audit B's verdict" in text
    assert "Effect A, all its own items" not in text  # all of A's items are matched
    # every item matched: the plain labels, no own rows
    same = parse(render_report(compare(_audit({"position": _probe(va)}),
                                       _audit({"position": _probe(va)}))))
    assert same.rows[0][1] == "Effect A" and same.rows[0][2] == "Effect B"
    assert "all its own items" not in "".join(same.text)


def test_results_from_before_matched_columns_still_render():
    """A compare results.json written before `over`/`own` existed: its a/b effects are the
    audits' own and are shown as such, with the matched means in their old row."""
    ids = [f"i{k}" for k in range(30)]
    res = compare(_audit({"position": _probe(dict.fromkeys(ids, 0.0))}),
                  _audit({"position": _probe(dict.fromkeys(ids[:20], 0.0))}))
    for key in ("a", "b"):
        res["probes"]["position"][key].pop("over")
        res["probes"]["position"][key].pop("own")
    text = " ".join("".join(parse(render_report(res)).text).split())
    assert "Effects on matched items" in text and "matched items+" not in text
    # its caption must not claim B - A is the change (it said so of any document: t-regress)
    assert "so Effect B − Effect A is the change" not in text
    assert "need not equal the change" in text
    new = " ".join("".join(parse(render_report(compare(
        _audit({"position": _probe(dict.fromkeys(ids, 0.0))}),
        _audit({"position": _probe(dict.fromkeys(ids[:20], 0.0))})))).text).split())
    assert "so Effect B − Effect A is the change" in new


EVIL = "<script>alert(1)</script>"
ATTR = "\"><img src=x onerror=alert(2)>"
ESC = "red\x1b[31mtext\u202e"


def test_every_judged_or_user_text_is_escaped():
    """Probe names (plugins choose them: dict keys, card links, plot labels, only-in lists),
    the data spec, folder paths, judge specs, template names and hashes (in an attribute),
    titles, metrics, notes, verdicts a file makes up and judge differences: all shown as
    text, none as markup, and terminal escapes shown as escapes."""
    ids = [f"{EVIL}{k}" for k in range(30)]
    name = f"plug{EVIL}{ATTR}{ESC}"
    vals = {i: (0.5 if k % 3 == 0 else 0.0) for k, i in enumerate(ids)}
    evil_probe = _probe(vals, title=f"{EVIL}{ESC}", metric=ATTR, direction=EVIL,
                        notes=[EVIL])
    a = _audit({name: evil_probe, f"only-a{EVIL}": _probe(vals)}, data=f"file:{EVIL}{ESC}",
               judge=f"{ATTR}{ESC}",
               judges_used={"sim": {"backend": EVIL}})
    b = _audit({name: _probe(dict.fromkeys(ids, 0.0), title=f"{EVIL}{ESC}"),
                f"only-b{ATTR}": _probe(vals)}, data=f"file:{EVIL}{ESC}", judge=EVIL,
               judges_used={"sim": {"backend": ATTR}})
    a["template"] = {"name": EVIL, "sha256": ATTR}
    res = compare(a, b, a_path=f"/runs/{EVIL}{ESC}", b_path=f"/runs/{ATTR}")
    res["probes"][name]["verdict"] = EVIL  # a results file may say anything
    html = render_report(res)
    assert not re.search(r"<\s*script", html, flags=re.I)
    assert not re.search(r"<\s*img\b", html, flags=re.I)
    assert "\x1b" not in html and "\u202e" not in html and "\\x1b" in html
    page = parse(render_report(res))
    assert not page.errors and {t for t, _ in page.tags} <= ALLOWED
    for _tag, attrs in page.tags:  # no attribute was broken out of
        assert not any(k.startswith("on") for k in attrs), attrs
        assert all(not v or not v.startswith("javascript:") for v in attrs.values())
    text = "".join(page.text)
    for s in (EVIL, ATTR):
        assert text.count(s) >= 8, s  # there, as text
    assert "unknown (" + EVIL in text
