"""Judges: prompt templates as hashed data, strict parsing, pairwise (both orders) and
pointwise rubric judging on top of one `judgeaudit.llm.Client`."""

from judgeaudit.judges.factory import JudgeBundle, make_judge
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseJudge, PairwiseVerdict
from judgeaudit.judges.parse import parse_choice, parse_score
from judgeaudit.judges.pointwise import RubricJudge, ScoreVerdict
from judgeaudit.judges.templates import Template, load_template

__all__ = [
    "JudgeBundle", "OrderVerdict", "PairwiseJudge", "PairwiseVerdict", "RubricJudge",
    "ScoreVerdict", "Template", "load_template", "make_judge", "parse_choice", "parse_score",
]
