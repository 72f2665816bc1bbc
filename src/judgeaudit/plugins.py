"""Plugins: other packages add providers, probes, data loaders and acquisition rules through
entry points, so a new one needs no edit here.

A plugin package declares, in its pyproject.toml::

    [project.entry-points."judgeaudit.providers"]
    myjudge = "mypkg.judge:MyProvider"        # a judgeaudit.llm.Provider subclass
    [project.entry-points."judgeaudit.probes"]
    myprobe = "mypkg.probe:MyProbe"           # a judgeaudit.audit.probe.Probe subclass
    [project.entry-points."judgeaudit.data"]
    mydata = "mypkg.data:load"                # fn(name, params) -> list[Item]
    [project.entry-points."judgeaudit.acquisition"]
    myrule = "mypkg.rule:score"               # fn(ctx, a, b) -> np.ndarray

A provider or probe class's `name` must equal its entry point's name (results and caches
record it); a probe with `default = True` joins the default battery. A plugin never replaces
a built-in of the same name.

Each registry asks for its group lazily, once per process: on the first lookup of a name it
does not know and when it lists its names (so built-in runs never import a plugin). The
entry point's name is the name the object is registered under. A plugin that fails to import
or is not the right kind of object is skipped with a warning naming the distribution, the
entry point and the error; the built-ins keep working, and looking up that name says why it
is missing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Collection, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

log = logging.getLogger("judgeaudit.plugins")

GROUPS: dict[str, str] = {
    "providers": "judgeaudit.providers",
    "probes": "judgeaudit.probes",
    "data": "judgeaudit.data",
    "acquisition": "judgeaudit.acquisition",
}

Register = Callable[[str, Any], None]
"""A registry's hook: add `obj` under `name`; raise TypeError/ValueError to refuse it."""

_loaded: set[str] = set()
_failures: dict[str, dict[str, str]] = {}  # group -> entry-point name -> message
_lock = threading.RLock()


def _where(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    who = f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"
    return f"entry point {ep.name!r} = {ep.value!r} in group {ep.group!r} (from {who})"


def load_group(kind: str, register: Register) -> None:
    """Load the entry points of group `kind` (a key of GROUPS) once and hand each object to
    `register` under its entry-point name; a broken one is logged and remembered, not
    raised, so one bad package cannot take the built-ins down with it."""
    group = GROUPS[kind]
    with _lock:
        if group in _loaded:
            return
        _loaded.add(group)
        failures = _failures.setdefault(group, {})
        try:
            eps = sorted(entry_points(group=group), key=lambda e: e.name)
        except Exception as exc:  # a corrupt installed distribution's metadata
            log.warning("plugins: cannot read entry points of group %r: %s: %s", group,
                        type(exc).__name__, exc)
            return
        for ep in eps:
            try:
                obj = ep.load()
                register(ep.name, obj)
            except Exception as exc:  # any import-time error of foreign code
                msg = f"plugin {_where(ep)} failed to load: {type(exc).__name__}: {exc}"
                failures[ep.name] = msg
                log.warning("%s", msg)


def failure(kind: str, name: str) -> str | None:
    """Why plugin `name` of group `kind` is not registered, if it was found but failed."""
    return _failures.get(GROUPS[kind], {}).get(name)


def failures(kind: str | None = None) -> list[str]:
    """Every failure message so far (of one group when `kind` is given)."""
    groups = [GROUPS[kind]] if kind else list(GROUPS.values())
    return [m for g in groups for m in _failures.get(g, {}).values()]


def unknown_suffix(kind: str, name: str) -> str:
    """Text to append to an "unknown NAME" error when NAME is a broken plugin."""
    why = failure(kind, name)
    return f" ({why})" if why else ""


def check_new(kind: str, name: str, obj: Any, registered: Mapping[str, Any],
              builtin: Collection[str] = ()) -> None:
    """Refuse a plugin whose name is taken by a built-in or another object: a plugin never
    replaces one silently. (A plugin module that registered itself on import, with the
    registry's own decorator, is the same object and passes.)"""
    if name in builtin or (name in registered and registered[name] is not obj):
        raise ValueError(f"name {name!r} is already registered; a {kind} plugin cannot "
                         "replace it")


def check_named_class(name: str, obj: Any, base: type, what: str) -> None:
    """A provider or probe plugin must be a `base` subclass whose `name` is the entry point's
    name (results and caches record the class's name)."""
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise TypeError(f"expected a subclass of {base.__module__}.{base.__qualname__}, got "
                        f"{obj!r}")
    own = getattr(obj, "name", None)
    if own != name:
        raise ValueError(f"the {what} class's name is {own!r}; it must equal the entry "
                         f"point's name {name!r}")


def check_callable(obj: Any, what: str) -> None:
    if not callable(obj):
        raise TypeError(f"expected a callable {what}, got {type(obj).__name__} {obj!r}")


def _reset() -> None:
    """Forget what was loaded (tests)."""
    with _lock:
        _loaded.clear()
        _failures.clear()


__all__ = ["GROUPS", "Register", "check_callable", "check_named_class", "check_new",
           "failure", "failures", "load_group", "unknown_suffix"]
