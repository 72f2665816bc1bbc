"""Typed settings of every command: one pydantic model per command, the one place that states
each setting's name, type, default, allowed range and meaning.

The field names are the command's CLI option names with dashes as underscores (`--fail-on` ->
`fail_on`), the defaults and ranges are the CLI's, and the descriptions are the CLI's help
texts. The CLI builds its option help and defaults from these models, `--config FILE` (TOML)
is validated against them (`load_config_file`), and `judgeaudit schema KIND` prints their JSON
Schema. Paths in a config file are read as on the command line (relative to the working
directory).
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from judgeaudit.outcome import DEFAULT_MAX_FAILED, DEFAULT_MIN_VALID

CONFIG_VERSION = 1

PosInt = Annotated[int, Field(ge=1)]
# Counts that size memory or time: a bound far above any real use, so a typo (10**12 draws)
# is refused with the bound instead of a MemoryError or a hang
Draws = Annotated[int, Field(ge=1, le=100_000)]
Repeats = Annotated[int, Field(ge=1, le=100)]
# numpy's generators refuse a negative seed, after the judging (evaluate, rank, scoring-bias)
Seed = Annotated[int, Field(ge=0)]
Share = Annotated[float, Field(ge=0.0, le=1.0)]
OpenUnit = Annotated[float, Field(gt=0.0, lt=1.0)]
PosFloat = Annotated[float, Field(gt=0.0)]
Level = Annotated[int, Field(ge=1, le=5)]
# The text of a comma-separated option must name something (a config file's `probes = ""`
# ran the default battery); JSON Schema searches the pattern, so: one character that is
# neither blank nor a comma.
NAMES_PATTERN = "[^\\s,]"

# Help texts shared by several commands.
JUDGE_HELP = ("Judge SPEC: local | local:qwen-0.5b | local:PATH | openai:MODEL?base_url=URL | "
              "anthropic:MODEL | replay:PATH?judge=GPT-4&strategy=Vanilla | "
              "sim?position=0.8&length=1")
DATA_HELP = ("Data SPEC: builtin:facts | builtin:arithmetic | llmbar:PATH | pandalm:PATH | "
             "mtbench:PATH | judgebench:PATH | jsonl:PATH | hf:NAME")
HUBJ_DATA_HELP = ("Pairwise data SPEC with human labels, e.g. "
                  "pandalm:../shared/data/pandalm_testset")
HUBJ_DATA = "pandalm:../shared/data/pandalm_testset"
LIVE_JUDGES_HELP = ("Comma-separated live judge SPECs, asked in both orders (e.g. "
                    "local,local:qwen-0.5b).")
RECORDED_HELP = ("Recorded judges shipped with the data: 'pandalm' = GPT-3.5 and PandaLM-7B "
                 "verdicts of the PandaLM test set (read through replay).")
MIN_AGREEMENT_HELP = "Keep items whose majority label has at least this annotator share (0-1)."
CACHE_HELP = "SQLite cache file (default: $JUDGEAUDIT_CACHE or the user cache dir)."
NO_CACHE_HELP = "Do not read or write the cache."
CONC_HELP = "Concurrent calls per provider (>= 1)."
TIMEOUT_HELP = "Seconds per call before retrying (> 0)."
MAX_COST_HELP = ("Spend cap in USD (> 0) at the judge's price: its list price, half that under "
                 "batch=on (openai, anthropic), or price_in/price_out as the spec gives them: "
                 "no call is sent that could take the "
                 "run's spend past it (a call counts at its prompt's characters / 4 and its "
                 "max_tokens until it is answered); then no more are sent and the rest count "
                 "as failed, not sent. A judge whose price is not known needs price_in and "
                 "price_out in its spec. With audit --adaptive, also: no round starts that would "
                 "pass it by the previous round's cost.")
# --seed seeds the command's own draws; a simulated judge's take its spec's seed= (the help
# said "simulated judges": `judges_used` kept seed 0 and evaluate gave the same verdicts)
SEED_HELP = ("Seed of the command's own random choices: item samples and splits, orders, "
             "bootstrap and permutation resamples, Monte-Carlo draws, and the order a judge "
             "with orders=one is shown each item. Not a simulated judge's draws: they take "
             "its spec's seed= (e.g. sim?seed=1).")
MIN_VALID_HELP = ("Fewest results with a valid verdict for the run to count (items; comparisons "
                  "in rank and rank-eval, scores in scoring-bias, G-module answers in discover, "
                  "judge verdicts in quantify and mitigate); below it the run fails (exit 3).")
MAX_FAILED_HELP = ("Largest share (0-1) of failed calls, and of the judges' answers that cannot "
                   "be read as a verdict, before the run fails (exit 3). The audit counts every "
                   "distinct answer of its judge (baseline and probes, as the calls line does; "
                   "not the panel's), the HUB-J commands their judges' answers.")
ITEMS_HELP = ("Pool SPEC: builtin:controlled[?seed=0&n=30&k=5&topic=moon&design=balanced] | "
              'jsonl:PATH (one {"id", "prompt", "response", "quality"?, numeric fields...} per '
              "line) | csv:PATH (the same columns; a .csv or .tsv path needs no prefix)")
COV_HELP = ("Covariates the judge may be biased on, comma-separated: length (log words), "
            "markdown, authority, confidence, sentiment, self, injection, words (z-scored "
            "word count), or a numeric field of the items; 'none' for a plain model. "
            "Covariates constant over the pool are left out (and reported).")
LAM_HELP = ("Prior precision of theta (theta ~ N(0, 1/lam)), or 'auto': learned per pool by "
            "empirical Bayes, so the prior matches how far apart the judge puts the items.")


@dataclass(frozen=True)
class Exclusive:
    """Settings that cannot be given together: any of `first` with any of `second`
    ("given": a value other than the field's default). `why` says why, e.g. "both choose the
    items". A command-line flag wins over a config file's key of the other side (the file's
    is set aside); two keys of one file are refused naming the file."""

    first: tuple[str, ...]
    second: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class OnlyWith:
    """Settings (`keys`) that apply only when the bool setting `flag` is true; `why` says
    what to give instead. `--no-FLAG` on the command line sets a config file's `keys`
    aside; a file that gives them without the flag is refused naming the file."""

    keys: tuple[str, ...]
    flag: str
    why: str


Conflict = Exclusive | OnlyWith


def _f(default: Any, help: str, **kw: Any) -> Any:
    """A field with its default and its help text (the CLI shows the same text)."""
    return Field(default, description=help, **kw)


class CommandConfig(BaseModel):
    """What every command's settings share: a version, no unknown keys, frozen values."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    command: ClassVar[str] = ""
    # Fields the command checks itself, with a message that says more than the type would
    # (the CLI's option then leaves the value to the command).
    checked_by_command: ClassVar[frozenset[str]] = frozenset()
    # Settings that exclude each other, or apply only with a flag: the one statement of them
    # (`judgeaudit.cli.runner` resolves a config file against the command line with it).
    conflicts: ClassVar[tuple[Conflict, ...]] = ()
    # Text options whose value may be a number in a config file (`lam = 2.0`, `seeds = 30`),
    # with the number's type; any other text option takes text only (`note = 5` is refused).
    numbers_as_text: ClassVar[dict[str, Any]] = {}
    # The type of each element of a comma-separated option given as a TOML list, when not
    # a name (text): `budgets = [60, 120]` takes integers >= 1.
    list_items: ClassVar[dict[str, Any]] = {}

    config_version: Literal[1] = _f(CONFIG_VERSION, "Version of this settings schema (1).")

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """Pydantic's schema, and the text of a comma-separated option must name something
        (`NAMES_PATTERN`), as a config file's is held to (`check_fields`)."""
        schema = super().model_json_schema(*args, **kwargs)
        for name, info in cls.model_fields.items():
            prop = (schema.get("properties") or {}).get(name)
            if prop is not None and is_listed(info):
                for alt in prop.get("anyOf", [prop]):
                    if alt.get("type") == "string":
                        alt["pattern"] = NAMES_PATTERN
        return schema

    @classmethod
    def all_conflicts(cls) -> tuple[Conflict, ...]:
        """The `conflicts` of this class and of every class it derives from (a command's own
        rules and, for one that calls a judge, `RunFields`' cache rule), each once."""
        out: list[Conflict] = []
        for klass in reversed(cls.__mro__):
            for rule in vars(klass).get("conflicts", ()):
                if rule not in out:
                    out.append(rule)
        return tuple(out)

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of field `name` (what the CLI uses when the option is not given)."""
        return cls.model_fields[name].default

    @classmethod
    def help(cls, name: str) -> str:
        """The description of field `name` (the CLI option's help)."""
        return cls.model_fields[name].description or ""


class RunFields(CommandConfig):
    """Settings of every command that calls a judge."""

    # --cache on the command line wins over a file's no_cache = true, and --no-cache over a
    # file's cache (the file's was silently the one used); both typed is a usage error
    conflicts: ClassVar[tuple[Conflict, ...]] = (
        Exclusive(("cache",), ("no_cache",), "one names the cache to use, the other uses "
                                             "none"),)
    cache: Path | None = _f(None, CACHE_HELP)
    no_cache: bool = _f(False, NO_CACHE_HELP)
    min_valid: PosInt = _f(DEFAULT_MIN_VALID, MIN_VALID_HELP)
    max_failed: Share = _f(DEFAULT_MAX_FAILED, MAX_FAILED_HELP)
    concurrency: PosInt | None = _f(None, CONC_HELP)
    timeout: PosFloat | None = _f(None, TIMEOUT_HELP)
    max_cost: PosFloat | None = _f(None, MAX_COST_HELP)


class EvaluateConfig(RunFields):
    """`judgeaudit evaluate`: a judge's accuracy (pairwise) or correlation (pointwise)."""

    command: ClassVar[str] = "evaluate"
    conflicts: ClassVar[tuple[Conflict, ...]] = (
        Exclusive(("limit",), ("sample",), "both choose the items"),)
    judge: str = _f("local", JUDGE_HELP)
    data: str = _f("builtin:facts", DATA_HELP)
    limit: PosInt | None = _f(None, "Use only the first N items (N >= 1).")
    sample: PosInt | None = _f(None, "Use N items drawn at random (seeded by --seed, kept in "
                                     "data order); not with --limit.")
    pair_rule: Literal["mean", "sum", "both", "mtbench"] | None = _f(None, (
        "Pairwise accuracy rule: mean (LLMBar, default: per pair the mean over the orders of "
        "[verdict = label]; a tie verdict counts half on two-way labels) | sum (JudgeBench: "
        "+1 right, -1 wrong, 0 tie or no answer per order; right when the sum > 0) | both "
        "(right only when both orders are right) | mtbench (MT-Bench's agreement without "
        "tie: orders that differ count as a tie; ties and tie labels left out)."))
    ties: Literal["keep", "drop"] | None = _f(None, (
        "Tie-labelled pairs: keep (default when the data has tie labels: three-way accuracy, "
        "a tie verdict is right on them) | drop (left out of accuracy and kappa)."))
    by: str | None = _f(None, "Break accuracy (pairwise) or correlation (pointwise) down by an "
                              "item field or metadata key, e.g. source, subset, category.")
    group_by: str | None = _f(None, (
        "Pointwise: group-level correlation within each value of this field or metadata key "
        "(e.g. the source document), averaged over groups."))
    system_field: str | None = _f(None, (
        "Pointwise: system-level correlation of the per-system mean scores (the field or "
        "metadata key naming the system, e.g. model_id)."))
    out: Path = _f(Path("out/evaluate"), "Output directory for results.json.")
    seed: Seed = _f(0, SEED_HELP)


class AuditConfig(RunFields):
    """`judgeaudit audit`: the bias battery against one judge."""

    command: ClassVar[str] = "audit"
    conflicts: ClassVar[tuple[Conflict, ...]] = (
        Exclusive(("n",), ("sample",), "both choose the items"),
        Exclusive(("adaptive",), ("n", "sample", "panel"),
                  "adaptive chooses the items itself (up to max_n) and takes no panel"),
        OnlyWith(("max_n", "round_size", "max_calls"), "adaptive",
                 "a fixed-n audit takes n"),
    )
    judge: str = _f("local", JUDGE_HELP)
    data: str = _f("builtin:facts", DATA_HELP)
    probes: str | None = _f(None, "Comma-separated probe names (default: the fast default "
                                  "set; see --list).")
    n: PosInt | None = _f(None, "Items per probe: each probe takes the first N pairs it can use "
                                "(default 40; --full: all).")
    sample: PosInt | None = _f(None, (
        "Audit N pairs drawn at random (seeded by --seed, kept in data order); each probe uses "
        "those it can. Not with --n."))
    by: str | None = _f(None, "Break each probe's effect down by an item field or metadata "
                              "key, e.g. source, category.")
    full: bool = _f(False, "Every probe, every item.")
    panel: str | None = _f(None, "Extra judge SPECs (comma-separated) for the judge-panel "
                                 "agreement probe.")
    out: Path = _f(Path("out/audit"), "Output directory (results.json, report.html).")
    fail_on: str | None = _f(None, (
        "Exit 1 when: 'biased' (any probe biased), 'flag' (any production threshold "
        "exceeded), 'any' (either), or a comma-separated list of probe names that must not be "
        "biased (a named probe that measured nothing, n = 0 or not run, fails the gate: "
        "exit 3). Add ',undecided' (biased,undecided) to fail also on the gated probes the "
        "data could not decide (underpowered or not run; adaptive: stopped by the budget "
        "undecided), which a passing gate lists; a probe --full added that needs --panel, "
        "in a run without one, is listed as not gated. 'none': no gate (turns off a --config "
        "file's fail_on); an empty value is refused."))
    seed: Seed = _f(0, SEED_HELP)
    alpha: OpenUnit = _f(0.05, "False discovery rate for 'biased' (0 < alpha < 1).")
    note: str | None = _f(None, "A note kept in results.json and shown in the report (e.g. how "
                                "the run was sized).")
    length_control: bool = _f(False, (
        "Probes that add words to a response (authority, injection, ...) also judge it padded "
        "by as many neutral words instead, to tell the cue from its length (one more verdict "
        "per item of each)."))
    adaptive: bool = _f(False, (
        "Draw items in rounds and stop each probe as soon as its anytime-valid interval / "
        "e-value decides (biased, not biased) or at --max-n."))
    max_n: PosInt = _f(500, "--adaptive: most items per probe.")
    round_size: PosInt = _f(20, "--adaptive: items added to each open probe per round.")
    max_calls: PosInt | None = _f(None, "--adaptive: stop before a round that would exceed this "
                                        "many judge calls (by the previous round's), and send "
                                        "no more than this many (cached answers are free).")


class ScoringBiasConfig(RunFields):
    """`judgeaudit scoring-bias`: how a rubric judge's scores move with its scoring prompt."""

    command: ClassVar[str] = "scoring-bias"
    conflicts: ClassVar[tuple[Conflict, ...]] = (
        OnlyWith(("generator", "reviewer"), "generate_references",
                 "they write the Ref-1..4 answers"),)
    judge: str = _f("local", ("Judge SPEC: local | local:qwen-0.5b | openai:MODEL?base_url=URL "
                              "| anthropic:MODEL | sim?order_bias=0.5&ref_pull=0.3"))
    data: str = _f("builtin:graded", (
        "Pointwise data SPEC: builtin:graded | prometheus:PATH?set=mt_bench | "
        "summeval:PATH?aspect=coherence | jsonl:PATH"))
    perturbations: str | None = _f(None, (
        "Comma-separated templates (baseline always runs): order_desc, order_random, "
        "ids_letters, ids_roman, ref_1..ref_5 (default: all)."))
    ids: list[str] | None = _f(None, (
        "Extra score-id scheme NAME=w,x,y,z,t (ids for scores 1..5); repeatable; runs as "
        "ids_NAME."))
    limit: PosInt | None = _f(None, "Use only the first N items (N >= 1).")
    repeats: Repeats = _f(3, (
        "Baseline scorings per item (>= 2 gives the repeat noise and a held-out repeat for the "
        "mitigation check). A deterministic judge such as local is scored once whatever N "
        "is; a paid judge's repeats are announced with their cost before sending."))
    references: Path | None = _f(None, (
        "Ref-k answers: a references.json written by --generate-references, or {item_id: {k: "
        "text}}. Without it Ref-5 is the dataset's reference and Ref-1..4 are skipped "
        "(builtin:graded uses its own level-k answers)."))
    generate_references: bool = _f(False, "Write Ref-1..4 by generation and review first.")
    generator: str | None = _f(None, "Generator SPEC (default: --judge).")
    reviewer: str | None = _f(None, "Reviewer SPEC (default: --judge).")
    ref_limit: PosInt | None = _f(None, "Generate references for the first N items only.")
    ref_attempts: PosInt = _f(3, "Generation attempts per Ref-k.")
    ref_tolerance: Annotated[int, Field(ge=0, le=4)] = _f(
        0, "Accept when |review score - k| <= this (0-4).")
    ref_max_tokens: PosInt = _f(160, "Generation budget (tokens).")
    ref_review: Literal["score", "order"] = _f("score", (
        "score: accept when the reviewer scores the candidate k (+- --ref-tolerance); order: "
        "accept when the reviewer's scores put Ref-k strictly between the other levels (for "
        "reviewers that give every text the same score)."))
    template: str = _f("pointwise_scoring_v1", "Scoring template name or .txt path.")
    out: Path = _f(Path("out/scoring-bias"), "Output directory (results.json, report.html).")
    seed: Seed = _f(0, SEED_HELP)


class DiscoverConfig(RunFields):
    """`judgeaudit discover`: the factors behind a judge's disagreements with humans."""

    command: ClassVar[str] = "discover"
    data: str = _f(HUBJ_DATA, HUBJ_DATA_HELP)
    judges: str | None = _f(None, LIVE_JUDGES_HELP)
    recorded: Literal["pandalm"] | None = _f(None, RECORDED_HELP)
    llm: str = _f("local", "SPEC of the model playing the G modules.")
    limit: PosInt | None = _f(30, "Discovery items (consensus disagreements) to extract "
                                  "features from.")
    holdout: OpenUnit = _f(0.5, "Share of the consensus disagreements held out for validation "
                                "(0 < h < 1).")
    holdout_limit: PosInt | None = _f(30, "Held-out items to validate on.")
    clusters: PosInt = _f(4, "M: k-means clusters per round.")
    factors: PosInt = _f(5, "K: factors to select.")
    iterations: PosInt = _f(3, "T: rounds.")
    tau: Share = _f(0.7, "Novelty threshold (cosine, 0-1).")
    rho: Share = _f(0.8, "Target covered share of features (0-1).")
    rep_fallback: bool = _f(True, (
        "When G_construct proposes fewer candidates than asked for (vague ones are dropped), "
        "fill in with the cluster representatives (features)."))
    min_agreement: Share = _f(0.5, MIN_AGREEMENT_HELP)
    out: Path = _f(Path("out/discover"), "Output directory (results.json, report.html).")
    seed: Seed = _f(0, SEED_HELP)


class QuantifyConfig(RunFields):
    """`judgeaudit quantify`: how strongly each factor moves each judge."""

    command: ClassVar[str] = "quantify"
    numbers_as_text: ClassVar[dict[str, Any]] = {"levels": Level}
    list_items: ClassVar[dict[str, Any]] = {"levels": Level}
    judges: str = _f("local", "Comma-separated judge SPECs to quantify (same rewrites for all).")
    data: str = _f(HUBJ_DATA, HUBJ_DATA_HELP)
    factors: str = _f("verbosity,authority", (
        "Comma-separated factor names: shipped ones (verbosity, beauty, authority, bandwagon, "
        "sentiment, length, complexity, ...) or 'found' with --factors-from, alone or among "
        "others (found,verbosity)."))
    factors_from: Path | None = _f(None, "results.json of a discover run (its factors and "
                                         "criteria).")
    generator: str | None = _f(None, "SPEC of the rewriter G_inj (default: the first judge).")
    checker: str | None = _f(None, "SPEC of the answer-change checker G_check (default: the "
                                   "generator).")
    levels: str = _f("1,2,3,4,5", "Levels to inject (comma-separated, 1-5).")
    pool: PosInt = _f(60, "Labelled items to judge when looking for agreement items.")
    limit: PosInt | None = _f(12, "Agreement items to rewrite.")
    n_cal: PosInt | None = _f(None, "Calibration items (default: 1/6 of the items, as the "
                                    "paper's 100/600).")
    on_violation: Literal["drop", "flag"] = _f("drop", (
        "drop: discard rewrites the checker says change the answer; flag: keep them."))
    inject: Literal["rewrite", "append"] = _f("rewrite", (
        "G_inj mode: rewrite (the whole response rewritten at the level, as in the paper) or "
        "append (the generator writes only sentences to add; for small models, such as the "
        "embedded one, that echo the text when asked to rewrite it)."))
    max_words: PosInt | None = _f(None, "Only agreement items whose rejected response has at "
                                        "most N words.")
    min_agreement: Share = _f(0.5, MIN_AGREEMENT_HELP)
    out: Path = _f(Path("out/quantify"), "Output directory (results.json, report.html).")
    seed: Seed = _f(0, SEED_HELP)


class MitigateConfig(RunFields):
    """`judgeaudit mitigate`: bias-controlled win rates."""

    command: ClassVar[str] = "mitigate"
    conflicts: ClassVar[tuple[Conflict, ...]] = (
        Exclusive(("apply",), ("candidate", "estimator", "factors_from"),
                  "the fit in apply fixes them"),)
    data: str = _f(HUBJ_DATA, HUBJ_DATA_HELP)
    judges: str | None = _f(None, LIVE_JUDGES_HELP)
    recorded: Literal["pandalm"] | None = _f(None, RECORDED_HELP)
    factor: str | None = _f(None, "The factor to control for: a shipped name (default "
                                  "verbosity) or, with --factors-from, one of its factors. "
                                  "With --apply: the fit's (give none, or the same).")
    factors_from: Path | None = _f(None, "results.json of a discover run.")
    scorer: str = _f("local", "SPEC of the G_score model.")
    candidate: Literal["rejected", "response_1", "response_2"] = _f("rejected", (
        "Whose win rate: rejected (the human-rejected response: win = disagreement with "
        "humans), response_1 or response_2."))
    limit: PosInt | None = _f(60, "Use the first N labelled items.")
    estimator: Literal["marginal", "two_stage"] = _f("marginal", (
        "marginal: one-step maximum likelihood with the query effect integrated out (default; "
        "calibrated intervals); two_stage: the paper's Stage I + Stage II with the query "
        "effect plugged in (shown beside either way)."))
    apply: Path | None = _f(None, (
        "results.json of an earlier mitigate run: correct the verdicts of --judges (one "
        "judge) on --data with that fit."))
    min_agreement: Share = _f(0.5, MIN_AGREEMENT_HELP)
    out: Path = _f(Path("out/mitigate"), "Output directory (results.json, report.html).")
    seed: Seed = _f(0, SEED_HELP)


# --tau: the ranking's prior; the c and kappa reported take a weaker one (rank.fitting.
# terms_tau): the help said "Prior sd of c and kappa", yet the reported c did not move with it
TAU_HELP = ("Prior sd of c and kappa in the ranking's fit (> 0): the c it corrects by. The c "
            "and kappa reported come from a fit at max(--tau, 10) when --lam is auto, so "
            "they hardly move with it; with --hierarchical tau is learned.")

class RankConfig(RunFields):
    """`judgeaudit rank`: the top-k of a pool under a comparison budget."""

    command: ClassVar[str] = "rank"
    checked_by_command: ClassVar[frozenset[str]] = frozenset({"rule"})  # "unknown rule(s) x"
    numbers_as_text: ClassVar[dict[str, Any]] = {"lam": float}
    judge: str = _f("local", ("Judge SPEC: local | local:qwen-0.5b | openai:MODEL?base_url=URL "
                              "| anthropic:MODEL | replay:PATH?... | sim?length=1&position=0.3"))
    items: str = _f("builtin:controlled", ITEMS_HELP)
    k: PosInt | None = _f(None, "Size of the top set (default: the pool's, else 5).")
    budget: PosInt = _f(120, "Judge calls (comparisons) to spend.")
    rule: Literal["topk", "global", "roundrobin", "random", "entropy", "uncertainty_only",
                  "outcome_only"] = _f("topk", (
                      "Acquisition rule: topk | global | roundrobin | random | entropy | "
                      "uncertainty_only | outcome_only."))
    covariates: str | None = _f(None, COV_HELP)
    model: Literal["bias_aware", "naive"] = _f("bias_aware", (
        "Model driving acquisition and the reported ranking: bias_aware | naive."))
    trusted: Path | None = _f(None, (
        'Trusted labels (JSONL {"better": ID, "worse": ID} or CSV better,worse): the bias '
        "correction is used if it agrees with them clearly better than the naive ranking, or, "
        "when they cannot tell the two apart, only if a bias term's 95% interval excludes 0 "
        "and they do not lean towards the naive ranking (results.json gate.reason says "
        "which)."))
    out: Path = _f(Path("out/rank"), "Output directory (results.json, report.html).")
    seed: Seed = _f(0, SEED_HELP)
    lam: str = _f("auto", LAM_HELP)
    tau: PosFloat = _f(1.0, TAU_HELP)
    hierarchical: bool = _f(False, "Learn tau by empirical Bayes.")
    refit_every: PosInt = _f(8, "Refit after this many comparisons (>= 1).")
    samples: Draws = _f(1500, "Monte-Carlo draws for top-k membership (1-100000).")


class RankEvalConfig(RunFields):
    """`judgeaudit rank-eval`: acquisition rules x models offline, against a verdict
    matrix."""

    command: ClassVar[str] = "rank-eval"
    numbers_as_text: ClassVar[dict[str, Any]] = {"lam": float, "seeds": PosInt,
                                                 "budgets": PosInt}
    list_items: ClassVar[dict[str, Any]] = {"budgets": PosInt, "seeds": Seed}
    oracle: str = _f("sim", (
        "Judge SPEC used as oracle: its full ordered-pair verdict matrix is built once "
        "(cached) and replayed for every rule and seed. sim?length=1&position=0.3 plants known "
        "biases (fresh draws per seed unless the spec sets seed=)."))
    items: str = _f("builtin:controlled", ITEMS_HELP + "; builtin:controlled without ?seed= "
                                                       "draws a new pool per seed.")
    k: PosInt | None = _f(None, "Top-k size (default: the pool's, else 5).")
    budgets: str = _f("60,120,200", "Comma-separated budgets.")
    rules: str = _f("topk,global,roundrobin,random", "Comma-separated acquisition rules.")
    seeds: str = _f("10", "Seeds: a count (30), a range (0-29) or a comma-separated list (0,4,9).")
    covariates: str | None = _f(None, COV_HELP)
    out: Path = _f(Path("out/rank-eval"), "Output directory (results.json, report.html).")
    lam: str = _f("auto", LAM_HELP)
    tau: PosFloat = _f(1.0, TAU_HELP)
    hierarchical: bool = _f(False, "Learn tau by empirical Bayes.")
    refit_every: PosInt = _f(8, "Refit after this many comparisons (>= 1).")
    samples: Draws = _f(1500, "Monte-Carlo draws for top-k membership (1-100000).")


class CompareConfig(CommandConfig):
    """`judgeaudit compare RUN_A RUN_B`: two audits of the same items, probe by probe."""

    command: ClassVar[str] = "compare"
    run_a: Path = Field(description="Audit A, the baseline: its output folder (or its "
                                    "results.json).")
    run_b: Path = Field(description="Audit B, the candidate, of the same items: its folder (or "
                                    "results.json).")
    out: Path = _f(Path("out/compare"), "Output directory for the comparison (results.json, "
                                        "report.html).")
    fail_on: str | None = _f(None, (
        "Exit 1 when: 'worse' (any probe got worse), or a comma-separated list of probe names "
        "that must not get worse (or that measured nothing, n = 0, in either audit). Add "
        "',underpowered' (worse,underpowered) to fail also on the gated probes whose change "
        "the data cannot tell, which a passing gate lists. 'none': no gate (turns off a "
        "--config file's fail_on); an empty value is refused."))
    allow_missing: bool = _f(False, (
        "With --fail-on: pass the gate although audit B lacks probes audit A ran (they are "
        "still listed). Without it any gate fails (exit 1) on such a probe: B's bias there is "
        "unknown. A probe named in --fail-on fails the gate when B lacks it either way."))
    alpha: OpenUnit = _f(0.05, "False discovery rate for improved/worse across the compared "
                               "probes (0 < alpha < 1).")
    margin: Annotated[float, Field(ge=0.0)] | None = _f(None, (
        "Equivalence margin for 'no change' (every probe); default: half the width of each "
        "probe's no-bias range (0.05 for most)."))
    seed: Seed = _f(0, "Seed of the bootstrap and the randomization test.")


CONFIGS: dict[str, type[CommandConfig]] = {
    c.command: c for c in (EvaluateConfig, AuditConfig, ScoringBiasConfig, DiscoverConfig,
                           QuantifyConfig, MitigateConfig, RankConfig, RankEvalConfig,
                           CompareConfig)
}
"""The Config model of each command, by command name."""


class ConfigError(ValueError):
    """A config file that cannot be used: unreadable, not TOML, an unknown key, a bad value.
    The message names the file, the key and what was expected."""


def config_model(command: str) -> type[CommandConfig]:
    """The Config model of `command`; ValueError listing the known ones."""
    try:
        return CONFIGS[command]
    except KeyError:
        raise ValueError(f"no settings model for {command!r}; known: "
                         f"{', '.join(CONFIGS)}") from None


def describe(schema: dict[str, Any]) -> str:
    """A JSON Schema in words ("an integer >= 1", "one of 'mean', 'sum'"), for messages that
    say what a setting expects. A null alternative is left out: a config file leaves the key
    out for the default."""
    if "anyOf" in schema:
        parts = [describe(s) for s in schema["anyOf"] if s.get("type") != "null"]
        return " or ".join(parts)
    if "enum" in schema:
        return "one of " + ", ".join(str(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    kind = schema.get("type")
    if kind == "array":
        return f"a list of {_plural(describe(schema.get('items') or {}))}"
    base = {"integer": "an integer", "number": "a number", "boolean": "true or false",
            "string": "a path" if schema.get("format") == "path" else "a string"}.get(
        str(kind), "a value")
    bounds = [f"{op} {schema[key]}" for key, op in (
        ("minimum", ">="), ("exclusiveMinimum", ">"), ("maximum", "<="),
        ("exclusiveMaximum", "<")) if key in schema]
    return " ".join([base, " and ".join(bounds)]) if bounds else base


def field_error(model: type[CommandConfig], name: str, value: Any, *,
                strict: bool = True) -> str | None:
    """None when `value` fits field `name` of `model` (its type, range and choices); else what
    the field expects, in words ("an integer >= 1"). Strict: a string is not a number and 1 is
    not true (a config file, the Python API); not strict: values a CLI parser produced."""
    info = model.model_fields[name]
    tp: Any = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    adapter: TypeAdapter[Any] = TypeAdapter(tp)
    try:
        if strict:
            adapter.validate_json(json.dumps(value), strict=True)
        else:
            adapter.validate_python(value)
    except (TypeError, ValueError, ValidationError):  # a TOML date is no setting either
        return describe(adapter.json_schema())
    return None


def is_text(info: Any) -> bool:
    """Whether a field is a text option (`str`, `str | None`; not `list[str]`)."""
    return "str" in str(info.annotation) and "list" not in str(info.annotation)


def is_listed(info: Any) -> bool:
    """Whether a text option is comma-separated (a config file may give it as a list)."""
    return is_text(info) and "comma" in (info.description or "").lower()


def _plural(what: str) -> str:
    """ "an integer >= 1" -> "integers >= 1" (what a list holds)."""
    what = what.removeprefix("an ").removeprefix("a ")
    head, _, rest = what.partition(" ")
    return " ".join([head + "s", rest]).strip()


def _wanted(adapter: TypeAdapter[Any]) -> str:
    return describe(adapter.json_schema())


def text_forms(model: type[CommandConfig], name: str) -> dict[str, Any]:
    """The forms a config file may give text option `name` of `model` in, as JSON Schema
    alternatives: {"string": {...}, "number": {...}?, "array": {...}?}. A comma-separated
    option's text must name something (`NAMES_PATTERN`) and its list holds at least one
    element: names (non-empty text) or the option's `list_items` type; a number only for the
    options that hold numbers (`numbers_as_text`). What `check_fields` holds a file to."""
    info = model.model_fields[name]
    forms: dict[str, Any] = {"string": {"type": "string"}}
    listed = is_listed(info)
    if listed:
        forms["string"]["pattern"] = NAMES_PATTERN
    if name in model.numbers_as_text:
        forms["number"] = TypeAdapter(model.numbers_as_text[name]).json_schema()
    if listed:
        item = model.list_items.get(name)
        items = (TypeAdapter(item).json_schema() if item is not None
                 else {"type": "string", "pattern": "\\S"})
        forms["array"] = {"type": "array", "minItems": 1, "items": items}
    return forms


def _text_value(model: type[CommandConfig], name: str, value: Any) -> tuple[Any, str | None]:
    """A config file's value of text option `name` as the option's text (a list joined with
    commas, a number written out): (text, None); or (value, what the option expects) when
    the value has none of its forms (`text_forms`)."""
    info = model.model_fields[name]
    listed = is_listed(info)
    number = model.numbers_as_text.get(name)
    item = model.list_items.get(name)
    what = _plural(_wanted(TypeAdapter(item))) if item is not None else "names"
    kinds = [f"comma-separated {what} as text (not empty)" if listed else "a string"]
    if number is not None:
        kinds.append(_wanted(TypeAdapter(number)))
    if listed:
        kinds.append(f"a non-empty list of {what}")
    wanted = (", ".join(kinds[:-1]) + " or " + kinds[-1]) if len(kinds) > 1 else kinds[0]
    if value is None and "None" in str(info.annotation):
        return value, None
    if isinstance(value, str):
        if listed and not value.replace(",", "").strip():
            return value, wanted
        return value, None
    if isinstance(value, bool):
        return value, wanted
    if isinstance(value, int | float):
        if number is None:
            return value, wanted
        try:
            TypeAdapter(number).validate_json(json.dumps(value), strict=True)
        except (TypeError, ValueError, ValidationError):
            return value, wanted
        return str(value), None
    if isinstance(value, list) and listed and value:
        bad = next((x for x in value if not _fits_item(item, x)), _NONE)
        if bad is _NONE:
            return ",".join(str(x) for x in value), None
        one = _wanted(TypeAdapter(item)) if item is not None else "a name (non-empty text)"
        return value, f"{wanted} ({bad!r} is not {one})"
    return value, wanted


_NONE = object()


def _fits_item(item: Any, x: Any) -> bool:
    """Whether `x` is an element a list of `item` may hold (None: a name, non-empty text)."""
    if item is None:
        return isinstance(x, str) and bool(x.strip())
    try:
        TypeAdapter(item).validate_json(json.dumps(x), strict=True)
    except (TypeError, ValueError, ValidationError):
        return False
    return True


def unknown_key(model: type[CommandConfig], key: str, where: str = "") -> ConfigError:
    """The error of a key that is no setting of `model`: a close field named ("did you mean
    fail_on?"; `fail-on` is the option's spelling, a key has underscores), then all."""
    fields = [f for f in model.model_fields]
    under = key.replace("-", "_")
    close = [under] if under in fields else difflib.get_close_matches(key, fields, n=1,
                                                                       cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return ConfigError(f"{where}unknown key {key!r} for `{model.command}`{hint} (known keys: "
                       f"{', '.join(sorted(fields))})")


_KEY = r"""(?:"(?:[^"\\]|\\.)*"|'[^']*'|[A-Za-z0-9_-]+)"""
_KEY_PATH = re.compile(rf"\s*({_KEY}(?:\s*\.\s*{_KEY})*)\s*=")
_HEADER = re.compile(rf"\s*\[(\[?)\s*({_KEY}(?:\s*\.\s*{_KEY})*)\s*\]\]?\s*(?:#.*)?$")


def _key_parts(text: str) -> tuple[str, ...]:
    """`a."b.c".d` -> ("a", "b.c", "d"): a TOML dotted key's parts, quotes taken off."""
    parts = re.findall(_KEY, text)
    return tuple(json.loads(p) if p.startswith('"') else p.strip("'") for p in parts)


@dataclass(frozen=True)
class TomlLines:
    """Where the keys of a TOML file are (lines from 1), for errors that name a line:
    tomllib gives no positions for valid TOML. `keys`: the first line of each key path (a
    top-level key `("n",)`, a key under a table `("judge", "model")`, each prefix of a dotted
    key); `tables`: the line of each `[table]` header (`[[table]]`'s first); `top`: the
    top-level keys, above the first header."""

    keys: dict[tuple[str, ...], int]
    tables: dict[tuple[str, ...], int]
    top: dict[str, int]


def toml_lines(path: str | Path) -> TomlLines:
    """The lines of a TOML file's keys and tables (`TomlLines`); empty when the file cannot
    be read. A read of the lines, not a parser: lines inside a multi-line string are
    skipped."""
    out = TomlLines({}, {}, {})
    try:
        text = Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return out
    table: tuple[str, ...] = ()
    in_string: str | None = None  # the delimiter of the multi-line string the line is in
    for i, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:
            if line.count(in_string) % 2:
                in_string = None
            continue
        head = _HEADER.match(line)
        if head:
            table = _key_parts(head.group(2))
            out.tables.setdefault(table, i)
            continue
        m = _KEY_PATH.match(line)
        if not m:
            continue
        parts = _key_parts(m.group(1))
        if not out.tables:
            out.top.setdefault(parts[0], i)
        for n in range(1, len(parts) + 1):
            out.keys.setdefault(table + parts[:n], i)
        rest = line[m.end():]
        for quote in ('"""', "'''"):
            if rest.count(quote) % 2:
                in_string = quote
    return out


def key_lines(path: str | Path) -> dict[str, int]:
    """The line (from 1) of each top-level key of a TOML file (`key = ...`, and the first
    part of a dotted `key.x = ...`), for errors that name a key; {} when the file cannot be
    read. A key under a [table] header is not top-level and is not listed (`toml_lines`
    gives those)."""
    return toml_lines(path).top


def line_of(lines: Mapping[str, int] | None, key: str) -> str:
    """"line 3: " for a key found at that line of the config file, else ""."""
    n = (lines or {}).get(key)
    return f"line {n}: " if n else ""


def _value_error(model: type[CommandConfig], key: str, value: Any) -> tuple[Any, str | None]:
    """(the value as the field takes it, None), or (value, what field `key` expects)."""
    wanted = None
    if is_text(model.model_fields[key]):
        value, wanted = _text_value(model, key, value)
    if wanted is None:
        wanted = field_error(model, key, value)
    return value, wanted


def _is_table(value: Any) -> bool:
    """A TOML table (or an array of tables, `[[x]]`) as tomllib reads it."""
    return isinstance(value, dict) or (
        isinstance(value, list) and bool(value) and all(isinstance(x, dict) for x in value))


def _leaves(path: tuple[str, ...], value: Any) -> list[tuple[tuple[str, ...], Any]]:
    """The (key path, value) of every key under a table that holds no table, in file order."""
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves((*path, k), v)]
    if _is_table(value):
        return [leaf for x in value for leaf in _leaves(path, x)]
    return [(path, value)]


def _first_line(toml: TomlLines, prefix: tuple[str, ...]) -> int | None:
    """The first line that gives `prefix` or a key or table under it."""
    found = [n for where in (toml.keys, toml.tables) for k, n in where.items()
             if k[:len(prefix)] == prefix]
    return min(found, default=None)


def table_error(model: type[CommandConfig], key: str, value: Any, where: str,
                toml: TomlLines) -> ConfigError:
    """The error of a `[table]` in a config file: no command's settings take a table (each
    is a top-level `key = value`), and a key written below a [table] header belongs to that
    table, so a setting there was read as none. Names the line and the table of the first
    setting found in it (with what the setting expects when its value does not fit), else
    the table's line and why the table is no setting."""
    first = min(toml.tables.values(), default=None)
    above = f"above the first [table] header (line {first})" if first else "at the top"
    tail = (f"`{model.command}` takes no tables: its settings are top-level keys, written "
            f"{above}")
    for path, v in _leaves((key,), value):
        name = path[-1]
        if name not in model.model_fields or len(path) < 2:
            continue
        table = max((t for t in toml.tables if path[:len(t)] == t and len(t) < len(path)),
                    key=len, default=path[:-1])
        line = toml.keys.get(path) or toml.tables.get(table)
        _, wanted = _value_error(model, name, v)
        also = f" ({name} expects {wanted}, got {v!r})" if wanted else ""
        return ConfigError(f"{where}{f'line {line}: ' if line else ''}"
                           f"[{'.'.join(table)}] key {name!r}: expected a top-level key, "
                           f"not one of a table{also}; {tail}")
    line = _first_line(toml, (key,))
    at = f"line {line}: " if line else ""
    inner = next((p for p, _ in _leaves((key,), value) if len(p) > 1), None)
    holds = (f" (key {'.'.join(inner[1:])!r} at line {toml.keys[inner]})"
             if inner and inner in toml.keys else "")
    if key in model.model_fields:
        wanted = _value_error(model, key, {})[1]  # what it takes: a table is none of it
        return ConfigError(f"{where}{at}[{key}]: expected `{key} = ...` ({wanted}) as a "
                           f"top-level key, got a table{holds}; {tail}")
    head, known, keys = str(unknown_key(model, key, f"{where}{at}[{key}]: ")).partition(
        " (known keys: ")
    head = head.replace(f"unknown key {key!r} for `{model.command}`",
                        f"unknown table {key!r} for `{model.command}`{holds}", 1)
    return ConfigError(f"{head}{'' if head.endswith('?') else ';'} {tail}{known}{keys}")


def check_fields(model: type[CommandConfig], values: dict[str, Any],
                 where: str = "", lines: Mapping[str, int] | None = None,
                 toml: TomlLines | None = None) -> dict[str, Any]:
    """Validate some of `model`'s fields (a config file need not give them all): each key
    must be a field and each value must fit the field's type and range, strictly
    (`field_error`); a text option takes the forms `text_forms` gives (a list for a
    comma-separated one, a number for one that holds numbers). Returns the values as the
    model holds them (paths as `Path`, lists joined with commas); ConfigError names `where`,
    the key, its line in the file (`lines`, from `key_lines`) and what was expected. With
    `toml` (the file's `toml_lines`), a `[table]` of the file is refused naming its line
    and the setting found in it (`table_error`)."""
    fields = model.model_fields
    out: dict[str, Any] = {}
    for key, value in values.items():
        if toml is not None and key not in toml.top and _is_table(value):
            raise table_error(model, key, value, where, toml)
        if key not in fields:
            raise unknown_key(model, key, where + line_of(lines, key))
        value, wanted = _value_error(model, key, value)
        if wanted is not None:
            raise ConfigError(f"{where}{line_of(lines, key)}key {key!r}: expected {wanted}, "
                              f"got {value!r}")
        out[key] = TypeAdapter(fields[key].annotation).validate_python(value)
    return out


def read_config_file(path: str | Path) -> dict[str, Any]:
    """The table of a TOML file; ConfigError naming the file when it cannot be read."""
    p = Path(path)
    try:
        data = p.read_bytes()
        # a BOM (Windows Notepad's UTF-8) is no TOML; the data files accept it too
        return tomllib.loads(data.removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ConfigError(f"--config {p}: not UTF-8 text (byte {exc.start}); save it as "
                          "UTF-8") from None
    except FileNotFoundError:
        raise ConfigError(f"--config {p}: no such file") from None
    except IsADirectoryError:
        raise ConfigError(f"--config {p}: is a directory, expected a TOML file") from None
    except OSError as exc:
        raise ConfigError(f"--config {p}: cannot read it ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"--config {p}: not valid TOML ({exc})") from None


# The key of a results.json that holds the command's settings as the run used them, every
# field of its Config model (`recorded_settings`): `--config RUN_DIR` re-runs from it.
SETTINGS_KEY = "settings"
# Settings not recorded, and not taken from the folder on a re-run: where the run wrote (the
# folder the results are in; a re-run writes to its own --out, else the command's default,
# as any run; two runs of one command into two folders record the same settings).
NOT_RERUN = frozenset({"out"})
_MASKED = "***"


def recorded_settings(cfg: CommandConfig) -> dict[str, Any]:
    """Every setting of `cfg` as results.json records it (JSON values, in field order), so a
    run can be told and re-run from its folder (`load_results_settings`): its seed, --full,
    n, sample, template, ... were not all recorded. A secret in a text setting (a spec's
    api_key=...) is masked (`***`), never written."""
    # (the one statement of what a secret is, as an error quoting a spec masks it)
    from judgeaudit.spec import _masked_text

    return {name: _masked_text(value) if isinstance(value, str) else value
            for name, value in cfg.model_dump(mode="json").items() if name not in NOT_RERUN}


def is_results_path(path: str | Path) -> bool:
    """Whether `--config PATH` names a results folder or its results.json (a re-run), not a
    TOML file: a directory, or a file whose name ends in .json."""
    p = Path(path)
    return p.is_dir() or p.suffix.lower() == ".json"


def load_results_settings(path: str | Path, command: str) -> dict[str, Any]:
    """The settings a run recorded in its results.json (`recorded_settings`), for `command`
    to run again: `--config RUN_DIR` (or RUN_DIR/results.json). Every field of the command's
    Config model must be there (a field missing, from results written before they were
    recorded, or before the field existed, would take today's default, maybe not the run's):
    ConfigError names the file and the missing field. `out` is not recorded nor taken
    (`NOT_RERUN`; one in settings written otherwise is left aside). Values are as the model
    holds them, as `load_config_file`'s."""
    model = config_model(command)
    p = Path(path)
    file = p / "results.json" if p.is_dir() else p
    where = f"--config {path}: "
    if p.is_dir() and not file.is_file():
        raise ConfigError(f"{where}a directory without results.json; expected a TOML file or "
                          "a run's output folder (its results.json)")
    try:
        doc = json.loads(file.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(f"{where}no such file") from None
    except OSError as exc:
        raise ConfigError(f"{where}cannot read {file} ({exc.strerror or exc})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{where}{file.name} is not valid JSON ({exc}); expected a "
                          "results.json written by judgeaudit") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{where}{file.name} is not a results document (a JSON object)")
    ran = doc.get("command")
    if ran != command:
        again = f"; re-run it with judgeaudit {ran} --config {path}" if ran in CONFIGS else ""
        raise ConfigError(f"{where}holds the results of {ran!r}, not of `{command}`{again}")
    settings = doc.get(SETTINGS_KEY)
    version = doc.get("version")
    made = f" (written by judgeaudit {version})" if isinstance(version, str) else ""
    if settings is not None and not isinstance(settings, dict):
        raise ConfigError(f"{where}{file.name}'s {SETTINGS_KEY!r} is not an object (got "
                          f"{type(settings).__name__}); expected the settings a run recorded")
    run = doc.get("run") if isinstance(doc.get("run"), dict) else {}
    if not isinstance(settings, dict) and ("error" in doc or run.get("unfinished")):
        # the record a run that did not finish (or a fatal call ended) leaves has none
        raise ConfigError(
            f"{where}{file.name} is the record of a run that did not finish or failed "
            f"({run.get('message') or doc.get('error')}); it holds no {SETTINGS_KEY!r}: run "
            "the same command again (its finished calls are in the cache)")
    if not isinstance(settings, dict):
        raise ConfigError(
            f"{where}{file.name} holds no {SETTINGS_KEY!r}{made}: results written before a "
            "run recorded its full settings cannot be re-run from their folder; give the "
            "settings as options or in a TOML file (judgeaudit schema "
            f"{command} lists them)")
    missing = [f for f in model.model_fields if f not in settings and f not in NOT_RERUN]
    if missing:
        raise ConfigError(
            f"{where}{file.name}'s {SETTINGS_KEY} lack{'s' if len(missing) == 1 else ''} "
            f"{', '.join(missing)}{made}: results too old to hold every setting of "
            f"`{command}` cannot be re-run from their folder (the missing one would take "
            "today's default, maybe not the run's); give the settings as options or in a TOML "
            "file")
    # a masked secret (`api_key=***`) is kept here: a flag given again overrides it, the
    # environment can stand in for it; what is left is settled with the command line
    # (`settle_masked`), which this eager read cannot see
    values = {k: v for k, v in settings.items() if k not in NOT_RERUN}
    return check_fields(model, values, where=f"{where}{SETTINGS_KEY}: ")


# A masked `api_key` of a spec in recorded settings ("openai:m?api_key=***&base_url=U"):
# the parameter with its separator, which `settle_masked` drops when the environment holds
# the provider's key
_MASKED_KEY = re.compile(r"(?<=[?&])api_key=\*\*\*(?:&|(?=[,\s]|$))")


def is_masked(value: Any) -> bool:
    """Whether a recorded setting had a secret that results.json did not keep."""
    return isinstance(value, str) and _MASKED in value


def settle_masked(name: str, value: str, where: str) -> tuple[str, str]:
    """A recorded setting `name` whose secret was masked (`is_masked`), for a re-run that
    did not give the option again: each masked `api_key=***` of a judge spec whose provider
    reads its key from the environment ($OPENAI_API_KEY, $ANTHROPIC_API_KEY) is dropped
    when that variable is set, so the provider reads it there. Returns the setting and a
    note saying so. Any other masked secret, or the variable unset, is a ConfigError: the
    run would fail at its first call, or (a placeholder key) call with '***' as the key."""
    import os

    from judgeaudit.llm.registry import provider_class

    flag = f"--{name.replace('_', '-')}"
    envs: list[str] = []
    for m in _MASKED_KEY.finditer(value):
        spec = re.split(r"[,\s]", value[:m.start()])[-1]
        provider = re.split(r"[:?]", spec, maxsplit=1)[0]
        try:
            env = getattr(provider_class(provider), "key_env", None)
        except Exception:  # an unknown provider: no variable to name
            env = None
        if not isinstance(env, str) or not os.environ.get(env, "").strip():
            why = (f"${env} is not set" if isinstance(env, str)
                   else f"provider {provider!r} reads no key from the environment")
            raise ConfigError(
                f"{where}{SETTINGS_KEY}.{name} = {value!r} had an api_key, which results.json "
                f"does not keep, and {why}: give {flag} again with its key"
                + (f", or set ${env}" if isinstance(env, str) else ""))
        envs.append(env)
    rest = _MASKED_KEY.sub("", value)
    # a query left empty or ending in '&': "openai:m?" -> "openai:m", "m?x=1&" -> "m?x=1"
    rest = re.sub(r"[?&](?=[,\s]|$)", "", rest)
    if _MASKED in rest:  # another secret (a token=, a password in a URL): nothing stands in
        raise ConfigError(
            f"{where}{SETTINGS_KEY}.{name} = {value!r} had a secret, which results.json does "
            f"not keep: give {flag} again")
    shown = ", ".join(f"${e}" for e in dict.fromkeys(envs))
    return rest, (f"{where}{SETTINGS_KEY}.{name}'s api_key was not kept (results.json masks "
                  f"it): the judge reads its key from {shown}")


# Settings that choose which of the data's items a run loads (`Run.items`): with one given
# on the command line a re-run may judge other items of the same data, so only items of both
# are compared (`rerun_of`)
SELECTION = frozenset({"data", "limit", "sample", "n", "seed", "full", "adaptive", "max_n",
                       "round_size"})


def rerun_of(path: str | Path, items: Any, settings_now: Mapping[str, Any],
             data_given: bool) -> tuple[dict[str, Any], str]:
    """A re-run from a run's folder (`--config RUN_DIR`) against the items it loaded now
    (`items`, before any call; `settings_now`: this run's, as `recorded_settings`;
    `data_given`: --data typed on the command line): the results' `rerun_of` record
    ({folder, data_same, and when the data differ the recorded and new sha256 and n_items,
    n_changed: items that run judged whose content differs, n_missing: ones no longer
    loaded}) and a warning ("" when the data are the same). The recorded --data reading
    other data (a file edited since, a relative path read from another folder) is a
    ConfigError: re-running it would judge
    other data under the run's settings and say nothing, and nothing is paid yet. With
    --data given the user chose the data: a warning only. With another selection given
    (--sample, --n, --seed, ...) the items may differ by it: only content is compared."""
    from judgeaudit.data import fingerprint as fpm

    p = Path(path)
    file = p / "results.json" if p.is_dir() else p
    try:
        doc = json.loads(file.read_bytes().removeprefix(b"\xef\xbb\xbf").decode("utf-8"))
    except (OSError, ValueError):  # read once already (`load_results_settings`)
        doc = {}
    then = fpm.of(doc) if isinstance(doc, dict) else None
    record: dict[str, Any] = {"folder": str(p if p.is_dir() else p.parent)}
    if then is None:
        record["data_same"] = None
        return record, (f"--config {path}: its results hold no data_fingerprint (written "
                        "before judgeaudit recorded one): whether the data are the same as "
                        "that run's is not known")
    settings = doc.get(SETTINGS_KEY) if isinstance(doc.get(SETTINGS_KEY), dict) else {}
    same_selection = all(settings.get(k) == settings_now.get(k) for k in SELECTION
                         if k in settings_now)
    now = fpm.fingerprint(items)
    diff = fpm.difference(then, now)
    missing = diff["n_only_a"] if same_selection else 0
    same = diff["same"] or (not same_selection and not diff["changed"])
    record["data_same"] = same
    if same:
        return record, ""
    listed = then.get("items") if isinstance(then.get("items"), Mapping) else {}
    record.update({"sha256_then": then.get("sha256"), "sha256_now": now["sha256"],
                   "n_items_then": then.get("n_items"), "n_items_now": now["n_items"],
                   "n_judged_then": len(listed), "n_changed": len(diff["changed"]),
                   "n_missing": missing})
    what = (f"{len(diff['changed'])} of the {len(listed)} items that run judged have other "
            f"content now and {missing} are not loaded; it loaded {then.get('n_items')} "
            f"items ({fpm.short(then)}), this run {now['n_items']} ({fpm.short(now)})")
    if data_given:
        return record, (f"--config {path}: --data differs from that run's data: {what}; "
                        "a new run on these data, not a repeat of that one")
    raise ConfigError(
        f"--config {path}: the recorded data {settings.get('data')!r} are not the data that "
        f"run judged: {what}. Nothing was run. Restore the data (a relative path is read "
        "from the current folder), or give --data to run on these data as a new run")


def load_config_file(path: str | Path, command: str) -> dict[str, Any]:
    """The settings a TOML file gives for `command`, validated against its Config model
    (key by key: a file may give only some settings). Values are as the model holds them
    (paths as `Path`). ConfigError names the file, the key and what was expected. A results
    folder, or its results.json, gives the settings its run recorded
    (`load_results_settings`): the run again."""
    if is_results_path(path):
        return load_results_settings(path, command)
    model = config_model(command)
    toml = toml_lines(path)
    return check_fields(model, read_config_file(path), where=f"--config {path}: ",
                        lines=toml.top, toml=toml)


__all__ = [
    "CONFIGS", "CONFIG_VERSION", "AuditConfig", "CommandConfig", "CompareConfig",
    "ConfigError", "Conflict", "DiscoverConfig", "EvaluateConfig", "Exclusive",
    "MitigateConfig", "OnlyWith", "QuantifyConfig", "RankConfig", "RankEvalConfig",
    "ScoringBiasConfig", "check_fields", "config_model", "field_error", "is_listed",
    "is_masked", "is_text", "load_config_file", "load_results_settings", "read_config_file",
    "recorded_settings", "rerun_of", "settle_masked", "text_forms", "unknown_key",
]
