"""The terminal says a template's drop once, before any call (field finding, s44): since
d5a7fa6 evaluate and audit logged it before any call (a "WARNING judgeaudit.commands:" line)
and printed it again with the run's warnings ("warning: ..."); the early line stays, so a
user can stop a paid run, and the end of the run does not repeat it. The real CLI in a child
process, the sim judge with a user template (tests/judges/test_template_item_fields.py's), no
server needed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.judges.test_template_item_fields import OWN_RUBRIC, PAIR, SYSTEM, pairs, points

pytestmark = pytest.mark.usefixtures("no_keys")


def _terminal(tmp_path: Path, *args: str) -> str:
    env = {**os.environ, "JUDGEAUDIT_CACHE": str(tmp_path / "c.sqlite")}
    done = subprocess.run([sys.executable, "-m", "judgeaudit.cli.main", *args, "--no-cache",
                           "--out", str(tmp_path / "out")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return " ".join((done.stdout + done.stderr).split())


def test_evaluate_says_a_score_templates_drop_once(tmp_path):
    tpl = tmp_path / "mine.txt"
    tpl.write_text(SYSTEM + OWN_RUBRIC, encoding="utf-8")
    data = points(tmp_path / "p.jsonl", rubric="Is it polite?")
    text = _terminal(tmp_path, "evaluate", "--judge",
                     f"sim:biased?seed=0&score_template={tpl}", "--data", f"jsonl:{data}")
    said = "drops a rubric (field 'rubric') that 2 of 4 items carry"
    assert text.count(said) == 1, text
    assert f"template '{tpl}' {said}" in text, text
    assert text.index(said) < text.index("ing: 0/"), text  # said before the first call


def test_audit_says_a_pairwise_templates_drop_once(tmp_path):
    tpl = tmp_path / "mine.txt"
    tpl.write_text(SYSTEM + PAIR, encoding="utf-8")
    data = pairs(tmp_path / "pairs.jsonl", reference="Paris")
    text = _terminal(tmp_path, "audit", "--judge", f"sim?seed=0&template={tpl}", "--data",
                     f"jsonl:{data}", "--probes", "position", "--n", "2")
    said = "drops a reference answer (field 'reference') that 3 of 4 items carry"
    assert text.count(said) == 1, text
    assert f"template '{tpl}' {said}" in text, text
    assert text.index(said) < text.index("ing: 0/"), text  # said before the first call
