"""mitigate's results.json keeps the fit's inputs (`per_query`): each query's verdict value
per judge (Y, ties 0.5, null for no valid verdict) and the differences its controls are
computed from, so the fit is re-run from the file alone and gives the document's win rates,
bias-controlled win rates (BC), bias shares and phi; an --apply run keeps the applied verdicts
the same way and is re-applied from its file (and the fit's). Without them a reviewer had to
capture Y inside the run (patching `run_mitigate_fit`). The lists are records:
`Result.estimates()` and `to_frame()` do not read them as measurements, and the report
renders documents with and without them."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.hubj import mitigate as M
from judgeaudit.result import Result

# a length-biased judge, one with ties (position bias, both orders) and unreadable answers,
# and an unbiased one
JUDGES = ["sim?length=2&seed=1", "sim?position=1.5&invalid=0.1&seed=2", "sim:unbiased?seed=3"]
SCORER = "simhubj?score_from=length"  # the factor's level: the response's length, binned


def _items(n: int, offset: int = 0) -> list[PairwiseItem]:
    """Pairs of responses of 5 to 400 words, so the scorer's levels and lengths vary."""
    rng = random.Random(offset)

    def text(k: int) -> str:
        return " ".join(f"w{rng.randint(0, 99)}" for _ in range(k))

    return [PairwiseItem(id=f"q{offset + i}", prompt=f"Question {offset + i}?",
                         response_1=text(rng.randint(5, 400)),
                         response_2=text(rng.randint(5, 400)), label=rng.choice((1, 2)))
            for i in range(n)]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A fit and an --apply run of its first judge on new queries, written as the CLI
    writes them: the folders holding results.json."""
    root = tmp_path_factory.mktemp("mitigate")
    fit = judgeaudit.mitigate(JUDGES, _items(120), factor="length", scorer=SCORER, limit=None,
                              cache=root / "cache.sqlite")
    assert fit.ok, fit.reason
    fit.to_json(root / "fit")
    applied = judgeaudit.mitigate([JUDGES[0]], _items(80, offset=1000), scorer=SCORER,
                                  limit=None, apply=root / "fit", cache=root / "cache.sqlite")
    assert applied.ok, applied.reason
    applied.to_json(root / "apply")
    return {"fit": root / "fit", "apply": root / "apply"}


def _doc(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


def _y(values: list[Any]) -> np.ndarray:
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _close(mine: float, stored: float, where: str) -> None:
    assert mine == pytest.approx(stored, rel=1e-7, abs=1e-10), where


def _wilson_win(y: np.ndarray, stored: dict[str, Any], where: str) -> None:
    """The win rate (ties half) and its Wilson interval, by statsmodels."""
    v = y[np.isfinite(y)]
    assert stored["n"] == v.size, where
    _close(v.mean(), stored["value"], where)
    assert list(proportion_confint(v.sum(), v.size, method="wilson")) == pytest.approx(
        stored["ci95"], abs=1e-9), where


def test_the_fit_is_rerun_from_the_file_alone(written):
    doc = _doc(written["fit"])
    pq = doc["per_query"]
    qids = pq["query_ids"]
    assert len(qids) == doc["counts"]["queries"] and set(pq["y"]) == set(doc["judges"])
    for j in doc["judges"]:  # what the counts say about each judge's verdicts
        assert len(pq["y"][j]) == len(qids)
        assert sum(v is None for v in pq["y"][j]) == doc["counts"][f"invalid:{j}"]
    values = {v for ys in pq["y"].values() for v in ys}
    assert {0, 1, 0.5, None} <= values and values <= {0, 1, 0.5, None}
    # the control: tanh of the stored score difference is the fit's delta
    delta = np.tanh(np.array(pq["score_difference"], dtype=float))
    assert delta.tolist() == pytest.approx([doc["delta"][q] for q in qids], abs=1e-15)
    assert len(set(pq["score_difference"])) > 2
    fitted = list(doc["per_judge"])
    Y = np.vstack([_y(pq["y"][j]) for j in fitted])

    def check(refit: M.MitigateFit, stored: dict[str, dict[str, Any]], what: str,
              params: tuple[str, ...]) -> None:
        for j in fitted:
            mine, theirs = refit.per_judge[j].as_dict(), stored[j]
            for k in ("bc", "bias_share"):
                _close(mine[k]["value"], theirs[k]["value"], f"{what} {j} {k}")
                for a, b in zip(mine[k]["ci95"], theirs[k]["ci95"], strict=True):
                    _close(a, b, f"{what} {j} {k} interval")
            for k in params:
                _close(mine[k]["value"], theirs[k]["value"], f"{what} {j} {k}")
                _close(mine[k]["se"], theirs[k]["se"], f"{what} {j} {k} se")

    main = M.fit(Y, delta, fitted, qids, control="bias", estimator=doc["estimator"])
    check(main, doc["per_judge"], doc["estimator"], ("phi", "psi", "theta"))
    for j in fitted:
        _wilson_win(_y(pq["y"][j]), doc["per_judge"][j]["win"], f"{j} win")
    other = doc["other_estimator"]
    check(M.fit(Y, delta, fitted, qids, control="bias", estimator=other["estimator"]),
          other["judges"], other["estimator"], ("phi",))
    # the length-controlled win rate beside it: tanh of the length difference over its sd
    ld = np.array(pq["length_difference"], dtype=float)
    check(M.fit(Y, np.tanh(ld / ld.std()), fitted, qids, control="length",
                estimator=doc["estimator"]), doc["other_controls"]["length"], "length",
          ("phi",))
    # the planted length bias is what the fit found
    share = doc["per_judge"][JUDGES[0]]["bias_share"]
    assert share["ci95"][0] > 0


def test_an_applied_fit_is_reapplied_from_the_files(written):
    fit, doc = _doc(written["fit"]), _doc(written["apply"])
    pq = doc["per_query"]
    (judge,) = doc["judges"]
    y = _y(pq["y"][judge])
    assert len(y) == doc["counts"]["queries"] == len(pq["query_ids"])
    delta = np.tanh(np.array(pq["score_difference"], dtype=float))
    again = M.apply({"judges": fit["per_judge"], "gamma": fit.get("gamma", {})}, judge, y,
                    delta, pq["query_ids"])
    applied = doc["applied"]
    _wilson_win(y, applied["win"], "applied win")
    for k in ("bc", "bias_share"):
        _close(again[k]["value"], applied[k]["value"], k)
        for a, b in zip(again[k]["ci95"], applied[k]["ci95"], strict=True):
            _close(a, b, f"{k} interval")
    _close(again["theta"]["value"], applied["theta"]["value"], "theta'")
    assert applied["n_new_queries"] == len(pq["query_ids"])  # none of them was fitted


def _older(folder: Path, tmp_path: Path) -> Path:
    """The same document as one written before `per_query` existed."""
    doc = _doc(folder)
    doc.pop("per_query")
    older = tmp_path / f"older-{folder.name}"
    older.mkdir()
    (older / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return older


@pytest.mark.parametrize("which", ["fit", "apply"])
def test_the_lists_are_records_not_measurements(written, tmp_path, which):
    """estimates() and to_frame() are the same with and without the per-query lists."""
    new, old = Result.load(written[which]), Result.load(_older(written[which], tmp_path))
    assert new.estimates().keys() == old.estimates().keys()
    assert not any("per_query" in k for k in new.estimates())
    assert any(k.endswith(".bc") for k in new.estimates())  # the figures are still there
    assert new.to_frame()["metric"].tolist() == old.to_frame()["metric"].tolist()


@pytest.mark.parametrize("which", ["fit", "apply"])
def test_the_report_renders_documents_with_and_without_the_lists(written, tmp_path, which):
    doc = _doc(written[which])
    bc = (doc["applied"] if which == "apply" else doc["per_judge"][JUDGES[0]])["bc"]["value"]
    for folder in (written[which], _older(written[which], tmp_path)):
        html = tmp_path / f"{folder.name}.html"
        res = CliRunner().invoke(app, ["report", str(folder), "--out", str(html)])
        assert res.exit_code == 0, res.output
        assert f"{bc:.2f}" in html.read_text(encoding="utf-8")
