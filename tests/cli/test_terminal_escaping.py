"""Text from data files reaches the terminal as written: never read as rich markup, never as
raw control characters (tester sec, points 1 and 3).

A Llama template `[INST] {q} [/INST]` as a --by category crashed a finished evaluate with
rich's MarkupError (exit 3, results.json written); `[link=http://evil.example]clickme[/link]`
printed as "clickme", a hidden hyperlink; category values, rank's covariate names and
replay-check's example ids carried ESC[2J, OSC 8 links and U+202E to the terminal raw. Each
test runs the real command on a real data file and reads what it printed."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.cli.terminal import json_line, shown

OSC8 = "\x1b]8;;http://evil.example/\x07CLICK\x1b]8;;\x07"
HOSTILE = ["[INST] {q} [/INST]", "[link=http://evil.example]x[/link] [red]RED[/red]",
           f"\x1b[2J{OSC8}", "\u202eevil\r\x00"]
# What a terminal acts on: C0 controls but newline and tab, DEL, C1 controls, bidi
# overrides and isolates.
ACTING = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_no_acting(text: str) -> None:
    found = sorted({f"U+{ord(c):04X}" for c in ACTING.findall(text)})
    assert not found, f"raw control characters reached the terminal: {found}"


def assert_shown_as_written(text: str, values: list[str]) -> None:
    """Each value printed literally: brackets kept, acting characters as escapes."""
    flat = " ".join(text.split())
    for v in values:
        assert " ".join(shown(v).split()) in flat, f"{shown(v)!r} not printed as written"
    assert "\\x1b[2J\\x1b]8;;http://evil.example/\\x07CLICK" in flat
    assert "\\u202eevil\\r\\x00" in flat


def write_pairs(path, n_per: int = 6) -> None:
    """Labelled pairs, each category of HOSTILE holding `n_per` of them (the sim judge reads
    the word GOOD as the better response)."""
    with path.open("w") as f:
        for i in range(n_per * len(HOSTILE)):
            good, bad = f"GOOD answer {i}.", f"a worse answer {i}."
            first = i % 2 == 0
            f.write(json.dumps({
                "id": f"p{i}", "prompt": f"Question {i}?",
                "response_1": good if first else bad, "response_2": bad if first else good,
                "label": 1 if first else 2,
                "metadata": {"template": HOSTILE[i % len(HOSTILE)]}}) + "\n")


@pytest.fixture
def pairs(tmp_path):
    p = tmp_path / "pairs.jsonl"
    write_pairs(p)
    return p


def test_evaluate_by_prints_markup_and_control_codes_as_written(tmp_path, pairs,
                                                                   isolated_cache):
    r = CliRunner().invoke(app, ["evaluate", "--judge", "sim?seed=0", "--data",
                                 f"jsonl:{pairs}", "--by", "template",
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output  # was 3: MarkupError on [/INST] after the run
    assert_no_acting(r.output)
    assert_shown_as_written(r.output, HOSTILE)
    assert "clickme" not in r.output and "[link=http://evil.example]x[/link]" in r.output


def test_evaluate_json_stays_one_valid_object(tmp_path, pairs, isolated_cache):
    r = CliRunner().invoke(app, ["evaluate", "--judge", "sim?seed=0", "--data",
                                 f"jsonl:{pairs}", "--by", "template", "--json",
                                 "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    last = r.stdout.strip().splitlines()[-1]
    doc = json.loads(last)
    assert doc["ok"] is True and doc.get("exit_code", 0) == 0


def test_audit_by_prints_markup_and_control_codes_as_written(tmp_path, pairs,
                                                              isolated_cache):
    r = CliRunner().invoke(app, ["audit", "--judge", "sim?position=1&seed=0", "--data",
                                 f"jsonl:{pairs}", "--probes", "position", "--by",
                                 "template", "--n", "24", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert_no_acting(r.output)
    assert_shown_as_written(r.output, HOSTILE)


def test_rank_prints_a_covariate_name_with_markup_as_written(tmp_path, isolated_cache):
    """A numeric field constant over the pool, named with markup and control codes, is left
    out of the fit and named in the "left out" line (it crashed with MarkupError there)."""
    name = f"[/bold]cov[link=http://evil.example]x[/link]\x1b[2J{OSC8}\u202e"
    pool = tmp_path / "pool.jsonl"
    with pool.open("w") as f:
        for i in range(8):
            f.write(json.dumps({"id": f"i{i}", "prompt": "Q", "response": "R " * (i + 1),
                                "quality": i / 8, name: 1.0}) + "\n")
    r = CliRunner().invoke(app, ["rank", "--judge", "sim?length=1&seed=0", "--items",
                                 str(pool), "--k", "3", "--budget", "30", "--covariates",
                                 f"length,{name}", "--out", str(tmp_path / "out")])
    assert r.exit_code == 0, r.output
    assert_no_acting(r.output)
    # compared without whitespace: the console wraps the long name
    bare = "".join(r.output.split())
    assert "leftout(constantoverthepool):" + shown(name) in bare, r.output


def test_replay_check_example_ids_show_their_control_codes(tmp_path, pairs):
    """replay-check's "(e.g. ...)" lists quote ids from the data and the verdict file."""
    verdicts = tmp_path / "verdicts.jsonl"
    bad_id = f"\x1b[2Jnot-in-data{OSC8}\u202e[/INST]"
    verdicts.write_text(json.dumps({"item_id": bad_id, "order": "12", "verdict": "A"}) + "\n")
    data = tmp_path / "ids.jsonl"
    data.write_text(json.dumps({"id": f"\x1b[31mred{OSC8}\u202e[red]x[/red]", "prompt": "Q",
                                "response_1": "a", "response_2": "b", "label": 1}) + "\n")
    r = CliRunner().invoke(app, ["replay-check", str(verdicts), "--data", f"jsonl:{data}"])
    assert r.exit_code == 3, r.output  # nothing matched
    assert_no_acting(r.output)
    flat = " ".join(r.output.split())
    assert "e.g. \\x1b[2Jnot-in-data\\x1b]8;;http://evil.example/\\x07CLICK" in flat
    assert "\\u202e[/INST]" in flat
    assert "e.g. \\x1b[31mred\\x1b]8;;" in flat and "\\u202e[red]x[/red]" in flat


def test_json_line_escapes_what_json_dumps_leaves_raw():
    """json.dumps(ensure_ascii=False) escapes C0 controls but writes DEL, C1 controls (0x9b
    is CSI on 8-bit terminals), bidi overrides and lone surrogates raw."""
    obj = {"reason": "a\x1b[2J b\x7f c\x9b31m d\u202e e\u2066 f\ud800 g é [x]"}
    line = json_line(obj)
    assert json.loads(line) == obj
    assert_no_acting(line)
    assert "\ud800" not in line and "é" in line


def test_the_console_escapes_text_objects_and_keeps_markup_a_call_asks_for():
    """A rich Text built from data (a plugin's probe name in a bold cell) is escaped as it
    is rendered, not only strings; markup still works where a call passes markup=True."""
    import io

    from rich.text import Text

    from judgeaudit.cli.terminal import SafeConsole

    buf = io.StringIO()
    con = SafeConsole(file=buf, width=80, color_system=None)
    con.print(Text.assemble(("probe\x1b[2J\u202e", "bold"), " [red]x[/red]"))
    con.print("[bold]plain[/bold] \x1b]8;;http://evil/\x07")
    con.print("[bold]styled[/bold]", markup=True)
    out = buf.getvalue()
    assert_no_acting(out)
    assert out.splitlines() == ["probe\\x1b[2J\\u202e [red]x[/red]",
                                "[bold]plain[/bold] \\x1b]8;;http://evil/\\x07", "styled"]
