"""results.json is indented JSON whose lists of plain values stay on one line (per-item
records: a flip per line cost 17.6 bytes), and reads back to exactly what was written."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from judgeaudit.methods import METHODS_VERSION, build
from judgeaudit.results_file import read_results, write_results

_scalars = (st.none() | st.booleans() | st.integers(-10**6, 10**6)
            | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8))
_docs = st.recursive(_scalars, lambda kids: st.lists(kids, max_size=4)
                     | st.dictionaries(st.text(max_size=6), kids, max_size=4), max_leaves=25)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(st.text(max_size=6), _docs, max_size=5))
def test_what_is_written_reads_back_the_same(tmp_path_factory, doc):
    for stamp in ("schema_version", "methods", "build"):
        doc.pop(stamp, None)
    path = write_results(tmp_path_factory.mktemp("r") / "results.json", {"command": "x", **doc})
    # with the stamps of what made it (`judgeaudit.methods`)
    assert read_results(path) == {"schema_version": 1, "methods": METHODS_VERSION,
                                  "build": build(), "command": "x", **doc}


def test_lists_of_plain_values_take_one_line(tmp_path):
    flips = [1, 0, 0.5, None] * 250
    path = write_results(tmp_path / "results.json", {
        "command": "quantify", "item_flips": {"j": {"test": {"3": flips}}},
        "rows": [{"value": 0.5, "ci95": [0.25, 0.75], "n": 20}]})
    text = path.read_text(encoding="utf-8")
    assert len(text.splitlines()) < 25  # (5 of them the methods and build stamps)
    assert '"3": [1, 0, 0.5, null, 1, 0' in text and '"ci95": [0.25, 0.75]' in text
    assert json.loads(text)["item_flips"]["j"]["test"]["3"] == flips
    assert '"rows": [\n    {\n' in text  # lists of objects stay indented
