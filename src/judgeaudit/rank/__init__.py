"""Bias-aware top-k ranking under a comparison budget: membership probabilities,
acquisition rules, the active loop, the trusted-anchor gate, baselines, simulation and
offline evaluation. Pure numerics; judges are plugged in as oracle callables."""

from judgeaudit.rank.acquisition import RULES, get_rule
from judgeaudit.rank.gate import GateDecision, anchor_gate, trusted_agreement
from judgeaudit.rank.loop import LoopResult, run_active
from judgeaudit.rank.membership import recall_at_k, topk_membership, topk_set

__all__ = [
    "RULES",
    "GateDecision",
    "LoopResult",
    "anchor_gate",
    "get_rule",
    "recall_at_k",
    "run_active",
    "topk_membership",
    "topk_set",
    "trusted_agreement",
]
