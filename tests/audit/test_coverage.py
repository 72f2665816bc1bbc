"""Interval coverage on a judge with a planted bias: the position probe's 95% interval covers
the planted effect (computed exactly from the simulator's probabilities) in >= 93% of 200
seeds. (At 150 items per seed the item bootstrap is close to nominal: 95% observed; at 60
items a percentile bootstrap of this three-valued statistic covers about 91%.)"""

from __future__ import annotations

import asyncio

from judgeaudit.audit.battery import run_battery
from judgeaudit.data import load
from judgeaudit.judges import make_judge


def test_position_interval_covers_the_planted_effect():
    async def one(seed: int) -> bool:
        items = load(f"builtin:facts?seed={seed}")[:150]
        judge = make_judge(f"sim?quality=1.0&position=0.6&seed={seed}")
        sim = judge.client.provider
        # planted: mean over items of E[share of the two verdicts going to the first shown]
        truth = sum((sim.prob_first(judge.pairwise.request(it, "12").meta)
                     + sim.prob_first(judge.pairwise.request(it, "21").meta)) / 2
                    for it in items) / len(items) - 0.5
        res = await run_battery(judge, items, ["position"], seed=seed)
        lo, hi = res["probes"]["position"]["effect"]["ci95"]
        return lo <= truth <= hi

    async def run() -> list[bool]:
        return [await one(s) for s in range(200)]

    covered = asyncio.run(run())
    assert sum(covered) / len(covered) >= 0.93, sum(covered)
