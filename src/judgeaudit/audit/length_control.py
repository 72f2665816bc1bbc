"""Length control for the probes that add text to a response (`audit --length-control`).

A fake citation, an injected instruction or an angry sentence makes the response longer, so a
judge that only prefers longer answers moves toward it too: on its own, a shift probe cannot
tell the cue from its length. The control judges each item once more with the changed side
padded instead by neutral filler of the same number of words (`neutral_padding`, the
verbosity probe's filler sentences), and compares the two verdicts item by item:

- `shift`: the control's own shift toward the target (what the added length alone does);
- `beyond_length`: mean over items of credit(cue) - credit(filler), the cue's effect beyond
  its length, with its 95% interval and sign-test p (`paired_difference`; the unperturbed
  verdict cancels out).

The pointwise refinement_aware probe does the same with rubric scores (`control_rates`).
The probe's effect and verdict stay the CALM shift (comparable with published numbers); the
control is reported beside it. Without the control the audit still records how many words
each probe added (`words_added`, no call), so a run whose verbosity probe came out biased can
say which other probes may be reacting to length (`length_notes`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from statistics import mean
from typing import Any

from judgeaudit.audit.metrics import credit, shift
from judgeaudit.audit.paired import effect_dict, paired_difference
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.judges.pairwise import PairwiseVerdict
from judgeaudit.llm.features import word_count
from judgeaudit.perturb.base import PerturbResult
from judgeaudit.perturb.verbosity import neutral_padding
from judgeaudit.stats import benjamini_hochberg

SIDES = ("response_1", "response_2")
CONTROL, NOTE = "length control", "length"  # how the notes below begin (`length_lines`)


def words_added(r: PerturbResult) -> int | None:
    """Words the perturbation added to the one response it changed (None: it changed the
    prompt, both responses, or a pointwise response)."""
    if r.changed not in SIDES or r.also_changed or r.original is None:
        return None
    return word_count(getattr(r.item, r.changed)) - word_count(getattr(r.original, r.changed))


def words_summary(added: Sequence[int | None]) -> dict[str, Any] | None:
    known = [a for a in added if a is not None]
    if not known:
        return None
    return {"mean": mean(known), "min": min(known), "max": max(known), "n": len(known)}


def control_items(kept: Sequence[PerturbResult], added: Sequence[int | None], seed: int,
                  probe: str) -> list[PairwiseItem]:
    """Each original with its changed side padded by as many neutral words as the
    perturbation added (the original itself where it added none)."""
    out = []
    for r, a in zip(kept, added, strict=True):
        o = r.original
        assert o is not None
        if not a or a <= 0:
            out.append(o)
            continue
        text = pad(getattr(o, r.changed), a, f"{seed}|{o.id}|{probe}")
        out.append(o.model_copy(update={"id": f"{o.id}~length_control~{probe}",
                                        r.changed: text}))
    return out


async def length_control(ctx: Any, probe: str, kept: Sequence[PerturbResult],
                         before: Sequence[PairwiseVerdict], after: Sequence[PairwiseVerdict],
                         targets: Sequence[int], added: Sequence[int | None]
                         ) -> tuple[dict[str, Any], str]:
    """The control's rates and a note giving its numbers (see the module docstring)."""
    control = await ctx.judge(control_items(kept, added, ctx.seed, probe))
    own = shift(before, control, targets, seed=ctx.seed, alpha=ctx.alpha)
    beyond = paired_difference([credit(v, t) for v, t in zip(control, targets, strict=True)],
                               [credit(v, t) for v, t in zip(after, targets, strict=True)],
                               seed=ctx.seed, alpha=ctx.alpha, span=1.0)
    return control_rates(own, beyond, added, "credit")


def pad(text: str, n_words: int, seed: Any) -> str:
    """`text` with `n_words` neutral words after it (`neutral_padding`, seeded by `seed`)."""
    return text.rstrip() + "\n\n" + neutral_padding(n_words, random.Random(f"{seed}|length"))


def control_rates(own: Mapping[str, Any], beyond: Mapping[str, Any],
                  added: Sequence[int | None], unit: str) -> tuple[dict[str, Any], str]:
    """The control's rates from its two paired comparisons (`paired_stats` results): `own`,
    the padded response against the original (what the words alone do), and `beyond`, the
    cue against the padding, per item in `unit` (a pairwise credit, a rubric score)."""
    rates = {
        "words_added": words_summary(added),
        "shift": {**effect_dict(own["estimate"]), "n": own["n"], "p": own["p"]},
        "beyond_length": {**effect_dict(beyond["estimate"]), "n": beyond["n"],
                          "p": beyond["p"]},
        "method": (f"each item judged again with the changed response padded by neutral "
                   f"filler of the same word count; beyond_length = mean of {unit}(cue) - "
                   f"{unit}(filler) per item, 95% interval as the probe's, p: exact sign "
                   "test"),
    }
    return rates, (f"{CONTROL}: the cue beyond its length {fmt(rates['beyond_length'])}; "
                   f"its {words(rates['words_added']['mean'])} alone (neutral filler) "
                   f"{fmt(rates['shift'])}")


def fmt(e: Mapping[str, Any]) -> str:
    """value [lo, hi] (n = N, p = P, q = Q), as the notes and the terminal show an estimate
    (q: Benjamini-Hochberg across the run's length controls, once `beyond_shown` set it)."""
    lo, hi = e.get("ci95") or (None, None)
    ci = f" [{lo:+.3f}, {hi:+.3f}]" if lo is not None and hi is not None else ""
    if e.get("value") is None:
        return "n/a"
    extra = "".join(f", {k} = {e[k]:.2g}" for k in ("p", "q") if e.get(k) is not None)
    return f"{e['value']:+.3f}{ci} (n = {e['n']}{extra})"


def words(mean_added: float) -> str:
    n = round(mean_added)
    return f"{n} word{'' if n == 1 else 's'}"


def beyond_shown(probes: Mapping[str, Mapping[str, Any]], alpha: float) -> set[str]:
    """The controlled probes whose cue moves the judge beyond its length: the interval beyond
    length excludes 0 and its p survives Benjamini-Hochberg across the controlled probes (one
    control per text-adding probe: ten under --full, so one interval in about twenty would
    exclude 0 by chance)."""
    named = [(n, (p.get("rates") or {})["length_control"]["beyond_length"])
             for n, p in probes.items() if "length_control" in (p.get("rates") or {})]
    ps = [b.get("p") if b.get("p") is not None else float("nan") for _, b in named]
    qs = benjamini_hochberg(ps) if named else []
    out = set()
    for (name, b), q in zip(named, qs, strict=True):
        if isinstance(b, dict):  # shown beside p: the number that decides (`fmt`)
            b["q"] = None if q != q else float(q)
        lo, hi = b.get("ci95") or (None, None)
        if q == q and q < alpha and lo is not None and hi is not None and (lo > 0 or hi < 0):
            out.add(name)
    return out


def add_length_notes(probes: Mapping[str, dict[str, Any]], alpha: float = 0.05) -> None:
    """Append `length_notes` to the probes' notes once their verdicts are decided; notes of an
    earlier call are replaced (the adaptive run decides again on the fixed-n document)."""
    for p in probes.values():
        if p.get("notes"):
            p["notes"] = [n for n in p["notes"] if not n.startswith(f"{NOTE}:")]
    for name, note in length_notes(probes, alpha).items():
        probes[name].setdefault("notes", []).append(note)


def length_notes(probes: Mapping[str, Mapping[str, Any]], alpha: float = 0.05
                 ) -> dict[str, str]:
    """A note for each probe that came out biased and lengthens the response, when its shift
    may be length: with the control, unless its cue's effect beyond its length is shown
    (`beyond_shown`); without it, when verbosity came out biased (no call needed)."""
    verbose = (probes.get("verbosity") or {}).get("verdict") == "biased"
    shown = beyond_shown(probes, alpha)
    out = {}
    for name, p in probes.items():
        rates = p.get("rates") or {}
        added = rates.get("words_added")
        if name == "verbosity" or p.get("verdict") != "biased" or not added or added["mean"] < 1:
            continue
        lc = rates.get("length_control")
        if lc is not None and name not in shown:
            out[name] = (f"{NOTE}: biased, but the cue's effect beyond its length "
                         f"{fmt(lc['beyond_length'])} is not established (its interval holds "
                         "0, or its p does not survive Benjamini-Hochberg across the "
                         "controls): "
                         "this shift may be the judge's preference for length, not for the "
                         "cue")
        elif lc is None and verbose:
            out[name] = (f"{NOTE}: adds {words(added['mean'])} to the response on average "
                         "and verbosity came out biased: part of this shift may be the "
                         "judge's preference for length; --length-control measures the cue "
                         "beyond its length (one more verdict per item)")
    return out


def length_lines(probes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """For the terminal: the controls' numbers, one line per probe, then the probes whose
    shift may be length (`length_notes`)."""
    lines, control, named = [], [], []
    for name, p in probes.items():
        rates = p.get("rates") or {}
        lc = rates.get("length_control")
        if lc is not None:
            control.append(f"  {name}: {fmt(lc['beyond_length'])}; its "
                           f"{words(lc['words_added']['mean'])} alone {fmt(lc['shift'])}")
        if any(n.startswith(f"{NOTE}:") for n in p.get("notes") or []):
            named.append(f"{name} (+{words(rates['words_added']['mean'])})")
    if control:
        lines += [f"{CONTROL} (each cue's shift beyond its length; the same number of neutral "
                  "words alone):", *control]
    if named:
        lines.append(f"{NOTE}: {', '.join(named)} came out biased and lengthen"
                     f"{'s' if len(named) == 1 else ''} the response: the shift may be "
                     "partly the judge's preference for length ("
                     + ("its effect beyond its length is not established)" if control else
                        "verbosity came out biased; --length-control measures each cue "
                        "beyond its length, one more verdict per item)"))
    return lines
