"""Acquisition rules, one module each, registered by name. All share
``score(ctx, a, b) -> np.ndarray`` (see ``base``)."""

from __future__ import annotations

from judgeaudit import plugins
from judgeaudit.rank.acquisition import (
    entropy,
    global_uncertainty,
    outcome_only,
    random_pairs,
    roundrobin,
    topk,
    uncertainty_only,
)
from judgeaudit.rank.acquisition.base import AcquisitionContext, Rule


class _Rules(dict[str, Rule]):
    """The rule table. A name it does not hold first loads the rules of other packages
    (entry-point group `judgeaudit.acquisition`, once), so `name in RULES` and `RULES[name]`
    (used as they are by the rank commands) see plugin rules too."""

    def __contains__(self, name: object) -> bool:
        if not super().__contains__(name):
            _load_plugins()
        return super().__contains__(name)

    def __missing__(self, name: str) -> Rule:
        _load_plugins()
        if super().__contains__(name):
            return super().__getitem__(name)
        raise KeyError(name)


RULES: dict[str, Rule] = _Rules({
    "topk": topk.score,
    "global": global_uncertainty.score,
    "roundrobin": roundrobin.score,
    "random": random_pairs.score,
    "entropy": entropy.score,
    "uncertainty_only": uncertainty_only.score,
    "outcome_only": outcome_only.score,
})


# Rules whose picks do not depend on the verdicts (they read only which pairs were asked, and
# the loop's random stream): a whole budget of their picks is known before any answer, so
# `--plan-only` plans it in one run instead of round by round.
ANSWER_FREE: set[str] = {"random", "roundrobin"}


def answer_free(name: str) -> bool:
    """Whether rule ``name``'s picks are the same whatever the judge answers."""
    return name in ANSWER_FREE


def get_rule(name: str) -> Rule:
    try:
        return RULES[name]
    except KeyError:
        raise ValueError(f"unknown acquisition rule {name!r}; expected one of "
                         f"{', '.join(rule_names())}"
                         f"{plugins.unknown_suffix('acquisition', name)}") from None


def rule_names() -> list[str]:
    """Every rule's name, plugins' included (`RULES` holds plugins only once loaded)."""
    _load_plugins()
    return sorted(RULES)


def _load_plugins() -> None:
    """Rules of other packages (entry-point group `judgeaudit.acquisition`), once."""

    def add(name: str, rule: object) -> None:
        plugins.check_callable(rule, "acquisition rule score(ctx, a, b) -> np.ndarray")
        plugins.check_new("acquisition", name, rule, RULES)
        RULES[name] = rule  # type: ignore[assignment]

    plugins.load_group("acquisition", add)


def register(name: str, rule: Rule, *, answer_free: bool = False) -> None:
    """Add a rule under ``name`` (a new rule is one new module plus this call);
    ``answer_free``: its picks never depend on the verdicts (see ANSWER_FREE)."""
    if name in RULES:
        raise ValueError(f"acquisition rule {name!r} is already registered")
    RULES[name] = rule
    if answer_free:
        ANSWER_FREE.add(name)


__all__ = ["ANSWER_FREE", "RULES", "AcquisitionContext", "Rule", "answer_free", "get_rule",
           "register", "rule_names"]
