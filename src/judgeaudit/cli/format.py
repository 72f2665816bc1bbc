"""Terminal tables of results: every number with its n and 95% interval."""

from __future__ import annotations

import re
from typing import Any

from rich.table import Table
from rich.text import Text

from judgeaudit.cli.terminal import shown
from judgeaudit.llm.client import _usd
from judgeaudit.llm.plan import FREE, FREE_WORDS, RATE_WORDS
from judgeaudit.outcome import retries_text, run_failed, unreadable_share
from judgeaudit.stats.tests import p_text


def calls_text(res: dict[str, Any]) -> str:
    """The calls line every run command prints: made, from cache (earlier runs' answers),
    shared (a request asked again in this run, answered once: probes sharing a baseline
    verdict; a first run read "320 from cache"), retries when there were any, failed, the
    answers the judge could not read (`unreadable_text`), and the time. Retries and
    unreadable answers were in results.json only: a run against a server answering 429s
    read "4 made, 0 from cache, 0 failed" while its report said "16 retries"."""
    c = res.get("calls") or {}
    narrowed = c.get("narrowed_to")
    retries = retries_text(c)  # with their causes: "20 retries (15 HTTP 429, 5 HTTP 5xx)"
    return (f"calls: {c.get('made', 0)} made, {cached_text(c)}, "
            + (f"{retries}, " if retries else "")
            + f"{failed_text(c)}{unreadable_text(c)}{usage_text(c)}"
            + (f"; at most {narrowed} at a time after timeouts in the server's queue"
               if narrowed else "")
            + (f"; {res['seconds']:.1f} s" if "seconds" in res else ""))


def unreadable_text(calls: dict[str, Any]) -> str:
    """'; N unreadable answers of M (x%)': the distinct answers (made or from cache) the judge
    could not read as a verdict (`CallStats.unreadable`) of the distinct answers read
    (`outcome.answers_read`: a baseline verdict read by three probes is one answer; over
    made + cached, the readings, an audit of `sim?invalid=0.3` read "208 unreadable answers
    of 1040 (20.0%)" for 208 of 720, 28.9%). '' when none were or the document does not
    count them (written before the count existed). An older document is shown as it counted
    (`outcome.unreadable_share`): "N unreadable of M answers read, each reading counted",
    or, when it does not say whether it counted answers or readings, both totals and no
    share. A count of this run's answers, not an estimate: each command states its own
    invalid rate with its interval where it uses it."""
    got = unreadable_share(calls)
    if got is None:
        return ""
    bad, of = got["n"], got["of"]
    if got["unit"] == "either":
        return (f"; {bad} unreadable, of {of} answers or of their {got['readings']} readings "
                "(the document does not say which it counted)")
    share = f"({100 * got['share']:.1f}%)"
    if got["unit"] == "readings":
        return f"; {bad} unreadable of {of} answers read, each reading counted {share}"
    return f"; {bad} unreadable answers of {of} {share}"


def cached_text(calls: dict[str, Any]) -> str:
    """'N from cache' (earlier runs' answers), with ', M shared within the run' where a
    request was asked again in the run and answered once (`CallStats.shared`)."""
    shared = int(calls.get("shared") or 0)
    return f"{int(calls.get('cached') or 0) - shared} from cache" + (
        f", {shared} shared within the run (asked again, answered once)" if shared else "")


def usage_text(calls: dict[str, Any]) -> str:
    """'; N prompt + M completion tokens, $X' for the calls made in this run (what it cost),
    '' when none were counted (cache hits). The price is the provider's list price where it
    is known (`Provider.price_per_mtok`); a judge that costs nothing (the embedded one) shows
    no price."""
    p, c = calls.get("prompt_tokens") or 0, calls.get("completion_tokens") or 0
    if not (p or c):
        return ""
    cost = calls.get("cost_usd")
    guessed = calls.get("usage_estimated")
    return f"; {p:,} prompt + {c:,} completion tokens" + (
        f", {_usd(cost)} at {rate_said(calls.get('price_rate'))}"
        if cost else "") + (
        f" ({guessed} of the calls' tokens estimated from characters: the server sent no "
        "usage)" if guessed else "")


# The price a run's cost is at (`CallStats.price_rate`; a document without it: list prices).
# A batch=on run said "at list prices" for the built-in price halved, and a spec's price was
# used as given under batch=on with nothing said. The plan and ingest's words
# (`plan.RATE_WORDS`), so a plan, its ingest and the run's calls line name a rate alike; the
# batch rate said shorter here, as the calls line said it since 6b7421d.
RATE_SAID = {**RATE_WORDS, "batch": "the batch rate (half the list price: batch=on)"}


def rate_said(rate: str | None) -> str:
    """The calls line's words for `CallStats.price_rate`: a judge that costs nothing is said
    so (`plan.FREE`), not "list prices" (a document without a rate: list prices)."""
    return FREE_WORDS if rate == FREE else RATE_SAID.get(rate or "list", "list prices")


def failed_text(calls: dict[str, Any]) -> str:
    """'N failed', with how many of them were never sent (the client's breaker), how many
    an interruption cancelled (they read as failures of the server) and how many were a
    too-long refusal kept in the cache (`CallStats.refused_cached`: not sent again)."""
    not_sent, cancelled = calls.get("not_sent"), calls.get("cancelled")
    kept = calls.get("refused_cached")
    notes = [f"{not_sent} not sent" if not_sent else "",
             f"{cancelled} cancelled by the interruption" if cancelled else "",
             f"{kept} too long for the model's context, a refusal kept in the cache and not "
             "sent again (`judgeaudit cache forget --invalid` asks again)" if kept else ""]
    notes = [x for x in notes if x]
    return (f"{calls.get('failed', 0)} failed" + (f" ({'; '.join(notes)})" if notes else "")
            + (open_batches_text(calls.get("open_batches") or {}) if cancelled else ""))


def open_batches_text(opened: dict[str, int]) -> str:
    """'; batch X (N requests) is still open at the provider...': an interrupted batch=on run
    read "40 cancelled by the interruption" while its batch went on at the provider and was
    billed. Its id, that it is billed, and that a re-run collects it (it is recorded in the
    cache: the same command polls it and submits nothing again)."""
    if not opened:
        return ""
    ids = sorted(opened)
    n = sum(opened.values())
    which = (f"batch {ids[0]}" if len(ids) == 1
             else f"{len(ids)} batches ({', '.join(ids)})")
    return (f"; {which} ({n} request{'' if n == 1 else 's'}) "
            f"{'is' if len(ids) == 1 else 'are'} still open at the provider, which answers and "
            "bills {0}: running the same command again collects the answers (nothing is "
            "submitted again); `judgeaudit batch cancel` cancels {0} (what was answered by "
            "then is billed)").format("it" if len(ids) == 1 else "them")


def _fixed(x: float, digits: int) -> str:
    """`x` to `digits` decimals, a value that rounds to 0 as 0 ("-0.00" read as a sign)."""
    s = f"{x:.{digits}f}"
    return s[1:] if s.startswith("-") and float(s) == 0 else s


def est_ci(e: Any, digits: int = 3) -> str:
    """'value [lo, hi]' of an estimate dict, '-' when it has no value."""
    if not isinstance(e, dict) or e.get("value") is None:
        return "-"
    lo, hi = e.get("ci95") or [None, None]
    ci = f" [{_fixed(lo, 2)}, {_fixed(hi, 2)}]" if lo is not None and hi is not None else ""
    return f"{_fixed(e['value'], digits)}{ci}"


def fmt_est(est: dict[str, Any] | None, pct: bool = True) -> tuple[str, str, str]:
    """(value, interval, n) cells of an estimate; one with a value and no interval (too few
    units) shows its value and an empty interval."""
    if not est or est.get("value") is None:
        return ("n/a", "", str(est.get("n", 0)) if est else "0")
    v, n = est["value"], est.get("n", 0)
    lo, hi = est.get("ci95") or (None, None)
    if lo is None or hi is None:
        return (f"{100 * v:.1f}%" if pct else f"{v:.3f}", "", str(n))
    if pct:
        return (f"{100 * v:.1f}%", f"[{100 * lo:.1f}, {100 * hi:.1f}]", str(n))
    return (f"{v:.3f}", f"[{lo:.3f}, {hi:.3f}]", str(n))


def evaluate_table(res: dict[str, Any]) -> Any:
    """The evaluate results as terminal tables (a rich renderable): the metrics, titled with
    the conventions they follow, and the --by breakdown when there is one."""
    from rich.console import Group

    conv = res.get("conventions") or {}
    pointwise = res.get("task") == "pointwise"
    if run_failed(res):
        return _evaluate_failed_text(res, pointwise)
    if pointwise:
        how = "pointwise scores vs gold"
    elif conv:
        tie = conv.get("ties")
        if not conv.get("n_tie_labels"):
            tie_txt = "no tie labels"
        else:
            tie_txt = (f"ties {tie}{' (default)' if conv.get('ties_default') else ''}, "
                       f"{conv['n_tie_labels']} tie-labelled")
        how = f"pair rule {conv.get('pair_rule')}, {tie_txt}"
    else:
        how = "pair rule mean"
    t = Table(title=f"judge {res['judge']} on {res['data']} ({how})", title_justify="left")
    t.add_column("metric")
    t.add_column("value", justify="right")
    t.add_column("95% CI", justify="right")
    t.add_column("n", justify="right")
    parts: list[Any] = [t]
    if pointwise:
        corr = res.get("correlation") or {}
        for level in ("item", "group", "system"):
            c = corr.get(level)
            if not c:
                continue
            unit = {"item": "items", "group": f"groups by {c.get('field')}",
                    "system": f"systems by {c.get('field')}"}[level]
            for stat, name in (("pearson", "Pearson r"), ("spearman", "Spearman rho"),
                               ("kendall", "Kendall tau-b")):
                t.add_row(f"{name}, {level} level ({unit})", *fmt_est(c.get(stat), False))
        exact = res.get("exact_agreement") or {}
        t.add_row("exact agreement (integer gold scores)" if "n_gold_non_integer" in exact
                  else "exact agreement", *fmt_est(exact or None, True))
        t.add_row("mean absolute error", *fmt_est(res.get("mae"), False))
        t.add_row("invalid scores", *fmt_est(res.get("invalid_rate"), True))
        if exact.get("n_gold_non_integer"):
            parts.append(f"exact agreement: {exact['n_gold_non_integer']} items whose gold "
                         "score is not an integer (a mean of ratings) left out; the correlations "
                         "and MAE use them")
        sysl = corr.get("system")
        if sysl and sysl.get("systems"):
            parts.append(_systems_text(sysl))
        for level in ("item", "group", "system"):
            why = _no_interval_text(corr.get(level), level)
            if why:
                parts.append(why)
        g = corr.get("group")
        if g:
            parts.append(f"group level: {g.get('n_groups_used')} of {g.get('n_groups')} groups "
                         f"used ({g.get('n_groups_too_small')} with one item, "
                         f"{g.get('n_groups_x_constant')} with one judge score, "
                         f"{g.get('n_groups_y_constant')} with one gold score)")
    else:
        mtbench = conv.get("pair_rule") == "mtbench"
        rows = [
            ("agreement without tie (MT-Bench)" if mtbench else "accuracy (invalid = wrong)",
             res.get("accuracy"), True),
            ("accuracy (valid only)", res.get("accuracy_valid"), True),
            ("decisive verdicts naming the label", res.get("decisive_accuracy"), True),
            ("position consistency (both unreadable = same)",
             res.get("position_consistency"), True),
            ("position consistency (both orders valid)",
             res.get("position_consistency_valid"), True),
            ("first-position rate", res.get("first_position_rate"), True),
            ("Cohen's kappa vs labels", res.get("cohen_kappa"), False),
            ("invalid verdicts", res.get("invalid_rate"), True),
        ]
        for name, est, pct in rows:
            if est is not None:
                t.add_row(name, *fmt_est(est, pct))
        spread = res.get("accuracy_subset_mean")
        if spread:
            parts.append(_subset_mean_text(res.get("accuracy") or {}, spread))
        nv = _no_verdict_text(res.get("accuracy") or {}, conv.get("pair_rule"))
        if nv:
            parts.append(nv)
        mt = (res.get("accuracy_by_rule") or {}).get("mtbench")
        if mt and mt.get("n_left_out") is not None:
            parts.append(_mtbench_text(mt, chosen=mtbench))
    left = _left_out_text(res, pointwise)
    if left:
        parts.append(left)
    if cut := cut_text(res):
        parts.append(cut)
    if conv.get("description"):
        # plain text: the description's "[verdict = label]" is not console markup
        parts.append(Text(shown(f"conventions: {conv['description']}")))
    bd = res.get("breakdown")
    if bd and bd.get("rows"):
        b = Table(title=f"by {bd.get('by')}", title_justify="left")
        b.add_column(bd.get("by") or "value")
        b.add_column("items", justify="right")
        if bd.get("metric") == "correlation":
            for col in ("Pearson r [95% CI]", "Spearman rho [95% CI]", "Kendall tau-b [95% CI]",
                        "n"):
                b.add_column(col, justify="right")
            for r in bd["rows"]:
                b.add_row(str(r.get("value")), str(r.get("n_items")),
                          *(est_ci(r.get(k)) for k in ("pearson", "spearman", "kendall")),
                          str(r.get("n", 0)))
        else:
            for col in ("accuracy", "95% CI", "n"):
                b.add_column(col, justify="right")
            for r in bd["rows"]:
                b.add_row(str(r.get("value")), str(r.get("n_items")),
                          *fmt_est(r.get("accuracy"), True))
        parts.append(b)
    return Group(*parts) if len(parts) > 1 else t


def _systems_text(sysl: dict[str, Any], most: int = 12) -> str:
    """Each system's item count (every system's mean weighs the same at system level, so a
    system of few items shows here), the small ones marked."""
    small = {str(s.get("system")) for s in sysl.get("small_systems") or []}
    systems = sysl.get("systems") or []
    cells = [f"{s.get('system')} {s.get('n')}{' (small)' if str(s.get('system')) in small else ''}"
             for s in systems[:most]]
    more = f", ... {len(systems) - most} more" if len(systems) > most else ""
    rule = (f"; small: {sysl.get('small_system_rule')} ({sysl.get('median_system_n'):g})"
            if small else "")
    return (f"system level: items per system by {sysl.get('field')}: {', '.join(cells)}{more}"
            f"{rule}")


def _no_interval_text(c: dict[str, Any] | None, level: str) -> str:
    """Why a correlation with a value has no interval (its estimate's method says: a
    perfect correlation every resample repeats, too few units), which the table's empty cell
    did not say."""
    if not c:
        return ""
    names = {"pearson": "Pearson", "spearman": "Spearman", "kendall": "Kendall"}
    why: dict[str, list[str]] = {}
    for key, name in names.items():
        e = c.get(key) or {}
        lo, hi = e.get("ci95") or (None, None)
        v = e.get("value")
        if v is None or v != v or (lo is not None and hi is not None):
            continue
        method = str(e.get("method") or "")
        reason = (method.split(":", 1)[1].strip() if method.startswith("none:")
                  else f"too few {'systems' if level == 'system' else 'units'} "
                       f"(n = {e.get('n')})")
        why.setdefault(reason, []).append(name)
    def _names(ns: list[str]) -> str:
        return ns[0] if len(ns) == 1 else f"{', '.join(ns[:-1])} and {ns[-1]}"

    return "; ".join(f"{level} level: no interval for {_names(ns)}: {r}"
                     for r, ns in why.items())


def _subset_mean_text(pooled: dict[str, Any], spread: dict[str, Any]) -> str:
    """The accuracy row pools several subsets, each pair weighing the same; the papers'
    "Average" is the unweighted mean of the subsets': both, named."""
    value, ci, _ = fmt_est(spread, True)
    subsets = spread.get("subsets") or []
    each = ", ".join(f"{str(s['subset']).rsplit('/', 1)[-1]} {100 * s['accuracy']:.1f}% "
                     f"(n = {s['n']})" for s in subsets[:8])
    more = f", ... {len(subsets) - 8} more" if len(subsets) > 8 else ""
    return (f"accuracy above pools {spread.get('n')} subsets (n = {pooled.get('n')}, each pair "
            f"weighing the same); unweighted mean of the subsets (as LLMBar's 'Average'): "
            f"{value} {ci} over {each}{more}")


def _no_verdict_text(est: dict[str, Any], rule: str | None) -> str:
    """Every rule counts a pair whose order gave no verdict in n with no credit for that
    order (mtbench: a pair with no verdict in any order, a disagreement): say how many and
    why (a refused call read as a wrong answer)."""
    failed = est.get("n_no_verdict_failed") or 0
    unreadable = est.get("n_no_verdict_unreadable") or 0
    if not failed and not unreadable:
        return ""
    what = [f"{failed} with a failed or refused call" if failed else "",
            f"{unreadable} with an unreadable answer" if unreadable else ""]
    how = {"mtbench": "pairs with no verdict in any order, as a disagreement (FastChat's "
                      "'error' vote)",
           "sum": "pairs with an order without a verdict, that order scoring 0 (neither right "
                  "nor wrong)"}.get(rule or "mean",
                                   "pairs with an order without a verdict, that order as wrong")
    return (f"accuracy ({rule or 'mean'} rule) counts {failed + unreadable} of {est.get('n')} "
            f"{how}: {' and '.join(w for w in what if w)}")


def _mtbench_text(est: dict[str, Any], chosen: bool) -> str:
    """MT-Bench's agreement without tie (FastChat) with its n and the pairs it leaves out:
    the accuracy row when it is the pair rule, else beside the table (the benchmark's own
    number for MT-Bench data)."""
    reasons = est.get("left_out")
    if isinstance(reasons, dict) and reasons:
        from judgeaudit.audit.evaluate import MTBENCH_LEFT_OUT
        left = (f"{est['n_left_out']} pairs left out: "
                + ", ".join(f"{n} {MTBENCH_LEFT_OUT.get(k, k)}" for k, n in reasons.items()))
    else:
        left = f"{est['n_left_out']} pairs left out: a tie, orders that differ or a tie label"
    if chosen:
        return f"agreement without tie (MT-Bench rule): {left}"
    value, ci, n = fmt_est(est, True)
    return (f"MT-Bench's agreement without tie (FastChat): {value} {ci} (n = {n}; {left})")


def _evaluate_failed_text(res: dict[str, Any], pointwise: bool) -> Text:
    """A failed run in place of the metrics: what ran and its counts, no numbers (its
    accuracy "0.0%" and position consistency "100.0% [51.0, 100.0]" of a judge whose every
    answer was unreadable were shown above the error; --json, audit and the report withhold
    them). The reason is the `error: run failed: ...` line the command ends with."""
    run = res.get("run") or {}
    what = "scores" if pointwise else "verdicts"
    unit = "items" if pointwise else "pairs"
    lines = [f"judge {res.get('judge')} on {res.get('data')}: run failed, no metrics shown "
             "(a failed run's numbers are not results)"]
    counts = [f"{run.get('n_valid', 0)} of {run.get('n_planned', res.get('n', 0))} {unit} "
              f"with a valid {what[:-1]}"]
    if run.get("answers"):
        counts.append(f"{run.get('unreadable', 0)} of {run['answers']} answers unreadable")
    if run.get("calls_failed"):
        counts.append(f"{run['calls_failed']} of {run.get('calls_asked')} calls failed")
    lines.append("counts: " + "; ".join(counts) + " (the reason: the error line below)")
    if cut := cut_text(res):
        lines.append(cut)
    return Text(shown("\n".join(lines)))


def cut_text(res: dict[str, Any]) -> str:
    """'of the 29 invalid: 15 cut at max_tokens (4000) (...), 14 empty' from evaluate's
    n_cut / n_empty ('' when neither), the limits named by the examples' reasons: a cut
    answer read as a plain unreadable one, and the token limit was named only when it was
    the run's first."""
    n_cut, n_empty = int(res.get("n_cut") or 0), int(res.get("n_empty") or 0)
    if not (n_cut or n_empty):
        return ""
    limits = sorted({m.group(1) for x in res.get("invalid_examples") or []
                     if isinstance(x, dict)
                     for m in [re.match(r"cut at max_tokens \((\d+)\)", str(x.get("error")))]
                     if m})
    at = f" ({', '.join(limits)})" if limits else ""
    said = ([f"{n_cut} cut at max_tokens{at} (a larger max_tokens in the judge spec may "
             "give a verdict)"] if n_cut else []) + ([f"{n_empty} empty"] if n_empty else [])
    rest = int(res.get("n_invalid") or 0) - n_cut - n_empty  # the count adds up, said
    if rest > 0:
        said.append(f"{rest} other (unreadable answers or failed calls)")
    return f"of the {res.get('n_invalid', 0)} invalid: " + ", ".join(said)


def _left_out_text(res: dict[str, Any], pointwise: bool) -> str:
    """Items without a label (gold score) are left out of the metrics that need one: say how
    many (the count was only in results.json)."""
    n = res.get("n")
    if pointwise:
        missing, what = res.get("n_unscored") or 0, "without a gold score"
    else:
        labelled = res.get("n_labelled")
        missing = n - labelled if isinstance(n, int) and isinstance(labelled, int) else 0
        what = "unlabelled"
    if not missing:
        return ""
    unit = "items" if pointwise else "pairs"
    return (f"left out: {missing} of {n} {unit} {what} (no metric compared with "
            f"{'gold scores' if pointwise else 'labels'} counts them)")


def _flag_text(value: float, threshold: float, exceeds: bool) -> str:
    """'0.551>0.55': as many decimals as it takes for the value not to read as the threshold
    (at two, 0.551 showed as '0.55>0.55')."""
    digits = 2
    while digits < 6 and f"{value:.{digits}f}" == f"{threshold:.{digits}f}" and value != threshold:
        digits += 1
    return f"{value:.{digits}f}{'>' if exceeds else '<='}{threshold:.2f}"


VERDICT_STYLE = {"biased": "bold red", "not_biased": "green", "underpowered": "yellow",
                 "run_failed": "bold red", "not_run": "dim"}


def _num(x: float | None, fmt: str = "{:.3f}") -> str:
    return "n/a" if x is None else fmt.format(x)


# A column of a terminal table: header, justification, one cell per row, and whether it
# may wrap (between words; every other column is kept on the lines its cells hold).
Column = tuple[str, str, list[Any], bool]


def _cell_width(cell: Any, wraps: bool) -> int:
    """Columns a cell needs for nothing in it to be cut: its longest line, or for a column
    that wraps its longest word."""
    from rich.cells import cell_len

    text = cell.plain if isinstance(cell, Text) else shown(cell)
    parts = text.split() if wraps else text.split("\n")
    return max((cell_len(x) for x in parts), default=0)


def _fitted_table(title: str, layouts: list[tuple[list[Column], int]],
                  width: int | None) -> Table | None:
    """The first of `layouts` (columns, horizontal padding) whose every cell fits whole in
    `width` terminal columns (any, when no width is given); None when none fits. A table
    that does not fit is squeezed by rich, which cuts words and numbers ('underpowered'
    read 'underp' / 'owered' at 60 columns)."""
    for cols, pad in layouts:
        need = sum(max(_cell_width(c, wraps) for c in [head, *cells]) + 2 * pad
                   for head, _, cells, wraps in cols) + len(cols) + 1
        if width is not None and need > width:
            continue
        t = Table(title=title, title_justify="left", padding=(0, pad))
        for head, just, _, wraps in cols:
            t.add_column(head, justify=just, no_wrap=not wraps,  # type: ignore[arg-type]
                         overflow="fold")
        for row in zip(*(cells for _, _, cells, _ in cols), strict=True):
            t.add_row(*(c if isinstance(c, Text) else Text(shown(c)) for c in row))
        return t
    return None


def _audit_cells(p: dict[str, Any]) -> dict[str, Any]:
    """One probe's row as plain text: effect, interval, n, q, MDE, verdict, flag, and the
    items left out as 'reason count' (one per reason)."""
    e = p["effect"]
    lo, hi = e["ci95"]
    v = p["verdict"]
    flag = p.get("flag") or {}  # a failed run's threshold checks read as passed: none
    ftxt = "" if not flag or v == "run_failed" else (
        "unchecked (n=0)" if flag.get("exceeds") is None else
        _flag_text(flag["value"], flag["threshold"], bool(flag["exceeds"])))
    return {"effect": _num(e["value"], "{:+.2f}"),
            "ci": "" if lo is None or hi is None else f"[{lo:+.2f}, {hi:+.2f}]",
            "n": str(p["n"]), "q": p_text(p["q"], ".2g"), "mde": _num(p["mde"], "{:.2f}"),
            "verdict": v, "label": _verdict_label(p), "flag": ftxt,
            "left": [f"{k} {c}" for k, c in (p.get("dropped") or {}).items()]}


def _verdict_label(p: dict[str, Any]) -> str:
    """A probe's verdict as the table shows it: "biased, small" when its whole interval lies
    inside its no-bias range (`report.svg.biased_small`, as report.html marks it); the
    verdict itself, which gates read, stays "biased"."""
    from judgeaudit.report.svg import SMALL_LABEL, biased_small

    v = p["verdict"]
    return SMALL_LABEL if biased_small(v, p["effect"].get("ci95"), p.get("no_bias_range")) else v


def _verdict_text(lines: list[str], verdict: str, label: str | None = None) -> Text:
    """A cell whose first line is the verdict (`label`, as shown), in the verdict's colour."""
    label = verdict if label is None else label
    t = Text("\n".join([label, *lines]))
    t.stylize(VERDICT_STYLE.get(verdict, "yellow"), 0, len(label))
    return t


def _audit_summary(res: dict[str, Any], width: int | None) -> Any:
    """The one-row-per-probe summary in the widest layout whose every word and number fits
    whole in `width` columns:
    1. one line per probe (always, when no width is given);
    2. the interval under its effect, no padding, each reason left out on its own line;
    3. n, q and MDE stacked in one column, the flag and the items left out under the verdict;
    4. no table: a few short lines per probe, which wrap only between words."""
    title = shown(f"audit of {res['judge']} on {res['data']}")
    rows = [(shown(name), _audit_cells(p)) for name, p in res["probes"].items()]
    names = [name for name, _ in rows]
    cs = [c for _, c in rows]

    def col(key: str) -> list[str]:
        return [c[key] for c in cs]

    under = ("effect\n[95% CI]", "right",
             [c["effect"] + (f"\n{c['ci']}" if c["ci"] else "") for c in cs], False)
    one_line: list[Column] = [
        ("probe", "left", names, False),
        ("effect [95% CI]", "right",
         [c["effect"] + (f" {c['ci']}" if c["ci"] else "") for c in cs], False),
        ("n", "right", col("n"), False), ("q", "right", col("q"), False),
        ("MDE", "right", col("mde"), False),
        ("verdict", "left", [_verdict_text([], c["verdict"], c["label"]) for c in cs], False),
        ("flag", "left", col("flag"), False),
        ("left out", "left", [", ".join(c["left"]) for c in cs], True)]
    two_lines: list[Column] = [
        ("probe", "left", names, False), under,
        ("n", "right", col("n"), False), ("q", "right", col("q"), False),
        ("MDE", "right", col("mde"), False),
        ("verdict", "left", [_verdict_text([], c["verdict"], c["label"]) for c in cs], False),
        ("flag", "left", col("flag"), False),
        ("left\nout", "left", ["\n".join(c["left"]) for c in cs], False)]
    stacked: list[Column] = [
        ("probe", "left", names, False), under,
        ("n\nq\nMDE", "right", [f"{c['n']}\n{c['q']}\n{c['mde']}" for c in cs], False),
        ("verdict", "left",
         [_verdict_text([*([f"flag {c['flag']}"] if c["flag"] else []),
                         *(["left out:", *c["left"]] if c["left"] else [])], c["verdict"],
                        c["label"])
          for c in cs], False)]
    t = _fitted_table(title, [(one_line, 1), (two_lines, 0), (stacked, 0)], width)
    if t is not None:
        return t
    from rich.console import Group

    parts: list[Any] = [Text(title)]
    for name, c in rows:
        parts.append(Text.assemble((name, "bold"), ": ",
                                   (c["label"], VERDICT_STYLE.get(c["verdict"], "yellow"))))
        parts.append(Text(f"  effect {c['effect']}" + (f" {c['ci']}" if c["ci"] else "")))
        parts.append(Text(f"  n {c['n']}, q {c['q']}, MDE {c['mde']}"))
        if c["flag"]:
            parts.append(Text(f"  flag {c['flag']}"))
        if c["left"]:
            parts.append(Text(f"  left out: {', '.join(c['left'])}"))
    return Group(*parts)


def _breakdown(by: str, rows: list[tuple[str, dict[str, Any]]], width: int | None) -> Any:
    """Each probe's effect per value of --by, laid out as the summary is (`_audit_summary`):
    one line per row, the interval under its effect, or a few lines of text per row."""
    by = shown(by)
    title = f"effect by {by}"
    cells = []
    for name, r in rows:
        e = r.get("effect") or {}
        lo, hi = e.get("ci95") or [None, None]
        cells.append({"probe": shown(name), "value": shown(r.get("value")),
                      "effect": _num(e.get("value"), "{:+.2f}"),
                      "ci": "" if lo is None or hi is None else f"[{lo:+.2f}, {hi:+.2f}]",
                      "n": str(r.get("n", 0)), "items": str(r.get("n_items", "")),
                      "p": p_text(r.get("p"), ".2g")})

    def cols(sep: str) -> list[Column]:
        return [("probe", "left", [c["probe"] for c in cells], False),
                (by, "left", [c["value"] for c in cells], False),
                ("effect" + sep + "[95% CI]", "right",
                 [c["effect"] + (sep + c["ci"] if c["ci"] else "") for c in cells], False),
                *((k, "right", [c[k] for c in cells], False) for k in ("n", "items", "p"))]

    t = _fitted_table(title, [(cols(" "), 1), (cols("\n"), 0)], width)
    if t is not None:
        return t
    from rich.console import Group

    parts: list[Any] = [Text(title)]
    for c in cells:
        parts += [Text.assemble((c["probe"], "bold"), f", {by} {c['value']}"),
                  Text(f"  effect {c['effect']}" + (f" {c['ci']}" if c["ci"] else "")),
                  Text(f"  n {c['n']}, items {c['items']}, p {c['p']}")]
    return Group(*parts)


def audit_table(res: dict[str, Any], width: int | None = None) -> Any:
    """The audit as terminal tables: one row per probe (effect, n, q, MDE from the probe's
    own test, verdict, flag, items left out by reason), then the --by breakdown (each
    probe's effect per category, with n and interval) when there is one. Given `width` (the
    terminal's columns), each table takes the widest layout that shows every word and
    number whole in it: at 80 columns the one-line row was cut (n to "…"), at 60 the
    verdict 'underpowered' to 'underp' / 'owered'."""
    from rich.console import Group

    t = _audit_summary(res, width)
    said = _unchecked_lines(res)
    by = res.get("by")
    rows = [(name, r) for name, p in res["probes"].items()
            for r in ((p.get("breakdown") or {}).get("rows") or [])]
    if not by or not rows:
        return Group(t, *said) if said else t
    return Group(t, *said, _breakdown(str(by), rows, width))


def _unchecked_lines(res: dict[str, Any]) -> list[Text]:
    """Under the table, why each threshold check shown "unchecked (n=0)" could not be made
    (the flag's stored reason): no perturbed copy made is not a judge's failure."""
    if run_failed(res):
        return []
    return [Text(shown(f"{name}: threshold unchecked: {flag.get('reason') or 'no data'}"))
            for name, p in res["probes"].items()
            if (flag := p.get("flag") or {}) and flag.get("exceeds") is None]


def panel_table(panel: dict[str, Any]) -> Table:
    t = Table(title="judges ranked by position bias", title_justify="left")
    for col in ("#", "judge", "position effect [95% CI] (n)", "consistency (n)",
                "accuracy (n)", "invalid verdicts"):
        t.add_column(col, no_wrap=col != "judge", overflow="fold")

    def with_n(est: dict[str, Any] | None) -> str:
        # each column has its own n (the effect leaves out pairs with an unreadable order,
        # consistency and accuracy count them): one n column read 98 beside rates over 100
        return "n/a" if not est else f"{fmt_est(est)[0]} ({est.get('n', 0)})"

    for i, r in enumerate(panel["ranking"], start=1):
        e = r["position_effect"]
        lo, hi = e["ci95"]
        eff = ("n/a" if e["value"] is None else
               f"{e['value']:+.3f} [{lo:+.3f}, {hi:+.3f}] ({e['n']})" if lo is not None else
               f"{e['value']:+.3f} ({e['n']})")
        t.add_row(str(i), r["judge"], eff, with_n(r["position_consistency"]),
                  with_n(r["accuracy"]), str(r.get("n_invalid", "n/a")))
    return t


def unreadable_line(examples: Any, shown: int = 2, cut: int = 80) -> str | None:
    """One line quoting what the judge said when it gave no verdict (the first `shown` of
    a run's examples, each escaped and cut to `cut` characters), or None when there are
    none. Failed calls (no answer) are left out. The calls line gave only a count."""
    rows = [x for x in (examples or []) if isinstance(x, dict) and not x.get("failed")
            and x.get("raw") is not None][:shown]
    if not rows:
        return None

    def one(x: dict[str, Any]) -> str:
        raw = str(x.get("raw") or "")
        text = repr(raw[:cut]) + ("..." if len(raw) > cut else "")
        order = f" ({x['order']})" if x.get("order") else ""
        # a cut or empty answer says so (its reason's head: `no_verdict_why`)
        why = str(x.get("error") or x.get("why") or "")
        tag = (f" [{why.split(':')[0]}]" if why.startswith("cut at max_tokens")
               or why == "empty answer" else "")
        return f"{x.get('item_id')}{order}{tag}: {text}"

    return "unreadable answers, e.g. " + "; ".join(one(x) for x in rows) + \
        " (distinct ones in the report and results.json)"


def text_vs_probs_line(tvp: dict[str, Any] | None, where: str = "") -> str | None:
    """The line saying how many verdicts read from probabilities went against the answer's
    own text (None when none did): evaluate's summary and the audit's baseline both count
    them."""
    if not tvp or not tvp.get("n_disagree"):
        return None
    return (f"text vs probabilities{where}: {tvp['n_disagree']} of {tvp['n']} verdicts read "
            "from probabilities went against the answer's own text (the probabilities decide; "
            "examples in results.json, text_vs_probs)")
