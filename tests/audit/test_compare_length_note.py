"""compare carries the audit's length warning: a length-only change (sim length 0 -> 1.5)
lists authority and injection as worse beside verbosity, and the audit of B itself warns
that those shifts may be the judge's preference for length; compare said nothing of it.
Now a note names the probes that add words and changed with the length preference; none
when only a probe that adds no words moved, or when the length preference did not change."""

from __future__ import annotations

from judgeaudit.audit.battery import run_battery
from judgeaudit.audit.compare import compare
from judgeaudit.data import load
from judgeaudit.judges import make_judge

PROBES = ["verbosity", "authority", "injection", "position"]


async def _audit(spec: str) -> dict:
    return await run_battery(make_judge(spec), load("builtin:facts")[:100], PROBES, seed=0,
                             data_spec="builtin:facts")


async def test_a_length_only_change_says_the_probes_that_add_words_may_move_with_it():
    a, b = await _audit("sim?length=0&seed=0"), await _audit("sim?length=1.5&seed=0")
    assert any(n.startswith("length:") for n in b["probes"]["authority"]["notes"])
    res = compare(a, b)
    worse = res["summary"]["worse"]
    assert {"verbosity", "authority", "injection"} <= set(worse), res["summary"]
    note = [n for n in res["notes"] if "preference for length" in n]
    assert len(note) == 1, res["notes"]
    assert note[0].startswith("the judge's preference for length got worse (verbosity), and "
                              "authority, injection changed too")
    # the reverse reads "better"; the same judge twice carries no such note
    assert "length got better" in " ".join(compare(b, a)["notes"])
    assert not any("preference for length" in n for n in compare(a, a)["notes"])
