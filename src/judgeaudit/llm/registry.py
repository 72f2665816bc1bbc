"""Providers registered by name; each module imports its SDK lazily inside the class."""

from __future__ import annotations

import importlib

from judgeaudit import plugins
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
    if name not in _REGISTRY:
        _load_plugins()
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(available())
        raise ValueError(f"unknown provider {name!r}; known providers: {known}"
                         f"{plugins.unknown_suffix('providers', name)}") from None


def available() -> list[str]:
    _load_plugins()
    return sorted(set(_REGISTRY) | set(_BUILTIN))


def _load_plugins() -> None:
    """Providers of other packages (entry-point group `judgeaudit.providers`), once."""

    def add(name: str, cls: object) -> None:
        plugins.check_named_class(name, cls, Provider, "provider")
        plugins.check_new("provider", name, cls, _REGISTRY, _BUILTIN)
        _REGISTRY[name] = cls  # type: ignore[assignment]

    plugins.load_group("providers", add)


def make_provider(name: str, model: str, params: dict[str, str] | None = None) -> Provider:
    return provider_class(name)(model, params)
