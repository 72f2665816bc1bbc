"""Algorithm 2 (quantify): how far each factor moves each judge, from controlled rewrites.

For each agreement item (every judge picked the human-preferred r+, in both orders) and
factor z, G_inj rewrites the rejected r- to show z at level l (1-5, z's Likert criteria)
keeping the answer-bearing content. Each rewrite is checked: G_check (an LLM: same answer?)
gives the answer-change rate, and judgeaudit.perturb.preserve.answer_preserved (string level:
no new numbers, entities kept) is recorded as a flag. Rewrites G_check calls changed are
dropped (`on_violation="drop"`, default) or kept and flagged ("flag").

Flip y = 1 if the judge now prefers the rewritten r-, 0 if it keeps r+, 0.5 for a tie or
order-inconsistent verdicts (invalid verdicts are excluded and counted). FR = mean y, with a
Wilson interval (ties count half). Items are split at random (seeded) into calibration and
test; l* = argmax over levels of FR on calibration (lowest level on ties);
susceptibility rho(m, z) = FR at l* on test, with its 95% interval; the profile of judge m is
rho over factors. Every judge sees the same rewrites.

Repeat noise (`repeat_noise`): the judge asked the same unrewritten test items again (a new
call: repeat index 1) flips to r- this often by chance alone, since the agreement items were
chosen on one draw of its verdicts. It is the reference a susceptibility is read against (as
the audit's probes read their robustness against the consistency rate): a factor's flip rate
inside that interval is no evidence that the factor moved the judge. A deterministic judge
repeats itself exactly: 0 with no call. Each susceptibility is tested against it on the same
test items (`noise_test`): an exact one-sided sign (McNemar) test of the rewrite's flip at l*
against the repeat's flip, item by item. Comparing the susceptibility's point value with the
top of the noise interval is no test: with a planted flip rate 0.25 against noise 0.047 on
~20 test items it called 29 of 40 runs "not above repeat noise", 8 of them where the paired
test rejects (it rejects in 19 of 40, and in 0 of 40 without a factor).

A run makes one such test per (judge, factor) row, so `shown_above` is decided on Holm's
adjusted p over the rows of the run (`holm`, `adjust_noise_tests`): with 2 unbiased judges x
6 factors each row was flagged in 2.5% of runs but some row in 5 of 20. Holm, not
Benjamini-Hochberg (which discover uses over ~14 candidate factors): a line "above repeat
noise" is read as a finding about that judge and factor, so the chance of any false one per
run is what is held at 5% (family-wise, whatever the other rows' truth), and with the 2-12
rows of a run Holm loses little power against BH.

Every figure is kept with the per-item flips it is computed from (`QuantifyOutcome.
item_flips`, results.json's `item_flips`), so a reader can recompute the flip rates, their
intervals, l* and the paired test from the file alone.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj.discover import sides
from judgeaudit.hubj.gmodules import g_check, g_inj
from judgeaudit.hubj.llmjson import JSONStats
from judgeaudit.hubj.prompts import Factor
from judgeaudit.judges.factory import JudgeBundle
from judgeaudit.llm import Client
from judgeaudit.perturb.preserve import answer_preserved
from judgeaudit.stats import binomial_test, rate

LEVELS = (1, 2, 3, 4, 5)
NOISE_ALPHA = 0.05  # the one-sided level of the paired test against repeat noise
Key = tuple[str, str, int]  # item id, factor, level


@dataclass
class Rewrite:
    item_id: str
    factor: str
    level: int
    side: str                     # "response_1" | "response_2" (the human-rejected one)
    original: str
    text: str | None              # None: G_inj failed
    same_answer: bool | None      # G_check; None: no answer
    string_ok: bool | None = None
    string_reason: str | None = None
    kept: bool = False

    def as_dict(self, with_text: bool = False) -> dict[str, Any]:
        d = {"item_id": self.item_id, "factor": self.factor, "level": self.level,
             "side": self.side, "same_answer": self.same_answer, "string_ok": self.string_ok,
             "string_reason": self.string_reason, "kept": self.kept,
             "failed": self.text is None}
        if with_text:
            d.update(original=self.original, rewritten=self.text)
        return d


def rewritten_item(item: PairwiseItem, rw: Rewrite) -> PairwiseItem:
    """The item with r- replaced by the rewrite (id marks factor and level)."""
    md = {**item.metadata, "hubj": {"factor": rw.factor, "level": rw.level,
                                    "source_id": item.id}}
    return item.model_copy(update={rw.side: rw.text, "id": f"{item.id}~{rw.factor}@{rw.level}",
                                   "metadata": md})


def cal_test_split(ids: Sequence[str], n_cal: int | None = None, cal_frac: float = 1 / 6,
                   seed: int = 0) -> tuple[list[str], list[str]]:
    """Seeded random split (paper: 100 calibration / 500 test, i.e. 1/6)."""
    ids = list(ids)
    rng = random.Random(f"hubj-split:{seed}")
    shuffled = ids[:]
    rng.shuffle(shuffled)
    k = n_cal if n_cal is not None else max(1, round(cal_frac * len(ids)))
    k = min(max(k, 0), len(ids))
    return shuffled[:k], shuffled[k:]


async def make_rewrites(gen: Client, items: Sequence[PairwiseItem], factors: Sequence[Factor],
                        criteria: Mapping[str, Mapping[int, str]], levels: Sequence[int],
                        stats: dict[str, JSONStats], checker: Client | None = None,
                        on_violation: str = "drop",
                        on_done: Callable[[], None] | None = None,
                        inject: str = "rewrite") -> list[Rewrite]:
    """G_inj for every (item, factor, level), then G_check and the string check."""
    if on_violation not in ("drop", "flag"):
        raise ValueError(f"on_violation={on_violation!r}: expected 'drop' or 'flag'")
    checker = checker or gen
    st_inj = stats.setdefault("G_inj", JSONStats())
    st_chk = stats.setdefault("G_check", JSONStats())

    async def one(it: PairwiseItem, f: Factor, lvl: int) -> Rewrite:
        worse, _better = sides(it)
        side = "response_2" if it.label == 1 else "response_1"
        text = await g_inj(gen, it.id, it.prompt, worse, f, criteria[f.name], lvl, st_inj,
                           mode=inject)
        rw = Rewrite(it.id, f.name, lvl, side, worse, text, None)
        if text is not None:
            rw.same_answer = await g_check(checker, it.id, it.prompt, worse, text, st_chk)
            rw.string_ok, rw.string_reason = answer_preserved(worse, text)
            rw.kept = rw.same_answer is True or (on_violation == "flag"
                                                  and rw.same_answer is not None)
        if on_done:
            on_done()
        return rw

    # item-major order: one item's rewrites run back to back (shared prompt prefixes)
    return list(await asyncio.gather(*(one(it, f, lvl) for it in items for f in factors
                                       for lvl in levels)))


def flip_value(winner: int | None, worse: int) -> float | None:
    """1 = judge prefers the rewritten r-, 0 = keeps r+, 0.5 = tie/inconsistent, None =
    invalid."""
    if winner is None:
        return None
    if winner == 0:
        return 0.5
    return 1.0 if winner == worse else 0.0


async def judge_flips(bundle: JudgeBundle, items: Mapping[str, PairwiseItem],
                      rewrites: Sequence[Rewrite], on_done: Callable[[], None] | None = None
                      ) -> dict[Key, float | None]:
    kept = [rw for rw in rewrites if rw.kept]
    new_items = [rewritten_item(items[rw.item_id], rw) for rw in kept]
    verdicts = await bundle.pairwise.judge(new_items, on_done=on_done)
    out: dict[Key, float | None] = {}
    for rw, v in zip(kept, verdicts, strict=True):
        worse = 1 if rw.side == "response_1" else 2
        out[rw.item_id, rw.factor, rw.level] = flip_value(v.winner, worse)
    return out


def _fr(flips: Mapping[Key, float | None], ids: set[str], factor: str, level: int
        ) -> dict[str, Any]:
    ys = [y for (i, f, lv), y in flips.items() if f == factor and lv == level and i in ids
          and y is not None]
    n_invalid = sum(1 for (i, f, lv), y in flips.items() if f == factor and lv == level
                    and i in ids and y is None)
    e = rate(sum(ys), len(ys))
    return {**e.as_dict(), "n_invalid": n_invalid}


def analyse(flips: Mapping[Key, float | None], factors: Sequence[str], levels: Sequence[int],
            cal: Sequence[str], test: Sequence[str]) -> dict[str, Any]:
    """Per factor: FR by level (all items, calibration, test), l*, susceptibility."""
    all_ids, cal_ids, test_ids = set(cal) | set(test), set(cal), set(test)
    out: dict[str, Any] = {}
    for f in factors:
        by_level = {str(lv): _fr(flips, all_ids, f, lv) for lv in levels}
        fr_cal = {str(lv): _fr(flips, cal_ids, f, lv) for lv in levels}
        fr_test = {str(lv): _fr(flips, test_ids, f, lv) for lv in levels}
        cal_vals = [(fr_cal[str(lv)]["value"], lv) for lv in levels
                    if fr_cal[str(lv)]["value"] is not None]
        l_star = max(cal_vals, key=lambda t: (t[0], -t[1]))[1] if cal_vals else None
        rho = fr_test[str(l_star)] if l_star is not None else None
        out[f] = {"by_level": by_level, "calibration": fr_cal, "test": fr_test,
                  "l_star": l_star, "susceptibility": rho}
    return out


@dataclass
class QuantifyOutcome:
    items: list[PairwiseItem]
    rewrites: list[Rewrite]
    cal: list[str]
    test: list[str]
    flips: dict[str, dict[Key, float | None]] = field(default_factory=dict)
    per_judge: dict[str, dict[str, Any]] = field(default_factory=dict)
    repeat_noise: dict[str, dict[str, Any]] = field(default_factory=dict)
    repeat_flips: dict[str, list[float | None]] = field(default_factory=dict)  # per test item
    # what the rewriting read and asked on each client (id: (answers, unreadable, calls
    # asked, calls failed), `client_counts`): G_inj and G_check answers, no verdicts, on a
    # client a judge may share (the generator by default)
    rewrite_answers: dict[int, tuple[int, int, int, int]] = field(default_factory=dict)
    multiplicity: dict[str, Any] = field(default_factory=dict)  # `adjust_noise_tests`

    def answer_change(self) -> dict[str, Any]:
        checked = [rw for rw in self.rewrites if rw.same_answer is not None]
        changed = sum(1 for rw in checked if rw.same_answer is False)
        return rate(changed, len(checked)).as_dict()

    def profile(self) -> dict[str, dict[str, float | None]]:
        return {j: {f: (r["susceptibility"] or {}).get("value") for f, r in fs.items()}
                for j, fs in self.per_judge.items()}

    def item_flips(self) -> dict[str, Any]:
        """The per-item flips every figure is computed from, as parallel lists: each list
        follows the document's `calibration_items` or `test_items`, so an item id is written
        once. Per judge: `repeat` (the repeat-noise flip of each test item, what
        `vs_repeat_noise` pairs with) and, per factor and level, `calibration` and `test`
        (the flip of each item's rewrite). A flip is 1 (prefers the rewritten r-), 0 (keeps
        r+), 0.5 (tie or orders disagree) or null: an unreadable verdict, or a rewrite that
        was not judged (failed or dropped by G_check), which `not_judged` lists once per
        factor and level for every judge (those are not counted as invalid). Without it a
        reviewer could not recompute a flip rate, an interval or the paired test from
        results.json: the flips existed only in the run."""
        levels = sorted({rw.level for rw in self.rewrites})
        factors = list(dict.fromkeys(rw.factor for rw in self.rewrites))
        not_judged: dict[str, dict[str, list[str]]] = {}
        for rw in self.rewrites:
            if not rw.kept:
                not_judged.setdefault(rw.factor, {}).setdefault(str(rw.level), []).append(
                    rw.item_id)
        judges = {}
        for j, flips in self.flips.items():
            per_factor = {f: {part: {str(lv): [_compact(flips.get((i, f, lv))) for i in ids]
                                     for lv in levels}
                              for part, ids in (("calibration", self.cal), ("test", self.test))}
                          for f in factors}
            judges[j] = {"repeat": [_compact(y) for y in self.repeat_flips.get(j, [])],
                         "factors": per_factor}
        return {"values": "1 = prefers the rewritten r-, 0 = keeps r+, 0.5 = tie or orders "
                          "disagree, null = unreadable verdict or not judged (not_judged)",
                "lists_follow": {"calibration": "calibration_items", "test": "test_items",
                                 "repeat": "test_items"},
                "not_judged": not_judged, "judges": judges}

    def leave_out(self, names: Sequence[str]) -> None:
        """Drop judges whose own calls or answers failed past --max-failed (`run.
        judge_gate`) from every number, and adjust the other rows' tests again: a judge
        that failed most prompts was reported on the few it answered and counted in
        Holm's m, raising every other row's adjusted p."""
        if not any(n in self.per_judge for n in names):
            return
        for part in (self.per_judge, self.flips, self.repeat_noise, self.repeat_flips):
            for n in names:
                part.pop(n, None)
        self.multiplicity = adjust_noise_tests(self.per_judge)


def holm(ps: Sequence[float]) -> list[float]:
    """Holm's (1979) step-down adjusted p-values: the i-th smallest p times (m - i + 1),
    made monotone and capped at 1. "adjusted p < alpha" controls the family-wise error rate
    at alpha over the m tests, under any dependence between them."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [1.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        out[i] = running
    return out


def adjust_noise_tests(per_judge: Mapping[str, Mapping[str, Any]],
                       alpha: float = NOISE_ALPHA) -> dict[str, Any]:
    """Holm over every (judge, factor) row's paired test against repeat noise
    (`vs_repeat_noise`, edited in place): each gets `p_adjusted`, `adjustment` ("holm"),
    `m` (the rows tested) and `shown_above` = p_adjusted < alpha (`shown_above_unadjusted`
    keeps p < alpha). Returns the summary results.json keeps as `multiplicity`."""
    rows = [r["vs_repeat_noise"] for per in per_judge.values() for r in per.values()
            if r.get("vs_repeat_noise")]
    adj = holm([t["p"] for t in rows])
    for t, a in zip(rows, adj, strict=True):
        t.update(p_adjusted=a, adjustment="holm", m=len(rows),
                 shown_above_unadjusted=t["p"] < alpha, shown_above=a < alpha)
    return {"method": "holm", "alpha": alpha, "m": len(rows),
            "over": "every (judge, factor) row's paired test against repeat noise in this run",
            "shown_above": [[j, f] for j, per in per_judge.items() for f, r in per.items()
                            if (r.get("vs_repeat_noise") or {}).get("shown_above")]}


async def quantify(judges: Mapping[str, JudgeBundle], gen: Client, items: Sequence[PairwiseItem],
                   factors: Sequence[Factor], criteria: Mapping[str, Mapping[int, str]],
                   stats: dict[str, JSONStats], *, levels: Sequence[int] = LEVELS,
                   n_cal: int | None = None, cal_frac: float = 1 / 6, seed: int = 0,
                   checker: Client | None = None, on_violation: str = "drop",
                   on_done: Callable[[], None] | None = None,
                   inject: str = "rewrite") -> QuantifyOutcome:
    """Rewrite once, judge with every judge. `items` must already be agreement items (see
    `agreement_items`)."""
    cal, test = cal_test_split([it.id for it in items], n_cal, cal_frac, seed)
    g_clients = [gen, *([checker] if checker else [])]
    before = {id(c): client_counts(c) for c in g_clients}
    rewrites = await make_rewrites(gen, items, factors, criteria, levels, stats, checker,
                                   on_violation, on_done, inject)
    after = {id(c): client_counts(c) for c in g_clients}
    out = QuantifyOutcome(list(items), rewrites, cal, test, rewrite_answers={
        k: counts_since(before[k], now) for k, now in after.items()})
    by_id = {it.id: it for it in items}
    for name, bundle in judges.items():
        flips = await judge_flips(bundle, by_id, rewrites, on_done)
        out.flips[name] = flips
        out.per_judge[name] = analyse(flips, [f.name for f in factors], levels, cal, test)
        test_items = [by_id[i] for i in test]
        noise, ys = await _repeat(bundle, test_items)
        out.repeat_noise[name] = noise
        out.repeat_flips[name] = list(ys)
        repeat = dict(zip(test, ys, strict=True))
        for f, r in out.per_judge[name].items():
            r["vs_repeat_noise"] = noise_test(flips, f, r["l_star"], test, repeat)
    out.multiplicity = adjust_noise_tests(out.per_judge)
    return out


def client_counts(client: Client) -> tuple[int, int, int, int]:
    """A client's distinct answers read, unreadable answers, calls asked (made + cached +
    failed) and calls failed so far: taken before and after a G-module stage, the difference
    is what that stage read and asked on a client a judge may share, so that a judge's own
    share of failed calls and unreadable answers can be told apart from it."""
    st = client.stats
    return (st.answers_read, st.unreadable, st.made + st.cached + st.failed, st.failed)


def counts_since(before: tuple[int, int, int, int], now: tuple[int, int, int, int]
                 ) -> tuple[int, int, int, int]:
    """What a client read and asked between two `client_counts`."""
    return (now[0] - before[0], now[1] - before[1], now[2] - before[2], now[3] - before[3])


def _compact(y: float | None) -> float | int | None:
    """A flip as results.json keeps it: 0 and 1 as integers ("1", not "1.0")."""
    return int(y) if y in (0.0, 1.0) else y


def noise_test(flips: Mapping[Key, float | None], factor: str, level: int | None,
               test: Sequence[str], repeat: Mapping[str, float | None],
               alpha: float = NOISE_ALPHA) -> dict[str, Any] | None:
    """Whether the factor moved the judge beyond its repeat noise, tested on the test items
    that have both a valid flip of the rewrite at `level` (l*) and a valid repeat: an exact
    one-sided sign test (McNemar's on the discordant pairs) that the rewrite flips more.
    `shown_above`: p < alpha. None without an l*."""
    if level is None:
        return None
    higher = lower = pairs = 0
    for i in test:
        a, b = flips.get((i, factor, level)), repeat.get(i)
        if a is None or b is None:
            continue
        pairs += 1
        higher += a > b
        lower += a < b
    p = binomial_test(higher, higher + lower, 0.5, alternative="greater")
    return {"test": "exact one-sided sign test (McNemar), rewrite at l* vs repeat, paired "
                    "on the test items",
            "level": level, "n_pairs": pairs, "rewrite_higher": higher, "repeat_higher": lower,
            "p": p, "alpha": alpha, "shown_above": p < alpha}


async def _repeat(bundle: JudgeBundle, items: Sequence[PairwiseItem]
                  ) -> tuple[dict[str, Any], list[float | None]]:
    """`repeat_noise` and each item's repeat flip (None: invalid), for the paired test."""
    if bundle.client.provider.deterministic:
        # agreement items: the first answer kept r+ in both orders, and so does the repeat
        return ({**rate(0, len(items)).as_dict(), "n_invalid": 0, "deterministic": True},
                [0.0] * len(items))
    verdicts = await bundle.pairwise.judge(list(items), repeat=1)
    ys = [flip_value(v.winner, 2 if it.label == 1 else 1) for it, v in
          zip(items, verdicts, strict=True)]
    valid = [y for y in ys if y is not None]
    return {**rate(sum(valid), len(valid)).as_dict(), "n_invalid": len(ys) - len(valid)}, ys


async def repeat_noise(bundle: JudgeBundle, items: Sequence[PairwiseItem]) -> dict[str, Any]:
    """The flip rate of the judge's own repeat noise on `items` (agreement items, not
    rewritten): each asked again as a new call (repeat 1), y as for a rewrite (1 = now
    prefers r-, 0.5 = tie or orders disagree), a Wilson interval; invalid verdicts counted.
    A deterministic provider answers a repeat as it answered first: 0 without a call."""
    return (await _repeat(bundle, items))[0]


async def agreement_items(judges: Mapping[str, JudgeBundle], items: Sequence[PairwiseItem]
                          ) -> tuple[list[PairwiseItem], dict[str, dict[str, int]]]:
    """Items every judge gets right (consensus over both orders); sizes per judge."""
    from judgeaudit.hubj.splits import consensus, split, verdict_winners

    splits = []
    for name, bundle in judges.items():
        verdicts = await bundle.pairwise.judge(list(items))
        splits.append(split(name, items, verdict_winners(verdicts)))
    keep = set(consensus(splits, "agree"))
    return [it for it in items if it.id in keep], {s.judge: s.sizes() for s in splits}


__all__ = ["LEVELS", "NOISE_ALPHA", "QuantifyOutcome", "Rewrite", "adjust_noise_tests",
           "agreement_items", "analyse", "cal_test_split", "client_counts", "counts_since",
           "flip_value", "holm", "judge_flips", "make_rewrites", "noise_test", "quantify",
           "repeat_noise", "rewritten_item"]
