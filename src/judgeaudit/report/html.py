"""report.html: a static page rebuilt from results.json alone, one layout per command
(`LAYOUTS`: audit, evaluate, scoring-bias, the HUB-J commands, compare, rank, rank-eval).

Judged text is untrusted, so the Jinja2 environment autoescapes everything; the only markup
inserted as-is is the SVG that `judgeaudit.report.svg` builds (it escapes its own labels).
The page has no scripts and loads nothing (a Content-Security-Policy says so to the browser
too), so it can be opened offline and attached to a CI run."""

from __future__ import annotations

import difflib
import logging
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup

from judgeaudit.files import write_atomic
from judgeaudit.outcome import not_sent_reason, probe_verdict, unreadable_share
from judgeaudit.report import svg
from judgeaudit.results_file import SCHEMA_VERSION, read_results

MAX_EXAMPLES = 3  # before/after examples shown per probe
MAX_DISAGREEMENTS = 50  # panel disagreements listed (all stay in results.json)
MAX_INVALID = 20
DIFF_LIMIT = 20_000  # characters; longer texts are highlighted whole instead of word-diffed
MAX_TEXT = 2_000  # characters of one judged text shown (a prompt, a response, each side of an
# example, a raw answer): a 1 MB response shown whole in every example made a 4 MB page; the
# rest is cut with a visible note, and results.json keeps the whole text

VERDICTS = ("biased", "not_biased", "underpowered", "not_run")


# ---------------------------------------------------------------- formatting (Jinja filters)

def _num(x: Any) -> float | None:
    return svg.finite(x)


def fmt(x: Any, digits: int = 3) -> str:
    """A number with fixed decimals; '—' when missing; other types shown as text."""
    v = _num(x)
    if v is None:
        return "\u2014" if x is None or isinstance(x, float) else str(x)
    return f"{v:.{digits}f}"


def fmt_signed(x: Any, digits: int = 3) -> str:
    """An effect: always signed, so the direction reads at a glance."""
    v = _num(x)
    if v is None:
        return fmt(x, digits)
    return f"{v:+.{digits}f}"


def fmt_ci(ci: Any, digits: int = 3, signed: bool = True) -> str:
    """'[lo, hi]' for a 95% interval; '—' when either end is missing."""
    if not isinstance(ci, list | tuple) or len(ci) != 2 or any(_num(c) is None for c in ci):
        return "\u2014"
    f = fmt_signed if signed else fmt
    return f"[{f(ci[0], digits)}, {f(ci[1], digits)}]"


def fmt_p(p: Any) -> str:
    """p- and q-values: three significant digits, scientific below 0.001; "< 1e-300" where
    the exact value underflowed (stored as 1e-300; an older results file's 0 is read the
    same way: no test on finite data gives 0)."""
    v = _num(p)
    if v is None:
        return fmt(p)
    if v <= 1e-300:
        return "< 1e-300"
    if v < 0.001:
        return f"{v:.1e}"
    return f"{v:.3g}"


def fmt_int(x: Any) -> str:
    if isinstance(x, bool) or not isinstance(x, int | float):
        return "\u2014" if x is None else str(x)
    if isinstance(x, float) and not math.isfinite(x):
        return "\u2014"
    return f"{int(x):,}" if float(x).is_integer() else f"{x:,.2f}"


def fmt_seconds(s: Any) -> str:
    v = _num(s)
    if v is None:
        return fmt(s)
    if v < 60:
        return f"{v:.1f} s"
    m, sec = divmod(round(v), 60)
    h, m = divmod(m, 60)
    return f"{h} h {m} min {sec} s" if h else f"{m} min {sec} s"


def humanize(key: Any) -> str:
    """'robustness_rate' -> 'robustness rate'."""
    return str(key).replace("_", " ")


def verdict_label(v: Any) -> str:
    return svg.VERDICT_LABELS.get(v, f"unknown ({v})" if v is not None else "no verdict")


def verdict_class(v: Any) -> str:
    """A CSS class from a fixed list: a results file never chooses a class name."""
    return {"biased": "v-biased", "not_biased": "v-not-biased",
            "underpowered": "v-underpowered", "not_run": "v-unknown"}.get(v, "v-unknown")


def verdict_glyph(v: Any) -> str:
    """A shape as a second cue next to colour and text (colour is never the only signal)."""
    return {"biased": "\u25b2", "not_biased": "\u25cf", "underpowered": "\u25c6",
            "not_run": "\u25cb"}.get(v, "?")


def _env() -> Environment:
    env = Environment(
        loader=PackageLoader("judgeaudit.report", "templates"),
        autoescape=True,  # everything, whatever the template's name
        undefined=StrictUndefined,  # a template typo fails the tests instead of going blank
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        # every value a template shows: a results file's ids and texts are untrusted, and
        # their control characters went into the page raw (autoescape leaves them)
        finalize=lambda v: v if isinstance(v, Markup) or not isinstance(v, str) else
        svg.visible(v),
    )
    env.filters.update(fmt=fmt, signed=fmt_signed, ci=fmt_ci, pval=fmt_p, int=fmt_int,
                       seconds=fmt_seconds, human=humanize, vlabel=verdict_label,
                       vclass=verdict_class, vglyph=verdict_glyph,
                       not_sent_why=lambda calls: not_sent_reason(calls, hint=False))
    return env


# ---------------------------------------------------------------- view models

def _d(x: Any) -> dict[str, Any]:
    return x if isinstance(x, dict) else {}


def _l(x: Any) -> list[Any]:
    return x if isinstance(x, list) else []


def _str(x: Any) -> str | None:
    return None if x is None else str(x)


def _int_or_none(x: Any) -> int | None:
    """A count from the document, None when it is missing or not a whole number (a file
    written before the count existed, or edited by hand)."""
    return x if isinstance(x, int) and not isinstance(x, bool) else None


def _estimate(x: Any) -> dict[str, Any] | None:
    """An Estimate {value, ci95, n, method} normalized (method None in files written before
    estimates named their interval), or None."""
    if not isinstance(x, dict):
        return None
    ci = x.get("ci95")
    return {"value": x.get("value"), "ci95": ci if isinstance(ci, list) else None,
            "n": x.get("n"), "method": _str(x.get("method"))}


def _slug(name: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "probe"
    slug, i = f"probe-{base}", 2
    while slug in used:
        slug, i = f"probe-{base}-{i}", i + 1
    used.add(slug)
    return slug


def _cut_note(more: int) -> Markup:
    """The visible mark where a shown text was cut (its own words, escaped)."""
    return (Markup('<span class="muted small">')
            + Markup.escape(f" \u2026 ({more:,} more characters; full text in results.json)")
            + Markup("</span>"))


def _text_vs_probs(x: Any) -> dict[str, Any] | None:
    """Verdicts read from probabilities that went against the answer's text: {k, n, lo, hi}
    (the rate's interval, clustered by item); None when none did."""
    tvp = _d(x)
    if not tvp.get("n_disagree"):
        return None
    ci = _l(_d(tvp.get("rate")).get("ci95"))
    return {"k": tvp.get("n_disagree"), "n": tvp.get("n"),
            "lo": _num(ci[0]) if len(ci) == 2 else None,
            "hi": _num(ci[1]) if len(ci) == 2 else None}


def _text(x: Any, limit: int = MAX_TEXT) -> str | None:
    """A judged text as the page shows it: whole up to `limit` characters, else its first
    `limit` and a note saying how many more. A cut text is returned escaped (Markup, with its
    acting characters shown as the environment's finalize would), so the note stays markup
    and the text never is."""
    if x is None:
        return None
    s = str(x)
    if len(s) <= limit:
        return s
    return Markup.escape(svg.visible(s[:limit])) + _cut_note(len(s) - limit)


def _cut_segments(segs: list[tuple[str, str]], limit: int = MAX_TEXT
                  ) -> list[tuple[str, str]]:
    """The diff segments of one side, cut after `limit` characters of text with the note as
    a last plain segment (the template escapes each segment's text; the note is Markup)."""
    total = sum(len(t) for _, t in segs)
    if total <= limit:
        return segs
    out: list[tuple[str, str]] = []
    used = 0
    for kind, text in segs:
        room = limit - used
        if room <= 0:
            break
        out.append((kind, text[:room]))
        used += min(len(text), room)
    out.append(("same", _cut_note(total - used)))
    return out


def _segments(before: str, after: str) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Word-level diff: (kind, text) segments for each side; kind is 'same', 'del' or 'ins'.
    The template escapes the text of every segment."""
    if len(before) + len(after) > DIFF_LIMIT:
        return [("del", before)], [("ins", after)]
    a, b = re.split(r"(\s+)", before), re.split(r"(\s+)", after)
    left: list[tuple[str, str]] = []
    right: list[tuple[str, str]] = []
    sm = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            left.append(("same", "".join(a[i1:i2])))
            right.append(("same", "".join(b[j1:j2])))
        else:
            if i2 > i1:
                left.append(("del", "".join(a[i1:i2])))
            if j2 > j1:
                right.append(("ins", "".join(b[j1:j2])))
    return left, right


def _example(ex: dict[str, Any]) -> dict[str, Any]:
    """One before/after example: fields in a fixed order, the changed one diffed."""
    before, after = _d(ex.get("before")), _d(ex.get("after"))
    changed = ex.get("changed")
    changed_s = str(changed) if changed is not None else ""
    fields = []
    for key in ("prompt", "instruction", "response_1", "response_2"):
        if key not in before and key not in after:
            continue
        b, a = before.get(key), after.get(key)
        b_s, a_s = ("" if b is None else str(b)), ("" if a is None else str(a))
        is_changed = changed_s == key or (b is not None and a is not None and b_s != a_s)
        if is_changed:
            left, right = _segments(b_s, a_s)
        else:
            left, right = [("same", b_s)], [("same", a_s)]
        fields.append({"key": key, "label": humanize(key), "changed": is_changed,
                       "before": _cut_segments(left), "after": _cut_segments(right),
                       "before_missing": b is None, "after_missing": a is None})
    note = ""
    if changed_s == "order":
        note = "Same two responses, shown to the judge in the other order."
    elif changed_s and changed_s not in {f["key"] for f in fields}:
        note = f"Changed: {changed_s}"
    return {
        "item_id": ex.get("item_id"),
        "prompt": _text(ex.get("prompt")),
        "changed": changed_s,
        "note": note,
        "fields": fields,
        "verdict_before": before.get("verdict"),
        "verdict_after": after.get("verdict"),
    }


def _reason(p: dict[str, Any], alpha: float) -> tuple[str, bool]:
    """Why the stored verdict follows from the stored numbers, and whether it does.

    The rule is `outcome.probe_verdict`, the one the audit decided by."""
    v, q = p["verdict"], _num(p["q"])
    ci = p["effect"]["ci95"] or [None, None]
    lo, hi = (_num(ci[0]), _num(ci[1])) if len(ci) == 2 else (None, None)
    nb = p["no_bias_range"]
    ci_s = fmt_ci(ci)
    nb_s = fmt_ci(nb) if nb else "(none given)"
    follows = probe_verdict(_num(p["effect"]["value"]), (lo, hi), q,
                            [_num(x) for x in nb or []], alpha) == v
    if v == "biased":
        return (f"q = {fmt_p(q)} < \u03b1 = {alpha:g} and the 95% interval {ci_s} excludes 0.",
                follows)
    if v == "not_biased":
        return (f"The 95% interval {ci_s} lies inside the no-bias range {nb_s}.", follows)
    if v == "not_run":
        why = next((x for x in _l(p.get("notes")) if str(x).startswith("not run:")),
                   "not run")
        return (f"Not measured: {str(why).removeprefix('not run: ')}.", True)
    if v == "underpowered":
        parts = []
        parts.append(f"q = {fmt_p(q)} is not below \u03b1 = {alpha:g}" if q is None or
                     q >= alpha else "the interval includes 0")
        parts.append(f"the 95% interval {ci_s} is not inside the no-bias range {nb_s}")
        return ("Neither biased nor cleared: " + "; ".join(parts) + ".", follows)
    return ("This verdict is not one of biased / not biased / underpowered.", False)


def _probe(name: str, raw: Any, alpha: float, slug: str) -> dict[str, Any]:
    p = _d(raw)
    eff = _d(p.get("effect"))
    ci = eff.get("ci95")
    nb = p.get("no_bias_range")
    flag = p.get("flag") if isinstance(p.get("flag"), dict) else None
    # A rate {value, ci95, n}, or a group of them (length_control: beyond_length, shift)
    # shown a row each; other entries (words_added: a mean with its range) are not rates.
    flat = [(f"{k} {k2}", v2) for k, v in _d(p.get("rates")).items()
            for k2, v2 in ([("", v)] if "value" in _d(v) else _d(v).items())]
    rates = [{"name": k.strip(), **e} for k, v in flat
             if "value" in _d(v) and (e := _estimate(v)) is not None]
    examples_raw = [e for e in _l(p.get("examples")) if isinstance(e, dict)]
    plot, plot_error = None, None
    if p.get("plot") is not None:
        try:
            plot = svg.plot_from_spec(p["plot"])
        except ValueError as exc:
            plot_error = str(exc)
    view = {
        "name": name,
        "slug": slug,
        "title": p.get("title") or name,
        "description": p.get("description"),
        "metric": p.get("metric"),
        "direction": p.get("direction"),
        "effect": {"value": eff.get("value"), "ci95": ci if isinstance(ci, list) else None},
        "n": p.get("n"),
        "p": p.get("p"),
        "q": p.get("q"),
        "mde": p.get("mde"),
        "verdict": p.get("verdict"),
        "no_bias_range": nb if isinstance(nb, list) and len(nb) == 2 else None,
        "flag": flag,
        "rates": rates,
        "n_invalid": p.get("n_invalid"),
        "n_dropped": p.get("n_dropped"),
        "n_items": p.get("n_items"),
        "dropped": _drop_counts(p.get("dropped")),
        "mde_text": _mde_text(p.get("mde_detail")),
        "breakdown": _probe_breakdown(p.get("breakdown")),
        "plot": plot,
        "plot_error": plot_error,
        "examples": [_example(e) for e in examples_raw[:MAX_EXAMPLES]],
        "n_examples": len(examples_raw),
        "notes": [str(n) for n in _l(p.get("notes"))],
    }
    view["reason"], view["reason_ok"] = _reason(view, alpha)
    view["small"] = _biased_small(view)
    view["dropped_why"] = _dropped_why(view["notes"])
    view["flag_reason"] = str((flag or {}).get("reason") or "no data")
    if view["small"]:
        view["reason"] += (f" Its whole 95% interval lies inside the no-bias range "
                           f"{_range_text(view['no_bias_range'])}: a real effect, but small.")
    return view


_FAILED_CHECK = re.compile(r"^(\d+) perturbation\(s\) failed the answer-preservation check")
_NOT_APPLIED = re.compile(r"^(\d+) item\(s\) not perturbed, left out: (.+)$")


def _dropped_why(notes: list[str]) -> list[str]:
    """Why a probe's perturbations were dropped, from its notes (`shift_probe.left_out_notes`):
    the answer-preservation check and the perturbation not applying (English text that would
    be added to a non-Latin answer, a cue already there) are apart. The page said "refused by
    the answer-preservation check" of 55 items no check had refused. [] when the notes do not
    say (the page then gives both causes)."""
    out = []
    for n in notes:
        if m := _FAILED_CHECK.match(n):
            out.append(f"{m.group(1)} failed the answer-preservation check")
        elif m := _NOT_APPLIED.match(n):
            out.append(f"{m.group(1)} not perturbed: {m.group(2)}")
    return out


def _flag_reason(p: dict[str, Any], calls: dict[str, Any]) -> str:
    """Why a threshold check is unchecked: the stored reason. One stored before the probe
    said why no copy was made blames calls not sent or unreadable answers; when the run had
    neither and the probe's perturbation left items out, nothing was judged for the rate:
    its copies were not made (no English padding goes into a non-Latin answer), which the
    page says instead."""
    flag = p["flag"] or {}
    stored = str(flag.get("reason") or "no data")
    clean = not calls.get("failed") and not calls.get("unreadable")
    old = "calls not sent or answers unreadable" in stored  # before the probe said why
    if old and not flag.get("n") and clean and p["dropped_why"]:
        return (f"nothing was judged for this rate (n = 0): no call of this run failed and no "
                f"answer was unreadable, so the copies it compares were not made; this "
                f"probe's perturbation was not applied to {fmt_int(p['n_dropped'])} items "
                "(see Dropped perturbations)")
    return stored


def _biased_small(p: dict[str, Any]) -> bool:
    """A "biased" probe whose whole 95% interval lies inside its no-bias range: the rule
    (q and an interval excluding 0) holds, yet the effect is too small to matter by the
    probe's own range (n = 2,500 gave authority +0.018 [+0.008, +0.028] against +/-0.050),
    so the page marks it "biased, small", not with the same badge as a large bias."""
    return svg.biased_small(p["verdict"], p["effect"]["ci95"], p["no_bias_range"])


def _range_text(nb: list[Any]) -> str:
    """'+/-0.050' for a symmetric no-bias range, else its two ends."""
    a, b = _num(nb[0]), _num(nb[1])
    if a is not None and b is not None and math.isclose(-a, b):
        return f"\u00b1{b:.3f}"
    return fmt_ci(nb)


def _drop_counts(raw: Any) -> list[tuple[str, Any]]:
    """[(reason, count)] of a `dropped` section, in its order."""
    return [(str(k), v) for k, v in _d(raw).items()]


def _mde_text(raw: Any) -> str | None:
    """How the MDE was computed, in one line (None when the results do not say)."""
    d = _d(raw)
    if not d:
        return None
    parts = [str(d.get("method") or "the probe's test")]
    if d.get("n") is not None:
        parts.append(f"n = {fmt_int(d.get('n'))}")
    if _num(d.get("discordance")) is not None:
        parts.append(f"{100 * _num(d.get('discordance')):.0f}% of items moved "  # type: ignore[operator]
                     f"(mean change {fmt(d.get('mean_change'))})")
    if _num(d.get("se")) is not None:
        parts.append(f"SE {fmt(d.get('se'))}")
    if _num(d.get("alpha")) is not None and _num(d.get("power")) is not None:
        parts.append(f"\u03b1 {_num(d.get('alpha')):g}, power {_num(d.get('power')):g}")
    if _num(d.get("normal_approx")) is not None:
        parts.append(f"normal approximation 2.8 \u00d7 SE = {fmt(d.get('normal_approx'))}")
    return "; ".join(parts)


def _probe_breakdown(raw: Any) -> list[dict[str, Any]]:
    rows = []
    for r in _l(_d(raw).get("rows")):
        if not isinstance(r, dict):
            continue
        e = _d(r.get("effect"))
        ci = e.get("ci95")
        rows.append({"value": _str(r.get("value")), "n": r.get("n"), "n_items": r.get("n_items"),
                     "p": r.get("p"), "effect": {"value": e.get("value"),
                                                 "ci95": ci if isinstance(ci, list) else None}})
    return rows


def _panel(raw: Any) -> dict[str, Any] | None:
    if not isinstance(raw, dict):
        return None
    judges = [str(j) for j in _l(raw.get("judges"))]
    kappas = [(label, _estimate(raw.get(k))) for k, label in (
        ("fleiss_kappa", "Fleiss' \u03ba"), ("cohen_kappa", "Cohen's \u03ba"))
        if isinstance(raw.get(k), dict)]
    dis = [d for d in _l(raw.get("disagreements")) if isinstance(d, dict)]
    cols = list(judges)
    for d in dis:
        for j in _d(d.get("verdicts")):
            if j not in cols:
                cols.append(j)
    return {
        "judges": judges,
        "agreement": _estimate(raw.get("agreement")),
        "kappas": kappas,
        "columns": cols,
        "disagreements": [{
            "item_id": d.get("item_id"), "prompt": _text(d.get("prompt")),
            "response_1": _text(d.get("response_1")), "response_2": _text(d.get("response_2")),
            "verdicts": [_d(d.get("verdicts")).get(j) for j in cols],
        } for d in dis[:MAX_DISAGREEMENTS]],
        "n_disagreements": int(raw.get("n_disagreements", len(dis)) or len(dis)),
        "ranking": [{
            "judge": str(r.get("judge")),
            "position_effect": _estimate(r.get("position_effect")),
            "first_slot_rate": _estimate(r.get("first_slot_rate")),
            "position_consistency": _estimate(r.get("position_consistency")),
            "accuracy": _estimate(r.get("accuracy")),
            "n_invalid": r.get("n_invalid"),
        } for r in _l(raw.get("ranking")) if isinstance(r, dict)],
        "ranked_by": _str(raw.get("ranked_by")),
    }


def _common(r: dict[str, Any]) -> dict[str, Any]:
    tpl = _d(r.get("template"))
    return {
        "command": r.get("command"),
        "version": r.get("version"),
        "schema_version": r.get("schema_version", SCHEMA_VERSION),
        "judge": r.get("judge"),
        "judges": [str(j) for j in _l(r.get("judges"))],
        "data": r.get("data"),
        "template": {"name": _str(tpl.get("name")), "sha256": _str(tpl.get("sha256"))},
        "prompt_hashes": sorted((str(k), str(v)) for k, v in _d(r.get("prompt_hashes")).items()),
        "calls": _d(r.get("calls")),
        "unreadable_answers": _unreadable_answers(_d(r.get("calls"))),
        "seconds": r.get("seconds"),
        "started": r.get("started"),
        "run": _d(r.get("run")),
        "run_notes": [str(x) for x in _l(r.get("notes"))],
        "ran_on": _ran_on(_d(r.get("judges_used"))),
    }


def _unreadable_answers(calls: dict[str, Any]) -> dict[str, Any] | None:
    """The distinct answers (made or from cache) the judge could not read, of the distinct
    answers read, with the share, for the header's calls line (`outcome.unreadable_share`:
    an older document as it counted, its `unit` "readings" or "either"); None when there
    were none or the document does not count them. It was in results.json only: the header
    read "240 made" of a judge that answered 24 of them with no verdict."""
    return unreadable_share(calls)


def _ran_on(used: dict[str, Any]) -> list[tuple[str, str]]:
    """(spec, "backend ... on CPU (flags)") for each judge that resolved a backend or ran on
    this machine's CPU (`judges_used`): its timings and near-tie verdicts hold for that."""
    out = []
    for spec, ident in used.items():
        ident = _d(ident)
        cpu, backend = _d(ident.get("cpu")), ident.get("backend")
        if not cpu and backend is None:
            continue
        flags = ", ".join(str(k) for k, on in _d(cpu.get("flags")).items() if on)
        text = (f"backend {backend}" + (f" {ident['dtype']}" if ident.get("dtype") else "")
                if backend is not None else "")
        if cpu:
            text += f" on {cpu.get('model')}, {cpu.get('cores')} cores ({flags})"
        out.append((str(spec), text.strip()))
    return out


# Unreadable answers the audit report shows (results.json keeps as many).
MAX_UNREADABLE_SHOWN = 5


def _unreadable_examples(raw: Any) -> list[dict[str, Any]]:
    """The audit's examples of answers that gave no verdict (`unreadable_examples`), each
    cut to 200 characters; [] for a document written before they were kept."""
    return [{"item_id": _str(x.get("item_id")), "order": _str(x.get("order")),
             "raw": _text(x.get("raw"), 200), "why": _text(x.get("why"), 300)}
            for x in _l(raw)[:MAX_UNREADABLE_SHOWN] if isinstance(x, dict)]


def _gate(r: dict[str, Any]) -> dict[str, Any] | None:
    """A `--fail-on` gate's record for a page (audit, compare): its outcome, the probes that
    tripped it and those it could not decide, which a passing gate said nowhere."""
    g = _d(r.get("gate"))
    if not g:
        return None
    return {"fail_on": _str(g.get("fail_on")), "outcome": _str(g.get("outcome")),
            "by": [str(n) for n in _l(g.get("by"))],
            "undecided": [str(n) for n in _l(g.get("undecided"))],
            # probes --full added whose need the run lacks (a panel): named, never gated
            "not_gated": [str(n) for n in _l(g.get("not_gated"))]}


def _audit_view(r: dict[str, Any]) -> dict[str, Any]:
    alpha = _num(r.get("alpha"))
    alpha = 0.05 if alpha is None else alpha
    items, base = _d(r.get("items")), _d(r.get("baseline"))
    sel = _d(items.get("selection"))
    used: set[str] = set()
    probes = [_probe(str(name), raw, alpha, _slug(str(name), used))
              for name, raw in _d(r.get("probes")).items()]
    for p in probes:
        if p["flag"] and p["flag"].get("exceeds") is None:
            p["flag_reason"] = _flag_reason(p, _d(r.get("calls")))
    counts = {v: sum(p["verdict"] == v for p in probes) for v in VERDICTS}
    counts["other"] = len(probes) - sum(counts.values())
    forest = None
    if probes:
        forest = svg.interval_plot(
            [{"label": p["title"], "value": p["effect"]["value"], "ci95": p["effect"]["ci95"],
              "no_bias_range": p["no_bias_range"], "verdict": p["verdict"]} for p in probes],
            xlabel="effect (each probe's own metric; 0 = no effect)", signed=True, width=1000)
    adaptive = _adaptive_view(r, probes, alpha)
    return {
        **_common(r),
        "adaptive": adaptive,
        "page_title": f"judgeaudit audit \u2013 {r.get('judge', '?')}",
        "n_items": r.get("n_items"),
        "alpha": alpha,
        "probes": probes,
        "counts": counts,
        "forest": forest,
        "panel": _panel(r.get("panel")),
        "gate": _gate(r),
        "warnings": [str(w) for w in _l(r.get("warnings"))],
        "items": {"given": items.get("given"), "pairwise": items.get("pairwise"),
                  "used": items.get("used")} if items else None,
        "selection": {"kind": _str(sel.get("kind")), "n": sel.get("n"), "of": sel.get("of"),
                      "seed": sel.get("seed"), "per_probe": bool(sel.get("per_probe"))}
        if sel else None,
        "dropped": _drop_counts(r.get("dropped")),
        "drop_reasons": {str(k): str(v) for k, v in _d(r.get("drop_reasons")).items()},
        "unreadable_examples": _unreadable_examples(r.get("unreadable_examples")),
        "baseline": {"accuracy": _estimate(base.get("accuracy")),
                     "accuracy_valid": _estimate(base.get("accuracy_valid")),
                     "n_invalid": _int_or_none(base.get("n_invalid")),
                     "n_verdicts": _int_or_none(base.get("n_verdicts")),
                     "decisive_accuracy": _estimate(base.get("decisive_accuracy")),
                     "text_vs_probs": _text_vs_probs(base.get("text_vs_probs"))}
        if base else None,
        "by": _str(r.get("by")),
        "failed_run": _d(r.get("run")).get("status") == "failed",
    }


def _adaptive_view(r: dict[str, Any], probes: list[dict[str, Any]],
                   alpha: float) -> dict[str, Any] | None:
    """The adaptive audit's section (None for a fixed-n audit). Its verdicts follow the
    sequential rule (e-BH on e-values, the confidence sequence inside the no-bias range), so
    each probe's stated reason is rewritten from those numbers."""
    ad = _d(r.get("adaptive"))
    if not ad:
        return None
    raw = _d(r.get("probes"))
    rows, series = [], []
    for p in probes:
        a = _d(_d(raw.get(p["name"])).get("adaptive"))
        if not a:
            continue
        ci = a.get("ci") if isinstance(a.get("ci"), list) else [None, None]
        e = _num(a.get("evalue"))
        rows.append({"name": p["name"], "title": p["title"], "slug": p["slug"],
                     "verdict": p["verdict"], "n": a.get("n"), "items": a.get("items"),
                     "calls": a.get("calls"), "fixed_n_calls": a.get("fixed_n_calls"),
                     "ci": ci, "evalue": e, "reason": _str(a.get("stop_reason")),
                     "rounds": a.get("rounds")})
        series.append({"label": p["title"], "verdict": p["verdict"],
                       "points": [{"n": q.get("items"), "lo": (q.get("ci") or [None])[0],
                                   "hi": (q.get("ci") or [None, None])[1]}
                                  for q in _l(a.get("path")) if isinstance(q, dict)]})
        ci_s = fmt_ci(ci)
        if p["verdict"] == "biased":
            p["reason"] = (f"e-BH across the probes rejects 'no effect' at \u03b1 = {alpha:g} "
                           f"(e-value {svg.fmt_num(e)}); anytime-valid interval {ci_s}.")
            p["reason_ok"] = True
        elif p["verdict"] == "not_biased":
            p["reason"] = (f"The anytime-valid interval {ci_s} lies inside the no-bias range "
                           f"{fmt_ci(p['no_bias_range'])}.")
        elif p["verdict"] == "underpowered":
            p["reason"] = (f"Stopped ({_str(a.get('stop_reason'))}) with the anytime-valid "
                           f"interval {ci_s} and e-value {svg.fmt_num(e)}: neither rejected by "
                           "e-BH nor inside the no-bias range.")
            p["reason_ok"] = True
    plot = None
    nbs = {tuple(p["no_bias_range"]) for p in probes if p.get("no_bias_range")}
    try:
        plot = svg.sequence_plot(
            series, xlabel="items judged per probe",
            ylabel="effect (anytime-valid interval)",
            no_bias_range=list(next(iter(nbs))) if len(nbs) == 1 else None, width=1000)
    except ValueError:
        plot = None
    return {"rounds": ad.get("rounds"), "round_size": ad.get("round_size"),
            "max_n": ad.get("max_n"), "calls": ad.get("calls"),
            "baseline_calls": ad.get("baseline_calls"),
            "fixed_n_calls": ad.get("fixed_n_calls"), "ratio": _num(ad.get("calls_ratio")),
            # why the rounds ended and each probe's stop, in words (older runs: the key)
            "stopped_by": _str(ad.get("stop") or ad.get("stopped_by")),
            "method": _str(ad.get("method")),
            "max_calls": ad.get("max_calls"), "max_cost": ad.get("max_cost"),
            "rows": rows, "plot": plot}


_EVAL_ROWS = [
    ("accuracy", "Accuracy", "under the pair rule and tie handling in Conventions; an invalid "
     "or failed verdict is not right"),
    ("accuracy_valid", "Accuracy (valid only)", "items whose verdicts were all parseable"),
    ("decisive_accuracy", "Decisive verdicts naming the label",
     "orders that named a winner on pairs with a decisive label (chance = 0.5)"),
    ("position_consistency", "Position consistency",
     "share of items with the same outcome in both orders"),
    ("position_consistency_valid", "Position consistency (valid only)",
     "items with both orders parseable"),
    ("first_position_rate", "First-position rate",
     "share of decisive verdicts for the response shown first (0.5 = no position bias)"),
    ("cohen_kappa", "Cohen's \u03ba vs labels", "agreement beyond chance; bootstrap interval"),
    ("invalid_rate", "Invalid verdict rate", "unparseable or failed calls among all calls"),
]
_POINT_ROWS = [
    ("exact_agreement", "Exact agreement", "share of scored items with an integer gold score "
     "whose judge score equals it (a gold score that is a mean of ratings is left out); Wilson "
     "interval"),
    ("mae", "Mean absolute error", "mean |judge score - gold score|; t interval"),
    ("invalid_rate", "Invalid score rate", "unparseable or failed calls among all calls"),
]
_CORR_STATS = (("pearson", "Pearson r"), ("spearman", "Spearman \u03c1"),
               ("kendall", "Kendall \u03c4-b"))
# Results written before the conventions section existed followed this rule.
_LEGACY_CONVENTIONS = (
    "Not recorded in this results file (written before evaluate stated its conventions). "
    "Such files used LLMBar's rule: per pair, the mean over the asked orders of "
    "[verdict = label], with tie-labelled pairs left out of accuracy.")


def _conventions(r: dict[str, Any]) -> dict[str, Any]:
    c = r.get("conventions")
    if not isinstance(c, dict):
        return {"recorded": False, "pair_rule": None, "ties": None,
                "description": _LEGACY_CONVENTIONS}
    return {"recorded": True, "pair_rule": _str(c.get("pair_rule")),
            "ties": _str(c.get("ties")), "description": _str(c.get("description")) or ""}


def _systems_n(c: dict[str, Any]) -> str:
    """Each system's item count, the small ones (the evaluate rule) marked."""
    small = {str(_d(s).get("system")) for s in _l(c.get("small_systems"))}
    cells = [f"{_d(s).get('system')!s} {fmt_int(_d(s).get('n'))}"
             + (" (small)" if str(_d(s).get("system")) in small else "")
             for s in _l(c.get("systems"))]
    rule = f"; small: {c.get('small_system_rule')!s}" if small else ""
    return (", ".join(cells) or "not recorded") + rule


def _interval_method(est: dict[str, Any], level_method: Any) -> str | None:
    """How the interval was made, or, where the estimate has none, why (its own method says:
    'none: a perfect correlation ...'), which the level's method did not."""
    own = _str(est.get("method"))
    ci = est.get("ci95")
    if own and own.startswith("none") and not (isinstance(ci, list) and None not in ci):
        return own
    return _str(level_method)


def _correlation_levels(r: dict[str, Any]) -> list[dict[str, Any]]:
    levels = []
    for level, label in (("item", "Item level"), ("group", "Group level"),
                         ("system", "System level")):
        c = _d(_d(r.get("correlation")).get(level))
        if not c:
            continue
        method = _d(c.get("method"))
        if level == "item":
            note = f"one correlation over {fmt_int(c.get('n'))} scored items"
        elif level == "group":
            note = (f"within each value of {c.get('field')!s}, averaged over "
                    f"{fmt_int(c.get('n_groups_used'))} of {fmt_int(c.get('n_groups'))} groups "
                    f"({fmt_int(c.get('n_groups_too_small'))} with one item, "
                    f"{fmt_int(c.get('n_groups_x_constant'))} where the judge gave one score, "
                    f"{fmt_int(c.get('n_groups_y_constant'))} with one gold score left out)")
        else:
            note = (f"mean scores of {fmt_int(c.get('n_systems'))} systems "
                    f"({c.get('field')!s}) correlated across systems, each weighing the same; "
                    "items per system: " + _systems_n(c))
        levels.append({
            "level": level, "label": label, "note": note,
            "rows": [{"stat": name, "est": _estimate(c.get(key)),
                      "method": _interval_method(_d(c.get(key)), method.get(key))}
                     for key, name in _CORR_STATS],
        })
    return levels


def _breakdown(r: dict[str, Any]) -> dict[str, Any] | None:
    b = r.get("breakdown")
    if not isinstance(b, dict):
        return None
    corr = b.get("metric") == "correlation"
    rows = []
    for x in _l(b.get("rows")):
        if not isinstance(x, dict):
            continue
        ests = ([_estimate(x.get(k)) for k, _ in _CORR_STATS] if corr
                else [_estimate(x.get("accuracy"))])
        rows.append({"value": _str(x.get("value")), "n_items": x.get("n_items"),
                     "n_invalid": x.get("n_invalid"), "ests": ests})
    return {"by": _str(b.get("by")), "correlation": corr, "rows": rows,
            "columns": [name for _, name in _CORR_STATS] if corr else ["Accuracy"]}


def _evaluate_view(r: dict[str, Any]) -> dict[str, Any]:
    pointwise = r.get("task") == "pointwise"
    rows = []
    for key, label, help_ in (_POINT_ROWS if pointwise else _EVAL_ROWS):
        e = _estimate(r.get(key))
        if key == "decisive_accuracy" and e is None:
            continue  # older results
        rows.append({"key": key, "label": label, "help": help_, "est": e})
    spread = _d(r.get("accuracy_subset_mean"))
    if spread and not pointwise:
        rows.insert(1, {
            "key": "accuracy_subset_mean",
            "label": f"Accuracy, unweighted mean of {fmt_int(spread.get('n'))} subsets",
            "help": "the Accuracy row pools the subsets, each pair weighing the same; this is "
                    "the mean of the subsets' accuracies, as LLMBar's Average ("
                    + ", ".join(f"{_d(x).get('subset')!s} n = {fmt_int(_d(x).get('n'))}"
                                for x in _l(spread.get("subsets"))) + ")",
            "est": _estimate(spread)})
    for order, e in _d(r.get("per_order_accuracy")).items():
        rows.append({"key": f"per_order_accuracy.{order}", "label": f"Accuracy, order {order}",
                     "help": "only the calls asked in this presentation order",
                     "est": _estimate(e)})
    by_rule = [{"rule": str(k), "est": _estimate(v)}
               for k, v in _d(r.get("accuracy_by_rule")).items()]
    levels = _correlation_levels(r) if pointwise else []
    if pointwise:
        pts = [{"label": f"{lv['label']}: {row['stat']}", "value": row["est"]["value"],
                "ci95": row["est"]["ci95"]}
               for lv in levels for row in lv["rows"]
               if row["est"] and _num(row["est"]["value"]) is not None]
        plot = svg.interval_plot(pts, xlabel="correlation with the gold scores (95% CI)",
                                 reference=0.0, signed=True) if pts else None
    else:
        pts = [{"label": row["label"], "value": row["est"]["value"],
                "ci95": row["est"]["ci95"]}
               for row in rows if row["est"] and _num(row["est"]["value"]) is not None]
        plot = svg.interval_plot(pts, xlabel="value with 95% interval", reference=None) \
            if pts else None
    invalid = [
        {"item_id": x.get("item_id"), "order": x.get("order"), "raw": _text(x.get("raw")),
         "error": _text(x.get("error"))}
        for x in _l(r.get("invalid_examples"))[:MAX_INVALID] if isinstance(x, dict)]
    if pointwise:
        counts = (("n", "items"), ("n_scored", "items with a gold score"),
                  ("n_unscored", "items without a gold score"),
                  ("n_calls_planned", "judge calls planned"), ("n_invalid", "invalid scores"),
                  ("n_decimal", "decimal scores accepted"), ("n_failed_calls", "failed calls"))
    else:
        counts = (("n", "items"), ("n_labelled", "items with a label"),
                  ("n_tie_labels", "items with a tie label"),
                  ("n_calls_planned", "judge calls planned"), ("n_invalid", "invalid verdicts"),
                  ("n_failed_calls", "failed calls"))
    sel = _d(r.get("selection"))
    return {
        **_common(r),
        "text_vs_probs": _text_vs_probs(r.get("text_vs_probs")),
        "page_title": f"judgeaudit evaluate \u2013 {r.get('judge', '?')}",
        "pointwise": pointwise,
        "conventions": _conventions(r),
        "rows": rows,
        "by_rule": by_rule,
        "levels": levels,
        "breakdown": _breakdown(r),
        "plot": plot,
        "counts": [(label, r.get(k)) for k, label in counts if k in r or k in ("n",)],
        "selection": {"kind": _str(sel.get("kind")), "n": sel.get("n"), "of": sel.get("of"),
                      "seed": sel.get("seed")} if sel else None,
        "both_orders": r.get("both_orders"),
        "invalid_examples": invalid,
        "n_invalid_examples": len(_l(r.get("invalid_examples"))),
        "warnings": [str(w) for w in _l(r.get("warnings"))],
    }


def _scoring_tests(mult: dict[str, Any]) -> dict[str, Any] | None:
    """scoring-bias's Holm-adjusted questions (shift, change of Spearman) for the page; None
    for results written before them."""
    if not mult:
        return None
    labels = {"shift": "moves scores (shift)", "spearman_diff": "changes agreement with gold"}
    m, tests, sig = _d(mult.get("m")), _d(mult.get("tests")), _d(mult.get("significant"))
    return {"method": _str(mult.get("method")), "alpha": mult.get("alpha"),
            "note": _str(mult.get("note")),
            "rows": [{"label": labels.get(str(k), str(k)), "test": _str(tests.get(k)),
                      "m": m.get(k), "significant": [str(t) for t in _l(sig.get(k))]}
                     for k in m]}


def _scoring_view(r: dict[str, Any]) -> dict[str, Any]:
    """scoring-bias: one row per template, the distribution heatmap, an interval plot of the
    correlation change, the recommendation and the mitigation table."""
    perts = _d(r.get("perturbations"))
    rows = []
    for name, raw in perts.items():
        e = _d(raw)
        vs = _d(e.get("vs_baseline"))
        tpl = _d(_d(r.get("templates")).get(name))
        rows.append({
            "name": str(name), "description": _str(tpl.get("description")),
            "compared_with": _str(e.get("compared_with")),
            "fp": _estimate(e.get("fp")), "mad": _estimate(e.get("mad")),
            "shift": _estimate(e.get("shift")),
            "spearman": _estimate(e.get("spearman")), "pearson": _estimate(e.get("pearson")),
            "spearman_diff": _estimate(vs.get("spearman_diff")),
            "pearson_diff": _estimate(vs.get("pearson_diff")),
            "n": e.get("n"), "n_invalid": e.get("n_invalid"), "n_missing": e.get("n_missing"),
            "expected": {"mean": _d(e.get("expected")).get("mean"),
                         "shift": _estimate(_d(e.get("expected")).get("shift_vs_baseline")),
                         "mad": _estimate(_d(e.get("expected")).get("mad_vs_baseline")),
                         "spearman": _estimate(_d(e.get("expected")).get("spearman")),
                         "pearson": _estimate(_d(e.get("expected")).get("pearson"))}
            if isinstance(e.get("expected"), dict) else None,
        })
    # the run's own columns (half points such as "2.5" keep theirs); older results: 1-5
    cols = [str(c) for c in _l(_d(r.get("heatmap")).get("cols"))] or [
        "1", "2", "3", "4", "5", "invalid"]
    heat = None
    if rows:
        values = []
        for row in rows:
            dist = _d(_d(perts[row["name"]]).get("distribution"))
            counts = [_num(dist.get(c)) for c in cols]
            total = sum(c for c in counts if c is not None)
            values.append([None if c is None or not total else c / total for c in counts])
        heat = svg.heatmap([row["name"] for row in rows], cols, values, vmin=0.0,
                           title="Share of items given each score, per template", cell=64)
    diff_pts = [{"label": row["name"], "value": row["spearman_diff"]["value"],
                 "ci95": row["spearman_diff"]["ci95"]}
                for row in rows if row["spearman_diff"] and
                _num(row["spearman_diff"]["value"]) is not None]
    diff_plot = svg.interval_plot(diff_pts, xlabel="Spearman with gold: perturbed minus "
                                  "baseline (paired bootstrap 95% CI)", reference=0.0,
                                  signed=True) if diff_pts else None
    mit = _d(r.get("mitigation"))
    options = [{"name": str(k), "description": _str(_d(v).get("description")),
                "mad": _estimate(_d(v).get("mad_vs_heldout")),
                "diff": _estimate(_d(v).get("mad_diff_vs_single")),
                "spearman": _estimate(_d(v).get("spearman")),
                "reduces": _str(_d(v).get("reduces_mad"))}
               for k, v in _d(mit.get("options")).items()]
    rec = r.get("recommended") if isinstance(r.get("recommended"), dict) else None
    refs = _d(r.get("references"))
    ref_summary = _d(refs.get("summary"))
    return {
        **_common(r),
        "page_title": f"judgeaudit scoring-bias \u2013 {r.get('judge', '?')}",
        "n_items": r.get("n_items"),
        "repeats": r.get("repeats"),
        "gold": _str(r.get("gold")),
        "rows": rows,
        "has_expected": any(row["expected"] for row in rows),
        "heatmap": heat,
        "diff_plot": diff_plot,
        "tests": _scoring_tests(_d(r.get("multiplicity"))),
        "repeat_noise": _d(r.get("repeat_noise")),
        "reference_pull": _estimate(r.get("reference_pull")),
        "recommended": {"template": _str(rec.get("template")),
                        "spearman": _estimate(rec.get("spearman")),
                        "notes": [str(n) for n in _l(rec.get("notes"))],
                        "clearly_better": bool(rec.get("clearly_better"))} if rec else None,
        "mitigation": {"available": bool(mit.get("available")), "note": _str(mit.get("note")),
                       "heldout": _str(mit.get("heldout")), "options": options},
        "references": {"generator": _str(refs.get("generator")),
                       "reviewer": _str(refs.get("reviewer")),
                       "summary": ref_summary,
                       "by_score": sorted(_d(ref_summary.get("by_score")).items())}
        if refs else None,
        "invalid_examples": [
            {"template": x.get("template"), "item_id": x.get("item_id"),
             "raw": _text(x.get("raw")), "error": _text(x.get("error"))}
            for x in _l(r.get("invalid_examples"))[:MAX_INVALID] if isinstance(x, dict)],
    }



def _json_stats_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for mod, st in _d(r.get("json_stats")).items():
        st = _d(st)
        rows.append({"module": str(mod), **{k: st.get(k) for k in (
            "calls", "strict", "repaired", "retried", "recovered", "failed", "call_errors")},
            "examples": [{"item_id": _str(x.get("item_id")), "raw": _text(x.get("raw")),
                          "error": _text(x.get("error"))}
                         for x in _l(st.get("examples"))[:5] if isinstance(x, dict)]})
    return rows


SET_TITLES = {"found": "Found factors",
              "pre_discovered": "Baseline: pre-discovered biases (verbosity, beauty, authority, "
                                "bandwagon, sentiment)",
              "biasscope": "Baseline: BiasScope-style factors (length, complexity, illusion of "
                           "knowledge, availability, risk perception)"}


def _not_above(e: dict[str, Any] | None, ref: dict[str, Any] | None) -> bool | None:
    """Whether the estimate's value is at most the top of the reference's 95% interval (a
    comparison, not a test: what quantify documents without `vs_repeat_noise` are shown
    by). None when either is missing."""
    v = _num((e or {}).get("value"))
    ci = (ref or {}).get("ci95")
    if v is None or not isinstance(ci, list) or len(ci) != 2:
        return None
    hi = _num(ci[1])
    return None if hi is None else v <= hi


def _max_r(rs: dict[str, Any], skip: Any) -> dict[str, Any] | None:
    """The correlation with the largest |r| in a row of discover's r table (skipping the
    factor itself): r, its Fisher interval, n and the other factor; None when there is none
    (older documents hold only the bare max |r|)."""
    best = None
    for other, e in rs.items():
        r = _num(_d(e).get("r"))
        if other != skip and r is not None and (best is None or abs(r) > abs(best["r"])):
            best = {"r": r, "ci95": _d(e).get("ci95"), "n": _d(e).get("n"), "with": str(other)}
    return best


def _hubj_view(r: dict[str, Any]) -> dict[str, Any]:
    """discover / quantify / mitigate (HUB-J): splits, factor tables, flip-rate and profile
    plots, bias-controlled win rates, and the JSON-parsing counts of every G module."""
    cmd = str(r.get("command"))
    splits = _d(r.get("splits"))
    ctx: dict[str, Any] = {
        **_common(r),
        "page_title": f"judgeaudit {cmd}",
        "kind": cmd,
        "n_items": r.get("n_items", splits.get("n_items")),
        "human_filter": ({**{k: _d(r.get("human_filter")).get(k)
                             for k in ("loaded", "kept", "used")},
                          "left_out": sorted((str(k), v) for k, v in _d(_d(
                              r.get("human_filter")).get("left_out")).items() if v)}
                         if r.get("human_filter") else None),
        "splits": {"per_judge": sorted((str(k), _d(v)) for k, v in
                                       _d(splits.get("per_judge")).items()),
                   "consensus_agree": splits.get("consensus_agree"),
                   "consensus_disagree": splits.get("consensus_disagree"),
                   "n_items": splits.get("n_items")} if splits else None,
        "json_stats": _json_stats_rows(r),
        "llm": _str(r.get("llm") or r.get("generator") or r.get("scorer")),
        "sets": [], "found": [], "features_n": None, "covered_share": None, "rounds": [],
        "multiplicity": None, "headline": None,
        "quantify": None, "mitigate": None,
    }
    if cmd == "discover":
        disc = _d(r.get("discover"))
        ctx["features_n"] = len(_l(disc.get("features")))
        ctx["covered_share"] = disc.get("covered_share")
        ctx["found"] = [{"name": _str(f.get("name")), "definition": _str(f.get("definition")),
                         "coverage": f.get("coverage")}
                        for f in _l(disc.get("factors")) if isinstance(f, dict)]
        ctx["rounds"] = [_d(x) for x in _l(disc.get("rounds"))]
        val = _d(r.get("validation"))
        # q over every factor tested in the run and what "significant" means (None in
        # results written before discover corrected for testing many factors at once)
        mult = _d(val.get("multiplicity"))
        ctx["multiplicity"] = {"alpha": _num(mult.get("alpha")), "m": mult.get("m"),
                               "significant": [str(x) for x in _l(mult.get("significant"))]
                               } if mult else None
        pts = []
        for set_name, s in _d(val.get("sets")).items():
            rows = []
            vs_pre, within = _d(_d(s).get("r_vs_pre_discovered")), _d(_d(s).get("r_within"))
            for f in _l(_d(s).get("factors")):
                f = _d(f)
                ci = f.get("ci95") or [None, None]
                name = f.get("factor")
                rows.append({**{k: f.get(k) for k in (
                    "n", "mean_delta", "p_t", "q_t", "p_wilcoxon", "q_wilcoxon",
                    "share_positive", "max_abs_r_pre_discovered", "max_abs_r_within_set")},
                    # the r behind each max |r|, with its interval, n and partner
                    "r_pre": _max_r(_d(vs_pre.get(name)),
                                    name if set_name == "pre_discovered" else None),
                    "r_within": _max_r(_d(within.get(name)), name),
                    "significant": f.get("significant") is True,
                    "factor": _str(f.get("factor")), "definition": _str(f.get("definition")),
                    "ci95": ci})
                if _num(f.get("mean_delta")) is not None:
                    pts.append({"label": f"{set_name}: {f.get('factor')}",
                                "value": f.get("mean_delta"), "ci95": ci})
            ctx["sets"].append({"name": str(set_name), "rows": rows,
                                "title": SET_TITLES.get(str(set_name), str(set_name))})
        ctx["delta_plot"] = svg.interval_plot(
            pts, xlabel="mean Delta = intensity(judge-preferred) - intensity(human-preferred)",
            reference=0.0, signed=True) if pts else None
        ctx["headline"] = _discover_headline(ctx)
    elif cmd == "quantify":
        per = _d(r.get("per_judge"))
        levels = [str(x) for x in _l(r.get("levels"))]
        # each judge's flips when the same test items are asked again (absent in results
        # written before quantify measured it: no column then)
        noise_doc = _d(r.get("repeat_noise"))
        tables, charts = [], []
        for judge, fs in per.items():
            rows, series = [], []
            jn = _d(noise_doc.get(judge))
            noise = ({**(_estimate(jn) or {}), "n_invalid": jn.get("n_invalid"),
                      "deterministic": jn.get("deterministic") is True}
                     if jn else None) if noise_doc else None
            for fname, x in _d(fs).items():
                x = _d(x)
                by = _d(x.get("by_level"))
                sus = _estimate(x.get("susceptibility"))
                row = {"factor": str(fname),
                       "levels": [_estimate(by.get(lv)) for lv in levels],
                       "l_star": x.get("l_star"), "susceptibility": sus}
                test = x.get("vs_repeat_noise")
                if isinstance(test, dict):  # the paired test against the repeat noise
                    row["noise_test"] = test
                else:  # an older document: its value against the noise's interval
                    row["within_noise"] = _not_above(sus, noise)
                rows.append(row)
                series.append({"label": str(fname),
                               "values": [_d(by.get(lv)).get("value") for lv in levels]})
            tables.append({"judge": str(judge), "rows": rows, "noise": noise})
            if series and levels:
                charts.append(svg.bar_chart([f"L{lv}" for lv in levels], series,
                                            title=f"Flip rate by injected level: {judge}",
                                            xlabel="level of the factor in the rewritten "
                                                   "rejected response (r⁻)",
                                            ylabel="flip rate"))
        prof = _d(r.get("profile"))
        judges = list(prof)
        factors = sorted({f for j in judges for f in _d(prof[j])})
        heat = svg.heatmap(judges, factors, [[_d(prof[j]).get(f) for f in factors]
                                             for j in judges], vmin=0.0, vmax=1.0,
                           title="Susceptibility (flip rate at l* on test items)") \
            if judges and factors else None
        rw = _d(r.get("rewrites"))
        ctx["quantify"] = {
            "levels": levels, "tables": tables, "charts": charts, "heatmap": heat,
            "has_noise": bool(noise_doc),
            "rewrites": rw, "answer_change": _estimate(r.get("answer_change_rate")),
            "n_cal": len(_l(r.get("calibration_items"))),
            "n_test": len(_l(r.get("test_items"))),
            "factors": [{"name": _str(_d(f).get("name")),
                         "definition": _str(_d(f).get("definition"))}
                        for f in _l(r.get("factors"))],
            "examples": [{"item_id": _str(_d(x).get("item_id")),
                          "factor": _str(_d(x).get("factor")), "level": _d(x).get("level"),
                          "kept": bool(_d(x).get("kept")),
                          "same_answer": _d(x).get("same_answer"),
                          "segments": tuple(_cut_segments(side) for side in _segments(
                              str(_d(x).get("original") or ""),
                              str(_d(x).get("rewritten") or "")))}
                         for x in _l(r.get("rewrite_examples"))[:6]],
        }
        ctx["headline"] = _quantify_headline(ctx["quantify"])
    elif cmd in ("mitigate", "mitigate-apply"):
        rows, pts = [], []
        lc = _d(_d(r.get("other_controls")).get("length"))
        per = _d(r.get("per_judge"))
        applied = _d(r.get("applied"))
        if cmd == "mitigate-apply" and applied:  # one judge; phi and psi fixed from the fit
            per = {applied.get("judge"): {
                **applied, "phi": {"value": applied.get("phi")},
                "psi": {"value": applied.get("psi")}}}
        for judge, x in per.items():
            x = _d(x)
            row = {"judge": str(judge), "win": _estimate(x.get("win")),
                   "bc": _estimate(x.get("bc")), "bias_share": _estimate(x.get("bias_share")),
                   "lc": _estimate(_d(lc.get(judge)).get("bc")), "n": x.get("n")}
            for k in ("theta", "phi", "psi"):
                row[k] = {"value": _d(x.get(k)).get("value"), "se": _d(x.get(k)).get("se")}
            rows.append(row)
            for key, lab in (("win", "win"), ("bc", "BC"), ("lc", "LC")):
                e = row[key]
                if e and _num(e["value"]) is not None:
                    pts.append({"label": f"{judge} {lab}", "value": e["value"],
                                "ci95": e["ci95"]})
        for judge, x in _d(r.get("not_fitted")).items():
            rows.append({"judge": f"{judge} (not fitted: {_d(x).get('reason')})",
                         "win": _estimate(_d(x).get("win")), "bc": None, "bias_share": None,
                         "lc": None, "n": _d(_d(x).get("win")).get("n"),
                         **{k: {"value": None, "se": None} for k in ("theta", "phi", "psi")}})
        f = _d(r.get("factor"))
        other = _d(r.get("other_estimator"))  # the other fit, shown beside (it was only in
        # results.json)
        ctx["mitigate"] = {
            # the fit's estimator (a mitigate-apply run records the one of the fit it
            # applied); None in results that did not record it: the page says so, not a guess
            "estimator": _str(r.get("estimator")),
            "other": {"estimator": _str(other.get("estimator")), "rows": [
                {"judge": str(j), "bc": _estimate(_d(x).get("bc")),
                 "bias_share": _estimate(_d(x).get("bias_share")),
                 "phi": _estimate(_d(x).get("phi"))}
                for j, x in _d(other.get("judges")).items()]} if other else None,
            "factor": _str(f.get("name")), "definition": _str(f.get("definition")),
            "candidate": _str(r.get("candidate")), "rows": rows,
            "counts": sorted((str(k), v) for k, v in _d(r.get("counts")).items()),
            "plot": svg.interval_plot(pts, xlabel="win rate (95% CI)", reference=0.5)
            if pts else None,
            "sigma_gamma": _d(r.get("stage1")).get("sigma_gamma"),
            "applied": {"fit": _str(r.get("fit")), "note": _str(applied.get("note")),
                        "n_new_queries": applied.get("n_new_queries")}
            if cmd == "mitigate-apply" else None,
        }
    if ctx["mitigate"]:
        ctx["headline"] = _mitigate_headline(ctx["mitigate"])
    return ctx


def _iso(x: Any) -> Markup:
    """A name shown inside a headline (an item id, a factor's name, a judge spec): escaped,
    its acting characters visible, in its own dir="auto" span (an Arabic id in an English
    sentence keeps its own direction)."""
    return (Markup('<span dir="auto">') + Markup.escape(svg.visible(str(x)))
            + Markup("</span>"))


def _delta_text(name: Any, value: Any, ci: Any, n: Any, digits: int = 2) -> Markup:
    """'name +0.15 [-0.78, +1.08] (n = 20)': a number a page's headline shows, with its
    interval and n."""
    return Markup("{} {} {} (n = {})").format(_iso(name), fmt_signed(value, digits),
                                               fmt_ci(ci, digits), fmt_int(n))


def _discover_headline(ctx: dict[str, Any]) -> Markup | None:
    """What discover found, in a line above its notes (the page opened on 30 lines of notes):
    the factors it found, how many of the factors tested are significant, and the found (or
    significant) factors' mean Delta with its interval and n."""
    rows = [(st["name"], r) for st in ctx["sets"] for r in st["rows"]]
    if not rows and not ctx["found"]:
        return None
    found = [f["name"] for f in ctx["found"]]
    head = Markup("{} factor{} found").format(len(found), "" if len(found) == 1 else "s")
    if found:
        head += Markup(" (") + Markup(", ").join(_iso(f) for f in found) + Markup(")")
    mult = ctx["multiplicity"]
    sig = [r for _, r in rows if r["significant"]]
    if mult:
        alpha = mult["alpha"]
        head += (f"; {len(sig)} of {fmt_int(mult['m'])} factors tested significant on "
                 f"held-out disagreements with humans (q \u2264 "
                 f"{'?' if alpha is None else f'{alpha:g}'}, Wilcoxon, Benjamini-Hochberg)")
    shown = sig or [r for name, r in rows if name == "found"]
    if shown:
        head += (": " if sig else "; the found factors' mean \u0394: ") + Markup("; ").join(
            _delta_text(r["factor"], r["mean_delta"], r["ci95"], r["n"]) for r in shown[:4])
        if len(shown) > 4:
            head += f"; {len(shown) - 4} more in the table"
    return head + "."


def _quantify_headline(q: dict[str, Any]) -> Markup | None:
    """What quantify measured, in a line above its notes: each (judge, factor)'s
    susceptibility (the flip rate at l* on the test items) with its interval and n, set
    against the judge's repeat noise (the paired test's Holm-adjusted p, or for an older
    document its value against the noise's interval), and how many rows are shown above
    the noise."""
    rows = [(t, r) for t in q["tables"] for r in t["rows"]
            if r["susceptibility"] and _num(r["susceptibility"]["value"]) is not None]
    if not rows:
        return None

    def vs_noise(t: dict[str, Any], r: dict[str, Any]) -> str:
        noise, test = t["noise"], r.get("noise_test")
        known = noise and _num(noise["value"]) is not None
        said = (f"repeat noise {fmt(noise['value'], 2)} {fmt_ci(noise['ci95'], 2, False)}"
                if known else "repeat noise")
        n = [f"n = {fmt_int(noise['n'])}"] if known else []
        if isinstance(test, dict):
            adj = test.get("p_adjusted")
            p = (f"Holm p = {fmt_p(adj)}" if adj is not None and (test.get("m") or 1) > 1
                 else f"p = {fmt_p(test.get('p'))}")
            return (f"{'above' if test.get('shown_above') else 'not shown above'} {said} ("
                    + "; ".join([*n, f"{p} over {fmt_int(test.get('n_pairs'))} pairs"]) + ")")
        if "within_noise" in r and known:
            return (f"{'within' if r['within_noise'] else 'above'} {said} ({n[0]}; by its "
                    "interval, not a test)")
        return "repeat noise not recorded (a result from before quantify measured it)"

    parts = Markup("; ").join(
        Markup("{} {}: {} {} (n = {}), {}").format(
            _iso(t["judge"]), _iso(r["factor"]), fmt(r["susceptibility"]["value"], 2),
            fmt_ci(r["susceptibility"]["ci95"], 2, False), fmt_int(r["susceptibility"]["n"]),
            vs_noise(t, r)) for t, r in rows[:4])
    more = f"; {len(rows) - 4} more in the tables" if len(rows) > 4 else ""
    factors = sorted({str(r["factor"]) for _, r in rows})
    head = (Markup("Susceptibility (flip rate at l* on the test items, 95% interval) of ")
            + f"{len(factors)} factor{'' if len(factors) == 1 else 's'} ("
            + Markup(", ").join(_iso(f) for f in factors) + "): " + parts + more)
    tested = [r["noise_test"] for _, r in rows if isinstance(r.get("noise_test"), dict)]
    if tested:
        k = sum(bool(x.get("shown_above")) for x in tested)
        head += (f". {k} of {len(tested)} row{'' if len(tested) == 1 else 's'} shown above "
                 "repeat noise (paired sign test, Holm over the rows)")
    return head + "."


def _excludes0(e: dict[str, Any]) -> bool:
    ci = e.get("ci95") or [None, None]
    lo, hi = (_num(ci[0]), _num(ci[1])) if len(ci) == 2 else (None, None)
    return lo is not None and hi is not None and (lo > 0 or hi < 0)


def _mitigate_headline(m: dict[str, Any]) -> Markup | None:
    """What mitigate measured, in a line above its notes: each judge's bias share (win - BC,
    the part of its win rate the factor explains) with its interval and n, and how many of
    those intervals exclude 0."""
    rows = [r for r in m["rows"] if r.get("bias_share") and
            _num(r["bias_share"].get("value")) is not None]
    if not rows:
        return None
    k = sum(_excludes0(r["bias_share"]) for r in rows)
    parts = Markup("; ").join(
        _delta_text(r["judge"], r["bias_share"]["value"], r["bias_share"]["ci95"],
                    r["bias_share"].get("n"), 3) for r in rows[:4])
    more = f"; {len(rows) - 4} more in the table" if len(rows) > 4 else ""
    return (Markup("Bias share of the win rate explained by ") + _iso(m["factor"] or "the factor")
            + " (win - BC, 95% interval): " + parts + more
            + (f". Its interval {'excludes' if k else 'includes'} 0." if len(rows) == 1
               else f". {k} of {len(rows)} judges' intervals exclude 0."))


def _compare_methods_notes(r: dict[str, Any]) -> list[str]:
    """compare's notes about the methods that made its audits (`audit.compare.methods_notes`:
    they differ, or a side was made by older methods or a newer judgeaudit), which compare
    also keeps among its warnings."""
    warned = {str(w) for w in _l(r.get("warnings"))}
    return [str(n) for n in _l(r.get("notes")) if str(n) in warned and (
        str(n).startswith("A and B were made by different methods")
        or re.match(r"[AB] \(.*\): (this result was made|written by a newer judgeaudit)",
                    str(n), re.S))]


def _compare_view(r: dict[str, Any]) -> dict[str, Any]:
    """compare: two audits of the same items, probe by probe (the change B - A, its interval
    and q, and a verdict: improved / worse / no change / underpowered)."""
    # (label, CSS class from the fixed list in base.html, glyph): a file never picks a class
    looks = {"improved": ("improved", "v-not-biased", "\u25bc"),
             "worse": ("worse", "v-biased", "\u25b2"),
             "no_change": ("no change", "v-unknown", "\u25cf"),
             "underpowered": ("underpowered", "v-underpowered", "\u25c6")}

    def look(v: Any) -> dict[str, str]:
        lab, cls, glyph = looks.get(v, (f"unknown ({v})", "v-unknown", "?"))
        return {"label": lab, "cls": cls, "glyph": glyph}

    def eff(e: Any) -> dict[str, Any]:
        e = _d(e)
        ci = e.get("ci95")
        return {"value": e.get("value"), "ci95": ci if isinstance(ci, list) else None}

    def side(x: Any) -> dict[str, Any]:
        """A run's effect beside the change: over the matched items (`over` "matched", the
        change's items) or the audit's own (unpaired, or results written before compare
        matched them); `own` is the audit's effect over all its items, its n and verdict.
        `whole`: the shown effect covers every item the audit judged, so its verdict (about
        all of them) may stand beside it."""
        x = _d(x)
        own = _d(x.get("own"))
        over = "matched" if x.get("over") == "matched" else "own"
        mine = {**eff(own.get("effect")), "n": own.get("n")} if own else \
            {**eff(x.get("effect")), "n": x.get("n")}
        return {**eff(x.get("effect")), "n": x.get("n"), "over": over,
                "verdict": _str(x.get("verdict")), "own": mine,
                "whole": over == "own" or x.get("n") == mine["n"]}

    def run_info(x: Any, key: str) -> dict[str, Any]:
        x = _d(x)
        tpl = _d(x.get("template"))
        return {"key": key, "path": _str(x.get("path")), "judge": _str(x.get("judge")),
                "judges": [str(j) for j in _l(x.get("judges"))],
                "data": _str(x.get("data")), "n_items": x.get("n_items"),
                "template": {"name": _str(tpl.get("name")), "sha256": _str(tpl.get("sha256"))},
                "version": _str(x.get("version")), "started": _str(x.get("started")),
                "status": _str(x.get("status")), "biased": [str(n) for n in
                                                            _l(x.get("biased"))]}

    runs = _d(r.get("runs"))
    used: set[str] = set()
    probes = []
    for name, raw in _d(r.get("probes")).items():
        p = _d(raw)
        ch = _d(p.get("change"))
        ci = ch.get("ci95")
        nb = p.get("no_bias_range")
        probes.append({
            "name": str(name), "slug": _slug(str(name), used),
            "title": _str(p.get("title")) or str(name), "metric": _str(p.get("metric")),
            "direction": _str(p.get("direction")),
            "no_bias_range": nb if isinstance(nb, list) and len(nb) == 2 else None,
            "a": side(p.get("a")), "b": side(p.get("b")),
            "change": {"value": ch.get("value"), "ci95": ci if isinstance(ci, list) else None},
            "p": p.get("p"), "q": p.get("q"), "margin": p.get("margin"),
            "pairing": "paired" if p.get("pairing") == "paired" else "unpaired",
            "counts": _d(p.get("items")), "bias": _d(p.get("bias")),
            "left_out": p.get("pairing") == "paired" and bool(
                _d(p.get("items")).get("n_only_a") or _d(p.get("items")).get("n_only_b")),
            "verdict": _str(p.get("verdict")), "look": look(p.get("verdict")),
            "reason": _str(p.get("reason")), "notes": [str(n) for n in _l(p.get("notes"))],
        })
    counts = {v: sum(p["verdict"] == v for p in probes) for v in looks}
    effects_plot = change_plot = None
    if probes:
        rows = []
        for p in probes:
            for key in ("a", "b"):  # an audit's verdict is about all its items: shown
                # only beside an effect over all of them
                rows.append({"label": f"{p['name']} {key.upper()}", "value": p[key]["value"],
                             "ci95": p[key]["ci95"], "no_bias_range": p["no_bias_range"],
                             "verdict": p[key]["verdict"] if p[key]["whole"] else None})
        effects_plot = svg.interval_plot(
            rows, xlabel="effect in audit A and audit B on the compared items (each probe's "
            "own metric; 0 = no effect)", signed=True, width=1000, row_height=24)
        change_plot = svg.interval_plot(  # the verdict in the label: svg colours audit ones
            [{"label": f"{p['name']}: {p['look']['label']}", "value": p["change"]["value"],
              "ci95": p["change"]["ci95"]} for p in probes],
            xlabel="change in effect, B - A (95% interval)", signed=True, width=1000)
    alpha = _num(r.get("alpha"))
    ra, rb = run_info(runs.get("a"), "A"), run_info(runs.get("b"), "B")
    from judgeaudit import methods

    said = _compare_methods_notes(r)
    summary = _d(r.get("summary"))
    method = _d(r.get("method"))
    return {
        "command": "compare",
        "version": r.get("version"),
        "schema_version": r.get("schema_version", SCHEMA_VERSION),
        "run": _d(r.get("run")),
        "page_title": f"judgeaudit compare \u2013 {ra['judge'] or '?'} vs {rb['judge'] or '?'}",
        "runs": [ra, rb],
        "data": _str(r.get("data")),
        "n_items": r.get("n_items"),
        "alpha": 0.05 if alpha is None else alpha,
        "margin": r.get("margin"),
        "seed": r.get("seed"),
        "started": _str(r.get("started")),
        "seconds": r.get("seconds"),
        "probes": probes,
        "any_left_out": any(p["left_out"] and p["a"]["over"] == "matched" for p in probes),
        # results written before compare gave the A/B effects over the matched items
        "columns_own": not any("over" in _d(_d(raw).get(k))
                               for raw in _d(r.get("probes")).values() for k in ("a", "b")),
        "counts": counts,
        "looks": [(v, look(v)) for v in looks],
        "judge_differences": [str(x) for x in _l(r.get("judge_differences"))],
        # what the audits' methods were lead the page (_methods_banner.html), not the notes
        "methods_notes": [*methods.notes(r), *said],
        "notes": [str(x) for x in _l(r.get("notes")) if str(x) not in said],
        "only_in_a": [str(n) for n in _l(r.get("only_in_a"))],
        "only_in_b": [str(n) for n in _l(r.get("only_in_b"))],
        # the --fail-on gate: its outcome, the probes that tripped it and those it could not
        # decide (underpowered), which a passing gate said nowhere
        "gate": _gate(r),
        "n_paired": len(_l(summary.get("paired"))),
        "n_unpaired": len(_l(summary.get("unpaired"))),
        "method": {k: _str(method.get(k)) for k in ("paired", "unpaired", "verdicts")},
        "effects_plot": effects_plot,
        "change_plot": change_plot,
    }


# ---------------------------------------------------------------- public API

def _rank_view(r: dict[str, Any]) -> dict[str, Any]:
    from judgeaudit.report.rank_html import rank_view  # it imports this module's helpers

    return rank_view(r)


def _rank_eval_view(r: dict[str, Any]) -> dict[str, Any]:
    from judgeaudit.report.rank_html import rank_eval_view

    return rank_eval_view(r)


# The page of each command's results: (view model builder, template). `render_report`, the
# `judgeaudit report` command and `Result.report` dispatch on the document's command here.
LAYOUTS: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], str]] = {
    "audit": (_audit_view, "audit.html"),
    "evaluate": (_evaluate_view, "evaluate.html"),
    "scoring-bias": (_scoring_view, "scoring.html"),
    "discover": (_hubj_view, "hubj.html"),
    "quantify": (_hubj_view, "hubj.html"),
    "mitigate": (_hubj_view, "hubj.html"),
    "mitigate-apply": (_hubj_view, "hubj.html"),
    "compare": (_compare_view, "compare.html"),
    "rank": (_rank_view, "rank.html"),
    "rank-eval": (_rank_eval_view, "rank_eval.html"),
}


def render_report(results: dict[str, Any]) -> str:
    """The HTML page for a results document (any command in `LAYOUTS`).

    Accepts what `read_results` returns, or the in-memory dict before `write_results` (no
    schema_version yet); refuses any other schema version with a ValueError."""
    if not isinstance(results, dict):
        raise ValueError(f"results must be a JSON object, got {type(results).__name__}")
    v = results.get("schema_version", SCHEMA_VERSION)
    if v != SCHEMA_VERSION:
        raise ValueError(
            f"results schema_version {v!r} is not supported: this judgeaudit "
            f"reads schema_version {SCHEMA_VERSION} (re-run the command with this version, or "
            "use the judgeaudit version that wrote the file)")
    command = results.get("command", "audit" if "probes" in results else None)
    layout = LAYOUTS.get(str(command))
    if layout is None:
        raise ValueError(f"no report layout for command {command!r} (expected one of "
                         f"{', '.join(repr(c) for c in LAYOUTS)})")
    view, tpl = layout
    ctx = view(results)
    from judgeaudit.methods import notes  # _header.html's banner: made by other methods

    ctx.setdefault("methods_notes", notes(results))
    ctx.setdefault("made_by", {k: results.get(k) for k in ("methods", "build")})
    return _env().get_template(tpl).render(**ctx)


def write_report(results_dir_or_file: str | Path, out_path: str | Path | None = None) -> Path:
    """Read results.json (a directory holding it, or the file) and write report.html next to
    it, or to `out_path`. Written atomically. Returns the report's path."""
    src = Path(results_dir_or_file)
    results_file = src / "results.json" if src.is_dir() else src
    if not results_file.is_file():
        raise FileNotFoundError(f"{results_file}: no results file")
    from judgeaudit.results_shape import check_shape, unreadable

    try:
        doc = read_results(results_file)
        check_shape(doc, results_file)  # a section of the wrong type: bad input, named
        try:
            html = render_report(doc)
        except (TypeError, AttributeError, KeyError) as exc:  # deeper than check_shape looks
            logging.getLogger("judgeaudit.report").info("rendering %s", results_file,
                                                        exc_info=True)  # shown under -v
            raise unreadable(results_file, exc) from exc
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(msg if str(results_file) in msg else f"{results_file}: {msg}") from None
    out = Path(out_path) if out_path is not None else results_file.parent / "report.html"
    write_atomic(out, html)
    return out


__all__ = ["render_report", "write_report"]
