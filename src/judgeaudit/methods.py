"""Which methods made a result: `METHODS_VERSION`, stamped in every results.json as `methods`
beside `build` (the package version and, from a git checkout, the commit). Every build wrote
version 0.1.0, so a result of an older build read like a new one: `report` showed its old
intervals under today's method names, and `compare` set old and new numbers side by side
without a word. `notes` says what a reader of an older (or newer) result must know.

A neutral module (it imports nothing of ours at import time): `results_file` stamps with it,
`report` and `compare` read it.

Bump `METHODS_VERSION` when a change moves the numbers of an unchanged run (an interval
method, a test, a recommendation rule), and add a line to `HISTORY` saying what changed."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# The methods this build computes with. 0 is "before the stamp": a results.json without
# `methods` (read as 0 by `results_file.read_results`) was made by an older build.
METHODS_VERSION = 1

# (version, date, what changed in the numbers since the version before). A result stamped
# with an older version was computed without these.
HISTORY: tuple[tuple[int, str, str], ...] = (
    (1, "2026-11-29",
     "the first stamp; results from before it may lack any of the changes of 2026-11-26..29: "
     "intervals named by their method in each estimate (audit effects: the score interval "
     "of a bounded mean and exact intervals where few items moved; scoring-bias shift/MAD: "
     "the farther of Student's t and the studentized bootstrap); scoring-bias's Holm "
     "adjustment over the templates and its recommendation rule (the baseline unless a "
     "template is clearly better); rank-eval's recall as Student's t intervals over the "
     "seeds (was mean +- 1.96 se)"),
)


@functools.cache
def build() -> dict[str, str]:
    """What built this result: the package version and, when judgeaudit runs from a git
    checkout, the commit (read from .git's files, no subprocess; none when there is no
    checkout or it cannot be read). Cached: asked once per process, when results are
    written, never on import."""
    import judgeaudit

    out = {"version": judgeaudit.__version__}
    commit = _git_commit(Path(__file__).resolve().parents[2])
    if commit:
        out["commit"] = commit
    return out


def _git_commit(root: Path) -> str | None:
    """The commit HEAD names in the checkout at `root` (a src layout: root/src/judgeaudit),
    or None: no checkout, or files it cannot read (a result is never refused for it)."""
    try:
        return _read_commit(root)
    except (OSError, ValueError):  # UnicodeDecodeError is a ValueError
        return None


def _read_commit(root: Path) -> str | None:
    """`_git_commit`'s reading: follows a worktree's `gitdir:` file, loose refs and
    packed-refs."""
    if not (root / "pyproject.toml").is_file():
        return None  # installed (site-packages): no checkout of ours above it
    git = root / ".git"
    if git.is_file():  # a worktree: "gitdir: /path/.git/worktrees/name"
        text = git.read_text(encoding="utf-8").strip()
        if not text.startswith("gitdir:"):
            return None
        git = (root / text.removeprefix("gitdir:").strip()).resolve()
    if not git.is_dir():
        return None
    head = (git / "HEAD").read_text(encoding="utf-8").strip()
    if not head.startswith("ref:"):
        return head if _is_sha(head) else None
    ref = head.removeprefix("ref:").strip()
    common = git
    if (git / "commondir").is_file():
        common = (git / (git / "commondir").read_text(encoding="utf-8").strip()).resolve()
    for d in (git, common):
        if (d / ref).is_file():
            sha = (d / ref).read_text(encoding="utf-8").strip()
            return sha if _is_sha(sha) else None
    packed = common / "packed-refs"
    if packed.is_file():
        for line in packed.read_text(encoding="utf-8").splitlines():
            sha, _, name = line.partition(" ")
            if name.strip() == ref and _is_sha(sha):
                return sha
    return None


def _is_sha(s: str) -> bool:
    return len(s) in (40, 64) and all(c in "0123456789abcdef" for c in s)


def stamp(doc: Mapping[str, Any]) -> dict[str, Any]:
    """`doc` with `methods` and `build` after its schema version, where it has none (a
    document read from an older file keeps the 0 `read_results` gave it: re-saving it does
    not make it new)."""
    head = {k: doc[k] for k in ("schema_version",) if k in doc}
    head["methods"] = doc.get("methods", METHODS_VERSION)
    if "build" in doc or head["methods"] == METHODS_VERSION:
        head["build"] = doc.get("build", build())
    return {**head, **{k: v for k, v in doc.items() if k not in head}}


def methods_of(doc: Mapping[str, Any]) -> int | None:
    """The methods version a document was made with: its `methods` (0: before the stamp),
    or None for a document in memory that has not been written yet (today's methods)."""
    if "methods" not in doc:
        return None
    v = doc.get("methods")
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else 0


def _estimates(x: Any) -> Iterator[Mapping[str, Any]]:
    """Every dict in `x` that holds a 95% interval (`ci95`)."""
    stack = [x]
    while stack:
        y = stack.pop()
        if isinstance(y, Mapping):
            if "ci95" in y:
                yield y
            stack.extend(y.values())
        elif isinstance(y, list):
            stack.extend(y)


def _older_parts(doc: Mapping[str, Any]) -> list[str]:
    """What an unstamped document visibly lacks of today's methods, where it can be told."""
    out = []
    command = doc.get("command")
    if command == "scoring-bias" and "multiplicity" not in doc:
        out.append("recommendation made without the Holm correction (it has no Holm section: "
                   "this build recommends a template over the baseline only when it is "
                   "clearly better after Holm's adjustment over the templates)")
    if command == "rank-eval":
        cells = [c for m in (doc.get("recall") or {}).values() if isinstance(m, Mapping)
                 for r in m.values() if isinstance(r, Mapping)
                 for c in r.values() if isinstance(c, Mapping)]
        if cells and not any("ci_method" in c for c in cells):
            out.append("recall intervals from an older method (mean +- 1.96 se over the "
                       "seeds, not this build's Student's t intervals)")
    elif command != "compare":
        ests = list(_estimates({k: v for k, v in doc.items() if k != "items"}))
        if ests and not any("method" in e or "ci_method" in e for e in ests):
            out.append("intervals from an older method (no estimate names its interval "
                       "method; this build's may be wider or narrower)")
    return out


def rerun_hint(doc: Mapping[str, Any]) -> str:
    """The command to re-run a result with this build (free from the cache where the
    prompts are unchanged)."""
    from judgeaudit.spec import public_spec

    command = str(doc.get("command") or "the command")
    bits = [f"{k} {public_spec(str(doc[k]))!r}" for k in ("judge", "oracle", "data", "items")
            if isinstance(doc.get(k), str) and doc.get(k)]
    made = f" ({', '.join(bits)}, its other options as before)" if bits else ""
    return (f"re-run `judgeaudit {command}`{made} with this judgeaudit: the judge's answers "
            "come from the cache, free where the prompts are unchanged")


def notes(doc: Mapping[str, Any]) -> list[str]:
    """What a reader must know about the methods that made `doc`: nothing for one made
    with today's methods (or not yet written); for an older one, that its numbers may come
    from older methods, what visibly differs, and the command to re-run; for a newer one,
    to upgrade."""
    v = methods_of(doc)
    if v is None or v == METHODS_VERSION:
        return []
    if v > METHODS_VERSION:
        return [f"written by a newer judgeaudit (methods version {v}; this build knows up to "
                f"{METHODS_VERSION}); upgrade judgeaudit to read it as it was made: what is "
                "shown here is read with this build's rules, and parts it does not know are "
                "left out"]
    raw = doc.get("methods")
    if v == 0 and raw not in (0, None) or raw is None and "methods" in doc:
        # a stamp that is there but not a whole number (a damaged or hand-edited file):
        # it said "no methods stamp" beside the stamp (review12)
        made = (f"stamped with a methods version that cannot be read (methods: {raw!r:.40}), "
                "so it is taken as made before the stamp")
    elif v == 0:
        made = "made before judgeaudit recorded its methods (no methods stamp)"
    else:
        made = f"made with methods version {v} (this build: {METHODS_VERSION})"
    parts = _older_parts(doc) if v == 0 else []
    what = (" What differs: " + "; ".join(parts) + ".") if parts else ""
    return [f"this result was {made}: its numbers may come from older methods than this "
            f"judgeaudit's.{what} To recompute it, {rerun_hint(doc)}"]


def _said(v: int | None) -> str:
    if v is None or v == METHODS_VERSION:
        return f"this build's methods (version {METHODS_VERSION})"
    return "methods from before the stamp" if v == 0 else f"methods version {v}"


def compare_note(a: Mapping[str, Any], b: Mapping[str, Any]) -> str | None:
    """When audits A and B were made by different methods: a change of method moves the
    effects and intervals as a change of judge does, so it is said beside them."""
    va, vb = methods_of(a), methods_of(b)
    va = METHODS_VERSION if va is None else va
    vb = METHODS_VERSION if vb is None else vb
    if va == vb:
        return None
    return (f"A and B were made by different methods (A: {_said(va)}, B: {_said(vb)}): their "
            "effects and intervals differ by method as well as by judge; re-run the older "
            "audit with this judgeaudit (free from the cache) to compare the judges alone")


__all__ = ["HISTORY", "METHODS_VERSION", "build", "compare_note", "methods_of", "notes",
           "rerun_hint", "stamp"]
