"""Results summaries: ranking rows (per prompt group), c per unit and per SD, planted cover."""

import json

import numpy as np
import pytest

from judgeaudit.rank.pool import load_pool
from judgeaudit.rank.simulate import SimOracle
from judgeaudit.rank.summary import covariate_estimates, kappa_estimate, model_summary, ranking
from judgeaudit.stats.bradley_terry import fit_map


def test_ranking_rows_per_group_and_estimates(tmp_path):
    rows = [{"id": f"{p}{i}", "prompt": p, "response": "w " * (i + 2), "quality": i}
            for p, n in (("P", 4), ("Q", 3)) for i in range(n)]
    (tmp_path / "p.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    pool = load_pool(f"jsonl:{tmp_path / 'p.jsonl'}")
    X, info = pool.covariates(["length"])
    theta = pool.quality
    o = SimOracle(theta, X, c=0.5, kappa=0.2, seed=0)
    g = pool.groups
    comps = np.array([r for r in o.full_comparisons() if g[int(r[0])] == g[int(r[1])]])
    fit = fit_map(7, comps, X=X)
    out = ranking(pool, fit, 2, X, info, comps, n_samples=400)
    assert [r["rank"] for r in out] == [1, 2, 3, 4, 1, 2, 3]
    assert [r["group"] for r in out] == [0, 0, 0, 0, 1, 1, 1]
    assert sum(r["in_topk"] for r in out[:4]) == 2 and sum(r["in_topk"] for r in out[4:]) == 2
    assert sum(r["p_topk"] for r in out[:4]) == pytest.approx(2.0)
    assert sum(r["n_compared"] for r in out) == 2 * len(comps)
    r0 = next(r for r in out if r["id"] == "P3")
    assert r0["covariates"]["length"] == pytest.approx(np.log1p(5))  # raw, not centred
    c = covariate_estimates(fit, info, {"length": 0.5})["length"]
    assert c["per_sd"]["estimate"] == pytest.approx(c["estimate"] * info[0].sd)
    assert c["covered"] == (c["lo"] <= 0.5 <= c["hi"]) and c["planted"] == 0.5
    k = kappa_estimate(fit, 0.2)
    assert k["lo"] < k["estimate"] < k["hi"] and "covered" in k
    m = model_summary(pool, fit, 2, info)
    assert len(m["topk"]) == 4 and set(m["c"]) == {"length"} and "planted" not in m["c"]["length"]
