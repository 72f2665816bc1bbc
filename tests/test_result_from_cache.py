"""The summary's calls give `from_cache`, the answers of earlier runs (cached - shared), as
the terminal's "N from cache" does: a first run's --json read "cached 160" where the terminal
said "0 from cache, 160 shared within the run", and a script took them for reused answers."""

from __future__ import annotations

import judgeaudit


def test_a_first_run_has_nothing_from_cache_and_a_rerun_has_it_all(tmp_path) -> None:
    cache = tmp_path / "c.db"
    first = judgeaudit.audit(judge="sim?position=1&seed=3", n=10, cache=cache).summary()["calls"]
    assert first["shared"] > 0 and first["cached"] == first["shared"]
    assert first["from_cache"] == 0
    again = judgeaudit.audit(judge="sim?position=1&seed=3", n=10, cache=cache).summary()["calls"]
    assert again["made"] == 0 and again["from_cache"] == first["made"]
