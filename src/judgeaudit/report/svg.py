"""Plots as inline SVG strings, written by hand so a report needs no plotting library and no
network. Every text label goes through `esc`: labels come from results.json (category names,
judge names, probe titles) and are untrusted. The return values are `Markup`, the only markup
a report template inserts without escaping, so nothing else may build them."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from markupsafe import Markup

from judgeaudit.outcome import biased_small
from judgeaudit.textfile import visible

# Okabe-Ito: distinguishable with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
           "#000000"]
VERDICT_COLOURS = {"biased": "#b3261e", "not_biased": "#1b7f3b", "underpowered": "#a15c00"}
VERDICT_LABELS = {"biased": "biased", "not_biased": "not biased", "underpowered": "underpowered",
                  "run_failed": "run failed", "not_run": "not run"}
NEUTRAL = "#555555"
SMALL_LABEL = "biased, small"  # a biased verdict whose whole interval is in the no-bias range
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif"

def verdict_label(verdict: Any, ci: Any = None, no_bias_range: Any = None) -> str:
    """A verdict as a reader sees it: "biased, small" for a small bias (`biased_small`)."""
    if biased_small(verdict, ci, no_bias_range):
        return SMALL_LABEL
    return VERDICT_LABELS.get(verdict, clip(verdict, 14))


def esc(text: Any) -> str:
    """Escape any value for an SVG/HTML text node or a quoted attribute.

    Shows acting characters as escapes (`visible`: a label 'a\\x1b[31mb' reads so, not 'ab'
    as when they were dropped), which also leaves out every character XML cannot carry, then
    replaces & < > " ' with entities, so the SVG stays well-formed even when extracted from
    the page."""
    s = visible(str(text))
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;").replace("'", "&#39;"))


def clip(text: Any, limit: int) -> str:
    """Shorten a raw label (before escaping, so no entity is cut in half), measured as it will
    show: with its acting characters as escapes (`visible`)."""
    s = visible(str(text))
    return s if len(s) <= limit else s[: max(limit - 1, 1)] + "\u2026"


def finite(x: Any) -> float | None:
    """A plottable float, or None for None/NaN/inf/non-numbers (bools are not numbers here)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def fmt_num(x: float | None, digits: int = 3) -> str:
    """A short human label for a value: up to `digits` significant digits, '-' when missing."""
    if x is None:
        return "\u2013"
    if abs(x) < 1e-12:  # 0 up to rounding (an interval bound of 2.2e-16 is 0)
        return "0"
    if abs(x) >= 1000 or abs(x) < 0.001:
        return f"{x:.{digits - 1}e}" if abs(x) < 0.001 else f"{x:,.0f}"
    return f"{x:.{digits}g}"


def _c(v: float) -> str:
    """A coordinate: one decimal is plenty at screen resolution."""
    return f"{v:.1f}"


def nice_ticks(lo: float, hi: float, target: int = 5) -> list[float]:
    """Round tick values (1, 2, 2.5 or 5 times a power of ten) covering [lo, hi]."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError("tick range must be finite")
    if hi < lo:
        lo, hi = hi, lo
    if hi == lo:
        pad = abs(lo) * 0.1 or 1.0
        lo, hi = lo - pad, hi + pad
    raw = (hi - lo) / max(target, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step + 1e-9)
    last = math.ceil(hi / step - 1e-9)
    return [round(k * step, 12) for k in range(first, last + 1)]


class _Scale:
    """Linear map from a data domain to a pixel range."""

    def __init__(self, d0: float, d1: float, r0: float, r1: float) -> None:
        self.d0, self.d1, self.r0, self.r1 = d0, d1, r0, r1

    def __call__(self, v: float) -> float:
        if self.d1 == self.d0:
            return (self.r0 + self.r1) / 2
        return self.r0 + (v - self.d0) / (self.d1 - self.d0) * (self.r1 - self.r0)


def _open(width: int, height: int, title: str, desc: str = "") -> list[str]:
    label = esc(title or desc or "chart")
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        # shrinks with a narrow page to 80% (12 px text to 9.6 px), then its figure scrolls
        f'style="min-width: {round(width * 0.8)}px" '
        f'aria-label="{label}" font-family="{esc(FONT)}" font-size="12">',
        f"<title>{label}</title>",
    ]
    if desc:
        out.append(f"<desc>{esc(desc)}</desc>")
    return out


def _text(x: float, y: float, s: str, *, anchor: str = "start", size: int | None = None,
          weight: str | None = None, fill: str = "#222222", extra: str = "",
          full: str | None = None) -> str:
    """A text element; `s` is raw and escaped here. `full` adds a tooltip with the whole label."""
    attrs = f'x="{_c(x)}" y="{_c(y)}" text-anchor="{anchor}" fill="{fill}"'
    if size:
        attrs += f' font-size="{size}"'
    if weight:
        attrs += f' font-weight="{weight}"'
    if extra:
        attrs += " " + extra
    shown = full is None or visible(str(full)) == visible(s)  # a label clip() left whole
    tip = "" if shown else f"<title>{esc(full)}</title>"
    return f"<text {attrs}>{tip}{esc(s)}</text>"


# Average glyph width in em of the sans-serif fonts a browser picks for FONT (DejaVu Sans,
# the widest common one, measures about 0.6): labels are fitted to pixels with it, so a long
# label is shortened before it runs off the chart's edge (the browser clips at the viewBox).
CHAR_EM = 0.62
# One marker shape and one dash pattern per series, so series stay apart without colour
# (grayscale print, colour-vision deficiencies): colour is never the only cue.
MARKERS = ["circle", "square", "triangle", "diamond", "triangle-down", "plus", "cross", "ring"]
DASHES = ["", "6 3", "2 3", "9 3 2 3", "4 2", "1 2", "12 4", "6 2 2 2 2 2"]


def text_px(text: Any, size: float) -> float:
    """Estimated width in pixels of a raw label as it shows (acting characters as escapes)."""
    return len(visible(str(text))) * size * CHAR_EM


def fit(text: Any, max_px: float, size: float = 12) -> str:
    """Shorten a raw label to about `max_px` by cutting its middle, so both its start and its
    end (where names differ: '...seed=1 win' vs '...seed=1 LC') stay readable."""
    s = visible(str(text))
    limit = max(int(max_px / (size * CHAR_EM)), 5)
    if len(s) <= limit:
        return s
    head = (limit - 1) * 2 // 5
    tail = limit - 1 - head
    return s[:head] + "\u2026" + s[len(s) - tail:]


def wrap(text: Any, max_px: float, size: float = 12, max_lines: int = 2) -> list[str]:
    """Break a raw label into at most `max_lines` lines of about `max_px` at spaces; what
    does not fit is cut in its middle (`fit`), never at its end."""
    s = visible(str(text))
    limit = max(int(max_px / (size * CHAR_EM)), 5)
    lines: list[str] = []
    cur = ""
    for word in s.split(" "):
        if cur and len(cur) + 1 + len(word) > limit:
            lines.append(cur)
            cur = word
        else:
            cur = f"{cur} {word}" if cur else word
    lines.append(cur)
    if len(lines) > max_lines:
        lines = lines[: max_lines - 1] + [" ".join(lines[max_lines - 1:])]
    return [fit(ln, max_px, size) for ln in lines]


def _lines(x: float, y: float, lines: list[str], full: Any, *, size: int = 11,
           anchor: str = "middle", weight: str | None = None, fill: str = "#222222") -> str:
    """One text element per line, the first with the whole label as a tooltip when any of it
    was cut."""
    whole = " ".join(lines) == visible(str(full))
    return "".join(_text(x, y + i * round(size * 1.25, 1), ln, anchor=anchor, size=size,
                         weight=weight, fill=fill, full=None if whole or i else full)
                   for i, ln in enumerate(lines))


def _centred(text: Any, centre: float, width: float, size: int = 11) -> tuple[float, list[str]]:
    """An axis label's lines and an x that keeps them inside [0, width] (centred on `centre`
    where they fit)."""
    lines = wrap(text, width - 16, size)
    half = max(text_px(ln, size) for ln in lines) / 2
    return min(max(centre, half + 8), width - half - 8), lines


def marker(shape: str, cx: float, cy: float, col: str, *, r: float = 4.0, cls: str = "marker",
           series: int | None = None, tip: str = "") -> str:
    """One marker of the given shape (MARKERS), with an optional tooltip."""
    a = f'class="{cls} m-{shape}"' + (f' data-series="{series}"' if series is not None else "")
    t = f"<title>{esc(tip)}</title>" if tip else ""
    x, y = cx, cy
    if shape == "circle":
        return f'<circle {a} cx="{_c(x)}" cy="{_c(y)}" r="{r}" fill="{col}">{t}</circle>'
    if shape == "ring":
        return (f'<circle {a} cx="{_c(x)}" cy="{_c(y)}" r="{r}" fill="#ffffff" stroke="{col}" '
                f'stroke-width="2">{t}</circle>')
    if shape in ("plus", "cross"):
        d = (f"M{_c(x - r)},{_c(y)}H{_c(x + r)}M{_c(x)},{_c(y - r)}V{_c(y + r)}"
             if shape == "plus" else
             f"M{_c(x - r)},{_c(y - r)}L{_c(x + r)},{_c(y + r)}"
             f"M{_c(x + r)},{_c(y - r)}L{_c(x - r)},{_c(y + r)}")
        return f'<path {a} d="{d}" fill="none" stroke="{col}" stroke-width="2.2">{t}</path>'
    k = 1.25
    pts = {"square": [(-r, -r), (r, -r), (r, r), (-r, r)],
           "triangle": [(0, -r * k), (r * k, r * 0.85), (-r * k, r * 0.85)],
           "triangle-down": [(0, r * k), (r * k, -r * 0.85), (-r * k, -r * 0.85)],
           "diamond": [(0, -r * k), (r * k, 0), (0, r * k), (-r * k, 0)]}[shape]
    d = "M" + "L".join(f"{_c(x + dx)},{_c(y + dy)}" for dx, dy in pts) + "Z"
    return f'<path {a} d="{d}" fill="{col}">{t}</path>'


def _spread(ys: list[float], gap: float, lo: float, hi: float) -> list[float]:
    """Move label positions apart to at least `gap` in their order, kept within [lo, hi]."""
    order = sorted(range(len(ys)), key=lambda i: ys[i])
    out = list(ys)
    prev = lo - gap
    for i in order:
        out[i] = max(out[i], prev + gap)
        prev = out[i]
    over = prev - hi
    if over > 0:  # pushed past the bottom: shift the whole run up as far as the top allows
        for i in order:
            out[i] -= over
        floor = lo
        for i in order:
            out[i] = max(out[i], floor)
            floor = out[i] + gap
    return out


def _end_labels(ends: list[tuple[str, float, float, str, int]], label_x: float, max_px: float,
                top: float, bottom: float, size: int = 11) -> list[str]:
    """Direct labels in the right margin, one per series at the height of its last point
    (moved apart so none overlap), each with its series' marker and a leader line from the
    point: a series is named where it ends, no legend lookup by colour.

    `ends` items are (label, x of the end point, y of the end point, colour, series index)."""
    gap = size + 4
    ys = _spread([e[2] for e in ends], gap, top + size, bottom)
    out = []
    for (lab, ex, ey, col, k), ly in zip(ends, ys, strict=True):
        shape = MARKERS[k % len(MARKERS)]
        out.append(f'<line class="leader" x1="{_c(ex + 5)}" y1="{_c(ey)}" x2="{_c(label_x - 2)}" '
                   f'y2="{_c(ly - size / 3)}" stroke="{col}" stroke-width="1" '
                   f'stroke-opacity="0.6"/>')
        out.append(marker(shape, label_x + 6, ly - size / 3, col, series=k, cls="key"))
        out.append(_text(label_x + 16, ly, fit(lab, max_px - 16, size), size=size,
                         fill="#222222", extra=f'class="end-label" data-series="{k}"', full=lab))
    return out


def bar_chart(
    categories: Sequence[Any],
    series: Sequence[dict[str, Any]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    width: int = 640,
    height: int = 300,
) -> Markup:
    """Grouped vertical bars: one group per category, one bar per series.

    `series` items are {"label": str, "values": [number | None, ...]} with one value per
    category; a missing value draws no bar and the label "n/a"."""
    cats = [str(c) for c in categories]
    if not cats:
        raise ValueError("bar chart needs at least one category")
    sers = []
    for i, s in enumerate(series):
        vals = list(s.get("values") or [])
        if len(vals) != len(cats):
            raise ValueError(f"series {i} has {len(vals)} values for {len(cats)} categories")
        sers.append((str(s.get("label", f"series {i + 1}")), [finite(v) for v in vals]))
    if not sers:
        raise ValueError("bar chart needs at least one series")
    nums = [v for _, vals in sers for v in vals if v is not None]
    lo, hi = min([0.0, *nums]), max([0.0, *nums])
    if lo == hi:
        hi = 1.0
    ticks = nice_ticks(lo, hi)
    lo, hi = min(ticks[0], lo), max(ticks[-1], hi)

    ml, mr = 60, 16
    # legend entries flow into as many rows as they need, none past the right edge
    legend: list[tuple[float, int, str, str]] = []  # (x, row, shown, full)
    if len(sers) > 1:
        lx, row = float(ml), 0
        for lab, _ in sers:
            short = fit(lab, min(240.0, width - ml - mr - 16), 12)
            w = 16 + text_px(short, 12) + 18
            if lx > ml and lx + w > width - mr:
                lx, row = float(ml), row + 1
            legend.append((lx, row, short, lab))
            lx += w
    xl_x, xl_lines = _centred(xlabel, ml + (width - ml - mr) / 2, width) if xlabel else (0, [])
    mt = 34 + 18 * (legend[-1][1] + 1 if legend else 0)
    mb = 48 + 14 * len(xl_lines)
    height += 18 * (legend[-1][1] if legend else 0) + 14 * max(len(xl_lines) - 1, 0)
    pw, ph = width - ml - mr, height - mt - mb
    y = _Scale(lo, hi, mt + ph, mt)
    out = _open(width, height, title, _bar_desc(cats, sers))
    if title:
        out.append(_text(ml, 18, fit(title, width - ml - 8, 14), size=14, weight="600",
                         full=title))
    for i, (lx, row, short, lab) in enumerate(legend):
        col = PALETTE[i % len(PALETTE)]
        ly = 34 + 18 * row
        out.append(f'<rect x="{_c(lx)}" y="{ly - 8}" width="12" height="12" fill="{col}"/>')
        out.append(_text(lx + 16, ly + 2, short, full=lab))
    for t in ticks:
        ty = y(t)
        out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_c(ty)}" y2="{_c(ty)}" '
                   f'stroke="#e3e3e3" stroke-width="1"/>')
        out.append(_text(ml - 6, ty + 4, fmt_num(t), anchor="end", size=11, fill="#555555"))
    out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_c(y(0))}" y2="{_c(y(0))}" '
               f'stroke="#888888" stroke-width="1"/>')
    group = pw / len(cats)
    bw = min(56.0, group * 0.8 / len(sers))
    for ci, cat in enumerate(cats):
        gx = ml + group * ci + (group - bw * len(sers)) / 2
        for si, (lab, vals) in enumerate(sers):
            v = vals[ci]
            bx = gx + si * bw
            if v is None:
                out.append(_text(bx + bw / 2, y(0) - 4, "n/a", anchor="middle", size=10,
                                 fill="#777777"))
                continue
            top, bot = sorted((y(v), y(0)))
            col = PALETTE[si % len(PALETTE)]
            out.append(f'<rect x="{_c(bx + 1)}" y="{_c(top)}" width="{_c(max(bw - 2, 1))}" '
                       f'height="{_c(max(bot - top, 0.5))}" fill="{col}">'
                       f"<title>{esc(cat)} \u2013 {esc(lab)}: {esc(fmt_num(v))}</title></rect>")
            ly = top - 4 if v >= 0 else bot + 12
            out.append(_text(bx + bw / 2, ly, fmt_num(v), anchor="middle", size=10))
        out.append(_text(ml + group * (ci + 0.5), mt + ph + 16, fit(cat, group - 4, 11),
                         anchor="middle", size=11, full=cat))
    if ylabel:
        out.append(_text(14, mt + ph / 2, fit(ylabel, ph, 11), anchor="middle", size=11,
                         extra=f'transform="rotate(-90 14 {_c(mt + ph / 2)})"', full=ylabel))
    if xlabel:
        out.append(_lines(xl_x, mt + ph + 36, xl_lines, xlabel))
    out.append("</svg>")
    return Markup("".join(out))


def _bar_desc(cats: list[str], sers: list[tuple[str, list[float | None]]]) -> str:
    """A text version of the chart for screen readers."""
    parts = []
    for lab, vals in sers:
        parts.append(lab + ": " + ", ".join(f"{c} {fmt_num(v)}"
                                             for c, v in zip(cats, vals, strict=True)))
    return "; ".join(parts)


def interval_plot(
    rows: Sequence[dict[str, Any]],
    *,
    title: str = "",
    xlabel: str = "",
    reference: float | None = 0.0,
    signed: bool = False,
    width: int = 760,
    row_height: int = 30,
) -> Markup:
    """Point-and-interval (forest) plot, one row per estimate.

    Row keys: label, value, ci95 ([lo, hi] or None), optional no_bias_range ([lo, hi], drawn as
    a shaded band on that row), optional verdict (colours the point and adds its text label,
    so colour never carries the meaning alone). `reference` draws a vertical line (0 = no
    effect); None draws none. The numbers printed beside each row use 3 decimals (`signed`
    adds a + to positive values, as effects are shown elsewhere in the report)."""
    if not rows:
        raise ValueError("interval plot needs at least one row")
    prepared = []
    span: list[float] = [] if reference is None else [reference]
    for r in rows:
        v = finite(r.get("value"))
        ci = r.get("ci95") or [None, None]
        lo, hi = (finite(ci[0]), finite(ci[1])) if len(ci) == 2 else (None, None)
        nb = r.get("no_bias_range")
        nb = (finite(nb[0]), finite(nb[1])) if nb and len(nb) == 2 else None
        if nb and (nb[0] is None or nb[1] is None):
            nb = None
        prepared.append((str(r.get("label", "")), v, lo, hi, nb, r.get("verdict")))
        span += [x for x in (v, lo, hi) if x is not None] + (list(nb) if nb else [])
    if not span:
        span = [0.0, 1.0]
    ticks = nice_ticks(min(span), max(span))
    d0, d1 = min(ticks[0], min(span)), max(ticks[-1], max(span))
    has_nb = any(p[4] for p in prepared)
    has_verdict = any(p[5] for p in prepared)

    # the label column takes the longest label (up to 300 px; longer ones are cut in their
    # middle), and the chart widens so the plot keeps at least 260 px
    ml = int(min(max(190.0, max(text_px(p[0], 12) for p in prepared) + 22), 300.0))
    mr = 300 if has_verdict else 200
    width = max(width, ml + mr + 260)
    xl_x, xl_lines = _centred(xlabel, ml + (width - ml - mr) / 2, width) if xlabel else (0, [])
    mt = 30 + (20 if title else 0) + (18 if has_nb else 0)
    mb = 40 + 14 * len(xl_lines) + (2 if xl_lines else 0)
    height = mt + row_height * len(prepared) + mb
    pw = width - ml - mr
    x = _Scale(d0, d1, ml, ml + pw)
    out = _open(width, height, title, _interval_desc(prepared))
    if title:
        out.append(_text(8, 18, fit(title, width - 16, 14), size=14, weight="600", full=title))
    if has_nb:
        ly = mt - 22
        out.append(f'<rect x="{ml}" y="{ly - 10}" width="18" height="12" fill="#d8eedd" '
                   f'stroke="#9fcfaa"/>')
        out.append(_text(ml + 24, ly, "no-bias range (the verdict 'not biased' needs the "
                         "whole interval inside it)", size=11, fill="#444444"))
    top, bottom = mt, mt + row_height * len(prepared)
    for t in ticks:
        tx = x(t)
        out.append(f'<line x1="{_c(tx)}" x2="{_c(tx)}" y1="{top}" y2="{bottom}" '
                   f'stroke="#eeeeee"/>')
        out.append(_text(tx, bottom + 16, fmt_num(t), anchor="middle", size=11,
                         fill="#555555"))
    for i, (label, v, lo, hi, nb, verdict) in enumerate(prepared):
        cy = top + row_height * (i + 0.5)
        if i % 2 == 1:
            out.append(f'<rect x="0" y="{_c(cy - row_height / 2)}" width="{width}" '
                       f'height="{row_height}" fill="#fafafa"/>')
        if nb:
            a, b = sorted(nb)
            out.append(f'<rect class="nobias" x="{_c(x(a))}" y="{_c(cy - row_height / 2 + 3)}" '
                       f'width="{_c(max(x(b) - x(a), 1))}" height="{row_height - 6}" '
                       f'fill="#d8eedd" stroke="#9fcfaa"/>')
        out.append(_text(ml - 10, cy + 4, fit(label, ml - 18, 12), anchor="end", full=label))
        col = VERDICT_COLOURS.get(verdict, NEUTRAL) if verdict else PALETTE[0]
        if lo is not None and hi is not None:
            a, b = x(min(lo, hi)), x(max(lo, hi))
            out.append(f'<line class="ci" x1="{_c(a)}" x2="{_c(b)}" y1="{_c(cy)}" '
                       f'y2="{_c(cy)}" stroke="{col}" stroke-width="2"/>')
            for e in (a, b):
                out.append(f'<line x1="{_c(e)}" x2="{_c(e)}" y1="{_c(cy - 6)}" '
                           f'y2="{_c(cy + 6)}" stroke="{col}" stroke-width="2"/>')
        if v is not None:
            out.append(f'<circle class="point" cx="{_c(x(v))}" cy="{_c(cy)}" r="5" '
                       f'fill="{col}" stroke="#ffffff" stroke-width="1.5"/>')
        tx = ml + pw + 12
        f = "{:+.3f}" if signed else "{:.3f}"
        if v is None:
            txt = "no estimate"
        elif lo is not None and hi is not None:
            txt = f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]"
        else:
            txt = f.format(v)
        out.append(_text(tx, cy + 4, txt, size=11))
        if verdict:
            vlab = verdict_label(verdict, [lo, hi], nb)
            out.append(_text(width - 8, cy + 4, vlab, anchor="end", size=11, weight="600",
                             fill=VERDICT_COLOURS.get(verdict, NEUTRAL)))
    if reference is not None and d0 <= reference <= d1:
        rx = x(reference)
        out.append(f'<line x1="{_c(rx)}" x2="{_c(rx)}" y1="{top}" y2="{bottom}" '
                   f'stroke="#666666" stroke-dasharray="4 3"/>')
    out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{bottom}" y2="{bottom}" stroke="#888888"/>')
    if xlabel:
        out.append(_lines(xl_x, bottom + 34, xl_lines, xlabel))
    out.append("</svg>")
    return Markup("".join(out))


def sequence_plot(
    series: Sequence[dict[str, Any]],
    *,
    title: str = "",
    xlabel: str = "items judged",
    ylabel: str = "effect",
    no_bias_range: Sequence[float] | None = None,
    width: int = 760,
    height: int = 320,
) -> Markup:
    """Confidence sequences narrowing with n (the adaptive audit): one band per series.

    Series keys: label, points ([{"n": x, "lo": a, "hi": b}, ...] in order of n), optional
    verdict (colours the band and is written after the label). A dashed line marks 0 and a
    shaded band the no-bias range when given."""
    rows = []
    span: list[float] = [0.0]
    nmax = 1.0
    for i, sr in enumerate(series):
        pts = [(finite(p.get("n")), finite(p.get("lo")), finite(p.get("hi")))
               for p in sr.get("points") or []]
        pts = [(n, lo, hi) for n, lo, hi in pts if None not in (n, lo, hi)]
        if not pts:
            continue
        verdict = sr.get("verdict")
        col = PALETTE[i % len(PALETTE)]  # one colour per probe; verdict in the label
        rows.append((str(sr.get("label", "")), pts, verdict, col))
        span += [v for _, lo, hi in pts for v in (lo, hi)]
        nmax = max(nmax, max(n for n, _, _ in pts))
    if not rows:
        raise ValueError("sequence plot needs at least one series with points")
    nb = None
    if no_bias_range is not None and len(no_bias_range) == 2:
        a, b = finite(no_bias_range[0]), finite(no_bias_range[1])
        nb = (a, b) if a is not None and b is not None else None
    yt = nice_ticks(min(span), max(span))
    xt = nice_ticks(0.0, nmax)
    labels = [lab + (f" ({VERDICT_LABELS.get(v, v)})" if v else "") for lab, _, v, _ in rows]
    # the right margin holds each series' direct label (its marker and name at its end)
    mr = int(min(max(190.0, max(text_px(lab, 11) for lab in labels) + 40), 320.0))
    xl_x, xl_lines = _centred(xlabel, 60 + (width - 60 - mr) / 2, width)
    ml, mt, mb = 60, 30 + (20 if title else 0), 32 + 14 * len(xl_lines)
    height += 14 * max(len(xl_lines) - 1, 0)
    ph, pw = height - mt - mb, width - ml - mr
    x = _Scale(0.0, max(xt[-1], nmax), ml, ml + pw)
    y = _Scale(yt[0], yt[-1], mt + ph, mt)
    desc = "; ".join(f"{lab}: [{fmt_num(p[-1][1])}, {fmt_num(p[-1][2])}] at n = "
                     f"{fmt_num(p[-1][0])}" for lab, p, _, _ in rows)
    out = _open(width, height, title, desc)
    if title:
        out.append(_text(8, 18, fit(title, width - 16, 14), size=14, weight="600", full=title))
    if nb:
        lo_, hi_ = sorted(nb)
        y0, y1 = y(max(lo_, yt[0])), y(min(hi_, yt[-1]))
        out.append(f'<rect class="nobias" x="{ml}" y="{_c(y1)}" width="{pw}" '
                   f'height="{_c(max(y0 - y1, 1))}" fill="#d8eedd" stroke="#9fcfaa"/>')
    for t in yt:
        out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_c(y(t))}" y2="{_c(y(t))}" '
                   f'stroke="#eeeeee"/>')
        out.append(_text(ml - 6, y(t) + 4, fmt_num(t), anchor="end", size=11, fill="#555555"))
    for t in xt:
        out.append(_text(x(t), mt + ph + 16, fmt_num(t), anchor="middle", size=11,
                         fill="#555555"))
    if yt[0] <= 0 <= yt[-1]:
        out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_c(y(0))}" y2="{_c(y(0))}" '
                   f'stroke="#666666" stroke-dasharray="4 3"/>')
    ends = []
    for k, (_label, pts, _verdict, col) in enumerate(rows):
        poly = [f"{_c(x(n))},{_c(y(hi))}" for n, _, hi in pts] + \
               [f"{_c(x(n))},{_c(y(lo))}" for n, lo, _ in reversed(pts)]
        dash = DASHES[k % len(DASHES)]
        out.append(f'<polygon class="cs" data-series="{k}" points="{" ".join(poly)}" '
                   f'fill="{col}" fill-opacity="0.15" stroke="{col}" stroke-width="1.5"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        n, lo, hi = pts[-1]
        out.append(f'<line x1="{_c(x(n))}" x2="{_c(x(n))}" y1="{_c(y(hi))}" '
                   f'y2="{_c(y(lo))}" stroke="{col}" stroke-width="3"/>')
        out.append(marker(MARKERS[k % len(MARKERS)], x(n), y((lo + hi) / 2), col, series=k,
                          tip=f"{labels[k]}: [{fmt_num(lo)}, {fmt_num(hi)}] at n = "
                              f"{fmt_num(n)}"))
        ends.append((labels[k], x(n), y((lo + hi) / 2), col, k))
    out += _end_labels(ends, ml + pw + 12, mr - 14, mt, mt + ph)
    out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}" '
               f'stroke="#888888"/>')
    out.append(_lines(xl_x, mt + ph + 34, xl_lines, xlabel))
    out.append(_text(14, mt + ph / 2, fit(ylabel, ph, 11), anchor="middle", size=11,
                     extra=f'transform="rotate(-90 14 {_c(mt + ph / 2)})"', full=ylabel))
    out.append("</svg>")
    return Markup("".join(out))


def curve_plot(
    series: Sequence[dict[str, Any]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    y_range: Sequence[float] | None = None,
    references: Sequence[dict[str, Any]] = (),
    width: int = 760,
    height: int = 320,
) -> Markup:
    """Curves with interval bands (recall against budget per acquisition rule): one line with
    markers per series and a shaded band between each point's interval bounds.

    Series keys: label, points ([{"x", "y", "lo", "hi"}, ...]; lo/hi optional). `y_range`
    fixes the y axis (e.g. [0, 1] for a share); `references` are horizontal dashed lines
    [{"label", "y"}] (e.g. the full-data recall). Each series has its own colour and a
    legend entry, and its points are listed in the description for screen readers."""
    rows = []
    xs: list[float] = []
    ys: list[float] = []
    for i, sr in enumerate(series):
        pts = []
        for p in sr.get("points") or []:
            x, y = finite(p.get("x")), finite(p.get("y"))
            if x is None or y is None:
                continue
            lo, hi = finite(p.get("lo")), finite(p.get("hi"))
            pts.append((x, y, lo, hi))
        if not pts:
            continue
        pts.sort()
        rows.append((str(sr.get("label", f"series {i + 1}")), pts, PALETTE[i % len(PALETTE)]))
        xs += [p[0] for p in pts]
        ys += [v for p in pts for v in p[1:] if v is not None]
    if not rows:
        raise ValueError("curve plot needs at least one series with points")
    refs = [(str(r.get("label", "")), finite(r.get("y"))) for r in references]
    refs = [(lab, v) for lab, v in refs if v is not None]
    ys += [v for _, v in refs]
    if y_range is not None and len(y_range) == 2:
        yt = nice_ticks(float(y_range[0]), float(y_range[1]))
    else:
        yt = nice_ticks(min(ys), max(ys))
    y0, y1 = min(yt[0], min(ys)), max(yt[-1], max(ys))
    xt = nice_ticks(min(xs), max(xs)) if max(xs) > min(xs) else [min(xs)]
    # the right margin holds each series' direct label (its marker and name at its end)
    mr = int(min(max(210.0, max(text_px(r[0], 11) for r in rows) + 40), 320.0))
    xl_x, xl_lines = _centred(xlabel, 60 + (width - 60 - mr) / 2, width) if xlabel else (0, [])
    ml, mt, mb = 60, 30 + (20 if title else 0), 32 + 14 * max(len(xl_lines), 1)
    height += 14 * max(len(xl_lines) - 1, 0)
    ph, pw = height - mt - mb, width - ml - mr
    xa, xb = (min(xt[0], min(xs)), max(xt[-1], max(xs))) if len(xt) > 1 else \
        (xt[0] - 1, xt[0] + 1)
    x = _Scale(xa, xb, ml, ml + pw)
    y = _Scale(y0, y1, mt + ph, mt)
    def point_text(px: float, py: float, lo: float | None, hi: float | None) -> str:
        # a band through the point (rank-eval's seeds all agreed) is no interval to read out
        shown = lo is not None and hi is not None and lo < hi
        return f"{fmt_num(px)} -> {fmt_num(py)}" + (
            f" [{fmt_num(lo)}, {fmt_num(hi)}]" if shown else "")

    desc = "; ".join(f"{lab}: " + ", ".join(point_text(*p) for p in pts)
                     for lab, pts, _ in rows)
    out = _open(width, height, title, desc)
    if title:
        out.append(_text(8, 18, fit(title, width - 16, 14), size=14, weight="600", full=title))
    for t in yt:
        out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{_c(y(t))}" y2="{_c(y(t))}" '
                   f'stroke="#eeeeee"/>')
        out.append(_text(ml - 6, y(t) + 4, fmt_num(t), anchor="end", size=11, fill="#555555"))
    for t in xt:
        out.append(_text(x(t), mt + ph + 16, fmt_num(t), anchor="middle", size=11,
                         fill="#555555"))
    for lab, v in refs:
        out.append(f'<line class="ref" x1="{ml}" x2="{ml + pw}" y1="{_c(y(v))}" '
                   f'y2="{_c(y(v))}" stroke="#666666" stroke-dasharray="4 3"/>')
        out.append(_text(ml + pw - 4, y(v) - 4, fit(lab, pw - 8, 10), anchor="end", size=10,
                         fill="#444444", full=lab))
    ends = []
    for k, (label, pts, col) in enumerate(rows):
        band = [(px, lo, hi) for px, _, lo, hi in pts if lo is not None and hi is not None]
        if len(band) > 1:
            poly = [f"{_c(x(px))},{_c(y(hi))}" for px, _, hi in band] + \
                   [f"{_c(x(px))},{_c(y(lo))}" for px, lo, _ in reversed(band)]
            out.append(f'<polygon class="band" points="{" ".join(poly)}" fill="{col}" '
                       f'fill-opacity="0.13" stroke="none"/>')
        for px, lo, hi in band:
            out.append(f'<line class="ci" x1="{_c(x(px))}" x2="{_c(x(px))}" '
                       f'y1="{_c(y(hi))}" y2="{_c(y(lo))}" stroke="{col}" stroke-width="1.5"/>')
        line = " ".join(f"{_c(x(px))},{_c(y(py))}" for px, py, _, _ in pts)
        dash = DASHES[k % len(DASHES)]
        out.append(f'<polyline class="curve" data-series="{k}" points="{line}" fill="none" '
                   f'stroke="{col}" stroke-width="2"'
                   + (f' stroke-dasharray="{dash}"' if dash else "") + "/>")
        for px, py, lo, hi in pts:
            tip = f"{label}: {point_text(px, py, lo, hi)}"
            out.append(marker(MARKERS[k % len(MARKERS)], x(px), y(py), col, series=k,
                              cls="point marker", tip=tip))
        ends.append((label, x(pts[-1][0]), y(pts[-1][1]), col, k))
    out += _end_labels(ends, ml + pw + 12, mr - 14, mt, mt + ph)
    out.append(f'<line x1="{ml}" x2="{ml + pw}" y1="{mt + ph}" y2="{mt + ph}" '
               f'stroke="#888888"/>')
    if xlabel:
        out.append(_lines(xl_x, mt + ph + 34, xl_lines, xlabel))
    if ylabel:
        out.append(_text(14, mt + ph / 2, fit(ylabel, ph, 11), anchor="middle", size=11,
                         extra=f'transform="rotate(-90 14 {_c(mt + ph / 2)})"', full=ylabel))
    out.append("</svg>")
    return Markup("".join(out))


def _interval_desc(prepared: list[tuple]) -> str:
    parts = []
    for label, v, lo, hi, nb, verdict in prepared:
        s = f"{label}: {fmt_num(v)}"
        if lo is not None and hi is not None:
            s += f" (95% CI {fmt_num(lo)} to {fmt_num(hi)})"
        if verdict:
            s += ", " + (SMALL_LABEL if biased_small(verdict, [lo, hi], nb)
                         else VERDICT_LABELS.get(verdict, verdict))
        parts.append(s)
    return "; ".join(parts)


def _lerp_hex(c0: str, c1: str, t: float) -> str:
    a = [int(c0[i:i + 2], 16) for i in (1, 3, 5)]
    b = [int(c1[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(p + (q - p) * t):02x}" for p, q in zip(a, b, strict=True))


def heatmap(
    rows: Sequence[Any],
    cols: Sequence[Any],
    values: Sequence[Sequence[Any]],
    *,
    title: str = "",
    vmin: float | None = None,
    vmax: float | None = None,
    diverging: bool = False,
    cell: int = 72,
) -> Markup:
    """A grid of coloured cells with the value printed in each (e.g. judges x factors).

    Sequential white->blue by default; `diverging` centres on 0 (red below, blue above).
    Missing values are grey with a dash."""
    rl, cl = [str(r) for r in rows], [str(c) for c in cols]
    if not rl or not cl:
        raise ValueError("heatmap needs at least one row and one column")
    if len(values) != len(rl) or any(len(r) != len(cl) for r in values):
        raise ValueError(f"heatmap values must be {len(rl)} rows of {len(cl)}")
    grid = [[finite(v) for v in r] for r in values]
    nums = [v for r in grid for v in r if v is not None]
    lo = vmin if vmin is not None else (min(nums) if nums else 0.0)
    hi = vmax if vmax is not None else (max(nums) if nums else 1.0)
    if diverging:
        m = max(abs(lo), abs(hi)) or 1.0
        lo, hi = -m, m
    if hi == lo:
        hi = lo + 1.0

    def colour(v: float) -> tuple[str, str]:
        t = min(max((v - lo) / (hi - lo), 0.0), 1.0)
        if diverging:
            fill = (_lerp_hex("#ffffff", "#2166ac", (t - 0.5) * 2) if t >= 0.5
                    else _lerp_hex("#ffffff", "#b2182b", (0.5 - t) * 2))
            dark = abs(t - 0.5) > 0.3
        else:
            fill, dark = _lerp_hex("#f7fbff", "#08306b", t), t > 0.55
        return fill, "#ffffff" if dark else "#111111"

    ml = min(max(8 + 7 * max(len(clip(r, 24)) for r in rl), 60), 200)
    width = ml + cell * len(cl) + 16
    # a narrow grid's title wraps onto a second line rather than run past the edge
    t_lines = wrap(title, max(width - 16, 200), 14) if title else []
    mt = 30 + 20 * len(t_lines)
    height = mt + cell * len(rl) + 12
    out = _open(width, height, title, "; ".join(
        f"{r}: " + ", ".join(f"{c} {fmt_num(v)}" for c, v in zip(cl, g, strict=True))
        for r, g in zip(rl, grid, strict=True)))
    if title:
        out.append(_lines(8, 18, t_lines, title, size=14, anchor="start", weight="600"))
    for j, c in enumerate(cl):
        out.append(_text(ml + cell * (j + 0.5), mt - 8, fit(c, cell - 4, 11), anchor="middle",
                         size=11, full=c))
    for i, r in enumerate(rl):
        y0 = mt + cell * i
        out.append(_text(ml - 8, y0 + cell / 2 + 4, fit(r, ml - 12, 11), anchor="end", size=11,
                         full=r))
        for j, v in enumerate(grid[i]):
            x0 = ml + cell * j
            if v is None:
                fill, ink, lab = "#dddddd", "#555555", "\u2013"
            else:
                (fill, ink), lab = colour(v), fmt_num(v, 2)
            out.append(f'<rect x="{x0}" y="{y0}" width="{cell}" height="{cell}" fill="{fill}" '
                       f'stroke="#ffffff"><title>{esc(r)} \u00d7 {esc(cl[j])}: '
                       f"{esc(fmt_num(v))}</title></rect>")
            out.append(_text(x0 + cell / 2, y0 + cell / 2 + 4, lab, anchor="middle", size=11,
                             fill=ink))
    out.append("</svg>")
    return Markup("".join(out))


def plot_from_spec(spec: dict[str, Any]) -> Markup:
    """Draw a probe's `plot` entry from results.json (kind: bars | points | heatmap).

    Raises ValueError for an unknown kind or malformed data; callers show that as a note."""
    if not isinstance(spec, dict):
        raise ValueError("plot is not an object")
    kind = spec.get("kind")
    title = str(spec.get("title") or "")
    try:
        if kind == "bars":
            return bar_chart(spec.get("categories") or [], spec.get("series") or [],
                             title=title, xlabel=str(spec.get("xlabel") or ""),
                             ylabel=str(spec.get("ylabel") or ""))
        if kind == "points":
            ref = spec.get("reference")
            return interval_plot(spec.get("points") or [], title=title,
                                 xlabel=str(spec.get("xlabel") or ""), reference=finite(ref))
        if kind == "heatmap":
            return heatmap(spec.get("rows") or [], spec.get("cols") or [],
                           spec.get("values") or [], title=title,
                           diverging=bool(spec.get("diverging")),
                           vmin=finite(spec.get("vmin")), vmax=finite(spec.get("vmax")))
    except (TypeError, AttributeError, KeyError, IndexError) as exc:
        raise ValueError(f"malformed {kind} plot: {exc}") from exc
    raise ValueError(f"unknown plot kind {kind!r} (expected bars, points or heatmap)")
