"""rank-eval: a recall cell where every seed gave the same recall had ci95 [null, null] and
the terminal said "(every seed)": four seeds at 1.000 do not make the mean recall certain.
Such a cell now has the exact Clopper-Pearson interval of the hits pooled over the seeds
(item hits treated as independent), said in results.json, the terminal and the report;
full_data likewise. Checked against the closed form and scipy's exact binomial interval."""

from __future__ import annotations

import json

import pytest
import typer
from scipy import stats
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.rank.evaluate import RECALL_INTERVAL, EvalCase, _summary
from judgeaudit.report import render_report


def test_all_equal_seeds_get_the_exact_interval_of_the_pooled_hits():
    same = _summary([1.0] * 4, [5] * 4)
    # n of n hits: the lower end is (alpha / 2)^(1 / n), the upper 1
    assert same["ci95"] == pytest.approx([0.025 ** (1 / 20), 1.0])
    assert same["ci_method"] == "clopper_pearson" and (same["hits"], same["n_items"]) == (20, 20)
    part = _summary([0.8] * 3, [5] * 3)
    ref = stats.binomtest(12, 15).proportion_ci(0.95, method="exact")
    assert part["ci95"] == pytest.approx([ref.low, ref.high])
    assert part["hits"] == 12 and part["n_items"] == 15
    zero = _summary([0.0, 0.0], [3, 3])
    assert zero["ci95"] == pytest.approx([0.0, 1 - 0.025 ** (1 / 6)])
    # a spread keeps the t interval; one seed has none
    assert _summary([0.6, 0.8], [5, 5])["ci_method"] == "t"
    assert _summary([1.0], [5])["ci95"] is None
    assert "Clopper-Pearson" in RECALL_INTERVAL and "independent" in RECALL_INTERVAL


def test_n_true_is_recalls_denominator():
    import numpy as np

    q = np.array([3.0, 2, 1, 0, 5, 4, 1])
    case = EvalCase(oracle=None, n_items=7, k=2, true_topk=np.array([0, 1]), quality=q,
                    groups=np.array([0, 0, 0, 0, 1, 1, 1]))
    assert case.n_true == 4  # 2 in each group
    assert EvalCase(oracle=None, n_items=7, k=3, true_topk=np.array([0, 1, 4]),
                    quality=q).n_true == 3


@pytest.fixture(scope="module")
def equal_pool(tmp_path_factory) -> str:
    """Every item of the same quality: any top-2 is right, so every seed's recall is 1."""
    path = tmp_path_factory.mktemp("pool") / "equal.jsonl"
    path.write_text("".join(json.dumps({"id": f"e{i}", "prompt": "Explain water boiling.",
                                        "response": "Water boils. " * (i + 1), "quality": 1})
                            + "\n" for i in range(6)))
    return f"jsonl:{path}"


def test_rank_eval_gives_every_equal_cell_an_interval_everywhere(equal_pool, tmp_path):
    app = typer.Typer()
    from judgeaudit.cli.rank_cmd import register

    register(app)
    r = CliRunner().invoke(app, ["rank-eval", "--oracle", "sim?length=1", "--items", equal_pool,
                                 "--k", "2", "--budgets", "4,8", "--seeds", "4", "--samples",
                                 "100", "--out", str(tmp_path / "d"), "--cache",
                                 str(tmp_path / "c.sqlite"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads((tmp_path / "d" / "results.json").read_text())
    lo = 0.025 ** (1 / 8)  # 4 seeds x 2 true top items, all found
    cells = [c for rules in doc["recall"].values() for cs in rules.values()
             for c in cs.values()] + list(doc["full_data"].values())
    assert len(cells) == 2 * 4 * 2 + 2  # models x default rules x budgets, full data
    for c in cells:
        assert c["mean"] == 1.0 and c["ci95"] == pytest.approx([lo, 1.0])
        assert c["ci_method"] == "clopper_pearson" and (c["hits"], c["n_items"]) == (8, 8)
    assert doc["config"]["recall_interval"] == RECALL_INTERVAL
    out = " ".join(r.output.split())
    assert "(every seed)" not in out
    assert f"1.000 [{lo:.2f}, 1.00] exact 8/8" in out
    assert f"full data: naive 1.000 [{lo:.2f}, 1.00] exact 8/8" in out
    assert "treating each item hit as independent" in out
    # --json (the summary): the interval, not [null, null]
    summary = judgeaudit.Result.from_document(doc).summary()
    cell = summary["recall"]["naive"]["topk"]["4"]
    assert cell["ci95"] == pytest.approx([lo, 1.0]) and cell["n"] == 4
    assert summary["full_data"]["bias_aware"]["ci95"] == pytest.approx([lo, 1.0])
    html = " ".join(render_report(doc).split())
    assert "all equal: no interval" not in html
    assert f"[{lo:.2f}, 1.00] exact" in html and "4 seeds all equal: 8 of 8 items" in html
    assert 'id="exact-note"' in html and "treats each item hit as independent" in html
