"""`judgeaudit selfcheck`: planted-truth scenarios on simulated judges, run from the installed
package alone, so a user can see on their own machine that the installed estimators find what
was planted and stay quiet where nothing was.

Only what ships with the package is used: built-in data (`builtin:facts`,
`builtin:controlled`, items made here), the simulated judges `sim` and `simhubj`, no cache, no
network, fixed seeds (the same table every run). The scenarios:

- audit: for each default probe, a `sim` judge with only that bias planted (the `sim`
  parameter in `PLANT`): the probe must call it biased with a positive effect; a `sim` judge
  with nothing planted: no default probe may call it biased. With the length control, a
  judge that only prefers length shows no authority effect beyond the citation's length
  (p >= 0.01) and one with authority planted too shows it (interval above 0); both held in
  20 of 20 seeds at n = 200.
- rank: a pool whose length is unrelated to quality, judged by a `sim` judge that rewards
  length (a spurious cue) and the first-shown answer: the bias-aware ranking must recover the
  planted top-k (recall >= `RankScenario.min_recall`) and do no worse than the naive one.
- mitigate: pairs whose responses carry a factor at level 1 or 2, judged by a `simhubj` judge
  whose logit moves by exactly phi * tanh(level difference) (the model mitigate fits) and by
  one with nothing planted: the 95% intervals must cover the planted phi, the planted
  bias-controlled win rate, and 0 for the clean judge.

Sizes were chosen so each check held in every one of 20 seeds on this code (audit: n=120,
bias 1.5 logits; rank: 16 items, k=4, 120 comparisons; mitigate: 300 pairs, phi=1.5) and the
whole run takes seconds. A failing check means the installed estimators, judges or data do
not behave as they did when these scenarios were written.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

# The `sim` parameter that plants each default probe's bias.
PLANT: dict[str, str] = {"position": "position", "verbosity": "length",
                         "authority": "authority", "bandwagon": "bandwagon",
                         "beauty": "markdown", "injection": "injection"}
SEED = 0


@dataclass(frozen=True)
class Check:
    """One row of the table."""

    scenario: str
    check: str
    expected: str
    observed: str
    passed: bool
    setup: str = ""  # the judge (and data) of the scenario, listed under the table

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SelfCheckReport:
    checks: list[Check]
    seconds: float
    scenarios: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def as_dict(self) -> dict[str, Any]:
        import judgeaudit

        return {"command": "selfcheck", "version": judgeaudit.__version__, "ok": self.ok,
                "n_scenarios": len(self.scenarios), "n_checks": len(self.checks),
                "n_failed": len(self.failed), "seconds": round(self.seconds, 2),
                "checks": [c.as_dict() for c in self.checks]}

    def table(self) -> str:
        """The checks as a plain-text table (no markup: specs hold `[` and `&`)."""
        head = ("scenario", "check", "expected", "observed", "pass")
        rows, setups, last = [], {}, None
        for c in self.checks:
            rows.append(("" if c.scenario == last else c.scenario, c.check, c.expected,
                         c.observed, "PASS" if c.passed else "FAIL"))
            last = c.scenario
            if c.setup:
                setups.setdefault(c.scenario, c.setup)
        widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
        line = "  ".join("-" * w for w in widths)
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        out = [fmt.format(*head), line, *(fmt.format(*r) for r in rows), line]
        out.append(f"{len(self.checks) - len(self.failed)} of {len(self.checks)} checks passed "
                   f"in {len(self.scenarios)} scenarios, {self.seconds:.1f} s")
        out.extend(["", "setups:", *(f"  {k}: {v}" for k, v in setups.items())])
        return "\n".join(line.rstrip() for line in out)


# ---- audit --------------------------------------------------------------------------------

@dataclass(frozen=True)
class AuditScenario:
    """Audit `probes` of `judge`; each of `flags` must be called biased with a positive
    effect, none of `quiet` biased."""

    name: str
    judge: str
    probes: tuple[str, ...]
    flags: tuple[str, ...] = ()
    quiet: tuple[str, ...] = ()
    data: str = f"builtin:facts?seed={SEED}"
    n: int = 120
    seed: int = SEED
    # With the length control: each of `beyond_flags` must have its effect beyond length
    # above 0 (95% interval), none of `beyond_quiet` one above 0 at p < 0.01.
    beyond_flags: tuple[str, ...] = ()
    beyond_quiet: tuple[str, ...] = ()


def _fmt_probe(p: dict[str, Any]) -> str:
    e = p.get("effect") or {}
    v, ci = e.get("value"), e.get("ci95") or [None, None]
    if v is None:
        return f"{p.get('verdict')}, no effect"
    lo = "?" if ci[0] is None else f"{ci[0]:+.3f}"
    hi = "?" if ci[1] is None else f"{ci[1]:+.3f}"
    q = p.get("q")
    qs = "" if q is None else f", q={q:.2g}"
    return f"{p.get('verdict')}, {v:+.3f} [{lo}, {hi}]{qs}, n={p.get('n')}"


def run_audit(sc: AuditScenario) -> list[Check]:
    from judgeaudit.api import audit

    if not sc.judge:  # a default probe this table does not know how to plant
        return [Check(sc.name, "planted bias known", "a sim parameter planting it",
                      "none: add the probe to judgeaudit.selfcheck.PLANT", False)]
    control = bool(sc.beyond_flags or sc.beyond_quiet)
    res = audit(sc.judge, sc.data, probes=list(sc.probes), n=sc.n, seed=sc.seed, cache=False,
                length_control=control)
    name, setup = sc.name, (f"judge {sc.judge}, data {sc.data}, n={sc.n}"
                            + (", --length-control" if control else ""))
    out: list[Check] = []
    if not res.ok:
        return [Check(name, "run", "ok", f"failed: {res.reason}", False, setup)]
    probes = res["probes"]
    for p in sc.flags:
        r = probes.get(p) or {}
        v = (r.get("effect") or {}).get("value")
        out.append(Check(name, f"{p} flags its planted bias", "biased, effect > 0",
                         _fmt_probe(r), r.get("verdict") == "biased" and v is not None
                         and v > 0, setup))
    for p in sc.quiet:
        r = probes.get(p) or {}
        out.append(Check(name, f"{p} stays quiet", "not flagged biased", _fmt_probe(r),
                         bool(r) and r.get("verdict") != "biased", setup))
    for p in (*sc.beyond_flags, *sc.beyond_quiet):
        b = (((probes.get(p) or {}).get("rates") or {}).get("length_control") or {}).get(
            "beyond_length") or {}
        lo, _hi = b.get("ci95") or (None, None)
        pv = b.get("p")
        seen = (f"{b['value']:+.3f} [{lo:+.3f}, {_hi:+.3f}], p={pv:.2g}, n={b.get('n')}"
                if b.get("value") is not None and lo is not None and pv is not None
                else "no length control")
        if p in sc.beyond_flags:
            out.append(Check(name, f"{p}: the cue moves the judge beyond its length",
                             "interval beyond length > 0", seen,
                             lo is not None and lo > 0, setup))
        else:
            out.append(Check(name, f"{p}: length alone, nothing beyond it",
                             "beyond length not > 0 at p < 0.01", seen,
                             pv is not None and not (pv < 0.01 and b["value"] > 0), setup))
    return out


def audit_scenarios(strength: float = 1.5, quality: float = 1.5) -> list[AuditScenario]:
    """One planted scenario per default (built-in) probe, and one judge with nothing
    planted. A default probe with no known planting is a failing scenario of its own."""
    from judgeaudit.audit.probe import get_probe, probe_names

    names = [n for n in probe_names(default_only=True)  # plugins' probes are not ours
             if type(get_probe(n)).__module__.startswith("judgeaudit.")]
    base = f"sim?quality={quality:g}&seed={SEED}"
    out = [AuditScenario(f"audit: {p} planted",
                         f"sim?quality={quality:g}&{PLANT[p]}={strength:g}&seed={SEED}"
                         if p in PLANT else "", (p,), flags=(p,)) for p in names]
    out.append(AuditScenario("audit: nothing planted", base, tuple(names), quiet=tuple(names)))
    # A cue that adds words moves a judge that only prefers length; the length control tells
    # the two apart (`audit --length-control`).
    long_ = f"sim?quality={quality:g}&length={strength:g}"
    out.append(AuditScenario("audit: length only, length control", f"{long_}&seed={SEED}",
                             ("authority",), n=200, beyond_quiet=("authority",)))
    out.append(AuditScenario("audit: authority and length, length control",
                             f"{long_}&authority={strength:g}&seed={SEED}", ("authority",),
                             n=200, beyond_flags=("authority",)))
    return out


# ---- rank ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class RankScenario:
    """Rank `items` with `judge` under `budget` comparisons; the bias-aware top-k must recover
    at least `min_recall` of the planted (true-quality) top-k and match or beat naive."""

    name: str
    judge: str
    items: str
    k: int
    budget: int
    min_recall: float
    covariates: tuple[str, ...] = ("length",)
    samples: int = 500
    seed: int = SEED


def run_rank(sc: RankScenario) -> list[Check]:
    from judgeaudit.api import run_sync
    from judgeaudit.judges import make_judge
    from judgeaudit.rank.live import rank_live
    from judgeaudit.rank.membership import recall_grouped
    from judgeaudit.rank.pool import load_pool

    pool = load_pool(sc.items)

    async def go() -> Any:
        bundle = make_judge(sc.judge, cache=None, seed=sc.seed)
        try:
            return await rank_live(bundle, pool, k=sc.k, budget=sc.budget,
                                   covariates=sc.covariates, seed=sc.seed,
                                   n_samples=sc.samples)
        finally:
            await bundle.aclose()

    run = run_sync(go)
    name = sc.name
    setup = (f"judge {sc.judge}, pool {sc.items}, budget {sc.budget}, covariates "
             f"{','.join(sc.covariates)}")
    if run.run.get("status") == "failed":
        return [Check(name, "run", "ok", f"failed: {run.run.get('message')}", False, setup)]
    true = pool.true_topk(sc.k)
    got = {m: recall_grouped(f.theta, true, sc.k, pool.groups)
           for m, f in (("bias_aware", run.result.bias_aware), ("naive", run.result.naive))}
    ba, nv = got["bias_aware"], got["naive"]
    return [
        Check(name, f"bias-aware recall@{sc.k} of the planted top-{sc.k}",
              f">= {sc.min_recall:.2f}", f"{ba:.2f} ({len(run.verdicts)} comparisons)",
              ba >= sc.min_recall, setup),
        Check(name, "bias-aware recall vs naive", ">= naive's", f"{ba:.2f} vs {nv:.2f}",
              ba >= nv, setup),
    ]


def rank_scenarios() -> list[RankScenario]:
    # length unrelated to quality in the balanced design; the judge rewards it anyway
    return [RankScenario("rank: spurious length bias planted",
                         f"sim?quality=2&length=2&position=0.3&seed={SEED}",
                         f"builtin:controlled?seed={SEED}&n=16&k=4&design=balanced",
                         k=4, budget=120, min_recall=0.75)]


# ---- mitigate -----------------------------------------------------------------------------

@dataclass(frozen=True)
class MitigateScenario:
    """`n` labelled pairs whose responses show `factor` at level 1 or 2 (seeded); a
    `simhubj` judge whose logit for the first-shown response is
    quality * (q_A - q_B) + phi * tanh(level_A - level_B)  (levels 1-2 only, where the planted
    per-level shifts give exactly that), and a clean judge. Mitigate's 95% intervals must
    cover phi and the planted bias-controlled win rate sigmoid(-quality) (the candidate is
    the human-rejected response), and 0 for the clean judge."""

    name: str
    phi: float
    quality: float = 0.5
    n: int = 300
    factor: str = "verbosity"
    seed: int = SEED


def _mitigate_items(sc: MitigateScenario) -> list[dict[str, Any]]:
    import numpy as np

    from judgeaudit.llm.providers.simhubj import marker

    rng = np.random.default_rng(sc.seed)
    items = []
    for i in range(sc.n):
        l1, l2 = (int(x) for x in rng.integers(1, 3, 2))
        items.append({"id": f"selfcheck-{i}", "prompt": f"Question {i}: what is the answer?",
                      "response_1": f"The first answer to question {i}. "
                                    f"{marker(sc.factor, l1)}",
                      "response_2": f"The second answer to question {i}. "
                                    f"{marker(sc.factor, l2)}",
                      "label": int(rng.integers(1, 3))})
    return items


def _covers(est: dict[str, Any], truth: float) -> tuple[bool, str]:
    v, (lo, hi) = float(est["value"]), (float(x) for x in est["ci95"])
    return lo <= truth <= hi, f"{v:+.3f} [{lo:+.3f}, {hi:+.3f}]"


def run_mitigate(sc: MitigateScenario) -> list[Check]:
    from judgeaudit.api import mitigate

    e2 = sc.phi * math.tanh(1.0)  # e(2) - e(1) = phi * tanh(2 - 1)
    biased = (f"simhubj?factor_{sc.factor}=0,{e2:.6g},0,0,0&quality={sc.quality:g}"
              f"&seed={sc.seed}")
    clean = f"simhubj?quality={sc.quality:g}&seed={sc.seed + 1}"
    res = mitigate([biased, clean], _mitigate_items(sc), factor=sc.factor,
                   scorer="simhubj?score_from=marker", limit=None, seed=sc.seed, cache=False)
    name = sc.name
    setup = (f"judges {biased} and {clean}, scorer simhubj?score_from=marker, {sc.n} pairs "
             f"with {sc.factor} at level 1 or 2")
    if not res.ok:
        return [Check(name, "run", "ok", f"failed: {res.reason}", False, setup)]
    b, c = res["per_judge"][biased], res["per_judge"][clean]
    bc_true = 1.0 / (1.0 + math.exp(sc.quality))
    phi_ok, phi_obs = _covers(b["phi"], sc.phi)
    bc_ok, bc_obs = _covers(b["bc"], bc_true)
    c_ok, c_obs = _covers(c["phi"], 0.0)
    return [
        Check(name, "phi interval covers the planted phi", f"{sc.phi:g} inside", phi_obs,
              phi_ok, setup),
        Check(name, "phi interval excludes 0 (bias found)", "lower bound > 0", phi_obs,
              float(b["phi"]["ci95"][0]) > 0, setup),
        Check(name, "bias-controlled win rate covers the planted one", f"{bc_true:.3f} inside",
              bc_obs, bc_ok, setup),
        Check(name, "clean judge: phi interval covers 0", "0 inside", c_obs, c_ok, setup),
    ]


def mitigate_scenarios() -> list[MitigateScenario]:
    return [MitigateScenario("mitigate: planted phi", phi=1.5)]


# ---- all ----------------------------------------------------------------------------------

Scenario = AuditScenario | RankScenario | MitigateScenario


def default_scenarios() -> list[Scenario]:
    return [*audit_scenarios(), *rank_scenarios(), *mitigate_scenarios()]


def run_scenario(sc: Scenario) -> list[Check]:
    """One scenario's checks; an exception is a failed check (the table still comes out)."""
    runner: Callable[[Any], list[Check]] = (
        run_audit if isinstance(sc, AuditScenario)
        else run_rank if isinstance(sc, RankScenario) else run_mitigate)
    try:
        return runner(sc)
    except Exception as exc:  # the selfcheck reports; it does not crash
        return [Check(sc.name, "run", "ok", f"error: {type(exc).__name__}: {exc}", False)]


def run_selfcheck(scenarios: Sequence[Scenario] | None = None,
                  on_scenario: Callable[[Scenario, list[Check]], None] | None = None
                  ) -> SelfCheckReport:
    """Run `scenarios` (default: `default_scenarios()`) and collect their checks;
    `on_scenario(scenario, checks)` after each (progress)."""
    t0 = time.perf_counter()
    scs = list(default_scenarios() if scenarios is None else scenarios)
    checks: list[Check] = []
    for sc in scs:
        got = run_scenario(sc)
        checks.extend(got)
        if on_scenario is not None:
            on_scenario(sc, got)
    return SelfCheckReport(checks, time.perf_counter() - t0, [s.name for s in scs])


__all__ = ["PLANT", "AuditScenario", "Check", "MitigateScenario", "RankScenario",
           "SelfCheckReport", "audit_scenarios", "default_scenarios", "mitigate_scenarios",
           "rank_scenarios", "run_scenario", "run_selfcheck"]
