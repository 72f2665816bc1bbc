"""judgeaudit: audit LLM judges for bias, measure it, and correct for it."""

__version__ = "0.1.0"
