"""Are two audit results.json files the same run's results? Byte-for-byte after dropping the
timing fields (`seconds`, `started` and any other key naming a time or a duration), so a
memory change can show that it changed no number, verdict, count or example.

    python benchmarks/compare_audit_results.py OLD/results.json NEW/results.json

Exit 0 and "identical" when they agree; exit 1 listing the first differing paths otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

# Keys whose values are wall-clock facts of one run, not results.
TIMING_KEYS = frozenset({"seconds", "started", "finished", "elapsed", "elapsed_s",
                         "timestamp", "wall_seconds"})


def strip_timing(doc: Any) -> Any:
    """`doc` without the timing keys, at any depth."""
    if isinstance(doc, dict):
        return {k: strip_timing(v) for k, v in doc.items() if k not in TIMING_KEYS}
    if isinstance(doc, list):
        return [strip_timing(v) for v in doc]
    return doc


def canonical(path: Path) -> str:
    """The results file as text after the timing keys are dropped (key order kept: the
    comparison is of the file as written, not of a re-sorted copy)."""
    return json.dumps(strip_timing(json.loads(path.read_text(encoding="utf-8"))),
                      ensure_ascii=False, indent=1)


def differences(a: Any, b: Any, where: str = "", limit: int = 10) -> list[str]:
    """Up to `limit` JSON paths where `a` and `b` differ."""
    out: list[str] = []
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            out.append(f"{where or '/'}: keys {sorted(set(a) ^ set(b)) or 'in another order'}")
        for k in a:
            if k in b and len(out) < limit:
                out += differences(a[k], b[k], f"{where}/{k}", limit - len(out))
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} vs {len(b)} entries")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if len(out) >= limit:
                break
            out += differences(x, y, f"{where}[{i}]", limit - len(out))
    elif a != b or type(a) is not type(b):
        out.append(f"{where}: {a!r:.80} vs {b!r:.80}")
    return out[:limit]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("old", type=Path, help="results.json of the old tree")
    ap.add_argument("new", type=Path, help="results.json of the new tree")
    args = ap.parse_args(argv)
    a, b = canonical(args.old), canonical(args.new)
    if a == b:
        print(f"identical (timing fields {', '.join(sorted(TIMING_KEYS))} left out): "
              f"{args.old} == {args.new}")
        return 0
    diffs = differences(json.loads(a), json.loads(b))
    print(f"DIFFERENT: {args.old} vs {args.new}")
    for d in diffs:
        print(f"  {d}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
