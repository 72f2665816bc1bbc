"""`mitigate --apply --json` gives the judge's and the scorer's own call counts
(`calls_by_role`), which it checks against --max-failed each on its own; the summary had
only the pooled counts, so a script could not tell which role failed."""

from __future__ import annotations

import json

from fakeserver import FakeLLMServer

from tests.hubj.test_apply_own_failed_share import (
    GOOD,
    SIM_SCORER,
    _failing,
    _fit_then_apply,
)
from tests.hubj.test_quantify_failed_judge import _human_picker, _masked


def test_apply_summary_gives_each_roles_calls(shared_data, tmp_path, isolated_cache):
    with FakeLLMServer(answer=_human_picker(shared_data)) as srv:
        bad = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"

        def fail() -> None:
            srv.rule = _failing(0.35)
        res, doc = _fit_then_apply(shared_data, tmp_path, bad, SIM_SCORER, f"{GOOD},{bad}",
                                   fail)
    assert res.exit_code == 3, res.output
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    roles = summary["calls_by_role"]  # kept in a failed run's summary: it says why
    assert roles["judges"] == doc["run"]["calls_by_judge"]
    assert roles["judges"][_masked(bad)]["failed"] > 32
    assert roles["scorer"] == {"spec": SIM_SCORER, "asked": 160, "failed": 0}
