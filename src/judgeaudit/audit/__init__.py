"""Audits of a judge: `evaluate` (accuracy, consistency, agreement) and the bias battery."""
