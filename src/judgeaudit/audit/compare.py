"""Compare two audits of the same items (a new judge prompt, a new model version): for every
probe in both, the change in effect B - A with a 95% interval and a p-value, q-values across
the compared probes, and a verdict per probe:

- **improved**: the change is significant (q < alpha and its 95% interval excludes 0) and the
  bias is smaller in B than in A (|effect B| < |effect A|);
- **worse**: the change is significant and the bias is not smaller (it grew, or it crossed 0
  and came out at least as large on the other side);
- **no change**: the change's 95% interval lies inside the equivalence margin [-m, m]
  (default m: half the width of the probe's no-bias range, 0.05 for most probes);
- **underpowered**: neither; the data cannot tell.

Paired or unpaired. When both results files keep a probe's per-item values (`per_item`:
{item id: the item's paired difference}, or `units`: [[item id, difference], ...], the
differences whose mean over the items is `effect.value`; in memory `ProbeResult.units`),
items are matched by id (in Unicode NFC, `item_key`) and the change is the mean per-item
difference over the matched items: the score interval of a bounded mean when both runs
record their bound, else a bootstrap over items, sign-flip randomization test of the mean.
Where fewer than SPARSE_MOVERS matched items changed and both runs record their per-item
bound (`span`: every value in [-span, span], so every change in [-(span A + span B),
span A + span B]), the interval is the exact one of `stats.movers_ci` instead: the bootstrap
of so few changes is too narrow (none changed: [0, 0] at any n), and "no change" read off it
would be wrong far more often than 5% of the time at the edge of the margin.
Items judged in only one run are counted and reported, per probe (`items`) and over the
run (the document's `items`, `item_counts`): audits of the same --data with different
--n, --sample or --seed compare on the items both judged. Each probe's A and B effects beside
the change (`a`, `b`) are over those same matched items, each with its n and 95% interval (the
audit's own when every item it judged is matched), so effect B - effect A is the change; each
audit's effect over all its own items is kept beside them (`a.own`, `b.own`). They used to be
each audit's own effect, which at another --n did not add up to the change shown between them.
Results files without per-item values
fall back to an unpaired comparison of the two effects: the change's interval combines the two
95% intervals as independent normal estimates (se = width / 3.92) with a Wald z test. Two
audits of the same items have positively correlated errors, so the unpaired interval is wider
than the paired one would be: it finds fewer changes, never more than it should.

A probe audit A ran that audit B lacks (`only_in_a`) is not compared: B's bias there is
unknown, so a release gate must not pass it (the CLI's `--fail-on` trips on it unless
`--allow-missing`; `missing_note`). A probe only in B is listed and compared with nothing.

An input whose run failed (`run.status == "failed"`) is never compared: the result carries a
failed run with that input's message, and no gate passes it."""

from __future__ import annotations

import math
import time
import unicodedata
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from judgeaudit import methods
from judgeaudit.audit.paired import effect_dict
from judgeaudit.data import fingerprint
from judgeaudit.outcome import failure_message, run_failed
from judgeaudit.results_file import read_results
from judgeaudit.stats import SPARSE_MOVERS, benjamini_hochberg, paired_estimate
from judgeaudit.stats.tests import normal_p
from judgeaudit.stats.types import Z95, Estimate

VERDICTS = ("improved", "worse", "no_change", "underpowered")
EXACT_MAX = 16  # moved items up to which the sign-flip test enumerates every sign pattern
N_FLIPS = 20_000  # random sign patterns above that
N_BOOT = 2000
DEFAULT_MARGIN = 0.05  # when a probe states no no-bias range

PAIRED_METHOD = (
    "paired: items matched by id; change = mean over matched items of (value in B - value in "
    "A); 95% interval: when both runs record the per-item bound span, the score interval of "
    "a mean bounded by s = span A + span B (Wilson's, generalised), or, when fewer than "
    f"{SPARSE_MOVERS} matched items changed, the exact interval [-s x U(items down), s x "
    "U(items up)] with U the one-sided 97.5% Clopper-Pearson upper limit of a share; without "
    f"the bound, the percentile bootstrap over items ({N_BOOT} resamples); p: two-sided "
    "sign-flip randomization test of the mean change (exact up to "
    f"{EXACT_MAX} items that moved, else {N_FLIPS:,} random sign patterns)")
UNPAIRED_METHOD = (
    "unpaired: the results files keep no per-item values for this probe, so the two effects "
    "are compared as independent estimates: change = effect B - effect A, se = sqrt(seA^2 + "
    "seB^2) with se = (95% interval width) / 3.92, 95% interval change +- 1.96 se, p from the "
    "Wald z test; the runs judged the same items, whose shared errors this ignores, so the "
    "interval is wider (more conservative) than a paired one")
VERDICT_RULES = (
    "improved: q < alpha (Benjamini-Hochberg across the compared probes) and the change's 95% "
    "interval excludes 0, and |effect B| < |effect A|; worse: the same test, and the bias did "
    "not shrink (it grew, or crossed 0 and came out at least as large); no change: the change's "
    "95% interval lies inside [-margin, margin]; underpowered: neither")


class CompareError(ValueError):
    """Bad input for a comparison (exit 2): no such folder, not an audit result, or two
    audits of different data."""


# ---------------------------------------------------------------- inputs

def load_audit(path: str | Path) -> dict[str, Any]:
    """An audit's results document from its folder (or results.json), or CompareError."""
    p = Path(path)
    if not p.exists():
        raise CompareError(f"{p}: no such folder or file")
    from judgeaudit.results_shape import check_shape

    try:
        doc = read_results(p)
        # a section of the wrong type (hand-edited "probes": "x") is named with its field;
        # it was "not an audit result (command 'audit')"
        check_shape(doc, p / "results.json" if p.is_dir() else p)
    except (FileNotFoundError, ValueError) as exc:
        raise CompareError(str(exc)) from None
    command = doc.get("command", "audit" if "probes" in doc else None)
    if command == "audit" and (doc.get("run") or {}).get("status") == "failed":
        # a failed or unfinished audit (interrupted: no probes): compared as a failed run
        # (exit 3, "re-run that audit"); it read "not an audit result (command 'audit')"
        return {**doc, "probes": doc.get("probes") if isinstance(doc.get("probes"), dict)
                else {}}
    if command != "audit" or not isinstance(doc.get("probes"), dict):
        raise CompareError(
            f"{p}: not an audit result (command {command!r}); compare reads the results.json "
            "that judgeaudit audit writes")
    return doc


def check_same_data(a: Mapping[str, Any], b: Mapping[str, Any]) -> None:
    """Both audits must have judged the same data: otherwise their effects describe
    different items. When both record the data's content fingerprint (`data_fingerprint`,
    `judgeaudit.data.fingerprint`), that decides, whatever the specs say: the same file
    named by a relative and an absolute path is the same data, and two files both named
    `jsonl:items.jsonl` are not. Items are then matched by id AND content: an id whose item
    changed between the runs is left out of the paired changes (`data_match`); refused only
    when no item has the same id and content in both. Without a fingerprint on both sides
    (results from an older judgeaudit) the --data specs must be equal, and items are matched
    by id: each probe compares the items both runs judged, and those judged in one run only
    are counted (`item_counts`, in the output). So audits of different --n, --sample or
    --seed, and an adaptive audit beside a fixed-n one, compare on the items they share.
    Refused (CompareError) there: different --data specs; per-item ids in both runs with no
    id in common; and, where a run keeps no per-item ids to match by, a different number or
    selection of items."""
    if any((d.get("run") or {}).get("status") == "failed" for d in (a, b)):
        return  # the comparison fails on that run (`_failed_run`), saying to re-run it
    da, db = a.get("data"), b.get("data")
    fa, fb = fingerprint.of(a), fingerprint.of(b)
    if fa is not None and fb is not None:
        diff = fingerprint.difference(fa, fb)
        if diff["same"] or diff["n_same"]:
            return  # the same items, or some: the changed ones are left out (`data_match`)
        if diff["n_shared"]:
            raise CompareError(
                f"different data: all {diff['n_shared']} items in both A ({da!r}) and B "
                f"({db!r}) have the same id but other content (text, label or gold; e.g. "
                f"{', '.join(map(repr, diff['changed'][:3]))}), so no item can be paired; "
                "compare audits of the same items")
        raise CompareError(f"different data: A audited {da!r} ({fingerprint.short(fa)}), B "
                           f"audited {db!r} ({fingerprint.short(fb)}), and no item id is in "
                           "both; compare audits of the same data")
    if da != db:
        raise CompareError(f"different data: A audited {da!r}, B audited {db!r}; compare "
                           "audits of the same --data (items are then matched by id)")
    ids_a, ids_b = _item_ids(a), _item_ids(b)
    if ids_a and ids_b:
        if not ids_a & ids_b:
            raise CompareError(f"different data: A and B both name {da!r} but no item id is "
                               "in both (did the data change between the audits?)")
        return  # matched by id on the items in both; the others are counted
    adaptive = bool(a.get("adaptive") or b.get("adaptive"))
    which = "neither run keeps" if not ids_a and not ids_b else \
        f"run {'A' if not ids_a else 'B'} keeps no"
    na, nb = a.get("n_items"), b.get("n_items")
    if na != nb and not adaptive:
        raise CompareError(f"different data: A judged {na} items of {da!r}, B judged {nb}, and "
                           f"{which} per-item ids to match them by; compare audits run with "
                           "the same --data and --n (or re-run the audits: results.json now "
                           "keeps per-item values)")
    sa, sb = _selection(a), _selection(b)
    if sa is not None and sb is not None and sa != sb and not adaptive:
        raise CompareError(f"different data: A used items {sa} of {da!r}, B used {sb}, and "
                           f"{which} per-item ids to match them by; compare audits run with "
                           "the same --n / --sample / --seed")


def data_match(a: Mapping[str, Any], b: Mapping[str, Any], a_path: str = "A",
               b_path: str = "B") -> tuple[dict[str, Any], list[str], list[str]]:
    """What the two audits' data fingerprints say (`judgeaudit.data.fingerprint`): (the
    comparison's `data_match` record, its notes, its warnings). The record: both specs,
    both wholes, whether the content is the same, and the ids both runs list whose content
    differs (`changed`: different items under one id, so the comparison leaves them out of
    every paired change; pairing them read a data change, such as labels swapped, as the
    judge's). A run written before fingerprints were recorded is compared as before, by its
    --data spec and item ids, with a note saying what that cannot see."""
    da, db = a.get("data"), b.get("data")
    fa, fb = fingerprint.of(a), fingerprint.of(b)
    rec: dict[str, Any] = {"a": {"data": da, "sha256": fa and fa.get("sha256"),
                                 "n_items": fa and fa.get("n_items")},
                           "b": {"data": db, "sha256": fb and fb.get("sha256"),
                                 "n_items": fb and fb.get("n_items")}}
    notes: list[str] = []
    warnings: list[str] = []
    if fa is None or fb is None:
        sides = [f"{lab} ({path})" for lab, path, fp in (("A", a_path, fa), ("B", b_path, fb))
                 if fp is None]
        rec["matched_on"] = "spec"
        notes.append(f"{' and '.join(sides)} record{'s' if len(sides) == 1 else ''} no data "
                     "fingerprint (results written before judgeaudit recorded one): the "
                     "items are matched by the --data spec and item id only, so a change "
                     "of an item's text or label under the same spec cannot be seen; "
                     "re-run that audit to compare on content")
        return rec, notes, warnings
    diff = fingerprint.difference(fa, fb)
    rec.update(matched_on="fingerprint", same_content=diff["same"],
               n_changed=len(diff["changed"]), changed=diff["changed"][:CHANGED_SHOWN])
    if da != db:
        what = ("hold the same items" if diff["same"] else
                f"share {diff['n_same']} items of the same id and content")
        notes.append(f"A names its data {da!r} and B {db!r}; both {what} (content "
                     f"fingerprints {fingerprint.short(fa)} and {fingerprint.short(fb)}), "
                     "so they are compared as the same data")
    if diff["changed"]:
        k, shown = len(diff["changed"]), diff["changed"][:3]
        line = (f"{k} of the {diff['n_shared']} items both runs list have the same id but "
                f"other content (text, label or gold) in A and B (e.g. "
                f"{', '.join(map(repr, shown))}): they are different items, so they are left "
                "out of every paired change (the data changed between the audits: "
                f"A {fingerprint.short(fa)}, B {fingerprint.short(fb)})")
        warnings.append(line)
        notes.append(line)
    return rec, notes, warnings


CHANGED_SHOWN = 50  # changed ids kept in the comparison's record (all are counted)


def item_counts(a: Mapping[str, Any], b: Mapping[str, Any],
                names: Sequence[str], changed: set[str] | frozenset[str] = frozenset()
                ) -> dict[str, Any] | None:
    """How the two runs' items match by id, over the probes `names` whose per-item values
    both runs keep: {"a": items A judged, "b": items B judged, "n_matched": in both,
    "n_only_a", "n_only_b": in one run only (left out of every paired change), and
    "n_changed" when ids in both hold other content in each (`changed`, from the data
    fingerprints; left out too, and not counted as matched)}; None when no probe keeps them
    (unpaired: nothing is matched)."""
    pa_all, pb_all = a.get("probes") or {}, b.get("probes") or {}
    ids_a: set[str] = set()
    ids_b: set[str] = set()
    for name in names:
        pa, pb = pa_all.get(name), pb_all.get(name)
        if not isinstance(pa, dict) or not isinstance(pb, dict):
            continue
        (ra, _), (rb, _) = _pairs(pa), _pairs(pb)
        if ra is None or rb is None:
            continue
        ids_a.update(str(k) for k, _v in ra)
        ids_b.update(str(k) for k, _v in rb)
    if not ids_a and not ids_b:
        return None
    both = ids_a & ids_b
    out: dict[str, Any] = {"a": len(ids_a), "b": len(ids_b), "n_matched": len(both - changed),
                           "n_only_a": len(ids_a - both), "n_only_b": len(ids_b - both)}
    if both & changed:
        out["n_changed"] = len(both & changed)
    unused = unused_probes(a, b, names)
    if unused:  # "all matched by id" must not cover a probe that used no item in a run
        out["unused"] = unused
    return out


def unused_probes(a: Mapping[str, Any], b: Mapping[str, Any],
                  names: Sequence[str]) -> dict[str, str]:
    """The probes of `names` that measured nothing in a run (n = 0, or verdict not_run), by
    which run: "A", "B" or "A and B". The run-level item counts are the union over the
    probes, so a probe that used none of them (position of a judge that answers in one
    order only) hid behind "40 items, all matched by id"."""
    out: dict[str, str] = {}
    for name in names:
        sides = [lab for lab, doc in (("A", a), ("B", b))
                 if _measured_nothing((doc.get("probes") or {}).get(name))]
        if sides:
            out[name] = " and ".join(sides)
    return out


def _measured_nothing(p: Any) -> bool:
    if not isinstance(p, dict):
        return False
    n = p.get("n")
    return p.get("verdict") == "not_run" or (isinstance(n, int) and not isinstance(n, bool)
                                            and n == 0)


def items_line(counts: Mapping[str, Any] | None) -> str:
    """The run-level item match as one sentence (the terminal, results.json's notes)."""
    if not counts:
        return ""
    head = (f"items matched by id: {counts['n_matched']} in both runs (A judged "
            f"{counts['a']}, B {counts['b']})")
    if counts["n_only_a"] or counts["n_only_b"]:
        head = (f"{head}; {counts['n_only_a']} only in A and {counts['n_only_b']} only in B "
                "are left out of the paired changes")
    if counts.get("n_changed"):
        head = (f"{head}; {counts['n_changed']} in both have other content in each (the data "
                "fingerprints differ there) and are left out of the paired changes")
    return head + unused_text(counts.get("unused"))


def unused_text(unused: Any) -> str:
    """"; position used no item in B" for the probes that measured nothing in a run."""
    if not isinstance(unused, dict) or not unused:
        return ""
    return "; " + ", ".join(f"{k} used no item in {v}" for k, v in unused.items())


def missing_note(only_in_a: Sequence[str]) -> str:
    """What a probe audit A (the baseline) ran and audit B (the candidate) lacks means."""
    if not only_in_a:
        return ""
    return (f"{', '.join(only_in_a)} (audit A, the baseline, ran them and audit B lacks "
            "them: their bias in B is unknown, so any --fail-on gate fails on them unless "
            "--allow-missing is given)")


def judge_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What differs in how the same judge spec ran in the two audits (`judges_used`: for
    `local`, the backend auto resolved to, the weights, the CPU). Such a change moves the
    effects too, so it is named beside them; different specs are the comparison itself."""
    ua, ub = a.get("judges_used"), b.get("judges_used")
    if not isinstance(ua, dict) or not isinstance(ub, dict):
        return []
    out = []
    for spec in sorted(ua.keys() & ub.keys()):
        ia, ib = ua[spec], ub[spec]
        if not isinstance(ia, dict) or not isinstance(ib, dict):
            continue
        for key in sorted(ia.keys() | ib.keys()):
            va, vb = ia.get(key), ib.get(key)
            if key == "backend_reason" or va == vb:
                continue
            if key != "cpu" and isinstance(va, dict) and isinstance(vb, dict):  # params
                out += [f"{spec}: {key}.{k} {_brief(va.get(k))} in A, {_brief(vb.get(k))} in B"
                        for k in sorted(va.keys() | vb.keys()) if va.get(k) != vb.get(k)]
            else:
                out.append(f"{spec}: {key} {_brief(va)} in A, {_brief(vb)} in B")
    return out


def version_note(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """When the two audits were written by different judgeaudit versions: a change in
    judgeaudit (its prompt templates, answer parsing, probes' rewrites) can move the effects
    as a change of judge does, so it is said beside them (A/B of 0.0.1 and 0.1.0 were
    compared without a word). Not a failure: comparing across an upgrade is a use."""
    va, vb = a.get("version"), b.get("version")
    if va == vb:
        return None

    def name(v: Any) -> str:
        return f"judgeaudit {v}" if v is not None else "a judgeaudit that recorded no version"

    return (f"A was written by {name(va)} and B by {name(vb)}: a change in judgeaudit (its "
            "prompts, answer parsing or probes) can move the effects as well as the judge; "
            "re-run both audits with one version to compare the judges alone")


def methods_notes(a: Mapping[str, Any], b: Mapping[str, Any], a_path: str = "A",
                  b_path: str = "B") -> list[str]:
    """What comparing A and B must say of the methods that made them: that they differ
    (`methods.compare_note`), and each side made by older methods than this build's (or by
    a newer judgeaudit), with the command to re-run it. The same judgeaudit version on both
    sides told nothing: every build wrote 0.1.0."""
    out = [x for x in [methods.compare_note(a, b)] if x]
    for side, d, path in (("A", a, a_path), ("B", b, b_path)):
        out += [f"{side} ({path}): {n}" for n in methods.notes(d)]
    return out


def older_build_note(older: Mapping[str, Sequence[str]]) -> str:
    """What a run whose probes record no per-item bound (`span`) means: it was written by a
    judgeaudit build from before runs recorded it, although its version string may match
    (0.1.0 on both sides hid it, and a baseline of 40 unchanged items read "no change"
    with +0.000 [+0.000, +0.000] on every probe)."""
    runs = " and ".join(f"run {k} ({', '.join(v)})" for k, v in older.items())
    return (f"{runs} record(s) no per-item bound (span): written by an earlier judgeaudit "
            "build, whatever the version says; the bound is taken from the other run where "
            "it has one and the values fit it, else a change of fewer than "
            f"{SPARSE_MOVERS} items is underpowered, never 'no change'; re-run the baseline "
            "with this version")


def adaptive_notes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What comparing an adaptive audit (`audit --adaptive`) means: each of its probes judged
    the items before it stopped, so the matched items are a data-dependent prefix of the
    seeded order, and its unpaired interval is the confidence sequence (wider)."""
    sides = [side for side, d in (("A", a), ("B", b)) if d.get("adaptive")]
    if not sides:
        return []
    return [f"{'run ' + sides[0] + ' is' if len(sides) == 1 else 'runs A and B are'} "
            "adaptive: each "
            "probe compares the items both runs judged before it stopped (a data-dependent "
            "prefix of the seeded item order; the rest are counted as in one run only), with "
            "the fixed-n paired test. On simulated judges (benchmarks/results/"
            "compare_sim_adaptive.json) its false flags stayed at the fixed-n rate, but a "
            "probe that stopped early in one run has fewer matched items, so fewer changes "
            "are found: for a release gate, compare fixed-n audits (--n) of both"]


def _brief(v: Any) -> str:
    """A `judges_used` value in a line: a CPU as its model and the flags it has."""
    if isinstance(v, dict) and isinstance(v.get("flags"), dict):
        flags = ", ".join(k for k, on in v["flags"].items() if on)
        return f"{v.get('model')} ({flags or 'no listed flags'})"
    return "(none)" if v is None else str(v)


def _selection(doc: Mapping[str, Any]) -> str | None:
    """How the audit chose its items from the data (`items.selection`), as one line."""
    items = doc.get("items")
    sel = items.get("selection") if isinstance(items, dict) else None
    if not isinstance(sel, dict):
        return None
    return ", ".join(f"{k}={sel[k]}" for k in sorted(sel))


def _item_ids(doc: Mapping[str, Any]) -> set[str]:
    """Every item id named in a probe's per-item values (empty when none are kept)."""
    ids: set[str] = set()
    for p in (doc.get("probes") or {}).values():
        if isinstance(p, dict):
            pairs, _ = _pairs(p)
            ids.update(str(k) for k, _v in pairs or [])
    return ids


def _run_info(doc: Mapping[str, Any], path: str) -> dict[str, Any]:
    tpl = doc.get("template") if isinstance(doc.get("template"), dict) else {}
    run = doc.get("run") if isinstance(doc.get("run"), dict) else {}
    summary = doc.get("summary") if isinstance(doc.get("summary"), dict) else {}
    return {
        "path": path,
        "judge": doc.get("judge"),
        **({"judges": doc["judges"]} if isinstance(doc.get("judges"), list) else {}),
        "data": doc.get("data"),
        "n_items": doc.get("n_items"),
        "template": {"name": tpl.get("name"), "sha256": tpl.get("sha256")},
        "prompt_hashes": doc.get("prompt_hashes") if isinstance(doc.get("prompt_hashes"),
                                                                 dict) else {},
        "version": doc.get("version"),
        "started": doc.get("started"),
        "alpha": doc.get("alpha"),
        "status": run.get("status", "ok"),
        "message": run.get("message", ""),
        "biased": list(summary.get("biased") or []),
    }


def _finite(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, int | float) or not math.isfinite(x):
        return None
    return float(x)


def _effect(p: Mapping[str, Any]) -> tuple[float | None, float | None, float | None]:
    e = p.get("effect") if isinstance(p.get("effect"), dict) else {}
    ci = e.get("ci95") if isinstance(e.get("ci95"), list | tuple) else [None, None]
    lo, hi = (ci[0], ci[1]) if len(ci) == 2 else (None, None)
    return _finite(e.get("value")), _finite(lo), _finite(hi)


def item_key(k: Any) -> str:
    """The id items are matched by: the id in Unicode NFC, as the data fingerprint, --sample
    and --adaptive read it (`fingerprint.fingerprint`, `evaluate.item_identity`). Raw, the
    same 10 rows with NFD ids ("café" decomposed) were "the same items" by fingerprint and
    0 matched by id, and a changed item under an NFD id was not left out."""
    return unicodedata.normalize("NFC", str(k))


def _pairs(p: Mapping[str, Any]) -> tuple[list[tuple[str, Any]] | None, str]:
    """(item id, value) pairs from `per_item` ({id: value}) or `units` ([[id, value], ...]),
    each id in NFC (`item_key`)."""
    if p.get("per_item") is not None:
        raw = p["per_item"]
        if not isinstance(raw, dict):
            return None, "per_item is not an object of item id -> value"
        return [(item_key(k), v) for k, v in raw.items()], ""
    if p.get("units") is not None:
        raw = p["units"]
        if not isinstance(raw, list) or not all(isinstance(u, list | tuple) and len(u) == 2
                                                for u in raw):
            return None, "units is not a list of [item id, value] pairs"
        return [(item_key(u[0]), u[1]) for u in raw], ""
    return None, "no per-item values in results.json"


def per_item_values(p: Mapping[str, Any]) -> tuple[dict[str, float] | None, str]:
    """A probe's per-item values ({item id: value}, the items that entered its effect), or
    (None, why not). Values that do not average to the stored effect, or an item id given
    twice, are not used."""
    pairs, why = _pairs(p)
    if pairs is None:
        return None, why
    vals: dict[str, float] = {}
    for k, v in pairs:
        if v is None:
            continue  # invalid in this run
        f = _finite(v)
        if f is None:
            return None, f"the per-item value of {k!r} is not a finite number"
        if str(k) in vals:  # ids equal in NFC are one item (`item_key`)
            return None, f"item id {k!r} has two per-item values (ids compared in NFC)"
        vals[str(k)] = f
    eff = _effect(p)[0]
    if not vals and eff is not None:  # an effect from no item: the values are missing
        return None, "no per-item values behind the stored effect"
    if vals and eff is not None and abs(float(np.mean(list(vals.values()))) - eff) > 1e-6:
        return None, "per-item values do not average to the stored effect"
    return vals, ""


def _change_span(pa: Mapping[str, Any], pb: Mapping[str, Any]) -> float | None:
    """The bound of one item's change B - A: span A + span B, when both runs record it."""
    sa, sb = _finite(pa.get("span")), _finite(pb.get("span"))
    return None if sa is None or sb is None or sa <= 0 or sb <= 0 else sa + sb


def _assumed_span(pa: Mapping[str, Any], pb: Mapping[str, Any], va: Mapping[str, float],
                  vb: Mapping[str, float]) -> dict[str, Any] | None:
    """For a run that records no per-item bound beside one that does (results of an earlier
    build beside the current one): {"run": the run lacking it, "span": the other run's
    bound}, when the two are the same probe (same metric) and each of the lacking run's
    per-item values lies within that bound; else None (nothing to assume it from)."""
    sa, sb = _finite(pa.get("span")), _finite(pb.get("span"))
    if (sa is None) == (sb is None) or pa.get("metric") != pb.get("metric"):
        return None
    run, span, vals = ("A", sb, va) if sa is None else ("B", sa, vb)
    if span is None or span <= 0 or any(abs(x) > span + 1e-9 for x in vals.values()):
        return None
    return {"run": run, "span": span}


def _margin(pa: Mapping[str, Any], pb: Mapping[str, Any]) -> float:
    """Half the width of the probe's no-bias range (the narrower of the two runs')."""
    halves = []
    for p in (pa, pb):
        nb = p.get("no_bias_range")
        if isinstance(nb, list | tuple) and len(nb) == 2:
            lo, hi = _finite(nb[0]), _finite(nb[1])
            if lo is not None and hi is not None and hi > lo:
                halves.append((hi - lo) / 2)
    return min(halves) if halves else DEFAULT_MARGIN


# ---------------------------------------------------------------- statistics

def sign_flip_p(d: Sequence[float] | np.ndarray, seed: int = 0) -> float:
    """Two-sided randomization test that paired differences are symmetric about 0 (A and B
    exchangeable within each item), on |sum of the differences|. Zero differences carry no
    information. Exact up to EXACT_MAX non-zero differences, else N_FLIPS random sign patterns
    with the (1 + hits) / (1 + draws) estimate."""
    x = np.asarray(d, dtype=float)
    x = x[x != 0]
    m = x.size
    if m == 0:
        return 1.0
    t = abs(float(x.sum())) - 1e-9 * max(1.0, float(np.abs(x).sum()))
    if m <= EXACT_MAX:
        signs = ((np.arange(2 ** m)[:, None] >> np.arange(m)) & 1) * 2.0 - 1.0
        return float(np.mean(np.abs(signs @ x) >= t))
    rng = np.random.default_rng(seed)
    rows = max(1, 2_000_000 // m)
    hits = done = 0
    while done < N_FLIPS:
        k = min(rows, N_FLIPS - done)
        signs = rng.integers(0, 2, size=(k, m)) * 2.0 - 1.0
        hits += int((np.abs(signs @ x) >= t).sum())
        done += k
    return (hits + 1) / (N_FLIPS + 1)


def paired_change(va: Mapping[str, float], vb: Mapping[str, float],
                  seed: int = 0, span: float | None = None) -> dict[str, Any]:
    """Change B - A over the items valid in both runs, matched by id (A's order). `span`
    bounds every item's |change|; with it, fewer than SPARSE_MOVERS changed items give the
    exact interval of `movers_ci` instead of the bootstrap's."""
    ids = [k for k in va if k in vb]
    out: dict[str, Any] = {"n_matched": len(ids), "n_only_a": len(va) - len(ids),
                           "n_only_b": sum(k not in va for k in vb)}
    if not ids:
        out.update(value=None, ci95=[None, None], p=None, a=None, b=None, n_up=0, n_down=0,
                   estimate=Estimate(math.nan, (math.nan, math.nan), 0))
        return out
    a = np.array([va[k] for k in ids])
    b = np.array([vb[k] for k in ids])
    d = b - a
    out.update(a=float(a.mean()), b=float(b.mean()),
               n_up=int((d > 0).sum()), n_down=int((d < 0).sum()), p=sign_flip_p(d, seed))
    return _with_estimate(out, paired_estimate(d, seed=seed, span=span, n_boot=N_BOOT))


def _with_estimate(out: dict[str, Any], est: Estimate) -> dict[str, Any]:
    """`out` with the change as an Estimate ("estimate") and, for `classify` and older
    readers, its "value" and "ci95" (None where not finite)."""
    e = est.as_dict()
    out.update(value=e["value"], ci95=e["ci95"], estimate=est)
    return out


def unpaired_change(ea: tuple[float | None, ...], eb: tuple[float | None, ...]
                    ) -> dict[str, Any]:
    """Change B - A of two effects given as (value, lo, hi), as independent estimates."""
    (a, alo, ahi), (b, blo, bhi) = ea, eb
    out: dict[str, Any] = {"p": None, "a": a, "b": b}
    nan = (math.nan, math.nan)
    # The Estimate's n is 0: two effects' change has no item count of its own (the output
    # writes value, ci95 and method only).
    if a is None or b is None:
        return _with_estimate(out, Estimate(math.nan, nan, 0))
    if None in (alo, ahi, blo, bhi):
        return _with_estimate(out, Estimate(b - a, nan, 0))
    # Normal (Wald) interval of the difference, each side's se read off its 95% interval.
    se = math.hypot((ahi - alo) / (2 * Z95), (bhi - blo) / (2 * Z95))  # type: ignore[operator]
    out["se"] = se
    if se == 0:
        out["p"] = 1.0 if b == a else 0.0
        return _with_estimate(out, Estimate(b - a, (b - a, b - a), 0, method="wald"))
    out["p"] = normal_p((b - a) / se)  # floored: erfc underflows to 0 past |z| ~ 38
    return _with_estimate(out, Estimate(b - a, (b - a - Z95 * se, b - a + Z95 * se), 0,
                                        method="wald"))


def classify(change: Mapping[str, Any], q: float | None, alpha: float,
             margin: float) -> tuple[str, str]:
    """(verdict, one-line reason) from the change, its q-value and the effects it compares
    (`a`, `b`: the bias in each run, over the matched items when paired)."""
    v, (lo, hi) = change.get("value"), change.get("ci95") or (None, None)
    a, b = change.get("a"), change.get("b")
    if v is None or lo is None or hi is None:
        why = "no effect in one of the runs" if a is None or b is None else \
            "too few items for an interval"
        return "underpowered", f"no interval for the change ({why})"
    ci = f"[{lo:+.3f}, {hi:+.3f}]"
    if q is not None and q < alpha and (lo > 0 or hi < 0):
        head = f"q = {q:.2g} < {alpha:g} and the 95% interval {ci} excludes 0"
        if abs(b) < abs(a):
            return "improved", f"{head}; the bias shrank from {a:+.3f} to {b:+.3f}"
        if a != 0 and b != 0 and (a > 0) != (b > 0):
            return "worse", (f"{head}; the bias crossed 0 and grew from {a:+.3f} to "
                             f"{b:+.3f} the other way")
        return "worse", f"{head}; the bias grew from {a:+.3f} to {b:+.3f}"
    if -margin <= lo and hi <= margin:
        return "no_change", (f"the 95% interval {ci} lies inside the equivalence margin "
                             f"[{-margin:+.3f}, {margin:+.3f}]")
    qs = "n/a" if q is None else f"{q:.2g}"
    return "underpowered", (f"q = {qs}, 95% interval {ci}: not a clear change, and not inside "
                            f"the equivalence margin [{-margin:+.3f}, {margin:+.3f}]")


# ---------------------------------------------------------------- the comparison

def _own_effect(p: Mapping[str, Any]) -> dict[str, Any]:
    """The effect the audit itself reported, over all its own items (value, ci95, method)."""
    v, lo, hi = _effect(p)
    eff = p.get("effect") if isinstance(p.get("effect"), dict) else {}
    method = eff.get("method") if isinstance(eff.get("method"), str) else None
    return effect_dict(Estimate(math.nan if v is None else v,
                                (math.nan if lo is None else lo,
                                 math.nan if hi is None else hi), 0, method=method))


def _side(p: Mapping[str, Any], vals: Mapping[str, float] | None = None,
          ids: Sequence[str] | None = None, seed: int = 0) -> dict[str, Any]:
    """One run's column beside the change. Paired (`vals`: the run's per-item values, `ids`:
    the items matched in both runs), its effect over the matched items, so that A, B and the
    change B - A describe the same items (B - A of the columns is the change): the audit's
    own effect when every item it judged is matched, else `paired_estimate` of its values on
    the matched items with its per-item bound `span` (the audit's own interval). Unpaired,
    the audit's own effect (the change is then effect B - effect A). `own` is always the
    audit's effect over all its own items and its n; `p`, `q` and `verdict` are the audit's
    own test of that effect. `over` says which items `effect` and `n` describe."""
    own = {"effect": _own_effect(p), "n": p.get("n")}
    base = {"p": p.get("p"), "q": p.get("q"), "verdict": p.get("verdict"), "own": own}
    if vals is None or ids is None:
        return {"effect": own["effect"], "n": p.get("n"), **base, "over": "own"}
    if len(ids) == len(vals) and own["effect"].get("value") is not None:
        effect = own["effect"]  # the same items as the audit's: its own numbers
    else:
        span = _finite(p.get("span"))
        effect = effect_dict(paired_estimate([vals[k] for k in ids], seed=seed,
                                             span=span if span and span > 0 else None))
    return {"effect": effect, "n": len(ids), **base, "over": "matched"}


def _fmt_effect(x: Mapping[str, Any]) -> str:
    """An effect with its interval and n, for a note: "+0.120 [+0.050, +0.190] (n = 60)"."""
    e = x.get("effect") or {}
    v, (lo, hi) = e.get("value"), e.get("ci95") or (None, None)
    if v is None:
        return f"no effect (n = {x.get('n')})"
    ci = "(no interval)" if lo is None or hi is None else f"[{lo:+.3f}, {hi:+.3f}]"
    return f"{v:+.3f} {ci} (n = {x.get('n')})"


def _seed(doc: Mapping[str, Any], default: int) -> int:
    """The audit's own --seed (its bootstraps' seed), else the comparison's."""
    s = doc.get("seed")
    return s if isinstance(s, int) and not isinstance(s, bool) else default


def _failed_run(a: Mapping[str, Any], b: Mapping[str, Any], la: str, lb: str
                ) -> dict[str, Any] | None:
    msgs, worst = [], None
    for lab, doc in ((la, a), (lb, b)):
        if run_failed(doc):
            msgs.append(f"audit {lab} failed: {failure_message(doc) or 'run failed'}")
            worst = worst or doc
    if worst is None:
        return None
    run = dict(worst.get("run") or {})
    run["status"] = "failed"
    run["message"] = "; ".join(msgs) + " (re-run that audit, then compare again)"
    return run


def compare(
    a: Mapping[str, Any],
    b: Mapping[str, Any],
    *,
    a_path: str = "A",
    b_path: str = "B",
    alpha: float = 0.05,
    margin: float | None = None,
    seed: int = 0,
) -> dict[str, Any]:
    """The comparison's results document (command "compare") of two audit results documents
    of the same data (`check_same_data`). `margin` overrides every probe's equivalence
    margin. An input whose run failed gives a document whose run failed (no probes
    compared)."""
    import judgeaudit

    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be strictly between 0 and 1, got {alpha}")
    if margin is not None and not margin >= 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    t0 = time.perf_counter()
    doc: dict[str, Any] = {
        "command": "compare",
        "version": judgeaudit.__version__,
        "started": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "runs": {"a": _run_info(a, a_path), "b": _run_info(b, b_path)},
        "data": a.get("data"),
        "n_items": a.get("n_items"),
        "alpha": alpha,
        "margin": margin,
        "seed": seed,
        "method": {"paired": PAIRED_METHOD, "unpaired": UNPAIRED_METHOD,
                   "verdicts": VERDICT_RULES},
    }
    pa_all, pb_all = a.get("probes") or {}, b.get("probes") or {}
    names = [n for n in pa_all if n in pb_all]
    doc["judge_differences"] = judge_differences(a, b)
    doc["notes"] = adaptive_notes(a, b)
    versions = version_note(a, b)
    if versions:  # said in the terminal, results.json and the report; not a failure
        doc["versions_differ"] = {"a": a.get("version"), "b": b.get("version")}
        doc["notes"].insert(0, versions)
    said = methods_notes(a, b, a_path, b_path)
    if said:  # older methods on either side: first in the notes, and --json's warnings
        if methods.compare_note(a, b):
            doc["methods_differ"] = {"a": methods.methods_of(a), "b": methods.methods_of(b)}
        doc["notes"][:0] = said
        doc["warnings"] = said
    doc["only_in_a"] = [n for n in pa_all if n not in pb_all]
    doc["only_in_b"] = [n for n in pb_all if n not in pa_all]
    # which data each ran on: the fingerprints, not the specs (`data_match`)
    doc["data_match"], data_notes, data_warnings = data_match(a, b, a_path, b_path)
    by_content = doc["data_match"]["matched_on"] == "fingerprint"
    changed = set(fingerprint.difference(fingerprint.of(a) or {}, fingerprint.of(b) or {})
                  ["changed"]) if by_content else set()
    doc["notes"][:0] = data_notes if by_content else []  # other data, other spellings: first
    tail = [] if by_content else data_notes  # matched by spec as before: said last
    if data_warnings:
        doc["warnings"] = [*data_warnings, *(doc.get("warnings") or [])]
    failed = _failed_run(a, b, a_path, b_path)
    if failed is not None:
        doc.update(run=failed, probes={}, summary={"n_probes": 0, "run_failed": names,
                                                    **{v: [] for v in VERDICTS},
                                                    "paired": [], "unpaired": []})
        doc["seconds"] = round(time.perf_counter() - t0, 2)  # as written
        return doc
    # the run-level item match, said beside the per-probe counts (the terminal showed only
    # "n=30" per probe, never the 10 items of each run left out)
    counts = doc["items"] = item_counts(a, b, names, changed)
    if counts and (counts["n_only_a"] or counts["n_only_b"] or counts.get("unused")
                   or counts.get("n_changed")):
        doc["notes"].append(items_line(counts))
    probes: dict[str, dict[str, Any]] = {}
    changes = []
    older: dict[str, list[str]] = {}  # run -> its probes that record no per-item bound
    for name in names:
        pa, pb = pa_all[name], pb_all[name]
        pa = pa if isinstance(pa, dict) else {}
        pb = pb if isinstance(pb, dict) else {}
        va, why_a = per_item_values(pa)
        vb, why_b = per_item_values(pb)
        notes: list[str] = []
        unbounded = False  # too few changes for the bootstrap, and no bound for movers_ci
        n_changed = 0
        if va is not None and vb is not None:
            # an id whose item changed between the runs names two items: not paired
            n_changed = len(changed & (va.keys() | vb.keys()))
            ma = {k: v for k, v in va.items() if k not in changed} if n_changed else va
            mb = {k: v for k, v in vb.items() if k not in changed} if n_changed else vb
            span, assumed = _change_span(pa, pb), None
            if span is None:
                assumed = _assumed_span(pa, pb, va, vb)
                span = None if assumed is None else 2 * assumed["span"]
            ch = paired_change(ma, mb, seed=seed, span=span)
            pairing = "paired"
            if assumed is not None:
                lacking = assumed["run"]
                older.setdefault(lacking, []).append(name)
                notes.append(f"run {lacking} records no per-item bound (span; results written "
                             "by an earlier judgeaudit build): the other run's bound "
                             f"{assumed['span']:g} is assumed for both (each of run {lacking}'s "
                             "per-item values lies within it); re-run that audit with this "
                             "version to compare on its own record")
            ids = [k for k in ma if k in mb]
            side_a, side_b = (_side(pa, va, ids, _seed(a, seed)),
                              _side(pb, vb, ids, _seed(b, seed)))
            if n_changed:
                notes.append(f"{n_changed} item(s) of this probe have other content in A and "
                             "B (same id, the data changed): left out of the change and of the "
                             "A and B effects beside it")
            if ch["n_only_a"] or ch["n_only_b"]:
                notes.append(f"{ch['n_matched']} items matched by id; {ch['n_only_a']} valid "
                             f"only in A and {ch['n_only_b']} only in B are left out of the "
                             "change and of the A and B effects beside it (each audit over "
                             f"all its own items: A {_fmt_effect(side_a['own'])}; B "
                             f"{_fmt_effect(side_b['own'])})")
            if ch["n_matched"] == 0:
                notes.append("no item has a valid value in both runs")
            elif (ch["n_up"] + ch["n_down"] < SPARSE_MOVERS
                  and ch["estimate"].method == "bootstrap-percentile"):
                unbounded = True
                for lab, p in (("A", pa), ("B", pb)):
                    if _finite(p.get("span")) is None:
                        older.setdefault(lab, []).append(name)
                notes.append(f"only {ch['n_up'] + ch['n_down']} matched item(s) changed and "
                             "a run records no per-item bound (span; results from an earlier "
                             "judgeaudit build, or a probe without one): the bootstrap "
                             "interval of so few changes is too narrow (none changed: [0, 0] "
                             "at any n), so it cannot say 'no change'; re-run the baseline "
                             "with this version")
        else:
            ch = unpaired_change(_effect(pa), _effect(pb))
            pairing = "unpaired"
            side_a, side_b = _side(pa), _side(pb)
            whys = sorted({w for w in (why_a if va is None else "",
                                       why_b if vb is None else "") if w})
            notes.append("unpaired comparison (" + "; ".join(whys) + "): the interval ignores "
                         "the errors both audits share on the same items, so it is usually "
                         "wider than a paired one; per-item values would allow pairing")
            if changed:  # nothing to leave the changed items out of
                notes.append(f"the effects include the {len(changed)} item(s) whose content "
                             "differs between A and B (no per-item values to leave them out)")
        changes.append(ch)
        title = pa.get("title") or pb.get("title") or name
        probes[name] = {
            "title": title, "metric": pa.get("metric"), "direction": pa.get("direction"),
            "no_bias_range": pa.get("no_bias_range"),
            "a": side_a, "b": side_b,
            "pairing": pairing,
            "change": effect_dict(ch["estimate"]),
            "p": ch["p"],
            "bias": {"a": ch["a"], "b": ch["b"]},
            "margin": margin if margin is not None else _margin(pa, pb),
            "items": {**{k: ch[k] for k in ("n_matched", "n_only_a", "n_only_b", "n_up",
                                            "n_down") if k in ch},
                      **({"n_changed": n_changed} if n_changed else {})},
            "notes": notes,
            **({"no_bound": True} if unbounded else {}),
        }
        for side, p in (("A", pa), ("B", pb)):
            if _effect(p)[0] is None:
                notes.append(f"run {side} has no effect for this probe"
                             + (f": {'; '.join(map(str, p.get('notes') or []))}"
                                if p.get("notes") else ""))
    qs = benjamini_hochberg([c["p"] if c["p"] is not None else float("nan") for c in changes])
    summary: dict[str, Any] = {"n_probes": len(names), **{v: [] for v in VERDICTS},
                               "paired": [], "unpaired": []}
    for name, ch, q in zip(names, changes, qs, strict=True):
        qv = None if q != q else float(q)
        p = probes[name]
        p["q"] = qv
        p["verdict"], p["reason"] = classify(ch, qv, alpha, p["margin"])
        if p.get("no_bound") and p["verdict"] == "no_change":
            p["verdict"], p["reason"] = "underpowered", (
                f"{p['reason']}, but only {ch['n_up'] + ch['n_down']} item(s) changed and a run "
                "records no per-item bound, so that interval is too narrow to tell: re-run the "
                "baseline with this version")
        summary[p["verdict"]].append(name)
        summary[p["pairing"]].append(name)
    doc["summary"] = summary
    doc["probes"] = probes
    if older:  # the same version string can hide an earlier build: said at the top
        doc["older_build"] = {k: sorted(v) for k, v in sorted(older.items())}
        doc["notes"].insert(0, older_build_note(doc["older_build"]))
    note = position_note(probes)
    if note:
        doc["notes"].append(note)
    note = length_note(probes, pa_all, pb_all)
    if note:
        doc["notes"].append(note)
    doc["notes"] += tail
    doc["run"] = {"status": "ok", "message": ""}
    doc["seconds"] = round(time.perf_counter() - t0, 2)  # as written
    return doc


def position_note(probes: Mapping[str, Mapping[str, Any]]) -> str | None:
    """When position bias changed and other probes changed with it: their effects are read on
    the judge's consensus over both orders, so a judge whose two orders disagree more makes
    more ties, which a perturbation then tips; a prompt change that only worsened position
    bias read as authority or verbosity "worse" too (sim, position 0.5 -> 2.5: 11 of 300)."""
    pos = (probes.get("position") or {}).get("verdict")
    moved = [n for n, p in probes.items()
             if n != "position" and p.get("verdict") in ("improved", "worse")]
    if pos not in ("improved", "worse") or not moved:
        return None
    return (f"position bias got {pos if pos == 'worse' else 'better'}, and {', '.join(moved)} "
            "changed too: the other probes are measured on the judge's verdict over both "
            "orders, which a change in position bias moves as well (more or fewer order "
            "disagreements to tip), so read their changes together with position's")


def _adds_words(p: Any) -> bool:
    """Whether an audit's probe lengthens the response (1 word or more on average), or its
    audit noted that its shift may be length (the `length:` note)."""
    if not isinstance(p, Mapping):
        return False
    added = (p.get("rates") or {}).get("words_added") if isinstance(p.get("rates"),
                                                                    Mapping) else None
    mean = _finite(added.get("mean")) if isinstance(added, Mapping) else None
    return (mean is not None and mean >= 1) or any(
        str(n).startswith("length:") for n in p.get("notes") or [])


def length_note(probes: Mapping[str, Mapping[str, Any]], pa: Mapping[str, Any],
                pb: Mapping[str, Any]) -> str | None:
    """When the judge's preference for length changed (verbosity got worse or better, or an
    audit noted a probe's shift may be length) and probes that add words to the response
    changed too: their change may be the length preference's. A length-only change (sim
    length 0 -> 1.5) listed authority and injection as worse with no word of it, while the
    audit itself warned that such shifts may be length."""
    verb = (probes.get("verbosity") or {}).get("verdict")
    noted = sorted(n for n in probes if n != "verbosity" and any(
        str(x).startswith("length:") for doc in (pa, pb)
        for x in ((doc.get(n) or {}).get("notes") or [] if isinstance(doc.get(n), Mapping)
                  else [])))
    moved = [n for n, p in probes.items()
             if n not in ("verbosity", "position") and p.get("verdict") in ("improved", "worse")
             and (_adds_words(pa.get(n)) or _adds_words(pb.get(n)))]
    if not moved or (verb not in ("improved", "worse") and not noted):
        return None
    why = (f"the judge's preference for length got {'worse' if verb == 'worse' else 'better'}"
           " (verbosity)" if verb in ("improved", "worse") else
           f"an audit notes that the shift of {', '.join(noted)} may be the judge's "
           "preference for length")
    return (f"{why}, and {', '.join(moved)} changed too: these probes add words to the "
            "response, so their change may be the length preference's, not their cue's; "
            "read them together with verbosity's (--length-control in both audits measures "
            "each cue beyond its length)")


def compare_paths(path_a: str | Path, path_b: str | Path, **kw: Any) -> dict[str, Any]:
    """Load two audit folders and compare them; CompareError for bad input."""
    a, b = load_audit(path_a), load_audit(path_b)
    check_same_data(a, b)
    return compare(a, b, a_path=str(path_a), b_path=str(path_b), **kw)
