"""Arrows between packages point one way (DESIGN.md): a module may import only the judgeaudit
packages its package depends on; nothing imports the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "judgeaudit"
ALL = {"data", "llm", "judges", "perturb", "stats", "audit", "hubj", "rank", "report",
       "scoring"}
ALLOWED = {
    "data": set(), "stats": set(), "llm": set(), "report": set(),
    "judges": {"llm", "data"},
    "perturb": {"llm", "data"},
    # the run rule is judgeaudit.outcome (a neutral module), no longer report.outcome
    "rank": {"stats", "judges", "data", "llm"},
    "audit": ALL - {"audit", "report"},  # compare reads results via results_file
    "hubj": ALL - {"hubj", "report"},
    "scoring": ALL - {"scoring"},
    "cli": ALL,
}


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for n in names:
            parts = n.split(".")
            if parts[0] == "judgeaudit" and len(parts) > 1:
                out.add(parts[1])
    return out


@pytest.mark.parametrize("package", sorted(p.name for p in SRC.iterdir()
                                           if p.is_dir() and (p / "__init__.py").exists()))
def test_package_imports_only_what_it_depends_on(package):
    allowed = ALLOWED.get(package)
    assert allowed is not None, f"package {package!r} is not in the layering table"
    bad = []
    for f in (SRC / package).rglob("*.py"):
        for dep in _imports(f) - {package} - {"__version__"}:
            if dep in ALL | {"cli"} and dep not in allowed:
                bad.append(f"{f.relative_to(SRC)} imports judgeaudit.{dep}")
    assert not bad, "\n".join(bad)


NEUTRAL = ["spec", "files", "textfile", "outcome", "results_file", "results_shape", "methods"]


@pytest.mark.parametrize("module", NEUTRAL)
def test_neutral_modules_import_nothing_of_ours(module):
    """spec.py, files.py, textfile.py, outcome.py (the run rule and exit codes),
    results_file.py (results.json) and results_shape.py (its sections' types) serve every
    package, so they import none of its packages,
    only one another."""
    assert _imports(SRC / f"{module}.py") <= set(NEUTRAL) - {module}
