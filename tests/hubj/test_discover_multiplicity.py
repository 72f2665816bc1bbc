"""discover tests ~11-15 factors in one run; each factor's p gets a Benjamini-Hochberg q over
all of them, and "significant" is decided on q (Wilcoxon). Checked against a textbook BH and
against known truth: a judge biased by length only, one planted factor (scored by length),
the other factors scored independently of the responses (nulls)."""

from __future__ import annotations

import hashlib
import json
import math
from typing import ClassVar

import numpy as np
import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.hubj.validate import delta_stats, multiplicity
from judgeaudit.llm.base import Provider, Request, Response
from judgeaudit.llm.registry import register

runner = CliRunner()


def textbook_bh(p: list[float]) -> list[float]:
    """Benjamini & Hochberg (1995), step-up, written out: q_(i) = min_{j >= i} m p_(j) / j.
    (statsmodels' multipletests(method="fdr_bh") where it is installed; it is not here.)"""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    q = [0.0] * m
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        q[i] = min(running, 1.0)
    return q


def test_q_values_are_textbook_bh_over_the_factors_tested():
    rng = np.random.default_rng(7)
    d = {f"f{k}": rng.integers(-2, 3, size=25).astype(float) + (0.6 if k < 2 else 0.0)
         for k in range(12)}
    d["empty"] = np.full(25, math.nan)  # no valid Delta: no p, not counted in m
    q, summary = multiplicity(d)
    named = [n for n in d if n != "empty"]
    for key, qkey in (("p_wilcoxon", "q_wilcoxon"), ("p_t", "q_t")):
        ps = [delta_stats(d[n])[key] for n in named]
        want = textbook_bh(ps)
        for n, w in zip(named, want, strict=True):
            assert q[n][qkey] == pytest.approx(w, rel=1e-12), (n, key)
    assert q["empty"] == {"q_t": None, "q_wilcoxon": None, "significant": False}
    assert summary["m"] == 12 and summary["alpha"] == 0.05
    assert summary["decided_on"] == "q_wilcoxon"
    assert summary["significant"] == [n for n in named if q[n]["q_wilcoxon"] <= 0.05]
    try:  # the same numbers as statsmodels where it is installed
        from statsmodels.stats.multitest import multipletests
    except ImportError:
        return
    ps = [delta_stats(d[n])["p_wilcoxon"] for n in named]
    ref = multipletests(ps, method="fdr_bh")[1]
    assert [q[n]["q_wilcoxon"] for n in named] == pytest.approx(list(ref), rel=1e-12)


def test_a_null_factor_with_raw_p_below_005_is_not_significant_after_bh():
    """Eleven nulls with spread-out p-values (the smallest ~0.02) and one planted factor:
    the smallest null passes p < 0.05 on its own, not after BH over the 12 tested."""
    planted = np.array([1.0, 2.0, 1.0, 1.0, 2.0, 1.0, 3.0, 1.0, 2.0, 1.0] * 3)
    null = np.array([1.0, 1.0, 2.0, 1.0, -1.0, 1.0, 2.0, -1.0, 1.0, 1.0, 1.0, 2.0, -1.0,
                     1.0, -2.0, 1.0, 1.0, 0.0, 1.0, -1.0, 1.0, 1.0, 2.0, 0.0, -1.0])
    d = {"planted": planted, "null0": null}
    for k in range(1, 11):  # nulls with weaker and weaker shifts
        d[f"null{k}"] = np.concatenate([null[: 25 - k], -np.abs(null[25 - k:])])
    q, summary = multiplicity(d)
    p_null0 = delta_stats(d["null0"])["p_wilcoxon"]
    assert p_null0 < 0.05, p_null0
    assert not q["null0"]["significant"]
    assert summary["significant"] == ["planted"]


# ---- end to end: a length-only judge, one planted factor, nulls --------------------------------

def _h(*parts: str) -> int:
    return int(hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:8], 16)


@register
class _LengthScript(Provider):
    """G modules: one found factor ("longer response"); G_score rates it and the baselines
    "length" and "verbosity" by word count (planted), every other factor by a hash of the
    response and the factor (independent of which response the judge preferred: a null)."""

    name: ClassVar[str] = "test-hubj-bh"
    deterministic: ClassVar[bool] = True

    async def generate(self, request: Request) -> Response:
        mod = request.meta["module"]
        if mod == "G_extract":
            return Response(text='{"features": [{"name": "longer response", "reason": "more '
                                 'words", "definition": "The response has many more words."}]}')
        if mod == "G_construct":
            return Response(text='{"factors": [{"name": "longer response", "definition": '
                                 '"The response has many more words."}]}')
        if mod == "G_assign":
            return Response(text='{"factor": 1}')
        if mod == "G_crit":
            return Response(text=json.dumps({str(k): f"level {k}" for k in range(1, 6)}))
        assert mod == "G_score", mod
        factor, text = request.meta["factor"], request.meta["response"]
        if factor in ("longer response", "length", "verbosity"):
            score = 2 if len(text.split()) < 100 else 4
        else:
            score = 1 + _h(self.model, factor, text) % 5
        return Response(text=json.dumps({"score": score}))


def _pairs(path, n: int) -> str:
    """n items where the humans prefer the short response (a judge biased by length always
    disagrees), each response with its own words so the null scores vary."""
    rows = []
    for i in range(n):
        long = " ".join(f"w{i}x{k}" for k in range(180 + i % 7))
        rows.append({"id": f"d{i}", "prompt": f"q {i}", "response_1": f"short answer {i}",
                     "response_2": long, "label": 1})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return f"jsonl:{path}"


def test_discover_reports_q_and_decides_significance_on_it(tmp_path, stub_embedder,
                                                           isolated_cache):
    res = runner.invoke(app, ["discover", "--judges", "sim?length=5&noise=0", "--llm",
                              "test-hubj-bh:s1", "--data", _pairs(tmp_path / "p.jsonl", 60),
                              "--iterations", "1", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    val = doc["validation"]
    rows = {r["factor"]: r for s in val["sets"].values() for r in s["factors"]}
    assert len(rows) == 11 and val["multiplicity"]["m"] == 11
    names = list(rows)
    want = textbook_bh([rows[n]["p_wilcoxon"] for n in names])
    for n, w in zip(names, want, strict=True):
        assert rows[n]["q_wilcoxon"] == pytest.approx(w, rel=1e-12)
        assert rows[n]["q_wilcoxon"] >= rows[n]["p_wilcoxon"]
        assert rows[n]["significant"] == (rows[n]["q_wilcoxon"] <= 0.05)
    planted = {"longer response", "length", "verbosity"}
    assert set(val["multiplicity"]["significant"]) >= planted  # the planted factor found
    assert all(rows[n]["mean_delta"] > 0 for n in planted)
    out = " ".join(res.output.split())
    assert "q (Wilcoxon)" in out
    assert ("significant (*): q (Wilcoxon) <= 0.05, q = Benjamini-Hochberg over the 11 "
            f"factors tested in this run on {val['n_items']} held-out items:") in out
