"""rank's --max-failed gate does not count too-long refusals as failed calls: a pair over the
judge's context leaves its item out (counted and named in `too_long`), it does not say the
judge fails. The tester's topk run put 9 of its 40 calls on the one long item before any
answer came back and exited 3, "run failed: 9 of 40 calls failed". Other failures still
count."""

from __future__ import annotations

from fakeserver import FakeLLMServer

import judgeaudit


def _records(n: int) -> list[dict]:
    return [{"id": f"it-{i:02d}", "prompt": "question", "quality": float(i),
             "response": ("LONGITEM " if i == 2 else "") + "word " * (3 + i) + f"answer {i}"}
            for i in range(n)]


def _run(rule, max_failed: float) -> dict:
    with FakeLLMServer(rule=rule, answer="A") as srv:
        return judgeaudit.rank(f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off",
                               _records(6), k=2, budget=20, samples=100, max_failed=max_failed,
                               covariates="none", cache=False, retry=0)


def test_too_long_refusals_do_not_fail_the_run():
    res = _run(lambda req, attempt: "too_long" if "LONGITEM" in req.prompt_text else None,
               0.05)
    n = res["too_long"]["n_calls"]
    assert n >= 2 and res["too_long"]["items_left_out"] == ["it-02"]
    assert n / 20 > 0.05  # over --max-failed had they counted
    assert res["run"]["status"] == "ok", res["run"]["message"]
    assert res["run"]["calls_failed"] == 0 and res["run"]["errors"] == {"too_long": n}


def test_other_failures_still_fail_the_run():
    res = _run(lambda req, attempt: "500" if "LONGITEM" in req.prompt_text else None, 0.05)
    assert res["run"]["status"] == "failed"
    assert "calls failed" in res["run"]["message"]
