"""Run outcome, end to end: a run that judged nothing (or too little) never passes, whatever
the gate says; bad options and bad output places fail before any call; keys never leak.

The judge is a real OpenAI-compatible server on loopback (tests/llm/fakeserver.py) that
answers 429 with `Retry-After: 0` to every request: the client retries it at once, so an
"unreachable" judge fails in milliseconds, as an unreachable server does after its backoff."""

from __future__ import annotations

import json

import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app
from judgeaudit.outcome import assess

from .test_cli import write_items

runner = CliRunner()
CANARY = "sk-canary-7f3a9"


def always_429(rec, attempt):
    return "429"


def test_assess_rule():
    ok = assess(n_valid=10, n_planned=10, calls={"made": 20, "cached": 0, "failed": 0})
    assert ok["status"] == "ok" and ok["message"] == ""
    none = assess(n_valid=0, n_planned=5, calls={"made": 0, "cached": 0, "failed": 10,
                                                 "first_error": "HTTP 429"})
    assert none["status"] == "failed"
    assert none["message"].startswith("run failed: 10 of 10 calls failed")
    assert "first error: HTTP 429" in none["message"]
    # 3 of 10 failed is over the default 20% even though items were judged
    some = assess(n_valid=7, n_planned=10, calls={"made": 7, "cached": 0, "failed": 3})
    assert some["status"] == "failed" and "3 of 10 calls failed" in some["message"]
    assert assess(n_valid=7, n_planned=10, calls={"made": 7, "cached": 0, "failed": 3},
                  max_failed=0.5)["status"] == "ok"
    # every call fine but too few valid verdicts (the judge answered garbage)
    few = assess(n_valid=2, n_planned=10, calls={"made": 20, "cached": 0, "failed": 0},
                 min_valid=5)
    assert few["status"] == "failed" and "2 of 10 items" in few["message"]
    # the reason says it is too few ("60 of 60 ... (--min-valid 1000)" read as a success)
    assert "only 2 of 10 items have a valid verdict, fewer than --min-valid 5" in few["message"]


def test_evaluate_with_every_call_failing_exits_3_and_says_why(tmp_path, isolated_cache,
                                                               no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 4)
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--out", str(tmp_path / "out")])
    assert res.exit_code == 3, res.output
    assert "run failed: 8 of 8 calls failed" in res.output
    doc = json.loads((tmp_path / "out" / "results.json").read_text())
    assert doc["run"]["status"] == "failed" and doc["run"]["calls_failed"] == 8
    # failed calls are no evidence of consistency (it said 100% before)
    assert doc["position_consistency"]["n"] == 0
    assert doc["calls"]["made"] == 0 and doc["calls"]["cached"] == 0


def test_audit_that_judged_nothing_never_passes_a_gate(tmp_path, isolated_cache, no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 6)
    out = tmp_path / "audit"
    with FakeLLMServer(rule=always_429, retry_after="0") as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--probes", "position,verbosity", "--out", str(out),
                                  "--fail-on", "biased"])
    assert res.exit_code == 3, res.output
    assert "run failed" in res.output
    doc = json.loads((out / "results.json").read_text())
    assert doc["run"]["status"] == "failed"
    assert {p["verdict"] for p in doc["probes"].values()} == {"run_failed"}
    assert doc["summary"]["not_biased"] == [] and doc["summary"]["underpowered"] == []
    html = (out / "report.html").read_text()
    assert "Run failed" in html and "run failed:" in html
    assert 'class="probe' not in html  # no verdicts shown for a failed run


def test_partly_failed_run_fails_over_max_failed_and_passes_under_it(tmp_path, isolated_cache,
                                                                     no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 10)

    def some_fail(rec, attempt):  # 3 questions of 10 never get an answer
        return "429" if any(f"question {i}\n" in rec.prompt_text for i in (1, 4, 7)) else None

    with FakeLLMServer(rule=some_fail, retry_after="0", logprobs=False) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        args = ["evaluate", "--judge", spec, "--data", f"jsonl:{data}"]
        res = runner.invoke(app, [*args, "--out", str(tmp_path / "a")])
        assert res.exit_code == 3, res.output
        assert "6 of" in res.output and "calls failed" in res.output
        res = runner.invoke(app, [*args, "--out", str(tmp_path / "b"), "--max-failed", "0.5"])
        assert res.exit_code == 0, res.output
        res = runner.invoke(app, [*args, "--out", str(tmp_path / "c"), "--max-failed", "0.5",
                                  "--min-valid", "8"])
        assert res.exit_code == 3 and "7 of 10 items" in res.output, res.output


@pytest.mark.parametrize(("args", "needle"), [
    (["evaluate", "--limit", "-5"], "--limit"),
    (["evaluate", "--limit", "0"], "--limit"),
    (["evaluate", "--timeout", "0"], "--timeout"),
    (["evaluate", "--timeout", "-1"], "--timeout"),
    (["evaluate", "--concurrency", "0"], "--concurrency"),
    (["evaluate", "--concurrency", "-1"], "--concurrency"),
    (["evaluate", "--min-valid", "0"], "--min-valid"),
    (["evaluate", "--max-failed", "1.5"], "--max-failed"),
    (["audit", "--n", "0"], "--n"),
    (["audit", "--alpha", "2"], "--alpha"),
    (["audit", "--alpha", "0"], "--alpha"),
    (["audit", "--probes", ""], "--probes is empty"),  # it ran the default battery
    (["evaluate", "--seed", "-1"], "--seed"),  # numpy refused it after the judging
    (["rank", "--seed", "-1"], "--seed"),
    # sizes far past any real use: a MemoryError, or a hang, instead of the bound
    (["rank", "--samples", "1000000000000"], "--samples"),
    (["scoring-bias", "--repeats", "1000"], "--repeats"),
    (["audit", "--probes", " , "], "--probes is empty"),
])
def test_out_of_range_options_are_usage_errors(args, needle, tmp_path, isolated_cache):
    res = runner.invoke(app, [*args, "--judge", "sim", "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert needle in res.output
    assert not (tmp_path / "o" / "results.json").exists()


def test_a_run_refused_as_bad_input_leaves_no_empty_output_folder(tmp_path, isolated_cache):
    """The output folder was made to check it can be written, and a refusal after that check
    (a bad probe, a bad judge setting) left it behind, empty."""
    out = tmp_path / "a" / "b"
    res = runner.invoke(app, ["audit", "--judge", "sim?positon=1", "--out", str(out)])
    assert res.exit_code == 2, res.output
    assert not (tmp_path / "a").exists()


def test_out_that_is_a_file_fails_before_any_call(tmp_path, isolated_cache, no_keys):
    target = tmp_path / "taken"
    target.write_text("not a directory")
    data = tmp_path / "items.jsonl"
    write_items(data, 3)
    with FakeLLMServer() as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=k"
        for cmd in ("evaluate", "audit"):
            res = runner.invoke(app, [cmd, "--judge", spec, "--data", f"jsonl:{data}",
                                      "--out", str(target)])
            assert res.exit_code == 2, res.output
            assert "not a directory" in res.output
        assert srv.count() == 0


def test_report_on_a_json_list_is_a_one_line_error(tmp_path):
    p = tmp_path / "results.json"
    p.write_text("[1, 2, 3]")
    res = runner.invoke(app, ["report", str(p)])
    assert res.exit_code == 2
    assert "expected a JSON object" in res.output and "Traceback" not in res.output
    p.write_text("{not json")
    res = runner.invoke(app, ["report", str(p)])
    assert res.exit_code == 2 and "invalid JSON" in res.output


@pytest.mark.parametrize("cmd", ["evaluate", "audit"])
def test_key_never_printed_when_another_spec_parameter_is_bad(cmd, tmp_path, isolated_cache,
                                                              no_keys):
    spec = f"openai:m?base_url=http://127.0.0.1:9/v1&api_key={CANARY}&logprobs=bad"
    res = runner.invoke(app, [cmd, "--judge", spec, "--out", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert CANARY not in res.output
    assert "logprobs" in res.output


def test_key_in_base_url_userinfo_never_stored_or_shown(tmp_path, isolated_cache, no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 3)
    out = tmp_path / "audit"
    with FakeLLMServer(logprobs=False) as srv:
        url = srv.openai_url.replace("http://", f"http://user:{CANARY}@")
        spec = f"openai:m?base_url={url}&api_key=k"
        res = runner.invoke(app, ["audit", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--probes", "position", "--out", str(out)])
        assert res.exit_code in (0, 1), res.output
    assert CANARY not in res.output
    for f in ("results.json", "report.html"):
        assert CANARY not in (out / f).read_text(), f
    assert "user:***@" in json.loads((out / "results.json").read_text())["judge"]
    blob = b"".join(p.read_bytes() for p in isolated_cache.parent.glob("cache.sqlite*"))
    assert CANARY.encode() not in blob


def test_key_a_server_echoes_back_base64_encoded_is_masked(tmp_path, isolated_cache, no_keys):
    """A base_url's user:KEY@ goes out as `Authorization: Basic base64(user:KEY)`; a server
    refusing it echoed that back, and the encoded key reached the reason, results.json and
    the report."""
    import base64

    out = tmp_path / "o"
    encoded = base64.b64encode(f"user:{CANARY}".encode()).decode()
    with FakeLLMServer(api_keys={"the-right-key"}) as srv:
        url = srv.openai_url.replace("http://", f"http://user:{CANARY}@")
        res = runner.invoke(app, ["evaluate", "--judge", f"openai:m?base_url={url}", "--data",
                                  "builtin:facts", "--limit", "3", "--out", str(out)])
    assert res.exit_code == 3, res.output
    doc = (out / "results.json").read_text()
    assert "Basic ***" in doc  # the server did echo it
    for text in (res.output, doc):
        assert encoded[:12] not in text and CANARY not in text


def test_unknown_provider_names_the_known_ones(tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", "--judge", "simm", "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert "unknown provider 'simm'" in res.output and "sim" in res.output


def test_lone_surrogate_in_input_is_judged_and_written(tmp_path, isolated_cache):
    data = tmp_path / "items.jsonl"
    rows = [{"id": f"s{i}", "prompt": "q \\ud800 here", "response_1": "a \\udfff",
             "response_2": "b", "label": 1} for i in range(3)]
    # JSON escapes of lone surrogates: valid JSON, invalid Unicode once decoded
    data.write_text("\n".join(json.dumps(r).replace("\\\\u", "\\u") for r in rows) + "\n")
    res = runner.invoke(app, ["evaluate", "--judge", "sim", "--data", f"jsonl:{data}",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text(encoding="utf-8"))
    assert doc["n"] == 3
    assert not list((tmp_path / "o").glob("*.tmp"))


def test_results_writer_leaves_no_tmp_file_on_failure(tmp_path):
    from judgeaudit.report import write_results

    with pytest.raises(TypeError):
        write_results(tmp_path / "results.json", {"x": object()})
    assert list(tmp_path.iterdir()) == []


def test_inverted_labels_are_flagged(tmp_path, isolated_cache):
    from judgeaudit.data import load

    items = load("builtin:facts?limit=40")
    p = tmp_path / "inv.jsonl"
    with open(p, "w") as f:
        for it in items:
            d = it.model_dump(exclude_none=True)
            d["label"] = {1: 2, 2: 1}[d["label"]]
            f.write(json.dumps(d) + "\n")
    res = runner.invoke(app, ["evaluate", "--judge", "sim?seed=0", "--data", f"jsonl:{p}",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "labels may be inverted" in res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert doc["warnings"] and "inverted" in doc["warnings"][0]
    from judgeaudit.report import render_report

    assert "labels may be inverted" in render_report(doc)
    ok = runner.invoke(app, ["evaluate", "--judge", "sim?seed=0", "--data", "builtin:facts",
                             "--limit", "40", "--out", str(tmp_path / "ok")])
    assert "labels may be inverted" not in ok.output


def test_evaluate_on_pointwise_data_gives_agreement_not_a_traceback(tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", "--judge", "sim", "--data", "builtin:graded",
                              "--limit", "12", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "Spearman" in res.output and "Traceback" not in res.output


def test_a_failed_audit_shows_no_threshold_check(tmp_path, isolated_cache):
    """A failed run's verdicts are all run_failed; its flag column read like a passed
    threshold ("0.50<=0.70", from 1 item) beside them."""
    res = runner.invoke(app, ["audit", "--judge", "sim?invalid=0.95", "--n", "20",
                              "--min-valid", "5", "--out", str(tmp_path / "a")])
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    flagged = [p["flag"] for p in doc["probes"].values() if p.get("flag")]
    assert flagged  # the checks are kept in results.json, only not shown as passed
    assert "<=0." not in res.output and ">0." not in res.output


@pytest.mark.parametrize(("args", "counted"), [
    (["audit", "--data", "builtin:facts", "--n", "5", "--probes", "position"], "of 5 items"),
    (["rank", "--items", "builtin:controlled?n=8&k=2", "--k", "2", "--budget", "12"],
     "of 12 comparisons"),
])
def test_a_failed_runs_reason_counts_what_it_planned(args, counted, tmp_path, isolated_cache,
                                                     no_keys):
    """A bad key ends the run at once: its reason said "0 of 212 items" for an audit of --n 5
    (the data's size) and "0 of 12 items" for rank's budget of comparisons."""
    gate = ["--fail-on", "biased"] if args[0] == "audit" else []
    with FakeLLMServer(api_keys={"the-right-key"}) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=wrong"
        res = runner.invoke(app, [*args, *gate, "--judge", spec, "--out", str(tmp_path / "o")])
    assert res.exit_code == 3, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert counted in doc["run"]["message"], doc["run"]["message"]
    if gate:  # the gate's record is there too (a fatal error left none)
        assert doc["gate"] == {"fail_on": "biased", "outcome": "run_failed", "by": []}
    else:  # rank keeps its settings (its report read "budget of — comparisons, ? acquisition"
        # and --json gave k and budget as null)
        assert (doc["config"]["k"], doc["config"]["budget"], doc["config"]["rule"]) == (
            2, 12, "topk")
        from judgeaudit.result import Result

        assert {"k": 2, "budget": 12}.items() <= Result.from_document(doc).summary().items()
    assert "results: " in res.output  # where it is, as every other run says


@pytest.mark.parametrize("args", [
    ["rank", "--items", "builtin:controlled?n=8&k=2", "--k", "2", "--budget", "40"],
    ["scoring-bias", "--limit", "10"],
    ["rank-eval", "--items", "builtin:controlled?n=8&k=2", "--k", "2", "--budgets", "10",
     "--seeds", "2"],
])
def test_a_judge_answering_garbage_half_the_time_fails_every_command(args, tmp_path,
                                                                     isolated_cache):
    """Unreadable answers past --max-failed failed evaluate and audit only: rank, rank-eval and
    scoring-bias passed (exit 0) on a judge answering 'I cannot decide' half the time."""
    out = tmp_path / "o"
    res = runner.invoke(app, [*args, "--judge", "sim?invalid=0.5", "--out", str(out)])
    assert res.exit_code == 3, res.output
    run = json.loads((out / "results.json").read_text())["run"]
    assert 0.3 < run["unreadable"] / run["answers"] < 0.7, run
    assert "the first: unparseable answer: 'I cannot decide'" in run["message"]
    # on one line off a terminal (it was cut at 80 columns mid-word: a grep missed it)
    assert any("error: run failed:" in line and "'I cannot decide'" in line
               for line in res.output.splitlines()), res.output
    res = runner.invoke(app, [*args, "--judge", "sim?invalid=0.5", "--max-failed", "0.9",
                              "--out", str(out)])
    assert res.exit_code == 0, res.output  # the user's tolerance is the rule


@pytest.mark.parametrize("encoded", ["%2F", "%3F", "%23"])
def test_a_key_holding_url_punctuation_is_masked_in_a_refusal(encoded, tmp_path,
                                                              isolated_cache, no_keys):
    """A base_url password holding %2F, %3F or %23 is decoded to / ? # in the spec, and the
    refusal showed it whole (the masks stopped at those characters)."""
    key = f"{CANARY}{encoded}tail"
    res = runner.invoke(app, ["evaluate", "--judge",
                              f"openai:m?base_url=http://user:{key}@127.0.0.1:9/v1",
                              "--out", str(tmp_path / "o")])
    assert res.exit_code == 2, res.output
    assert CANARY not in res.output and "tail" not in res.output
    assert "user:***@127.0.0.1" in res.output
    # and says how to write it (the URL has the form the message asked for)
    assert "encode them twice (%252F %253F %2523)" in " ".join(res.output.split())
