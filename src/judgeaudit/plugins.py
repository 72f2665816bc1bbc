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

A plugin that loaded but fails at run time (its loader, provider or probe raises) is named
too: `blame` finds the plugin whose module raised in a traceback, so the CLI says "plugin
DIST (GROUP entry point NAME) failed: ..." rather than "a bug in judgeaudit". A data loader
that returns something other than a list of items is refused with a ValueError naming the
plugin and what was expected (`checked_loader`).
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from types import TracebackType
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


@dataclass(frozen=True)
class Loaded:
    """A plugin object that was registered: where it came from, and the modules that are
    its code (the top-level package of its entry point's module and of the object's own)."""

    group: str
    name: str
    value: str
    dist: str  # "NAME VERSION", or "unknown distribution"
    roots: frozenset[str]
    files: frozenset[str] = frozenset()  # its distribution's .py files, resolved
    codes: frozenset[Any] = frozenset()  # the code objects of the object itself


    def __str__(self) -> str:
        return f"{self.dist} ({self.group} entry point {self.name!r} = {self.value!r})"


_registered: list[Loaded] = []


def _dist_name(ep: EntryPoint) -> str:
    dist = getattr(ep, "dist", None)
    return f"{dist.name} {dist.version}" if dist is not None else "unknown distribution"


def _where(ep: EntryPoint) -> str:
    return f"entry point {ep.name!r} = {ep.value!r} in group {ep.group!r} (from {_dist_name(ep)})"


def _loaded_record(ep: EntryPoint, obj: Any) -> Loaded:
    roots = {m.split(".")[0] for m in (getattr(ep, "module", None) or ep.value.split(":")[0],
                                       getattr(obj, "__module__", None)) if m}
    roots.discard("judgeaudit")  # our own code is never a plugin's
    files: set[str] = set()
    dist = getattr(ep, "dist", None)
    try:
        for f in (dist.files or []) if dist is not None else []:
            if str(f).endswith(".py"):
                files.add(os.path.realpath(str(dist.locate_file(f))))
    except Exception:  # noqa: BLE001 - odd metadata: the module roots still name it
        files.clear()
    return Loaded(ep.group, ep.name, ep.value, _dist_name(ep), frozenset(roots),
                  frozenset(files), frozenset(_codes(obj)))


def _codes(obj: Any) -> set[Any]:
    """The code objects that are `obj`'s own: a function's, or the methods' of a class and
    of its bases outside judgeaudit (a probe's `run`, a provider's `generate`)."""
    out: set[Any] = set()
    fn = getattr(obj, "__wrapped__", obj)
    if hasattr(fn, "__code__"):
        out.add(fn.__code__)
    if isinstance(obj, type):
        for klass in obj.__mro__:
            if str(getattr(klass, "__module__", "")).startswith(("judgeaudit", "builtins")):
                continue
            for v in vars(klass).values():
                f = getattr(v, "__func__", v)  # staticmethod, classmethod
                if hasattr(f, "__code__"):
                    out.add(f.__code__)
    return out


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
                record = _loaded_record(ep, obj)
                if kind == "data" and callable(obj):
                    obj = checked_loader(obj, record)
                register(ep.name, obj)
                _registered.append(record)
            except Exception as exc:  # any import-time error of foreign code
                msg = f"plugin {_where(ep)} failed to load: {type(exc).__name__}: {exc}"
                failures[ep.name] = msg
                log.warning("%s", msg)


class PluginError(ValueError):
    """A plugin broke its contract (a data loader returned no list of items): bad input to
    the run, exit 2, naming the plugin and what was expected."""


def checked_loader(fn: Callable[..., Any], who: Loaded | str) -> Callable[..., Any]:
    """A data loader plugin held to its contract: `fn(name, params)` must return a list (or
    tuple) of judgeaudit items; anything else is a `PluginError` naming the plugin, what it
    returned and what was expected (it failed later, in our code, as "a bug in
    judgeaudit")."""

    @functools.wraps(fn)
    def load(name: str, params: dict[str, str]) -> list[Any]:
        from judgeaudit.data.schema import PairwiseItem, PointwiseItem

        got = fn(name, params)
        wanted = ("a data loader must return a list of judgeaudit items "
                  "(judgeaudit.data.schema.PairwiseItem or PointwiseItem)")
        if not isinstance(got, list | tuple):
            raise PluginError(f"plugin {who} returned {_kind_of(got)}; {wanted}")
        for i, it in enumerate(got, start=1):
            if not isinstance(it, PairwiseItem | PointwiseItem):
                raise PluginError(f"plugin {who} returned a {type(got).__name__} whose item "
                                  f"{i} is {_kind_of(it)}; {wanted}")
        return list(got)

    return load


def _kind_of(x: Any) -> str:
    name = type(x).__name__
    return "None" if x is None else f"{'an' if name[:1].lower() in 'aeiou' else 'a'} {name}"


def loaded() -> list[Loaded]:
    """The plugin objects registered so far, in load order."""
    with _lock:
        return list(_registered)


def _frame_module(frame: Any) -> str:
    return str(frame.f_globals.get("__name__") or "")


def _owners(frame: Any, plugins: Iterable[Loaded]) -> list[Loaded]:
    """The plugins whose code `frame` runs (several when they share a module)."""
    root = _frame_module(frame).split(".")[0]
    path = os.path.realpath(frame.f_code.co_filename)
    return [p for p in plugins if root in p.roots or path in p.files]


def blame(exc: BaseException) -> Loaded | None:
    """The plugin whose code raised `exc`: the innermost frame of its traceback that is a
    plugin's or judgeaudit's own decides (frames of other libraries, e.g. numpy called by
    either, are passed over); None when it is judgeaudit's, or no plugin was loaded."""
    plugins = loaded()
    if not plugins:
        return None
    frames = []
    tb: TracebackType | None = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for i in range(len(frames) - 1, -1, -1):
        who = _owners(frames[i], plugins)
        if who:  # of several in one module: the one whose own function is on the stack
            for frame in reversed(frames[:i + 1]):
                mine = [p for p in who if frame.f_code in p.codes]
                if mine:
                    return mine[0]
            return who[0]
        module = _frame_module(frames[i])
        if module == "judgeaudit" or module.startswith("judgeaudit."):
            return None
    return None


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


def unknown_suffixes(kind: str, names: Iterable[str]) -> str:
    """`unknown_suffix` of each of several names ("unknown rule(s) a, b; ...")."""
    return "".join(unknown_suffix(kind, n) for n in names)


def check_new(kind: str, name: str, obj: Any, registered: Mapping[str, Any],
              builtin: Collection[str] = ()) -> None:
    """Refuse a plugin whose name is taken by a built-in or another object: a plugin never
    replaces one silently. (A plugin module that registered itself on import, with the
    registry's own decorator, is the same object and passes.)"""
    own = getattr(obj, "__wrapped__", obj)  # a data loader held to its contract
    if name in builtin or (name in registered and registered[name] not in (obj, own)):
        article = "an" if kind[:1].lower() in "aeiou" else "a"
        raise ValueError(f"name {name!r} is already registered; {article} {kind} plugin "
                         "cannot replace it")


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


__all__ = ["GROUPS", "Loaded", "PluginError", "Register", "blame", "check_callable",
           "check_named_class", "check_new", "checked_loader", "failure", "failures",
           "load_group", "loaded", "unknown_suffix", "unknown_suffixes"]
