"""Audit on recorded real verdicts (LLMBar replay): the position probe's consistency equals
the published positional agreement, and a panel ranks the six judges by position bias."""

from __future__ import annotations

import json

import pytest

from judgeaudit.audit.battery import run_battery
from judgeaudit.data import load
from judgeaudit.judges import make_judge
from judgeaudit.report import render_report

JUDGES = ["GPT-4", "ChatGPT", "ChatGPT-0301", "LLaMA2", "PaLM2", "Falcon"]


def _pct(s: str) -> float:
    return float(s.split("=")[-1].strip().rstrip("%")) / 100


@pytest.fixture
def llmbar(shared_data):
    return shared_data / "llmbar"


async def test_position_probe_consistency_equals_published_agreement(llmbar):
    stats = [json.loads(x) for x in (llmbar / "judge_statistics.jsonl").read_text().splitlines()]
    items = load(f"llmbar:{llmbar}?subset=LLMBar/Natural")
    rows = [r for r in stats if r["subset"] == "LLMBar/Natural" and r["strategy"] in
            ("Vanilla", "CoT", "Metrics_Reference")]
    assert len(rows) >= 10
    for row in rows:
        judge = make_judge(f"replay:{llmbar / 'judge_verdicts.csv'}?judge={row['judge']}"
                           f"&strategy={row['strategy']}")
        res = await run_battery(judge, items, ["position"])
        pc = res["probes"]["position"]["rates"]["position_consistency"]
        assert pc["value"] == pytest.approx(_pct(row["equal"]), abs=1e-9), row
        assert pc["n"] == 100


async def test_panel_ranks_six_real_judges_by_position_bias(llmbar):
    items = load(f"llmbar:{llmbar}?subset=LLMBar/Natural")
    csv = llmbar / "judge_verdicts.csv"
    bundles = [make_judge(f"replay:{csv}?judge={j}&strategy=Vanilla") for j in JUDGES]
    res = await run_battery(bundles[0], items, ["position"], panel=bundles[1:])
    panel = res["panel"]
    assert len(panel["ranking"]) == 6
    effects = [abs(r["position_effect"]["value"]) for r in panel["ranking"]]
    assert effects == sorted(effects, reverse=True)
    for r in panel["ranking"]:
        lo, hi = r["position_effect"]["ci95"]
        assert lo <= r["position_effect"]["value"] <= hi
    # GPT-4 is the most position-consistent judge of the six on LLMBar Natural (95%)
    best = max(panel["ranking"], key=lambda r: r["position_consistency"]["value"])
    assert "GPT-4" in best["judge"]
    assert panel["n_disagreements"] > 0 and panel["fleiss_kappa"]["n"] > 0
    # disagreements are counted on the items the agreement counts (an invalid verdict was a
    # "disagreement": 30 agreeing + 70 disagreeing of n = 98)
    agree = round(panel["agreement"]["value"] * panel["agreement"]["n"])
    assert agree + panel["n_disagreements"] == panel["agreement"]["n"]
    assert panel["agreement"]["n"] + panel["n_incomplete"] == 100
    html = render_report(res)
    assert "Judges ranked by position bias" in html and "judge=Falcon" in html


async def test_a_replay_judge_runs_position_and_says_why_the_rest_do_not_run(tmp_path):
    """The default probes rewrite texts a replay file never recorded: every such call failed,
    so the run failed as a whole (exit 3, position's valid effect included). Now they are
    'not run' with the reason, without a call, and position stands."""
    from judgeaudit.data import PairwiseItem

    items = [PairwiseItem(id=f"i{k}", prompt=f"q{k}", response_1="a", response_2="b",
                          label=1 + k % 2) for k in range(12)]
    rows = "".join(f"i{k},{o},{'A' if k % 3 else 'B'}\n" for k in range(12) for o in ("12", "21"))
    path = tmp_path / "v.csv"
    path.write_text("item_id,order,verdict\n" + rows, "utf-8")
    judge = make_judge(f"replay:{path}")
    res = await run_battery(judge, items, ["position", "verbosity", "authority"])
    assert res["run"]["status"] == "ok" and res["calls"]["failed"] == 0
    assert res["calls"]["made"] == 24  # the recorded pairs, both orders; nothing else asked
    assert res["probes"]["position"]["n"] == 12
    for name in ("verbosity", "authority"):
        doc = res["probes"][name]
        assert doc["verdict"] == "not_run" and doc["n"] == 0
        assert any("answers only the texts it recorded" in x for x in doc["notes"])
