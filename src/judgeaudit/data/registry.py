"""Dataset loaders registered by spec kind (`jsonl`, `llmbar`, `builtin`, ...).

A loader is `fn(name: str, params: dict[str, str]) -> list[Item]`; `load("kind:name?k=v")`
dispatches on the kind. Loaders raise `DataError` naming file, line and field on bad input.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path

from judgeaudit import plugins
from judgeaudit.data.schema import Item
from judgeaudit.spec import Spec, parse_spec
from judgeaudit.textfile import data_suffix

Loader = Callable[[str, dict[str, str]], list[Item]]

_LOADERS: dict[str, Loader] = {}
_NOTES: ContextVar[list[str] | None] = ContextVar("judgeaudit_data_notes", default=None)
log = logging.getLogger("judgeaudit.data")


def left_out(message: str) -> None:
    """A loader left records of its file out (no majority label, a field missing): warn, and
    hand the message to the run that loads (`load_noted`), which records it in its results.
    Said only in a debug log before, such records were counted nowhere."""
    notes = _NOTES.get()
    if notes is not None:  # the run prints and records it
        notes.append(message)
        log.info("%s", message)
    else:
        log.warning("%s", message)


def load_noted(spec: str | Spec) -> tuple[list[Item], list[str]]:
    """`load`, with what the loader left out of the file (`left_out`), one line each."""
    notes: list[str] = []
    token = _NOTES.set(notes)
    try:
        return load(spec), notes
    finally:
        _NOTES.reset(token)
_BUILTIN = {
    "builtin": "judgeaudit.data.builtin",
    "jsonl": "judgeaudit.data.loaders.jsonl",
    "llmbar": "judgeaudit.data.loaders.llmbar",
    "pandalm": "judgeaudit.data.loaders.pandalm",
    "mtbench": "judgeaudit.data.loaders.mtbench",
    "judgebench": "judgeaudit.data.loaders.judgebench",
    "hf": "judgeaudit.data.loaders.hf",
    "calm": "judgeaudit.data.loaders.calm",
    "evalbiasbench": "judgeaudit.data.loaders.evalbiasbench",
    "prometheus": "judgeaudit.data.loaders.prometheus",
    "summeval": "judgeaudit.data.loaders.summeval",
    "preference": "judgeaudit.data.loaders.preference",
}


class DataError(ValueError):
    """Bad input data: the message names the file, the line (or record) and the field."""

    def __init__(self, source: str, where: str | int | None, problem: str):
        loc = source if where is None else f"{source}:{where}"
        super().__init__(f"{loc}: {problem}")
        self.source, self.where, self.problem = source, where, problem


def register_loader(kind: str) -> Callable[[Loader], Loader]:
    def deco(fn: Loader) -> Loader:
        _LOADERS[kind] = fn
        return fn

    return deco


def available() -> list[str]:
    _load_plugins()
    return sorted(set(_LOADERS) | set(_BUILTIN))


def _load_plugins() -> None:
    """Loaders of other packages (entry-point group `judgeaudit.data`), once."""

    def add(kind: str, fn: object) -> None:
        plugins.check_callable(fn, "data loader fn(name, params) -> list[Item]")
        plugins.check_new("data", kind, fn, _LOADERS, _BUILTIN)
        _LOADERS[kind] = fn  # type: ignore[assignment]

    plugins.load_group("data", add)


def load(spec: str | Spec) -> list[Item]:
    """Load a dataset from a SPEC such as `builtin:facts` or `llmbar:../shared/data/llmbar`.

    Common parameters, applied after loading: `limit=N` (first N items), `seed` used by
    loaders that shuffle.
    """
    try:
        sp = parse_spec(spec) if isinstance(spec, str) else spec
    except ValueError as exc:
        raise ValueError(_path_hint(str(spec)) or str(exc)) from None
    if sp.kind not in _LOADERS and sp.kind in _BUILTIN:
        importlib.import_module(_BUILTIN[sp.kind])
    if sp.kind not in _LOADERS:
        _load_plugins()
    if sp.kind not in _LOADERS:
        # the spec named here: callers add "data SPEC: " only when the message lacks the
        # spec, and "x" is in "unknown data kind 'x'" (so "x" went unprefixed, "a:b" not)
        raise ValueError(_path_hint(str(spec)) or (
            f"data {str(spec)!r}: unknown data kind {sp.kind!r}; known: "
            f"{', '.join(available())}"
            f"{plugins.unknown_suffix('data', sp.kind)}"))
    limit = _limit(str(sp), sp.params.get("limit"))
    items = _LOADERS[sp.kind](sp.name, dict(sp.params))
    if limit is not None:
        items = items[:limit]
    from judgeaudit.data.loaders._common import nonfinite_field, same_id_note

    first: dict[str, int] = {}
    for n, it in enumerate(items, start=1):
        if it.id in first:
            raise DataError(str(sp), None, f"duplicate item id {it.id!r} (items {first[it.id]} "
                            f"and {n} of {len(items)}); ids must be unique"
                            f"{same_id_note(it.id)}")
        first[it.id] = n
        # a gold score or quality of NaN or inf (a CSV cell "nan", a loader of another
        # package) failed only after the judging, in the statistics
        bad = nonfinite_field({k: getattr(it, k, None) for k in ("score", "quality")})
        if bad is not None:
            raise DataError(str(sp), f"item {n} (id {it.id!r})", bad)
    return items


def _path_hint(text: str) -> str | None:
    """What to give instead when a data SPEC is a bare path (`--data items.jsonl`); None when
    it does not look like one."""
    bare = text.strip()
    if not bare:
        return None  # "" is no path (Path("") is the working directory)
    kind, colon, rest = bare.partition(":")
    if colon and kind.lower() in ("csv", "json", "parquet", "tsv") and rest:
        bare = rest  # `csv:table.csv`: a file format given as the kind
    elif colon and len(kind) > 1 and kind.isidentifier():
        return None  # `jsnl:items.jsonl`: a kind misspelt, not a path (said "give jsonl:jsnl:")
    # `.jsonl.gz`, `ITEMS.JSONL`: the format's suffix, lower case, past a compression one
    # (a .gz one said "kind must be a word")
    path, suffix = Path(bare), data_suffix(bare)
    if suffix == ".jsonl":
        return (f"{text!r} is a file path, not a data SPEC: give jsonl:{bare} (our fields) or "
                f"hf:{bare} (other column names: response_a/response_b, chosen/rejected, ...)")
    if suffix in (".csv", ".tsv", ".json", ".parquet"):
        return (f"{text!r} is a file path, not a data SPEC: give hf:{bare} (a table with "
                "prompt, response_1/response_2 or response_a/response_b or chosen/rejected, "
                "and label columns)")
    if path.is_dir():
        return (f"{text!r} is a directory, not a data SPEC: give KIND:{bare} with the kind of "
                f"data it holds; known: {', '.join(available())}")
    return None


def _limit(source: str, raw: str | None) -> int | None:
    """The `limit` parameter: None when absent, else an integer >= 1."""
    if raw is None:
        return None
    try:
        n = int(raw.strip())
    except ValueError:
        n = 0
    if n < 1:
        raise DataError(source, None, f"parameter 'limit': expected an integer >= 1, "
                        f"got {raw!r}")
    return n
