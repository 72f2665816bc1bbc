"""`judgeaudit scoring-bias`: score the same responses under the baseline scoring prompt and
under every perturbed prompt, then measure how far scores move (FP, MAD, shift), whether
agreement with gold gets better or worse (Spearman, Pearson, paired differences), how the
score distribution shifts, how strongly a labelled reference pulls the score, which template
is most accurate for this judge on this data, and whether averaging / majority voting over
repeats or templates makes scores more stable against a held-out repeat.

All calls of one item are issued together (item-major order) so a local model reuses the
shared prompt prefix (system + instruction + response) across templates.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy import stats as sps

import judgeaudit
from judgeaudit.data.schema import PointwiseItem
from judgeaudit.judges.pointwise import PromptVariant, RubricJudge, ScoreVerdict
from judgeaudit.judges.templates import Template, user_placeholders
from judgeaudit.llm.base import Provider, Request, legacy_request_key
from judgeaudit.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID, assess
from judgeaudit.scoring import metrics as M
from judgeaudit.scoring.perturbations import ARABIC, K, References, ScoringPerturbation
from judgeaudit.stats import wilcoxon_signed_rank

BASELINE = "baseline"
SPAN = float(K - 1)  # scores are 1..K: two differ by at most K - 1
MAX_INVALID_EXAMPLES = 20
BY_CONSTRUCTION = "by construction"  # the method of a repeat noise no call measured

if TYPE_CHECKING:
    from judgeaudit.llm.client import Client

log = logging.getLogger("judgeaudit.scoring")


def scored_repeats(provider: Provider, repeats: int) -> int:
    """The baseline scorings per item a run asks: 1 for a deterministic provider (local
    logits: the same request, the same output), whose repeats would only copy repeat 0 (the
    embedded judge computed each again; the repeat is part of the cache key) and then report
    a repeat noise of 0 with an interval as if it had been measured. Any other judge is asked
    every repeat: a hosted API at temperature 0 is not guaranteed to answer alike."""
    return 1 if repeats >= 2 and provider.deterministic else repeats


def _by_construction(n: int) -> dict[str, Any]:
    """A repeat noise of 0 that no call measured: no interval, the method says why."""
    return {"value": 0.0, "ci95": None, "n": n, "method": BY_CONSTRUCTION}


@dataclass
class ScoreTable:
    """scores[name][repeat][i] = score of item i under template `name` (None = invalid or
    not applicable); `missing[name]` = items the template could not apply to."""

    items: list[PointwiseItem]
    scores: dict[str, dict[int, list[float | None]]] = field(default_factory=dict)
    verdicts: dict[str, dict[int, list[ScoreVerdict | None]]] = field(default_factory=dict)
    missing: dict[str, int] = field(default_factory=dict)

    def get(self, name: str, rep: int = 0) -> list[float | None]:
        return self.scores.get(name, {}).get(rep, [None] * len(self.items))

    def n_scored(self) -> tuple[int, int]:
        """(scores with a valid value, scorings asked) over every template and repeat."""
        asked = [v for reps in self.verdicts.values() for vs in reps.values() for v in vs
                 if v is not None]
        return sum(v.score is not None for v in asked), len(asked)


# The placeholders that show what a perturbation changes: a template with none of them
# renders that perturbation as the baseline prompt, so its row would read "no effect"
# without the judge ever seeing the change.
SHOWN_BY = {
    "order": (("levels",), "the rubric order it changes"),
    "ids": (("levels", "scale_note", "answer_instruction"), "the score ids it changes"),
    "reference": (("reference_block",), "the labelled reference answer it adds"),
}


def _changes(p: ScoringPerturbation) -> list[str]:
    """What `p` changes in the prompt against the baseline (`SHOWN_BY` keys)."""
    out = ["order"] if p.order_kind != "ascending" else []
    out += ["ids"] if p.scheme.ids != ARABIC.ids else []
    return out + (["reference"] if p.reference_score is not None else [])


def not_measurable(template: Template, perts: Sequence[ScoringPerturbation]) -> dict[str, str]:
    """{perturbation: why} for those `template` cannot show: its prompts would equal the
    baseline's, so they are not run (no calls) and their rows are not reported as "no
    effect"; the results count them and say why."""
    names = user_placeholders(template)
    out: dict[str, str] = {}
    for p in perts:
        unseen = [c for c in _changes(p) if not names & set(SHOWN_BY[c][0])]
        if p.name != BASELINE and unseen:
            out[p.name] = "; ".join(
                f"template {template.where!r} has no "
                + " or ".join(f"{{{f}}}" for f in SHOWN_BY[c][0])
                + f", so the prompt never shows {SHOWN_BY[c][1]}" for c in unseen)
    return out


def measurable(template: Template, perts: Sequence[ScoringPerturbation]
               ) -> tuple[list[ScoringPerturbation], dict[str, str]]:
    """(the perturbations to run, {those not measurable: why}); ValueError, before any call,
    when perturbations were asked and none of them can be measured with `template`."""
    skip = not_measurable(template, perts)
    kept = [p for p in perts if p.name not in skip]
    if skip and len(kept) <= 1:
        raise ValueError(
            f"none of the perturbations asked can be measured with template "
            f"{template.where!r}: " + "; ".join(f"{n}: {why}" for n, why in skip.items())
            + ". Add the placeholders to the template's user section, or use the built-in "
            "pointwise_scoring_v1, which has them all.")
    return kept, skip


def plan(items: Sequence[PointwiseItem], perts: Sequence[ScoringPerturbation],
         references: References | None, repeats: int
         ) -> tuple[list[tuple[PointwiseItem, PromptVariant, int]], list[tuple[str, int, int]],
                    dict[str, int]]:
    """Jobs in item-major order, where each job goes (name, repeat, item index), and the
    number of items each template could not apply to."""
    jobs: list[tuple[PointwiseItem, PromptVariant, int]] = []
    where: list[tuple[str, int, int]] = []
    missing = {p.name: 0 for p in perts}
    for i, it in enumerate(items):
        for p in perts:
            var = p.variant_for(it, references)
            if var is None:
                missing[p.name] += 1
                continue
            for rep in range(repeats if p.name == BASELINE else 1):
                jobs.append((it, var, rep))
                where.append((p.name, rep, i))
    return jobs, where, missing


async def score_all(judge: RubricJudge, items: Sequence[PointwiseItem],
                    perts: Sequence[ScoringPerturbation], *, references: References | None = None,
                    repeats: int = 1, on_done: Callable[[], None] | None = None) -> ScoreTable:
    jobs, where, missing = plan(items, perts, references, repeats)
    verdicts = await judge.score_variants(jobs, on_done=on_done)
    table = ScoreTable(list(items), missing=missing)
    n = len(items)
    for p in perts:
        reps = range(repeats if p.name == BASELINE else 1)
        table.scores[p.name] = {r: [None] * n for r in reps}
        table.verdicts[p.name] = {r: [None] * n for r in reps}
    for (name, rep, i), v in zip(where, verdicts, strict=True):
        table.scores[name][rep][i] = None if v.score is None else float(v.score)
        table.verdicts[name][rep][i] = v
    return table


def distribution(scores: Sequence[float | None], k: int = K) -> dict[str, int]:
    """Counts per score "1".."k", "invalid", and each decimal score a judge gave ("3.5") as
    its own bin, as evaluate's score_counts keep it: binning by round() put 1.5 and 2.5 both
    in "2" (banker's rounding) and hid that the judge answered half points."""
    out = {str(c): 0 for c in range(1, k + 1)}
    out["invalid"] = 0
    for x in scores:
        key = "invalid" if x is None else f"{float(x):g}"
        out[key] = out.get(key, 0) + 1
    return out


def _bins(dists: Sequence[dict[str, int]], k: int = K) -> list[str]:
    """The distribution columns: 1..k with any decimal bins in their place, then invalid."""
    keys = {c for d in dists for c in d if c != "invalid"} | {str(c) for c in range(1, k + 1)}
    return sorted(keys, key=float) + ["invalid"]


def _n_invalid(table: ScoreTable, name: str) -> int:
    return sum(1 for v in table.verdicts[name][0] if v is not None and v.score is None)


def _entry(table: ScoreTable, name: str, gold: list[float | None], seed: int,
           repeats: int, nb: int, deterministic: bool = False) -> dict[str, Any]:
    s = table.get(name)
    base = table.get(BASELINE)
    if name == BASELINE:
        other = table.get(BASELINE, 1) if repeats >= 2 else None
        compared = "baseline repeat 1 (repeat noise)" if other is not None else None
    else:
        other, compared = base, "baseline"
    valid = sum(x is not None for x in s)
    fixed = name == BASELINE and deterministic
    if fixed:
        compared = ("a repeat: 0 by construction (a deterministic judge answers a repeat as "
                    "it answered first; none was asked)")
    e: dict[str, Any] = {
        "compared_with": compared,
        "fp": _by_construction(valid) if fixed else M.flip_rate(s, other)
        if other is not None else M._none(),
        "mad": _by_construction(valid) if fixed else M.mad(s, other, seed, nb, SPAN)
        if other is not None else M._none(),
        "shift": _by_construction(valid) if fixed else M.shift(s, other, seed, nb, SPAN)
        if other is not None else M._none(),
        "spearman": M.correlation(s, gold, "spearman", seed, nb),
        "pearson": M.correlation(s, gold, "pearson", seed, nb),
        "distribution": distribution([x for x, v in zip(s, table.verdicts[name][0],
                                                        strict=True) if v is not None]),
        "n_decimal": sum(x is not None and not float(x).is_integer() for x in s),
        "n": valid,
        "n_invalid": _n_invalid(table, name),
        "n_missing": table.missing.get(name, 0),
    }
    exp = [None if v is None else v.expected for v in table.verdicts[name][0]]
    if any(x is not None for x in exp):
        # Logit judges: the probability-weighted score keeps the information an argmax
        # throws away (a small judge may give the same argmax to every item).
        base_exp = [None if v is None else v.expected for v in table.verdicts[BASELINE][0]]
        vals = [x for x in exp if x is not None]
        e["expected"] = {
            "mean": sum(vals) / len(vals),
            "mad_vs_baseline": M.mad(exp, base_exp, seed, nb, SPAN) if name != BASELINE
            else None,
            "shift_vs_baseline": M.shift(exp, base_exp, seed, nb, SPAN) if name != BASELINE
            else None,
            "spearman": M.correlation(exp, gold, "spearman", seed, nb),
            "pearson": M.correlation(exp, gold, "pearson", seed, nb),
        }
    if name != BASELINE:
        e["vs_baseline"] = {
            "spearman_diff": M.correlation_diff(s, base, gold, "spearman", seed, nb),
            "pearson_diff": M.correlation_diff(s, base, gold, "pearson", seed, nb),
        }
    return e


ALPHA = 0.05  # the family-wise error rate Holm holds over the run's templates


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the input's order (monotone, capped at 1)."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    adj = [1.0] * len(ps)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(ps) - rank) * ps[i]))
        adj[i] = running
    return adj


def _spearman_rows(x: np.ndarray, g: np.ndarray) -> np.ndarray:
    """Spearman of each row of `x` with `g` (nan where a row is constant)."""
    rx = sps.rankdata(x, axis=-1)
    rg = sps.rankdata(g)
    dx = rx - rx.mean(axis=-1, keepdims=True)
    dg = rg - rg.mean()
    den = np.sqrt((dx * dx).sum(axis=-1) * (dg * dg).sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (dx * dg).sum(axis=-1) / np.where(den > 0, den, 1), np.nan)


def spearman_diff_p(perturbed: Sequence[float | None], baseline: Sequence[float | None],
                    gold: Sequence[float | None], seed: int = 0, n_perm: int = 2000
                    ) -> float | None:
    """Two-sided paired permutation p of "Spearman(perturbed, gold) - Spearman(baseline,
    gold)": under no difference the two scores of an item are exchangeable, so each item's
    pair is swapped at random (`n_perm` draws, p = (1 + as extreme) / (1 + n_perm)). None
    where the difference is undefined (fewer than 4 items, constant scores)."""
    rows = [(p, b, g) for p, b, g in zip(perturbed, baseline, gold, strict=True)
            if p is not None and b is not None and g is not None]
    if len(rows) < 4:
        return None
    arr = np.asarray(rows, dtype=float)
    a, b, g = arr[:, 0], arr[:, 1], arr[:, 2]
    d0 = _spearman_rows(np.stack([a, b]), g)
    if not np.all(np.isfinite(d0)):
        return None
    obs = abs(float(d0[0] - d0[1]))
    swap = np.random.default_rng(seed).random((n_perm, a.size)) < 0.5
    pa, pb = np.where(swap, b, a), np.where(swap, a, b)
    d = _spearman_rows(pa, g) - _spearman_rows(pb, g)
    extreme = int(np.sum(np.nan_to_num(np.abs(d), nan=0.0) >= obs - 1e-12))
    return (1 + extreme) / (1 + n_perm)


def template_tests(table: ScoreTable, names: Sequence[str], gold: list[float | None],
                   seed: int = 0, n_perm: int = 2000) -> dict[str, Any]:
    """Each template against the baseline, by two tests whose p-values are Holm-adjusted over
    the run's templates, one family per question: does it move scores (shift: Wilcoxon
    signed-rank on the paired differences, exact up to stats' limit) and does it change the
    agreement with gold (d Spearman: `spearman_diff_p`)? With 6 unbiased templates on 100
    items some template's raw interval excluded 0 in 20-33% of seeded runs; a flag
    ("significant") follows the adjusted p, holding the family-wise rate near `ALPHA`. The
    raw intervals stay as they are."""
    base = table.get(BASELINE)
    others = [n for n in names if n != BASELINE]
    raw: dict[str, dict[str, float | None]] = {"shift": {}, "spearman_diff": {}}
    for n in others:
        x, y = M._pairs(table.get(n), base)
        raw["shift"][n] = wilcoxon_signed_rank(x - y) if x.size else None
        raw["spearman_diff"][n] = spearman_diff_p(table.get(n), base, gold, seed, n_perm)
    per: dict[str, dict[str, Any]] = {n: {} for n in others}
    significant: dict[str, list[str]] = {}
    for fam, ps in raw.items():
        tested = [n for n in others if ps[n] is not None]
        adj = dict(zip(tested, holm([float(ps[n]) for n in tested]), strict=True))  # type: ignore[arg-type]
        for n in others:
            pa = adj.get(n)
            per[n][fam] = {"p": ps[n], "p_adjusted": pa,
                           "significant": None if pa is None else pa < ALPHA}
        significant[fam] = [n for n in tested if adj[n] < ALPHA]
    return {
        "per_template": per,
        "multiplicity": {
            "method": "holm", "alpha": ALPHA,
            "m": {fam: sum(ps[n] is not None for n in others) for fam, ps in raw.items()},
            "tests": {"shift": "Wilcoxon signed-rank on the paired score differences",
                      "spearman_diff": f"paired permutation ({n_perm} item swaps)"},
            "significant": significant,
            "note": "each question's p-values are Holm-adjusted over the run's templates "
                    "(family-wise rate alpha); the 95% intervals are per template, unadjusted",
        },
    }


FEW_ITEMS = 10  # below this many items the bootstrap intervals over items are not trusted


def recommend(table: ScoreTable, names: Sequence[str], gold: list[float | None],
              perts: dict[str, dict[str, Any]], seed: int,
              nb: int = M.N_BOOT) -> dict[str, Any] | None:
    """The template to use: the one with the highest Spearman with gold (among those applied
    to every item) only where its paired improvement over the baseline has a 95% interval
    above 0, else the baseline ("keep the baseline"): on an exact tie (the same scores under
    every template) the first-sorted template was recommended at "+0.000 [+0.000, +0.000]".
    `best_by_spearman` keeps the top template by its estimate; notes say when the paired
    bootstrap cannot tell it from the runner-up or from the baseline."""
    cands = [(perts[n]["spearman"]["value"], n) for n in names
             if perts[n]["spearman"]["value"] is not None and perts[n]["n_missing"] == 0]
    if not cands:
        return None
    cands.sort(key=lambda c: (c[0], c[1] == BASELINE), reverse=True)  # ties: the baseline
    best = cands[0][1]
    out: dict[str, Any] = {"template": best, "best_by_spearman": best,
                           "spearman": perts[best]["spearman"],
                           "pearson": perts[best]["pearson"], "criterion": "spearman with gold",
                           "notes": []}
    runner_up = cands[1][1] if len(cands) > 1 else None
    above_baseline = best == BASELINE
    for label, other in (("runner-up", runner_up),
                         ("baseline", BASELINE if BASELINE not in (best, runner_up) else None)):
        if other is None:  # (the baseline as runner-up is compared once, as the runner-up)
            continue
        d = M.correlation_diff(table.get(best), table.get(other), gold, "spearman", seed, nb)
        out[f"vs_{label.replace('-', '_')}"] = {"template": other, "spearman_diff": d}
        lo = d["ci95"][0]
        if d["value"] is None:
            out["notes"].append(f"{best!r} cannot be compared with the {label} {other!r}: its "
                                "correlation with gold is undefined (constant scores?)")
        elif lo is None or lo <= 0:
            out["notes"].append(
                f"{best!r} is not clearly better than the {label} {other!r}: Spearman difference "
                f"{_f(d['value'])}, 95% CI [{_f(d['ci95'][0])}, {_f(d['ci95'][1])}] "
                "includes 0")
        elif other == BASELINE:
            above_baseline = True
    n_gold = sum(g is not None for g in gold)
    if best != BASELINE and not above_baseline:
        out["template"] = BASELINE
        out["spearman"], out["pearson"] = (perts[BASELINE]["spearman"],
                                           perts[BASELINE]["pearson"])
        out["notes"].insert(0, f"keep the baseline: no template's Spearman improvement over it "
                               f"has a 95% interval above 0 (the best by Spearman is {best!r})")
    if n_gold < FEW_ITEMS:
        out["notes"].append(f"only {n_gold} items with a gold score: a correlation's bootstrap "
                            "interval over so few can collapse to a point, so this is no "
                            f"recommendation (use at least {FEW_ITEMS} items)")
    out["clearly_better"] = not out["notes"]
    return out


def _f(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.3f}"


def mitigation(table: ScoreTable, ensemble: Sequence[str], gold: list[float | None],
               repeats: int, seed: int, nb: int = M.N_BOOT,
               deterministic: bool = False) -> dict[str, Any]:
    """Average / majority over repeated baseline scorings and over several templates: does
    each lower MAD against a held-out baseline repeat (the last one) compared with a single
    baseline scoring? Not for a deterministic judge: its held-out repeat is repeat 0 itself,
    so every option would be measured against a copy of the single scoring."""
    if deterministic:
        return {"available": False, "by_construction": True,
                "note": "the judge is deterministic (the same prompt, the same score): a "
                        "repeat equals repeat 0, so averaging repeats has no noise to reduce "
                        "and there is no held-out repeat to test template averaging against; "
                        "no repeat was asked"}
    if repeats < 2:
        return {"available": False,
                "note": "needs --repeats >= 2 (a held-out repeat); a deterministic judge "
                        "(local logits at temperature 0) repeats itself exactly, so its "
                        "repeats measure nothing"}
    held = table.get(BASELINE, repeats - 1)
    single = table.get(BASELINE, 0)
    rows: dict[str, dict[str, Any]] = {}
    cands: dict[str, tuple[list[float | None], str]] = {
        "single": (single, "one baseline scoring (repeat 0)")}
    pool = [table.get(BASELINE, r) for r in range(repeats - 1)]
    if len(pool) >= 2:
        cands["repeat_mean"] = (M.aggregate(pool, "mean"),
                                f"mean of {len(pool)} baseline repeats")
        cands["repeat_majority"] = (M.aggregate(pool, "majority"),
                                    f"majority of {len(pool)} baseline repeats")
    tpl = [table.get(n) for n in ensemble]
    if len(tpl) >= 2:
        cands["template_mean"] = (M.aggregate(tpl, "mean"),
                                  f"mean over {len(tpl)} templates ({', '.join(ensemble)})")
        cands["template_majority"] = (M.aggregate(tpl, "majority"),
                                      f"majority over {len(tpl)} templates")
    for name, (agg, desc) in cands.items():
        row: dict[str, Any] = {"description": desc,
                               "mad_vs_heldout": M.mad(agg, held, seed, nb, SPAN),
                               "spearman": M.correlation(agg, gold, "spearman", seed, nb)}
        if name != "single":
            d = M.abs_dev_diff(agg, single, held, seed, nb)
            row["mad_diff_vs_single"] = d
            lo, hi = d["ci95"]
            row["reduces_mad"] = (None if lo is None else "yes" if hi < 0 else
                                  "no (increases)" if lo > 0 else "unclear")
        rows[name] = row
    return {"available": True, "heldout": f"baseline repeat {repeats - 1}", "options": rows}


DETERMINISTIC_NOTE = ("repeat noise 0 by construction: the judge is deterministic (the same "
                      "prompt, the same score), so the baseline was scored once and no repeat "
                      "was asked; a measured 0 would only restate that")


def repeat_calls(judge: RubricJudge, items: Sequence[PointwiseItem],
                 perts: Sequence[ScoringPerturbation], references: References | None,
                 repeats: int) -> dict[str, Any] | None:
    """What the baseline's repeats 1..repeats-1 add to a run whose calls may cost money (a
    billed provider, or one priced above 0): the calls not in the cache and, where the price
    is known, their estimated cost (the plan's estimate: prompt tokens as characters /
    `CHARS_PER_TOKEN`, answers at their max_tokens). None for free or deterministic judges.
    Said before sending, not acted on: stopping the repeats once the first items agree would
    bias the repeat noise toward 0."""
    from judgeaudit.llm.plan import RATE_WORDS, body_ceiling, plan_body, price_basis

    provider = judge.client.provider
    price = provider.price_per_mtok
    if repeats < 2 or provider.deterministic or not (provider.billed or (price and any(price))):
        return None
    jobs = plan(items, perts, references, repeats)[0]
    reqs = [judge.request(it, rep, var) for it, var, rep in jobs if rep >= 1]
    todo = [r for r in reqs if not in_cache(judge.client, r)]
    basis = price_basis(provider)
    cost = (None if price is None else
            sum(float(body_ceiling(plan_body(r, provider), price)[2] or 0.0) for r in todo))
    return {"extra_calls": len(todo), "cached": len(reqs) - len(todo), "of_planned": len(jobs),
            "cost_usd_estimate": cost, "price": None if basis is None else RATE_WORDS[basis],
            "note": "the baseline's repeats measure the judge's repeat noise: a hosted API is "
                    "not guaranteed to answer the same prompt alike, at temperature 0 too; "
                    "--repeats 1 leaves them out (no repeat noise, no mitigation check)"}


def in_cache(client: Client, request: Request) -> bool:
    """Whether the client's cache answers `request`, so the run will not pay for it: under
    its key, or under the key an older version gave it (`base.legacy_request_key`: a
    base_url not written in the one form the key names it by), which the call reads too
    (`Client._legacy_hit`). The repeats line counted those as paid calls."""
    cache = client.cache
    if cache is None:
        return False
    if cache.get(client.key(request)) is not None:
        return True
    legacy = legacy_request_key(client.provider, request)
    return legacy is not None and cache.get(legacy) is not None


def _repeat_calls_text(spec: str, repeats: int, rc: dict[str, Any]) -> str:
    """The line said before the repeats are sent: calls, cost and which price it is."""
    cost = rc["cost_usd_estimate"]
    priced = ("no price known (give price_in/price_out in the judge spec)" if cost is None
              else f"about ${cost:,.4f} at {rc['price']} (prompt tokens estimated as "
                   "characters / 4, answers at their max_tokens)")
    cached = f", {rc['cached']} more in the cache" if rc["cached"] else ""
    return (f"{spec}: --repeats {repeats} adds {rc['extra_calls']} paid calls (baseline "
            f"repeats 1..{repeats - 1}{cached}) to the run's {rc['of_planned']}: {priced}; "
            f"{rc['note']}")


def build_results(table: ScoreTable, perts: Sequence[ScoringPerturbation], *, repeats: int,
                  seed: int, judge: RubricJudge, n_boot: int = M.N_BOOT,
                  deterministic: bool = False) -> dict[str, Any]:
    """The results' numbers; `deterministic`: the judge's repeats were not asked (a
    deterministic provider), so its repeat noise is 0 by construction, not measured."""
    nb = n_boot
    gold = [it.score for it in table.items]
    names = [p.name for p in perts]
    pert_docs = {n: _entry(table, n, gold, seed, repeats, nb, deterministic) for n in names}
    tests = template_tests(table, names, gold, seed, nb)
    for n, t in tests["per_template"].items():
        pert_docs[n]["tests"] = t
    by_ref = {p.reference_score: table.get(p.name) for p in perts
              if p.reference_score is not None}
    ensemble = [p.name for p in perts if p.reference_score is None]
    ref_scored = sorted(k for k, v in by_ref.items() if any(x is not None for x in v))
    invalid: list[dict[str, Any]] = []
    for n in names:
        for v in table.verdicts[n][0]:
            if v is not None and v.score is None and len(invalid) < MAX_INVALID_EXAMPLES:
                invalid.append({"template": n, "item_id": v.item_id, "raw": v.raw,
                                "error": v.error})
    tsha = judge.template.sha256
    cols = _bins([pert_docs[n]["distribution"] for n in names])
    return {
        "perturbations": pert_docs,
        "templates": {p.name: {"description": p.description, **p.spec(),
                               "sha256": p.sha256(tsha)} for p in perts},
        "prompt_hashes": {p.name: p.sha256(tsha) for p in perts},
        "repeat_noise": {"fp": pert_docs[BASELINE]["fp"], "mad": pert_docs[BASELINE]["mad"],
                         **({"by_construction": True, "note": DETERMINISTIC_NOTE}
                            if deterministic else {})},
        "reference_pull": M.reference_pull(by_ref, seed, nb) if len(by_ref) >= 2 else None,
        "reference_pull_note": _pull_note(by_ref, ref_scored),
        "recommended": recommend(table, names, gold, pert_docs, seed, nb),
        "mitigation": mitigation(table, ensemble, gold, repeats, seed, nb, deterministic),
        "heatmap": {"rows": names, "cols": cols,
                    "values": [[pert_docs[n]["distribution"].get(c, 0) for c in cols]
                               for n in names]},
        "multiplicity": tests["multiplicity"],
        "invalid_examples": invalid,
        "n_gold": sum(g is not None for g in gold),
    }


def gold_scale_warnings(items: Sequence[PointwiseItem], k: int = K) -> list[str]:
    """A warning when gold scores lie outside the rubric's 1..k, as evaluate gives: the
    judge scores on 1..k, so gold on 1-10 or 0-100 (or one stray 9) is another scale; the
    correlations still rank both, but the data was likely meant for another rubric."""
    off = sorted({float(it.score) for it in items
                  if it.score is not None and not 1 <= float(it.score) <= k})
    if not off:
        return []
    n_off = sum(it.score is not None and not 1 <= float(it.score) <= k for it in items)
    n_gold = sum(it.score is not None for it in items)
    return [f"{n_off} of {n_gold} gold score(s) lie outside the rubric's 1..{k} (e.g. "
            f"{', '.join(f'{x:g}' for x in off[:3])}; gold range {min_gold(items):g}.."
            f"{max_gold(items):g}): the judge scores on 1..{k}, the correlations compare "
            "the two as they are; is the data on another scale?"]


def min_gold(items: Sequence[PointwiseItem]) -> float:
    return min(float(it.score) for it in items if it.score is not None)


def max_gold(items: Sequence[PointwiseItem]) -> float:
    return max(float(it.score) for it in items if it.score is not None)


def _pull_note(by_ref: dict[int, Any], scored: Sequence[int]) -> str | None:
    """Why the reference pull has no estimate, when it has none: the slope is fitted within
    each item across Ref-k levels, so it needs two or more levels scored (with only ref_5
    run the terminal said "no Ref-k row was scored" beside a scored ref_5 row)."""
    if not by_ref or len(scored) >= 2:
        return None
    ran = ", ".join(f"ref_{k}" for k in sorted(by_ref))
    got = ", ".join(f"ref_{k}" for k in scored) or "none"
    return (f"needs two or more Ref-k levels scored on the same items (the slope is fitted "
            f"within an item across levels); run: {ran}; scored: {got}; add levels with "
            "--perturbations ref_1,...,ref_5")


async def run_scoring_bias(
    judge: RubricJudge,
    items: Sequence[PointwiseItem],
    perts: Sequence[ScoringPerturbation],
    *,
    references: References | None = None,
    repeats: int = 3,
    seed: int = 0,
    judge_spec: str = "",
    data_spec: str = "",
    on_done: Callable[[], None] | None = None,
    n_boot: int = M.N_BOOT,
    min_valid: int = DEFAULT_MIN_VALID,
    max_failed: float = DEFAULT_MAX_FAILED,
) -> dict[str, Any]:
    """Run every template on every item and return the results document (without
    schema_version; `judgeaudit.report.write_results` adds it). Its `run` section applies
    the one outcome rule to the scorings asked: fewer than `min_valid` scores with a valid
    value, or more than `max_failed` of the calls failed, and the run has failed (its
    numbers are then no result)."""
    if not items:
        raise ValueError("scoring-bias needs pointwise items (none given)")
    if not perts or perts[0].name != BASELINE:
        raise ValueError("the first perturbation must be the baseline")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    perts, skipped = measurable(judge.template, perts)  # before any call
    asked = repeats
    repeats = scored_repeats(judge.client.provider, repeats)
    extra = repeat_calls(judge, items, perts, references, repeats)
    if extra is not None and extra["extra_calls"]:  # before any is sent
        log.warning("%s", _repeat_calls_text(judge_spec or judge.client.provider.name,
                                             repeats, extra))
    started = datetime.now(UTC).isoformat(timespec="seconds")
    t0 = time.perf_counter()
    before = judge.client.stats.as_dict()
    table = await score_all(judge, items, perts, references=references, repeats=repeats,
                            on_done=on_done)
    after = judge.client.stats.as_dict()
    calls = _calls_since(before, after)
    doc = build_results(table, perts, repeats=repeats, seed=seed, judge=judge, n_boot=n_boot,
                        deterministic=repeats < asked)
    n_valid, n_asked = table.n_scored()
    return {
        "command": "scoring-bias",
        "version": judgeaudit.__version__,
        "judge": judge_spec,
        "data": data_spec,
        "n_items": len(items),
        "warnings": ([f"only {len(items)} items: the bootstrap intervals over items are too "
                      f"narrow to trust below {FEW_ITEMS} (they can collapse to a point); use "
                      f"--limit {FEW_ITEMS} or more"] if len(items) < FEW_ITEMS else [])
        + gold_scale_warnings(items) + _skipped_warnings(skipped),
        "not_measurable": {"n": len(skipped), "perturbations": skipped,
                           "note": "not run (no calls): the template cannot show what they "
                                   "change, so their prompts would equal the baseline's"},
        "repeats": repeats,  # the baseline scorings asked per item
        "repeats_asked": asked,
        "repeat_calls": extra,
        "seed": seed,
        "n_boot": n_boot,
        "template": {"name": judge.template.name, "sha256": judge.template.sha256},
        "gold": "item score (human where the dataset has it; strong-model scores otherwise)",
        **doc,
        "calls": calls,
        "run": assess(n_valid=n_valid, n_planned=n_asked, calls=calls, min_valid=min_valid,
                      max_failed=max_failed, what="scores"),
        "n_calls_planned": len(plan(items, perts, references, repeats)[0]),
        "seconds": time.perf_counter() - t0,
        "started": started,
        "scores": {n: {str(r): v for r, v in table.scores[n].items()} for n in table.scores},
        "item_ids": [it.id for it in items],
    }


def _skipped_warnings(skipped: dict[str, str]) -> list[str]:
    """The terminal's line on perturbations left out as not measurable."""
    if not skipped:
        return []
    return [f"{len(skipped)} perturbation(s) not measurable, not run (no calls, no row): "
            + "; ".join(f"{n} ({why})" for n, why in skipped.items())
            + "; add the placeholder(s) to the template to measure them"]


def _calls_since(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """This run's share of a client's call counts (the client may have made other calls
    before, e.g. generating references): numbers and per-kind error counts subtracted."""
    out: dict[str, Any] = {}
    for k, a in after.items():
        b = before.get(k)
        if isinstance(a, int | float) and isinstance(b, int | float):
            out[k] = a - b
        elif isinstance(a, dict) and isinstance(b, dict):
            out[k] = {kk: a[kk] - b.get(kk, 0) for kk in a if a[kk] - b.get(kk, 0)}
        else:
            out[k] = a
    return out


def n_calls(items: Sequence[PointwiseItem], perts: Sequence[ScoringPerturbation],
            references: References | None, repeats: int,
            template: Template | None = None) -> int:
    """The calls a run asks; with `template`, without the perturbations it cannot show."""
    if template is not None:
        skip = not_measurable(template, perts)
        perts = [p for p in perts if p.name not in skip]
    return len(plan(items, perts, references, repeats)[0])


__all__ = ["BASELINE", "BY_CONSTRUCTION", "ScoreTable", "build_results", "measurable",
           "mitigation", "n_calls", "not_measurable", "plan", "recommend", "repeat_calls",
           "run_scoring_bias", "score_all", "scored_repeats"]
