"""Shared helper for template perturbations that add a sentence before or after a text."""

from __future__ import annotations


def attach(text: str, sentence: str, position: str) -> str:
    """`sentence` as its own paragraph at the start or the end of `text`."""
    body = text.strip()
    if position == "start":
        return f"{sentence}\n\n{body}"
    return f"{body}\n\n{sentence}"


def wrap(text: str, before: str, after: str) -> str:
    parts = [before, text.strip(), after]
    return "\n\n".join(p for p in parts if p)
