"""quantify's results.json keeps the per-item flips its figures are computed from
(`item_flips`): a reviewer recomputes every flip rate with its Wilson interval, l*, the
susceptibility, the repeat noise and the paired sign test's p from the file alone, with
textbook formulas (statsmodels' Wilson interval, the binomial tail by hand), and gets the
document's numbers. Without them a reviewer had to capture the flips inside the run
(patching `quantify.analyse`). The lists are records: `Result.estimates()` and `to_frame()`
do not read them as measurements, and the report renders documents with and without them."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, ClassVar

import pytest
from statsmodels.stats.proportion import proportion_confint
from typer.testing import CliRunner

import judgeaudit
from judgeaudit.cli.main import app
from judgeaudit.data.schema import PairwiseItem
from judgeaudit.llm import Request, Response
from judgeaudit.llm.base import Provider
from judgeaudit.llm.registry import register
from judgeaudit.result import Result

# one judge with a planted factor and unreadable answers, one with a position bias (ties)
JUDGES = ["simhubj?factor_verbosity=0,0.5,2,1,0&invalid=0.1&seed=1",
          "simhubj?position=0.5&seed=2"]
FACTORS = ("verbosity", "authority")


@register
class DropSomeLevelTwo(Provider):
    """Scripted G_check (test-only): the level-2 rewrites of every third item changed the
    answer, so some rewrites are not judged (dropped), which the file must tell apart from
    unreadable verdicts."""

    name: ClassVar[str] = "test-peritem-checker"

    async def generate(self, request: Request) -> Response:
        meta: dict[str, Any] = request.meta or {}
        number = int(str(meta.get("item_id", "q1"))[1:])
        changed = "@2]]" in str(meta.get("rewritten")) and number % 3 == 0
        return Response(text=f'{"no" if changed else "yes"}"}}')


def _items(n: int) -> list[PairwiseItem]:
    return [PairwiseItem(id=f"q{i}", prompt=f"Question {i}?", response_1=f"Answer A to {i}.",
                         response_2=f"Answer B to {i}.", label=1 + i % 2) for i in range(n)]


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One quantify run written as the CLI writes it: the folder holding results.json."""
    out = tmp_path_factory.mktemp("quantify")
    res = judgeaudit.quantify(JUDGES, _items(160), factors=list(FACTORS), generator="simhubj",
                              checker="test-peritem-checker:x", pool=160, limit=48,
                              cache=out / "cache.sqlite")
    assert res.ok, res.reason
    res.to_json(out)
    return out


def _doc(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "results.json").read_text(encoding="utf-8"))


def _wilson(s: float, n: int) -> tuple[float, float]:
    lo, hi = proportion_confint(s, n, alpha=0.05, method="wilson")
    return float(lo), float(hi)


def _rate(ys: list[Any], not_judged: int = 0) -> dict[str, Any]:
    """Flip rate of one list (nulls left out), its Wilson interval, n and unreadable count."""
    valid = [y for y in ys if y is not None]
    n = len(valid)
    return {"value": sum(valid) / n if n else None,
            "ci95": _wilson(sum(valid), n) if n else (0.0, 1.0), "n": n,
            "n_invalid": len(ys) - n - not_judged}


def _same(mine: dict[str, Any], stored: dict[str, Any], where: str) -> None:
    assert mine["n"] == stored["n"] and mine["n_invalid"] == stored["n_invalid"], where
    if mine["value"] is None:
        assert stored["value"] is None, where
    else:
        assert mine["value"] == pytest.approx(stored["value"], abs=1e-12), where
    assert list(mine["ci95"]) == pytest.approx(stored["ci95"], abs=1e-9), where


def _sign_test_p(higher: int, lower: int) -> float:
    """One-sided exact sign test: P(X >= higher), X ~ Binomial(higher + lower, 1/2)."""
    m = higher + lower
    return sum(math.comb(m, k) for k in range(higher, m + 1)) / 2**m


def test_every_figure_is_recomputed_from_the_file_alone(written):
    doc = _doc(written)
    flips = doc["item_flips"]
    cal, test = doc["calibration_items"], doc["test_items"]
    levels = [str(lv) for lv in doc["levels"]]
    seen = {"unreadable": 0, "not_judged": 0, "tie": 0}
    for j in doc["judges"]:
        mine = flips["judges"][j]
        rep = mine["repeat"]
        assert len(rep) == len(test)
        _same(_rate(rep), doc["repeat_noise"][j], f"{j} repeat noise")
        for f in FACTORS:
            stored = doc["per_judge"][j][f]
            lists = mine["factors"][f]
            dropped = flips["not_judged"].get(f, {})
            for lv in levels:
                by_part = {"calibration": (cal, lists["calibration"][lv]),
                           "test": (test, lists["test"][lv])}
                for part, (ids, ys) in by_part.items():
                    assert len(ys) == len(ids)
                    gone = len(set(dropped.get(lv, [])) & set(ids))
                    _same(_rate(ys, gone), stored[part][lv], f"{j} {f} {part} L{lv}")
                    seen["unreadable"] += sum(y is None for y in ys) - gone
                    seen["not_judged"] += gone
                    seen["tie"] += sum(y == 0.5 for y in ys)
                both = lists["calibration"][lv] + lists["test"][lv]
                _same(_rate(both, len(dropped.get(lv, []))), stored["by_level"][lv],
                      f"{j} {f} all items L{lv}")
            # l*: the level with the highest calibration flip rate, the lowest on ties
            cal_fr = {int(lv): _rate(lists["calibration"][lv])["value"] for lv in levels}
            l_star = min((lv for lv, v in cal_fr.items() if v is not None),
                         key=lambda lv: (-cal_fr[lv], lv))
            assert stored["l_star"] == l_star
            _same(_rate(lists["test"][str(l_star)],
                        len(set(dropped.get(str(l_star), [])) & set(test))),
                  stored["susceptibility"], f"{j} {f} susceptibility")
            # the paired sign test: the rewrite's flip at l* against the same item's repeat
            pairs = [(a, b) for a, b in zip(lists["test"][str(l_star)], rep, strict=True)
                     if a is not None and b is not None]
            hi, lo = sum(a > b for a, b in pairs), sum(a < b for a, b in pairs)
            t = stored["vs_repeat_noise"]
            assert (t["level"], t["n_pairs"], t["rewrite_higher"], t["repeat_higher"]) == (
                l_star, len(pairs), hi, lo)
            assert t["p"] == pytest.approx(_sign_test_p(hi, lo), rel=1e-12)
            assert t["shown_above"] is (t["p"] < t["alpha"])
    # the run exercised every kind of value the lists hold
    assert all(seen.values()), seen
    planted = doc["per_judge"][JUDGES[0]]["verbosity"]
    assert planted["l_star"] == 3 and planted["vs_repeat_noise"]["shown_above"] is True


def _older(folder: Path, tmp_path: Path) -> Path:
    """The same document as one written before `item_flips` existed."""
    doc = _doc(folder)
    doc.pop("item_flips")
    older = tmp_path / "older"
    older.mkdir()
    (older / "results.json").write_text(json.dumps(doc), encoding="utf-8")
    return older


def test_the_lists_are_records_not_measurements(written, tmp_path):
    """estimates() and to_frame() are the same with and without the per-item lists."""
    new, old = Result.load(written), Result.load(_older(written, tmp_path))
    assert new.estimates().keys() == old.estimates().keys()
    assert not any("item_flips" in k for k in new.estimates())
    assert len(new.estimates()) > 20  # the figures themselves are still there
    assert new.to_frame()["metric"].tolist() == old.to_frame()["metric"].tolist()


def test_the_report_renders_documents_with_and_without_the_lists(written, tmp_path):
    sus = _doc(written)["per_judge"][JUDGES[0]]["verbosity"]["susceptibility"]["value"]
    for folder in (written, _older(written, tmp_path)):
        html = tmp_path / f"{folder.name}.html"
        res = CliRunner().invoke(app, ["report", str(folder), "--out", str(html)])
        assert res.exit_code == 0, res.output
        page = html.read_text(encoding="utf-8")
        assert "susceptibility" in page.lower() and f"{sus:.2f}" in page
