"""Bias injections for judge audits: deterministic, seeded template perturbations with a
small library of phrasings per bias, an LLM rewriter with Likert intensity criteria, and an
answer-preservation check on every result.

    from judgeaudit.perturb import perturb_items, available, render_order
    results = perturb_items(items, "authority", target="worse", seed=0)
    kept = [r.item for r in results if r.preserved]   # count the rest as dropped
    # r.not_applicable: the text already had the cue (or cannot take it), nothing changed

Items whose text names a response by its presented letter (bandwagon; injection with
kind="letter") carry letter slots: call `render_order(item, order)` before judging each
presentation order (`needs_order(item)` says whether that is needed).
"""

from judgeaudit.perturb.base import (
    Edit,
    NotApplicable,
    Option,
    Perturbation,
    PerturbError,
    PerturbResult,
    Side,
    Target,
    available,
    get,
    item_rng,
    needs_order,
    perturb_items,
    perturb_pointwise,
    register_perturbation,
    render_order,
    resolve_target,
    slot,
)
from judgeaudit.perturb.preserve import answer_preserved, final_answer_kept, words_preserved

__all__ = [
    "Edit", "NotApplicable", "Option", "PerturbError", "PerturbResult", "Perturbation", "Side",
    "Target",
    "answer_preserved", "available", "final_answer_kept", "get", "item_rng", "needs_order",
    "perturb_items", "perturb_pointwise", "register_perturbation", "render_order",
    "resolve_target", "slot", "words_preserved",
]
