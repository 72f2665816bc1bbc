"""What the CLI writes to a stderr that is a file (a CI log): progress lines from every
command, rank too, and every line whole.

A tester's `rank ... 2> rk.err` held 0 bytes at 85 s of a 100 s run (rank drew a rich Live,
which writes nothing off a terminal until the end), and the summary line of an audit was
wrapped at the console's width mid-value ("...; 8.2 " / "s"), so `grep calls:` got a cut
line. Run as a user runs it: a subprocess, stderr redirected to a file, no $COLUMNS."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from judgeaudit.cli import progress

PROGRESS = re.compile(r"^(ranking|auditing): \d+/\d+ \((-|[\d.]+)/s, \d+ s elapsed, eta "
                      r"(-|(at least )?\d+ s)\)(; the total grows as work is planned)?$")


def _run(tmp_path: Path, args: list[str], columns: str | None = None) -> tuple[list[str], dict]:
    """`judgeaudit ARGS --out tmp/out` with stderr to a file: its lines and results.json."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    env["JUDGEAUDIT_CACHE"] = str(tmp_path / "cache.sqlite")
    if columns is not None:
        env["COLUMNS"] = columns
    out = tmp_path / "out"
    err = tmp_path / "stderr.log"
    with err.open("w") as fh:
        proc = subprocess.run([sys.executable, "-m", "judgeaudit", *args, "--out", str(out)],
                              stdout=subprocess.DEVNULL, stderr=fh, env=env, timeout=300)
    text = err.read_text(encoding="utf-8")
    assert proc.returncode == 0, f"{args}: exit {proc.returncode}\n{text}"
    return text.splitlines(), json.loads((out / "results.json").read_text())


RANK = ["rank", "--judge", "sim?length=1&position=0.3", "--items",
        "builtin:controlled?n=16&k=4", "--budget", "60", "--samples", "300"]


def test_rank_logs_progress_lines_when_stderr_is_a_file(tmp_path: Path) -> None:
    lines, _ = _run(tmp_path, RANK)
    bar = [ln for ln in lines if ln.startswith("ranking: ")]
    assert bar, "rank wrote no progress line to a stderr that is a file:\n" + "\n".join(lines)
    # the first as soon as the budget (the total) is known, the last at the end
    assert bar[0].startswith("ranking: 0/60 "), bar
    assert bar[-1].startswith("ranking: 60/60 "), bar
    assert all(PROGRESS.match(ln) for ln in bar), bar


@pytest.mark.parametrize("columns", [None, "60"])
def test_no_line_rank_writes_to_a_file_is_cut(tmp_path: Path, columns: str | None) -> None:
    """Each note (some are 300+ characters), the summary and the progress lines are one
    line each, with or without $COLUMNS; the table's rows are whole rows."""
    lines, doc = _run(tmp_path, RANK, columns)
    assert doc["notes"], "the run was to give notes (long lines) to check"
    for note in doc["notes"]:
        assert f"note: {note}" in lines, f"note cut or missing: {note!r}\n" + "\n".join(lines)
    summary = [ln for ln in lines if "calls:" in ln]
    assert len(summary) == 1, lines
    assert re.search(r"calls: 60 made, .* [\d.]+ s$", summary[0]), summary
    assert all(PROGRESS.match(ln) for ln in lines if ln.startswith("ranking: ")), lines
    if columns is None:  # no width asked for: the table in the wide piped width, uncut
        rows = [ln for ln in lines if ln.startswith("│")]
        assert rows and len({len(ln) for ln in rows}) == 1, rows
        for r in doc["ranking"][:10]:
            row = next(ln for ln in rows if f" {r['id']} " in ln)
            assert f"{r['theta']:+.2f} [{r['lo']:+.2f}, {r['hi']:+.2f}]".replace(
                "-0.00", "+0.00") in row.replace("-0.00", "+0.00"), row


def test_no_line_audit_writes_to_a_file_is_cut(tmp_path: Path) -> None:
    lines, doc = _run(tmp_path, ["audit", "--judge", "sim?position=0.8&length=1.0&seed=0",
                                 "--data", "builtin:facts", "--n", "200"])
    bar = [ln for ln in lines if ln.startswith("auditing: ")]
    assert len(bar) >= 2 and all(PROGRESS.match(ln) for ln in bar), bar
    # the audit plans its calls probe by probe: the first line says its total grows
    assert bar[0].endswith("; the total grows as work is planned"), bar
    summary = [ln for ln in lines if ln.startswith("calls: ")]
    assert len(summary) == 1 and re.search(r" [\d.]+ s$", summary[0]), lines
    long = [ln for ln in lines if len(ln) > 140 and not ln.startswith(("┏", "┡", "└", "│"))]
    assert long, "the run was to give a line longer than the old 140 columns"
    # every line of text is a sentence that ends, not a fragment of the one before
    for i, ln in enumerate(lines[1:], 1):
        if ln and not ln.startswith(("┃", "┏", "┡", "└", "│", " ")):
            assert re.match(r"^[\w(\[.-]+[ :]", ln), f"line {i} continues a cut line: {ln!r}"
    rows = [ln for ln in lines if ln.startswith("│")]
    assert rows and len({len(ln) for ln in rows}) == 1, rows  # whole rows, none wrapped
    for name, probe in doc["probes"].items():
        row = next(ln for ln in rows if ln.startswith(f"│ {name} "))
        lo, hi = probe["effect"]["ci95"]
        assert f"[{lo:+.2f}, {hi:+.2f}]" in row and f" {probe['n']} │" in row, row


def test_plain_bar_first_line_once_the_total_is_known(capsys) -> None:
    now = [0.0]
    bar = progress.PlainBar("auditing", 0, every=30, clock=lambda: now[0], growing=True)
    bar.note_made(0)
    assert capsys.readouterr().err == ""  # no total yet, no line
    now[0] = 2.0
    bar.add_total(400)
    assert capsys.readouterr().err == (
        "auditing: 0/400 (-/s, 2 s elapsed, eta -); the total grows as work is planned\n")
    now[0] = 20.0
    bar.advance(10)  # within the interval of the first line: nothing
    assert capsys.readouterr().err == ""


def test_plain_bar_first_line_at_10_s_without_a_total(capsys) -> None:
    """A big sim audit's first line came at 66 s: with no total yet, a line by 10 s."""
    now = [0.0]
    bar = progress.PlainBar("judging", 0, every=30, clock=lambda: now[0])
    now[0] = 9.0
    bar.note_made(0)
    assert capsys.readouterr().err == ""
    now[0] = 10.0
    bar.note_made(0)
    assert capsys.readouterr().err == "judging: 0/0 (-/s, 10 s elapsed, eta -)\n"
