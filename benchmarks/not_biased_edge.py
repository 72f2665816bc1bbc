"""How often does an audit say "not biased" when the judge is biased at the edge of the
no-bias range, and how often when it is not biased at all? The interval rule of the fixed-n
audit (`stats.paired_estimate`, `outcome.probe_verdict`) checked by simulation.

A probe's effect is the mean of per-item paired differences d (position: d = f - 1/2 in
{-1/2, 0, 1/2}; the shift probes: a difference of two credits, d in {-1, -1/2, 0, 1/2, 1}),
and "not biased" needs its 95% interval inside the no-bias range [-0.05, 0.05]. Read as a
test of equivalence, a planted effect of exactly 0.05 should be called "not biased" in at
most 2.5% of runs (the interval's upper limit under its effect); one of 0.1 almost never.

Scenarios (items moving independently, each with the share and size given):
- edge, one way: the effect is 0.05, every move towards the bias (position: 10% of items
  pick the first-shown response in both orders; shift: 5% move by a whole credit, or 10% by
  half);
- edge, two ways: the effect is 0.05 with moves both ways (position: the sim judge's own
  model at the edge, 11.6% first-shown both times and 1.6% second-shown both times, and
  15% / 5%; shift: 12.5% move +1/2 and 2.5% -1/2, 7.5% +1 and 2.5% -1; and the change of
  the sim judge from unbiased to the edge, b - a of two independent runs, five values);
- twice the edge: the effect is 0.1, one-way moves as above at twice the share;
- null: no bias, 10% of items move by half a credit each way (a noisy judge), the sim
  judge's own unbiased model (4.5% each way), or none move.
Each is run by three rules on the same draws: the bootstrap interval alone ("bootstrap"),
the rule before this version ("before": the exact interval of `stats.movers_ci` when fewer
than `SPARSE_MOVERS` items moved, the percentile bootstrap otherwise) and the rule now
("now": `stats.paired_estimate` with the bound, i.e. the score interval of
`stats.intervals.bounded_mean_ci` from SPARSE_MOVERS movers on). The rule now is
deterministic, so where d takes only the values -m, 0, m its rate is also computed exactly
over every outcome (`now_exact`, free of simulation error).

The same question for `judgeaudit compare` (`audit.compare.paired_change`, `classify`): how
often is a change of exactly the margin (0.05) called "no change", which needs the change's
95% interval inside [-0.05, 0.05]? There each item's change d = (value in B) - (value in A)
lies in [-(span A + span B), span A + span B], and the scenarios plant the changes directly
(position: 10% of items go from no preference to first-shown in both orders, +1/2 each; a
shift probe: 5% move by +1, or 10% by +1/2; and the two-way scenarios above), with the same
nulls and the same three rules.

    python benchmarks/not_biased_edge.py                  # results/not_biased_edge.json (~9 min)
    python benchmarks/not_biased_edge.py --part audit --only edge    # one piece (~2 min); the
    python benchmarks/not_biased_edge.py --part compare --only null  # other rows are kept
    python benchmarks/not_biased_edge.py --reps 200 --out /tmp/nb.json   # quick look
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
import zlib
from pathlib import Path

import numpy as np
from scipy.special import expit
from scipy.stats import binom

from judgeaudit.audit.compare import classify, paired_change
from judgeaudit.llm.local_model import cpu_summary
from judgeaudit.outcome import probe_verdict
from judgeaudit.stats import SPARSE_MOVERS, bootstrap_ci, movers_ci, paired_estimate, wilson
from judgeaudit.stats.intervals import constant_ci

NO_BIAS = (-0.05, 0.05)
NS = (10, 20, 40, 80, 120, 200)
# The sim judge's position model (llm sim provider, quality 3): P(first shown) is
# sigmoid(3 + k) when the first is the better response and sigmoid(k - 3) when it is not;
# its effect 1/2 (sigmoid(3 + k) + sigmoid(k - 3)) - 1/2 is 0.05 at this k.
SIM_EDGE_K = 0.9900550122304866
_A, _B = expit(3 + SIM_EDGE_K), expit(SIM_EDGE_K - 3)
SIM_UP, SIM_DOWN = _A * _B, (1 - _A) * (1 - _B)  # 0.1163, 0.0163
_A0, _B0 = expit(3.0), expit(-3.0)
SIM0 = _A0 * _B0  # the unbiased sim (k = 0): 4.49% each way
# reviewer T2's compare case: B the sim at the edge, A the unbiased sim, d = b - a of two
# independent three-point values (-1/2, 0, 1/2): five values, bound 1, mean 0.05
_LAW_B = {-0.5: SIM_DOWN, 0.0: 1 - SIM_UP - SIM_DOWN, 0.5: SIM_UP}
_LAW_A = {-0.5: SIM0, 0.0: 1 - 2 * SIM0, 0.5: SIM0}
SIM_CHANGE: dict[float, float] = {}
for _b, _pb in _LAW_B.items():
    for _a, _pa in _LAW_A.items():
        SIM_CHANGE[_b - _a] = SIM_CHANGE.get(_b - _a, 0.0) + _pb * _pa
# name: (values of d, their probabilities, span of d, true effect)
SCENARIOS: dict[str, tuple[list[float], list[float], float, float]] = {
    "position edge (10% first-shown both times)": ([0.0, 0.5], [0.9, 0.1], 0.5, 0.05),
    "shift edge (5% move +1)": ([0.0, 1.0], [0.95, 0.05], 1.0, 0.05),
    "shift edge (10% move +1/2)": ([0.0, 0.5], [0.9, 0.1], 1.0, 0.05),
    "position edge, two-way (sim model: 11.6% first-shown, 1.6% second-shown)":
        ([-0.5, 0.0, 0.5], [SIM_DOWN, 1 - SIM_UP - SIM_DOWN, SIM_UP], 0.5, 0.05),
    "position edge, two-way (15% first-shown, 5% second-shown)":
        ([-0.5, 0.0, 0.5], [0.05, 0.8, 0.15], 0.5, 0.05),
    "shift edge, two-way (12.5% move +1/2, 2.5% -1/2)":
        ([-0.5, 0.0, 0.5], [0.025, 0.85, 0.125], 1.0, 0.05),
    "shift edge, two-way (7.5% move +1, 2.5% -1)":
        ([-1.0, 0.0, 1.0], [0.025, 0.9, 0.075], 1.0, 0.05),
    "sim at the edge minus sim unbiased (changes -1 to +1)":
        (sorted(SIM_CHANGE), [SIM_CHANGE[v] for v in sorted(SIM_CHANGE)], 1.0, 0.05),
    "position twice the edge (20% first-shown both times)": ([0.0, 0.5], [0.8, 0.2], 0.5, 0.1),
    "shift twice the edge (20% move +1/2)": ([0.0, 0.5], [0.8, 0.2], 1.0, 0.1),
    "position null (10% move, both ways)": ([-0.5, 0.0, 0.5], [0.05, 0.9, 0.05], 0.5, 0.0),
    "position null (sim model: 4.5% each way)":
        ([-0.5, 0.0, 0.5], [SIM0, 1 - 2 * SIM0, SIM0], 0.5, 0.0),
    "shift null (10% move by 1/2, both ways)": ([-0.5, 0.0, 0.5], [0.05, 0.9, 0.05], 1.0, 0.0),
    "shift null (none move)": ([0.0], [1.0], 1.0, 0.0),
}
RULES = ("bootstrap", "before", "now")


def intervals(d: np.ndarray, span: float, seed: int, n_boot: int = 2000
              ) -> dict[str, tuple[float, float]]:
    """The 95% interval of mean(d) by each rule: the bootstrap alone, the rule before (exact
    below SPARSE_MOVERS movers, all alike constant_ci, else the bootstrap) and now
    (`paired_estimate` with the bound)."""
    boot = bootstrap_ci(d, lambda x: x.mean(axis=1), n_boot=n_boot, seed=seed,
                        vectorized=True)
    if int((d != 0).sum()) < SPARSE_MOVERS:
        before = movers_ci(d, span)
    elif float(np.ptp(d)) == 0.0:
        before = constant_ci(float(d[0]), d.size, span)
    else:
        before = boot
    return {"bootstrap": boot, "before": before,
            "now": paired_estimate(d, seed=seed, span=span, n_boot=n_boot).ci95}


def _rates(hits: dict[str, int], reps: int) -> dict[str, object]:
    out: dict[str, object] = {}
    for k, h in hits.items():
        lo, hi = wilson(h, reps)
        out[k] = h / reps
        out[f"{k}_wilson95"] = [round(lo, 4), round(hi, 4)]
    return out


def not_biased_rates(values: list[float], probs: list[float], span: float, n: int,
                     reps: int, rng: np.random.Generator) -> dict[str, object]:
    """Share of `reps` draws called not_biased by each rule, with Wilson intervals."""
    hits = dict.fromkeys(RULES, 0)
    for r in range(reps):
        d = rng.choice(values, size=n, p=probs)
        for key, ci in intervals(d, span, r).items():
            hits[key] += probe_verdict(float(d.mean()), ci, None, NO_BIAS, 0.05) == "not_biased"
    return _rates(hits, reps)


def exact_not_biased(values: list[float], probs: list[float], span: float, n: int
                     ) -> float | None:
    """P(not_biased) under the rule now, exactly: the rule is deterministic, so over every
    outcome (items up, items down) of a scenario whose d takes at most the values -m, 0, m,
    weighed by its trinomial probability (outcomes under 1e-10 left out). None for other
    scenarios."""
    law = dict(zip(values, probs, strict=True))
    moves = {abs(v) for v in values if v != 0}
    if len(moves) != 1:
        return None
    m = moves.pop()
    p_up, p_down = law.get(m, 0.0), law.get(-m, 0.0)
    total = 0.0
    for up in range(n + 1):
        pu = float(binom.pmf(up, n, p_up))
        if pu < 1e-10:
            continue
        for down in range(n - up + 1):
            pr = pu * (float(binom.pmf(down, n - up, p_down / (1 - p_up))) if p_down
                       else float(down == 0))
            if pr < 1e-10:
                continue
            d = np.r_[np.full(up, m), np.full(down, -m), np.zeros(n - up - down)]
            est = paired_estimate(d, span=span)
            total += pr * (probe_verdict(est.value, est.ci95, None, NO_BIAS, 0.05)
                           == "not_biased")
    return total


def no_change_rates(values: list[float], probs: list[float], span: float, n: int,
                    reps: int, rng: np.random.Generator) -> dict[str, object]:
    """Share of `reps` draws of per-item changes that `compare` calls no_change, and improved
    or worse ("flagged"), by each rule (the bound of a change is span A + span B =
    2 x span)."""
    hits = {**dict.fromkeys(RULES, 0), **{f"flagged_{k}": 0 for k in RULES}}
    ids = [f"i{k}" for k in range(n)]
    va = dict.fromkeys(ids, 0.0)
    for r in range(reps):
        d = rng.choice(values, size=n, p=probs)
        vb = dict(zip(ids, d.tolist(), strict=True))
        ch = paired_change(va, vb, seed=r, span=2 * span)
        cis = intervals(d, 2 * span, r)
        assert tuple(ch["ci95"]) == tuple(cis["now"])
        for key, ci in cis.items():
            verdict = classify({**ch, "ci95": list(ci)}, ch["p"], 0.05, NO_BIAS[1])[0]
            hits[key] += verdict == "no_change"
            hits[f"flagged_{key}"] += verdict in ("improved", "worse")
    return _rates(hits, reps)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--part", choices=("audit", "compare", "both"), default="both",
                    help="run one half and keep the other's rows from --out")
    ap.add_argument("--only", help="run the scenarios whose name holds this text and keep "
                    "the other rows from --out")
    ap.add_argument("--out", type=Path,
                    default=Path(__file__).parent / "results" / "not_biased_edge.json")
    a = ap.parse_args()
    doc: dict[str, object] = {}
    if (a.part != "both" or a.only) and a.out.exists():
        doc = json.loads(a.out.read_text(encoding="utf-8"))
        if doc.get("reps") != a.reps or doc.get("rules") != list(RULES):
            doc = {}  # an older layout or another reps: not mixed in
    load_start = os.getloadavg()
    chosen = [name for name in SCENARIOS if a.only is None or a.only in name]
    for part, key, rates in (("audit", "rows", not_biased_rates),
                             ("compare", "compare_rows", no_change_rates)):
        if a.part not in (part, "both"):
            continue
        t1 = time.perf_counter()
        kept = {(r["scenario"], r["n"]): r for r in doc.get(key, [])}  # type: ignore[attr-defined]
        for name in chosen:
            values, probs, span, effect = SCENARIOS[name]
            for n in NS:
                # one stream per cell: a cell's draws do not depend on which others ran
                rng = np.random.default_rng(
                    [a.seed, part == "compare", zlib.crc32(name.encode()), n])
                r = rates(values, probs, span, n, a.reps, rng)
                if part == "audit":
                    r["now_exact"] = exact_not_biased(values, probs, span, n)
                kept[(name, n)] = ({"scenario": name, "effect": effect, "span": span, "n": n,
                                    **r} if part == "audit" else
                                   {"scenario": name, "change": effect, "span_each_run": span,
                                    "n": n, **r})
                print(f"{part} {name:72s} n={n:3d}  " + "  ".join(
                    f"{k} {r[k]:.3f}" for k in RULES)
                    + (f"  (now exactly {r['now_exact']:.4f})" if r.get("now_exact") is not None
                       else ""), flush=True)
        order = {(name, n): i for i, (name, n) in
                 enumerate((name, n) for name in SCENARIOS for n in NS)}
        doc[key] = [kept[k] for k in sorted(kept, key=lambda k: order.get(k, len(order)))]
        doc[f"seconds_{part}"] = time.perf_counter() - t1
    doc.update({
        "what": "share of runs whose probe verdict is not_biased (95% interval inside "
                f"{list(NO_BIAS)}), by three rules on the same draws: bootstrap (the "
                "percentile bootstrap alone), before (exact movers interval below "
                f"{SPARSE_MOVERS} movers, else the bootstrap), now (exact below "
                f"{SPARSE_MOVERS} movers, else the score interval of a bounded mean); "
                "each rate with its Wilson 95% interval over the reps; now_exact: the rule "
                "now's rate computed exactly (scenarios of moves -m, 0, m)",
        "rules": list(RULES),
        "reps": a.reps, "seed": a.seed, "sparse_movers": SPARSE_MOVERS,
        "mc_se_at_0.025": (0.025 * 0.975 / a.reps) ** 0.5,
        # The rates are seeded draws, the same on any CPU; only the seconds depend on it.
        "python": platform.python_version(),
        "machine": {**cpu_summary(), "loadavg_start": load_start,
                    "loadavg_end": os.getloadavg()},
        "compare_what": "share of runs that judgeaudit compare calls no_change (the change's "
                        f"95% interval inside {list(NO_BIAS)}) and improved/worse (flagged), "
                        "the planted per-item changes being the scenario's values, by the "
                        "same three rules (the bound of a change: 2 x span)",
    })
    doc.pop("seconds", None)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
