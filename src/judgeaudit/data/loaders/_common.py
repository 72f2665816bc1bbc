"""Helpers shared by the loaders: reading files with located errors, parameter checks, and
the seeded, balanced order shuffle for sources that put the better answer first."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from judgeaudit.data.registry import DataError

log = logging.getLogger("judgeaudit.data")

# Parameters every loader accepts: `limit` is applied by registry.load, `seed` is passed
# everywhere by callers that shuffle and is harmless where nothing is shuffled.
COMMON_PARAMS = frozenset({"limit", "seed"})


def check_params(source: str, params: Mapping[str, str], allowed: Iterable[str]) -> None:
    """Refuse unknown parameters: a typo (`subst=`) must not silently load the default set."""
    ok = COMMON_PARAMS | set(allowed)
    bad = sorted(set(params) - ok)
    if bad:
        raise DataError(source, None, f"unknown parameter(s) {', '.join(bad)}; "
                                      f"allowed: {', '.join(sorted(ok))}")


def int_param(source: str, params: Mapping[str, str], key: str, default: int) -> int:
    raw = params.get(key)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise DataError(source, None, f"parameter {key!r}: expected an integer, got {raw!r}")\
            from None


def choice_param(source: str, params: Mapping[str, str], key: str, choices: tuple[str, ...],
                 default: str) -> str:
    val = params.get(key, default) or default
    if val not in choices:
        raise DataError(source, None,
                        f"parameter {key!r}: expected one of {', '.join(choices)}, got {val!r}")
    return val


def existing_path(name: str, kind: str) -> Path:
    """The path a loader was given, or a DataError saying it does not exist."""
    if not name:
        raise DataError(kind, None, f"no path given; expected {kind}:PATH")
    p = Path(name).expanduser()
    if not p.exists():
        raise DataError(str(p), None, "no such file or directory")
    return p


def read_json(path: Path) -> Any:
    """Parse one JSON document; errors name the file, line and column."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise DataError(str(path), None, f"cannot read: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise DataError(str(path), e.lineno, f"invalid JSON at column {e.colno}: {e.msg}")\
            from None


def read_jsonl(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for every non-empty line of a JSON Lines file."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        raise DataError(str(path), None, f"cannot read: {e.strerror or e}") from None
    out: list[tuple[int, dict[str, Any]]] = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise DataError(str(path), lineno, f"invalid JSON at column {e.colno}: {e.msg}")\
                from None
        if not isinstance(obj, dict):
            raise DataError(str(path), lineno,
                            f"expected a JSON object, got {type(obj).__name__}")
        out.append((lineno, obj))
    return out


def text_field(rec: Mapping[str, Any], key: str, source: str, where: str | int,
               *, allow_empty: bool = True, scalars: bool = False) -> str:
    """A required string field of a record, or a DataError naming record and field.
    `scalars=True` reads a JSON true/false/number as its text (a source that stored the
    answer "True" as a boolean)."""
    if key not in rec:
        raise DataError(source, where, f"field {key!r}: missing (required)")
    val = rec[key]
    if scalars and isinstance(val, (bool, int, float)):
        val = str(val)
    if not isinstance(val, str):
        raise DataError(source, where,
                        f"field {key!r}: expected text, got {type(val).__name__}")
    if not allow_empty and not val.strip():
        raise DataError(source, where, f"field {key!r}: empty")
    return val


def balanced_swaps(n: int, seed: int, key: str) -> list[bool]:
    """Which of n items to present swapped: exactly n//2 (or n//2+1 when n is odd) chosen by
    an RNG seeded from (seed, key), so each item is swapped with probability 1/2 and the
    label share is as close to 50/50 as n allows. Derived from the full list before any
    filtering, so the same item keeps its order whatever subset or variant is loaded."""
    rng = random.Random(f"judgeaudit-swap|{key}|{seed}")
    flags = [i < n // 2 for i in range(n)]
    if n % 2:
        flags[-1] = rng.random() < 0.5
    rng.shuffle(flags)
    return flags


def present(first: str, second: str, swap: bool) -> tuple[str, str, int]:
    """(response_1, response_2, label) for a source pair whose FIRST answer is the better."""
    return (second, first, 2) if swap else (first, second, 1)
