"""Scoring bias of rubric judges: how pointwise scores move when the scoring prompt changes
(rubric order, score ids, a reference answer labelled with a score), with the generation-review
pipeline that writes reference answers at each score level."""

from judgeaudit.scoring.run import run_scoring_bias

__all__ = ["run_scoring_bias"]
