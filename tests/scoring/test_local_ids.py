"""The embedded judge scores every id scheme in one forward pass: letters and Roman numerals
are distinct first tokens, so `choices` = the ids gives probabilities over all five."""

from __future__ import annotations

import asyncio

import pytest

pytestmark = pytest.mark.local_model
pytest.importorskip("torch")
pytest.importorskip("transformers")

from judgeaudit.data import load  # noqa: E402
from judgeaudit.judges.pointwise import RubricJudge  # noqa: E402
from judgeaudit.llm import Client, make_provider  # noqa: E402
from judgeaudit.llm.local_model import ModelFilesError  # noqa: E402
from judgeaudit.scoring.perturbations import resolve  # noqa: E402


def test_local_judge_answers_in_every_scheme() -> None:
    try:
        prov = make_provider("local", "qwen-0.5b", {})
        prov.loaded()
    except ModelFilesError as exc:
        pytest.skip(f"local model not available: {exc}")
    judge = RubricJudge(Client(prov), "pointwise_scoring_v1")
    item = load("builtin:graded")[0]
    perts = resolve(["order_desc", "ids_letters", "ids_roman"])
    jobs = [(item, p.variant_for(item), 0) for p in perts]
    verdicts = asyncio.run(judge.score_variants(jobs))
    for p, v in zip(perts, verdicts, strict=True):
        assert v.probs is not None and list(v.probs) == list(p.scheme.ids)
        assert sum(v.probs.values()) == pytest.approx(1.0)
        assert v.score in {1, 2, 3, 4, 5} and v.raw == p.scheme.ids[v.score - 1]
