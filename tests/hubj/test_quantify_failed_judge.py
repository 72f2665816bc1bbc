"""A judge whose own calls fail past --max-failed, beside good ones, while answering some
items: quantify fitted it on what it answered, counted its rows in Holm's m (raising every
other row's adjusted p) and exited 0, the terminal's "ABOVE --max-failed" (on unreadable
answers only) the one sign. It is now left out of every number (quantify: the flip rates and
Holm's m; mitigate: the fit; discover: the consensus), shown as left out with its own counts
on the terminal, in the report and in --json, and the run fails (exit 3), as the README's
"Exit codes and failed runs" says of a run past --max-failed.

The failing judge is a real loopback server (`fakeserver`) that picks the human-preferred
response, and answers a "too long" 400 (one prompt's failure, not the judge's) to about half
of the prompts the rule picks; the other judges are simulated (`simhubj`, `sim`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.hubj.quantify import holm
from tests.hubj.test_discover_reason import _ReasonScript  # G modules answering by rule

runner = CliRunner()
SIM = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"


@pytest.fixture(autouse=True)
def _own_cache(isolated_cache):
    """Every test here: the cache its own."""


def _data(shared_data) -> str:
    return f"pandalm:{shared_data / 'pandalm_testset'}"


def _human_picker(shared_data) -> Callable[[str], str]:
    """An answer function that picks the response the humans preferred (found by its text in
    the prompt: the better response is never rewritten), so the served judge agrees with
    the humans wherever it answers."""
    from judgeaudit.commands import load_data

    items, _spec = load_data(_data(shared_data))
    pairs = [(it.response_1, it.response_2) if it.label == 1 else (it.response_2, it.response_1)
             for it in items if it.label in (1, 2)]

    def answer(prompt: str) -> str:
        for better, worse in pairs:
            b, w = prompt.find(better), prompt.find(worse)
            if b >= 0 and w >= 0 and better != worse:
                return "A" if b < w else "B"
        return "A"

    return answer


def _half(req: Any) -> bool:
    """About half of the prompts, the same ones every time."""
    return hashlib.sha256(req.prompt_text.encode()).digest()[0] % 2 == 0


def _rewrites_fail(req: Any, attempt: int) -> str | None:
    """Half of the prompts showing a rewrite (simhubj's generator marks it `[[factor@l]]`)
    are refused as too long: the judge answers every agreement item, then fails."""
    return "too_long" if "[[" in req.prompt_text and _half(req) else None


def _all_fail(req: Any, attempt: int) -> str | None:
    """Half of every prompt refused as too long, from the agreement items on."""
    return "too_long" if _half(req) else None


def _quantify(shared_data, tmp_path, bad: str, *extra: str):
    return runner.invoke(app, ["quantify", "--judges", f"{SIM},{bad}", "--generator", "simhubj",
                               "--data", _data(shared_data), "--factors", "verbosity,authority",
                               "--pool", "60", "--limit", "24", "--out", str(tmp_path), *extra])


def _masked(spec: str) -> str:
    return spec.replace("api_key=k", "api_key=***")


def test_quantify_leaves_a_judge_failing_past_max_failed_out_of_the_numbers_and_holm(
        shared_data, tmp_path):
    """The served judge answers every agreement item, then half of its rewrite prompts fail
    (241 of its 640 calls; 241 of the run's 1,760, 13.7%, under the pooled 0.2): it was in
    per_judge, Holm's m was 4 (2 judges x 2 factors) and the run exited 0."""
    with FakeLLMServer(answer=_human_picker(shared_data), rule=_rewrites_fail) as srv:
        bad = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = _quantify(shared_data, tmp_path, bad, "--json")
    name = _masked(bad)
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    run = doc["run"]
    # the pooled share alone passes: the judge is failed on its own calls
    assert run["failed_share"] <= 0.2, run
    left = run["judges_left_out"][name]
    own = run["calls_by_judge"][name]
    assert left["calls_asked"] == own["asked"] > 0
    assert left["calls_failed"] == own["failed"] > 0.2 * own["asked"]
    assert left["answers"] == run["answers_by_judge"][name]["answers"] > 0  # it answered some
    assert run["judges_over_max_failed"] == [name]
    assert (f"judge {name} is left out of the flip rates and Holm's m: {left['calls_failed']} "
            f"of its {left['calls_asked']} calls failed (--max-failed 0.2 allows "
            f"{int(0.2 * left['calls_asked'])}; first error: ") in run["message"], run["message"]
    # out of every number: per judge, the profile, the repeat noise, the per-item flips
    assert list(doc["per_judge"]) == list(doc["profile"]) == list(doc["repeat_noise"]) == [SIM]
    assert list(doc["item_flips"]["judges"]) == [SIM]
    # and of Holm's m: the sim judge's 2 rows, adjusted over those 2 alone
    assert doc["multiplicity"]["m"] == 2
    rows = [r["vs_repeat_noise"] for r in doc["per_judge"][SIM].values()]
    assert [t["p_adjusted"] for t in rows] == holm([t["p"] for t in rows])
    assert all(t["m"] == 2 for t in rows)
    # the consensus was not touched: the judge answered every agreement item
    assert doc["splits"]["per_judge"][name]["invalid"] == 0
    # shown: the terminal with its counts, --json, the report
    text = " ".join(res.output.split())
    assert (f"left out: {name}: {left['calls_failed']} of {left['calls_asked']} of its calls "
            f"failed, {left['unreadable']} of {left['answers']} of its answers unreadable") in text
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["ok"] is False and summary["exit_code"] == 3
    assert summary["judges_left_out"][name]["calls_failed"] == left["calls_failed"]
    assert summary["judges_left_out"][name]["calls_asked"] == left["calls_asked"]
    assert f"judge {name} is left out" in summary["reason"]
    page = (tmp_path / "report.html").read_text()
    assert "Run failed" in page and "is left out of the flip rates and Holm&#39;s m" in page
    assert f"{left['calls_failed']} of its {left['calls_asked']} calls failed" in page


def test_quantify_leaves_a_judge_failing_on_the_agreement_items_out_of_the_consensus(
        shared_data, tmp_path):
    """Half of the served judge's agreement prompts fail: its invalid verdicts shrank the
    agreement items of every judge (an item must be agreed by all). It is left out before
    the rewrites: the agreement items are the sim judge's, and it is asked nothing more."""
    with FakeLLMServer(answer=_human_picker(shared_data), rule=_all_fail) as srv:
        bad = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = _quantify(shared_data, tmp_path, bad)
        served = srv.count()
    name = _masked(bad)
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    sp = doc["splits"]
    assert sp["per_judge"][name]["invalid"] > 0
    assert sp["consensus_agree"] == sp["per_judge"][SIM]["agree"]
    assert sp["left_out_of_consensus"] == [name]
    # asked the agreement items only (both orders; a repeated item is answered once)
    assert served <= doc["run"]["calls_by_judge"][name]["asked"] <= 2 * 60
    assert list(doc["per_judge"]) == [SIM] and doc["multiplicity"]["m"] == 2
    assert name in doc["run"]["judges_left_out"]


def test_mitigate_leaves_a_judge_failing_past_max_failed_out_of_the_fit(shared_data, tmp_path):
    """The same judge in mitigate: it was fitted on the queries it answered and the run
    exited 0. Now the fit is the sim judge's alone, the served one shown as not fitted with
    why, and the run fails."""
    with FakeLLMServer(answer=_human_picker(shared_data), rule=_all_fail) as srv:
        bad = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        good = "sim?length=1&seed=2"
        res = runner.invoke(app, ["mitigate", "--judges", f"{good},{bad}", "--scorer",
                                  "simhubj?score_from=length", "--data", _data(shared_data),
                                  "--factor", "length", "--limit", "60", "--out",
                                  str(tmp_path), "--json"])
    name = _masked(bad)
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["run"]["failed_share"] <= 0.2, doc["run"]  # the pooled gate passes
    assert list(doc["per_judge"]) == [good]
    assert doc["not_fitted"][name]["reason"].startswith("left out (above --max-failed): ")
    assert name in doc["run"]["judges_left_out"]
    assert "is left out of the fit" in doc["run"]["message"]
    left = doc["run"]["judges_left_out"][name]
    assert (f"left out: {name}: {left['calls_failed']} of {left['calls_asked']} of its calls "
            "failed") in " ".join(res.output.split())
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["judges_left_out"][name]["calls_failed"] == left["calls_failed"]


def test_discover_leaves_a_judge_failing_past_max_failed_out_of_the_consensus(
        shared_data, tmp_path, stub_embedder):
    """Beside the recorded PandaLM judges, a served judge failing half its prompts (and
    picking the human-preferred response where it answers) emptied the consensus
    disagreements; it is left out of the consensus, which is then the recorded judges',
    and the run fails naming it."""
    with FakeLLMServer(answer=_human_picker(shared_data), rule=_all_fail) as srv:
        bad = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, ["discover", "--recorded", "pandalm", "--judges", bad,
                                  "--llm", f"{_ReasonScript.name}:x", "--data",
                                  _data(shared_data), "--limit", "4", "--holdout-limit", "4",
                                  "--iterations", "1", "--out", str(tmp_path)])
    name = _masked(bad)
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    sp = doc["splits"]
    assert sp["left_out_of_consensus"] == [name]
    assert sp["consensus_disagree"] > 0 and doc.get("discover"), sp  # the recorded judges'
    assert "is left out of the consensus" in doc["run"]["message"]
    assert name in doc["run"]["judges_left_out"]
    assert f"left out: {name}: " in " ".join(res.output.split())
