"""A probe's before/after examples show letter slots filled, as the judge saw them in order
12 (response_1 first, as A): the report never shows a raw `<<LETTER:...>>` slot."""

from __future__ import annotations

import json

from judgeaudit.audit.battery import run_battery
from judgeaudit.data import load
from judgeaudit.judges import make_judge


async def test_bandwagon_examples_show_the_letter_not_the_slot():
    items = load("builtin:facts?seed=1")[:12]
    judge = make_judge("sim?quality=1.5&bandwagon=2&seed=5")
    res = await run_battery(judge, items, ["bandwagon"], seed=5)
    examples = res["probes"]["bandwagon"]["examples"]
    assert examples, "bandwagon gave no examples"
    blob = json.dumps(examples)
    assert "<<LETTER" not in blob, f"a raw slot reached the examples: {blob[:400]}"
    for ex in examples:
        # the worse response is the one named (favour=worse); order 12 shows response_1 as A
        label = next(it for it in items if it.id == ex["item_id"]).label
        letter = "B" if label == 1 else "A"  # label 1: response_2 is the worse, shown second
        added = ex["after"]["prompt"][len(ex["before"]["prompt"]):]
        assert f"Response {letter}" in added, added
