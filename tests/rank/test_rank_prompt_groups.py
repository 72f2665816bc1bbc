"""Prompt groups of a ranking pool: one prompt written in two Unicode forms (NFC, NFD), with
a trailing space or with CRLF line endings is one group, with a note saying how many items
differed and in what (it was two groups, each with its own top-k, so a "top-2" named 3
items without a word); prompts that differ in anything else stay apart, and when all they
differ in is whitespace inside or an invisible character, a note and the terminal's groups
line name the difference (their labels printed identically)."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from judgeaudit.cli.rank_cmd import register
from judgeaudit.rank.live import ordered_pairs, pair_item
from judgeaudit.rank.pool import load_pool, prompt_key

NFC = "Décrivez le café et la crème brûlée."
NFD = unicodedata.normalize("NFD", NFC)


@pytest.fixture(scope="module")
def app():
    a = typer.Typer()
    register(a)
    return a


def _pool(path: Path, prompts: list[str]) -> Path:
    path.write_text("".join(
        json.dumps({"id": f"it{i}", "prompt": p, "response": "mot " * (2 + i),
                    "quality": float(i)}, ensure_ascii=False) + "\n"
        for i, p in enumerate(prompts)), encoding="utf-8")
    return path


def _rank(app, tmp_path: Path, pool: Path, k: int = 2) -> tuple[str, dict]:
    r = CliRunner().invoke(app, ["rank", "--judge", "sim?length=1", "--items", str(pool),
                                 "--k", str(k), "--budget", "8", "--seed", "0",
                                 "--out", str(tmp_path / "o"),
                                 "--cache", str(tmp_path / "c.sqlite")])
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split()), json.loads((tmp_path / "o" / "results.json").read_text())


@pytest.mark.parametrize("other, what", [
    (NFD, "Unicode normalization, NFC vs NFD (2 items)"),
    (NFC + " ", "outer whitespace (2 items)"),
])
def test_one_prompt_in_two_forms_is_one_group_with_a_note(app, tmp_path, other, what):
    pool = _pool(tmp_path / "p.jsonl", [NFC, other, NFC, other, NFC])
    out, doc = _rank(app, tmp_path, pool)
    assert doc["n_groups"] == 1
    for model in ("naive", "bias_aware"):
        assert len(doc["models"][model]["topk"]) == 2, doc["models"][model]["topk"]
    note = next(n for n in doc["notes"] if "another form" in n)
    assert "2 of 5 items give their prompt in another form than the first item of its " \
        f"group, differing only in {what}" in note
    assert "(2 of its 5 items, first 'it1', line 2)" in note
    assert " ".join(note.split()) in out  # printed as a note, not only written
    assert "groups:" not in out


def test_folded_items_are_judged_under_their_groups_first_prompt(tmp_path):
    """A pair across the two forms is one comparison (`pair_item` refused items whose
    prompts differ), shown to the judge under the group's first prompt, as given."""
    pool = load_pool(str(_pool(tmp_path / "p.jsonl", [NFC, NFD + "\r\n", NFC])))
    assert {it.prompt for it in pool.items} == {NFC}
    assert len(ordered_pairs(pool)) == 6
    assert pair_item(pool, 0, 1)[0].prompt == NFC
    assert "line endings" not in pool.notes[0]  # the CRLF is outer whitespace here
    assert "Unicode normalization, NFC vs NFD (1 item), outer whitespace (1 item)" \
        in pool.notes[0]


def test_crlf_inside_a_prompt_folds_as_line_endings(tmp_path):
    a, b = "Line one.\nLine two.", "Line one.\r\nLine two."
    pool = load_pool(str(_pool(tmp_path / "p.jsonl", [a, b, a])))
    assert pool.n_groups == 1 and prompt_key(b) == a
    assert "differing only in line endings, CRLF vs LF (1 item)" in pool.notes[0]


def test_prompts_differing_inside_stay_apart_and_the_difference_is_named(app, tmp_path):
    """A zero-width joiner, a byte order mark, a second space and a no-break space are not
    folded (inside a prompt whitespace can be content); each group is ranked on its own, a
    note says they differ only there, and the groups line names the character where labels
    print alike."""
    prompts = [NFC, "\ufeff" + NFC, "Dé\u200dcrivez le café et la crème brûlée.",
               "Décrivez  le café et la crème brûlée.", "Décrivez\u00a0le café et la crème brûlée."]
    pool = _pool(tmp_path / "p.jsonl", [p for p in prompts for _ in range(3)])
    out, doc = _rank(app, tmp_path, pool)
    assert doc["n_groups"] == 5
    note = next(n for n in doc["notes"] if "differ only in whitespace inside" in n)
    assert note.startswith(f"{pool}: 5 prompt groups have prompts that differ only in "
                           "whitespace inside them or in invisible characters: g0 ")
    for part in ("g1 (character 1 is U+FEFF ZERO WIDTH NO-BREAK SPACE ('\\ufeff') in g1, "
                 "U+0044 LATIN CAPITAL LETTER D ('D') in g0)",
                 "g2 (character 3 is U+200D ZERO WIDTH JOINER ('\\u200d') in g2",
                 "g3 (character 10 is U+0020 SPACE (' ') in g3, U+006C LATIN SMALL LETTER L "
                 "('l') in g0)",
                 "g4 (character 9 is U+00A0 NO-BREAK SPACE ('\\xa0') in g4, U+0020 SPACE "
                 "(' ') in g0)"):
        assert part in note
    assert not any("another form" in n for n in doc["notes"])
    line = out[out.index("groups: "):out.index(" c[length] = ")]
    assert "g1 '\\ufeffDécrivez le café et la crème ...' (3 items)" in line
    assert "g2 'Dé\\u200dcrivez le café et la crème ...' (3 items)" in line
    assert "g3 'Décrivez le café et la crème ...' (3 items; character 10 is U+0020 SPACE " \
           "(' ') in g3, U+006C LATIN SMALL LETTER L ('l') in g0)" in line
    assert "g4 'Décrivez le café et la crème ...' (3 items; character 9 is U+00A0 NO-BREAK " \
           "SPACE ('\\xa0') in g4, U+0020 SPACE (' ') in g0)" in line


def test_labels_alike_past_the_first_words_name_where_the_prompts_differ(app, tmp_path):
    a = "Name the three largest cities of France by population today."
    b = "Name the three largest cities of Spain by population today."
    pool = _pool(tmp_path / "p.jsonl", [a, a, a, b, b, b])
    out, doc = _rank(app, tmp_path, pool)
    assert doc["n_groups"] == 2
    assert "g0 'Name the three largest cities of ...' (3 items); g1 'Name the three largest " \
           "cities of ...' (3 items; character 34 is U+0053 LATIN CAPITAL LETTER S ('S') in " \
           "g1, U+0046 LATIN CAPITAL LETTER F ('F') in g0)" in out
    assert not any("whitespace" in n for n in doc["notes"])  # they differ in substance


def test_a_pool_of_distinct_prompts_gets_no_new_note(tmp_path):
    pool = load_pool(str(_pool(tmp_path / "p.jsonl", ["Q one?", "Q one?", "Q two?", "Q two?"])))
    assert pool.notes == [] and pool.groups.tolist() == [0, 0, 1, 1]
