"""Chart labels that keep the part that tells rows apart and stay inside the chart, series
told apart without colour (a marker shape, a dash pattern and a direct label each), and charts
that stop shrinking where their text would turn unreadable."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from judgeaudit.report import svg

NS = "{http://www.w3.org/2000/svg}"
# mitigate's forest rows, as the tester saw them all read "im?quality=1&length=2&se..."
MITIGATE_ROWS = [f"sim?quality=1&length=2&seed=1 {r}" for r in ("win", "BC", "LC")] + \
    [f"sim?quality=1&seed=2 {r}" for r in ("win", "BC", "LC")]
EM = 0.6  # DejaVu Sans, the widest common sans-serif, averages 0.6 em a glyph


def _texts(root: ET.Element) -> list[ET.Element]:
    return list(root.iter(NS + "text"))


def _px(el: ET.Element) -> float:
    """A text element's estimated width at its font size (12 px unless it says)."""
    return len(_shown(el)) * float(el.get("font-size") or 12) * EM


def _shown(el: ET.Element) -> str:
    """A text element's visible text (its <title> tooltip left out)."""
    return (el.text or "") + "".join((c.tail or "") for c in el)


def test_forest_labels_keep_their_distinguishing_end_and_stay_inside_the_chart():
    rows = [{"label": lab, "value": 0.25, "ci95": [0.2, 0.3]} for lab in MITIGATE_ROWS]
    root = ET.fromstring(str(svg.interval_plot(rows, xlabel="win rate (95% CI)")))
    labels = [t for t in _texts(root) if t.get("text-anchor") == "end"
              and any(_shown(t).endswith(e) for e in ("win", "BC", "LC"))]
    shown = [_shown(t) for t in labels]
    assert len(set(shown)) == len(MITIGATE_ROWS), shown  # every row tells itself apart
    for t in labels:  # right-aligned: its start must not run past the left edge
        assert float(t.get("x")) - _px(t) >= 0, (_shown(t), t.get("x"))


def test_a_label_too_long_for_its_room_is_cut_in_the_middle_with_the_whole_in_a_tooltip():
    long = "Diversity (author identity, nationality and the stated credentials) " * 2 + "END"
    root = ET.fromstring(str(svg.interval_plot([{"label": long, "value": 0.1,
                                                 "ci95": [0.0, 0.2]}])))
    (t,) = [t for t in _texts(root) if t.find(NS + "title") is not None]
    assert _shown(t).startswith("Diversity") and _shown(t).endswith("END")
    assert "\u2026" in _shown(t)
    assert t.find(NS + "title").text == long
    assert svg.fit("abcdefghijklmnopqrstuvwxyz", 10 * 12 * svg.CHAR_EM, 12) == "abc\u2026uvwxyz"


def test_a_long_axis_label_wraps_inside_the_chart_not_past_its_edge():
    xlabel = ("level of the factor in the rewritten response (1 = barely there, 5 = as "
              "strong as the rewriter could make it without changing the answer)")
    for chart in (svg.bar_chart(["L1", "L2"], [{"label": "a", "values": [0.1, 0.2]}],
                                xlabel=xlabel),
                  svg.interval_plot([{"label": "a", "value": 0.1, "ci95": [0, 0.2]}],
                                    xlabel=xlabel)):
        root = ET.fromstring(str(chart))
        width = float(root.get("width"))
        parts = [t for t in _texts(root) if _shown(t) and _shown(t) in xlabel
                 and len(_shown(t)) > 10]
        assert " ".join(_shown(t) for t in parts) == xlabel  # whole, over its lines
        for t in parts:
            half = _px(t) / 2
            assert half <= float(t.get("x")) <= width - half, (_shown(t), t.get("x"), width)


def _series_marks(root: ET.Element, line_class: str) -> tuple[dict, dict, dict]:
    shapes: dict[str, set[str]] = {}
    for el in root.iter():
        cls = el.get("class") or ""
        if "marker" in cls.split() and el.get("data-series") is not None:
            shapes.setdefault(el.get("data-series"), set()).update(
                c for c in cls.split() if c.startswith("m-"))
    dashes = {el.get("data-series"): el.get("stroke-dasharray") or "solid"
              for el in root.iter() if el.get("class") == line_class}
    ends = {el.get("data-series"): el for el in root.iter(NS + "text")
            if el.get("class") == "end-label"}
    return shapes, dashes, ends


def test_adaptive_series_each_have_their_own_marker_dash_and_end_label():
    names = ["Verbosity", "Authority (fake citation)", "Bandwagon",
             "Beauty / format (markdown)", "Prompt injection", "Position"]
    series = [{"label": n, "verdict": "not_biased",
               "points": [{"n": 20, "lo": -0.3, "hi": 0.3},
                          {"n": 100 * (i + 1), "lo": -0.05, "hi": 0.01 * i}]}
              for i, n in enumerate(names)]
    root = ET.fromstring(str(svg.sequence_plot(series, width=1000)))
    shapes, dashes, ends = _series_marks(root, "cs")
    keys = [str(i) for i in range(6)]
    assert sorted(shapes) == sorted(dashes) == sorted(ends) == keys
    assert len({frozenset(shapes[k]) for k in keys}) == 6, shapes  # a shape each
    assert len(set(dashes.values())) == 6, dashes  # a dash pattern each
    for k, n in zip(keys, names, strict=True):  # named whole where it ends, verdict too
        assert _shown(ends[k]) == f"{n} (not biased)"


def test_rank_eval_curves_each_have_their_own_marker_dash_and_end_label():
    rules = ["topk", "global", "roundrobin", "random"]
    series = [{"label": r, "points": [{"x": b, "y": 0.6 + 0.05 * i + b / 1000}
                                      for b in (60, 120, 200)]} for i, r in enumerate(rules)]
    root = ET.fromstring(str(svg.curve_plot(series, xlabel="budget", ylabel="recall@5")))
    shapes, dashes, ends = _series_marks(root, "curve")
    assert len({frozenset(s) for s in shapes.values()}) == 4, shapes
    assert len(set(dashes.values())) == 4, dashes
    assert sorted(_shown(e) for e in ends.values()) == sorted(rules)
    ys = sorted(float(e.get("y")) for e in ends.values())  # end labels do not overlap
    assert all(b - a >= 12 for a, b in zip(ys, ys[1:], strict=False)), ys


def test_a_chart_stops_shrinking_at_80_percent_so_its_text_stays_readable():
    out = str(svg.interval_plot([{"label": "a", "value": 0.1, "ci95": [0, 0.2]}], width=760))
    root = ET.fromstring(out)
    width = float(root.get("width"))
    assert root.get("style") == f"min-width: {round(width * 0.8)}px"
