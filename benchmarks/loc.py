"""Issue 14's "net lines of code go down": the commands' plumbing before the refactor against
now, in physical lines (`wc -l`) and in source lines (no blank, comment or docstring line).

Before (734752f, the last commit before issue 14): cli/ and report/results.py, where every
command's run loop, options, pipeline glue and writer lived. Now: cli/ without the commands
that are new capabilities (compare, selfcheck, schema; plan_cmd is issue 15's), plus where
that plumbing went (commands, session, config, result, rank/run, rank/run_eval,
results_file (report/results until ef2109e; that path now only re-exports it), and files,
the atomic writer report/results held before). The rest of src/
is counted too, for context.

    python benchmarks/loc.py            # writes benchmarks/results/loc.json
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASE = "734752f"
PKG = "src/judgeaudit/"
NEW_COMMANDS = ("cli/compare_cmd.py", "cli/selfcheck_cmd.py", "cli/schema_cmd.py",
                "cli/plan_cmd.py")
MOVED_TO = ("commands.py", "session.py", "config.py", "result.py", "rank/run.py",
            "rank/run_eval.py", "results_file.py", "report/results.py", "files.py")


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout


def count(src: str) -> tuple[int, int]:
    """(physical lines, source lines): source lines leave out blank lines, comment lines and
    the lines of module, class and function docstrings."""
    doc: set[int] = set()
    for node in ast.walk(ast.parse(src)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                doc.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = src.splitlines()
    code = sum(1 for i, line in enumerate(lines, 1)
               if line.strip() and not line.strip().startswith("#") and i not in doc)
    return len(lines), code


def tally(rev: str | None, files: list[str]) -> dict[str, int]:
    """Lines of `files` (paths under the package) at `rev` (None: the working tree)."""
    phys = code = 0
    for f in files:
        src = (ROOT / PKG / f).read_text() if rev is None else _git("show", f"{rev}:{PKG}{f}")
        p, c = count(src)
        phys, code = phys + p, code + c
    return {"files": len(files), "lines": phys, "source_lines": code}


def py_files(rev: str | None, under: str = "") -> list[str]:
    if rev is None:
        return sorted(str(p.relative_to(ROOT / PKG)) for p in (ROOT / PKG / under).rglob("*.py"))
    out = _git("ls-tree", "-r", "--name-only", rev, PKG + under)
    return sorted(p.removeprefix(PKG) for p in out.split() if p.endswith(".py"))


def main() -> None:
    before = [*py_files(BASE, "cli"), "report/results.py"]
    now = [f for f in py_files(None, "cli") if f not in NEW_COMMANDS] + list(MOVED_TO)
    res = {
        "base": BASE, "head": _git("rev-parse", "--short", "HEAD").strip(),
        "plumbing_before": tally(BASE, before), "plumbing_now": tally(None, now),
        "src_before": tally(BASE, py_files(BASE)), "src_now": tally(None, py_files(None)),
        "plumbing_files_now": now,
    }
    for key in ("lines", "source_lines"):
        res[f"plumbing_change_{key}"] = res["plumbing_now"][key] - res["plumbing_before"][key]
    out = ROOT / "benchmarks/results/loc.json"
    out.write_text(json.dumps(res, indent=1) + "\n")
    json.dump({k: v for k, v in res.items() if k != "plumbing_files_now"}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
