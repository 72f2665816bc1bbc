"""The shape of a results.json read back (`judgeaudit report`, `judgeaudit compare`): each
section judgeaudit writes as an object or a list must be one. A file edited by hand with
`"probes": "x"` ended `report --json` with "a bug ... traceback above" (exit 3), rendered an
empty report without --json (exit 0), and `compare` called it "not an audit result (command
'audit')". It is bad input: exit 2, naming the file and the field (`check_shape`). A neutral
module (it imports none of our packages): the report and the audit's compare both read
results."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

# what each type is called in a message (JSON's words, not Python's)
_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a whole number",
          float: "a number", bool: "true or false", type(None): "null"}

OBJ, LIST, TEXT = (dict,), (list,), (str,)
NUM = (int, float)
OPT_OBJ, OPT_LIST, OPT_TEXT = (dict, type(None)), (list, type(None)), (str, type(None))
OPT_INT, OPT_NUM = (int, type(None)), (int, float, type(None))

# every command: the sections the outcome rule and the summary read
COMMON: dict[str, tuple[type, ...]] = {
    "command": TEXT, "run": OBJ, "calls": OBJ, "notes": LIST, "warnings": LIST,
    "gate": OPT_OBJ, "version": OPT_TEXT, "judge": OPT_TEXT, "seconds": OPT_NUM,
}
# per command: its sections, then what each of its probes holds
SECTIONS: dict[str, dict[str, tuple[type, ...]]] = {
    "audit": {"probes": OBJ, "summary": OBJ, "baseline": OBJ, "items": OBJ, "dropped": OBJ,
              "panel": OPT_OBJ, "adaptive": OPT_OBJ, "n_items": OPT_INT, "template": OBJ,
              "prompt_hashes": OBJ},
    "compare": {"probes": OBJ, "summary": OBJ, "runs": OBJ, "items": OPT_OBJ,
                "only_in_a": LIST, "only_in_b": LIST, "judge_differences": LIST},
}
PROBE: dict[str, dict[str, tuple[type, ...]]] = {
    "audit": {"effect": OPT_OBJ, "n": OPT_INT, "verdict": OPT_TEXT, "notes": LIST,
              "dropped": OBJ, "rates": OPT_OBJ, "flag": OPT_OBJ, "per_item": OPT_OBJ,
              "n_invalid": OPT_INT, "examples": OPT_LIST, "plot": OPT_OBJ,
              "mde_detail": OPT_OBJ, "adaptive": OPT_OBJ, "q": OPT_NUM, "p": OPT_NUM,
              "title": OPT_TEXT},
    "compare": {"a": OBJ, "b": OBJ, "change": OPT_OBJ, "items": OBJ, "notes": LIST,
                "verdict": OPT_TEXT, "pairing": OPT_TEXT, "q": OPT_NUM, "p": OPT_NUM},
}
SUMMARY_LISTS = ("biased", "not_biased", "underpowered", "not_run", "run_failed", "improved",
                 "worse", "no_change", "paired", "unpaired")


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return _NAMES[bool]
    return _NAMES.get(type(value), type(value).__name__)


def _fits(value: Any, types: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # JSON's true is no number
        return bool in types
    return isinstance(value, types)


def _want(types: tuple[type, ...]) -> str:
    number = int in types and float in types
    names = ["a number" if number and t in (int, float) else _NAMES.get(t, t.__name__)
             for t in types]
    return " or ".join(dict.fromkeys(names))


def shape_error(doc: Mapping[str, Any]) -> str | None:
    """The first field of `doc` whose type is not the one judgeaudit writes, as "field
    'probes' is a string, expected an object"; None when every checked field fits."""

    def check(where: str, section: Mapping[str, Any],
              wanted: Mapping[str, tuple[type, ...]]) -> str | None:
        for key, types in wanted.items():
            if key in section and not _fits(section[key], types):
                return (f"field '{where}{key}' is {_kind(section[key])}, expected "
                        f"{_want(types)}")
        return None

    command = doc.get("command")
    if (err := check("", doc, COMMON)) is not None:
        return err
    if command not in SECTIONS and "probes" in doc:  # an audit from before "command"
        command = "audit"
    if command in SECTIONS and (err := check("", doc, SECTIONS[command])) is not None:
        return err
    summary = doc.get("summary")
    if isinstance(summary, dict):
        lists = {k: OPT_LIST for k in SUMMARY_LISTS}
        if (err := check("summary.", summary, lists)) is not None:
            return err
    probes = doc.get("probes")
    if command in PROBE and isinstance(probes, dict):
        for name, p in probes.items():
            if not isinstance(p, dict):
                return f"field 'probes.{name}' is {_kind(p)}, expected an object"
            if (err := check(f"probes.{name}.", p, PROBE[command])) is not None:
                return err
    runs = doc.get("runs")
    if command == "compare" and isinstance(runs, dict):
        for side in ("a", "b"):
            if side in runs and not isinstance(runs[side], dict):
                return f"field 'runs.{side}' is {_kind(runs[side])}, expected an object"
    return None


def check_shape(doc: Mapping[str, Any], path: str | Path) -> None:
    """ValueError (bad input, exit 2) naming `path` and the field when a section of `doc`
    has a type judgeaudit never writes there."""
    err = shape_error(doc)
    if err is not None:
        raise ValueError(f"{path}: {err} (judgeaudit never writes it so: the file was edited "
                         "or damaged; restore it, or re-run the command that wrote it)")


def unreadable(path: str | Path, exc: BaseException) -> ValueError:
    """A results file whose sections passed `check_shape` but that still could not be read
    (a field deeper in it of a type judgeaudit never writes): bad input naming the file."""
    return ValueError(f"{path}: could not be read as the results of judgeaudit "
                      f"({type(exc).__name__}: {exc}); a field in it has a type judgeaudit does "
                      "not write (edited or damaged?). If judgeaudit wrote it as it is, please "
                      "report it (run with -v for the traceback)")
