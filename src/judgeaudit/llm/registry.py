"""Providers registered by name; each module imports its SDK lazily inside the class."""

from __future__ import annotations

import importlib

from judgeaudit.llm.base import Provider

_REGISTRY: dict[str, type[Provider]] = {}
# Built-in providers live in modules named after them; importing one registers it.
_BUILTIN = {
    "openai": "judgeaudit.llm.providers.openai",
    "anthropic": "judgeaudit.llm.providers.anthropic",
    "local": "judgeaudit.llm.providers.local",
    "replay": "judgeaudit.llm.providers.replay",
    "sim": "judgeaudit.llm.providers.sim",
    "simhubj": "judgeaudit.llm.providers.simhubj",
}


def register(cls: type[Provider]) -> type[Provider]:
    """Class decorator: make a provider available by its `name`."""
    _REGISTRY[cls.name] = cls
    return cls


def provider_class(name: str) -> type[Provider]:
    if name not in _REGISTRY and name in _BUILTIN:
        importlib.import_module(_BUILTIN[name])
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(set(_REGISTRY) | set(_BUILTIN)))
        raise ValueError(f"unknown provider {name!r}; known providers: {known}") from None


def available() -> list[str]:
    return sorted(set(_REGISTRY) | set(_BUILTIN))


def make_provider(name: str, model: str, params: dict[str, str] | None = None) -> Provider:
    return provider_class(name)(model, params)
