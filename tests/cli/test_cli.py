"""The CLI end to end: `evaluate` against a real loopback OpenAI-compatible server with
injected faults and wrong labels, against the simulated judge (cache reuse), and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeserver import GOOD, FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli.main import app

runner = CliRunner()


def write_items(path: Path, n: int) -> list[int]:
    """n pairwise items whose better response carries the server's GOOD marker."""
    labels = []
    with open(path, "w") as f:
        for i in range(n):
            label = 1 + (i % 2)
            good, bad = f"right answer {i} {GOOD}", f"wrong answer {i}"
            r1, r2 = (good, bad) if label == 1 else (bad, good)
            f.write(json.dumps({"id": f"t:{i}", "prompt": f"question {i}", "response_1": r1,
                                "response_2": r2, "label": label}) + "\n")
            labels.append(label)
    return labels


def test_evaluate_openai_server_with_faults_and_wrong_labels(tmp_path, isolated_cache, no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 12)

    def answer(prompt: str) -> str:  # question 3 gets a non-verdict in both orders
        from fakeserver import default_answer
        return "Both are good" if "question 3\n" in prompt else default_answer(prompt)

    with FakeLLMServer(latency=0.01, logprobs=False, answer=answer,
                       faults=["429", "500", "drop", "non_json"], retry_after="1") as srv:
        spec = f"openai:fake-model?base_url={srv.openai_url}&api_key=sk-test-secret-123"
        res = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--out", str(tmp_path / "out"), "--concurrency", "4"])
        assert res.exit_code == 0, res.output
        doc = json.loads((tmp_path / "out" / "results.json").read_text())
        assert doc["n"] == 12 and doc["n_calls_planned"] == 24
        assert doc["n_invalid"] == 2  # both orders of question 3, counted not coerced
        assert doc["calls"]["made"] == 24 and doc["calls"]["retries"] == 4
        assert doc["calls"]["failed"] == 0
        assert srv.count() == 24 + 4
        # 11 items judged right in both orders, item 3 invalid -> 11/12
        assert doc["accuracy"]["value"] == pytest.approx(11 / 12)
        assert doc["accuracy"]["ci95"][0] < 11 / 12 < doc["accuracy"]["ci95"][1]
        assert doc["position_consistency"]["value"] == pytest.approx(1.0)
        # the key never reaches results or cache
        assert "sk-test-secret-123" not in (tmp_path / "out" / "results.json").read_text()
        assert "***" in doc["judge"]
        blob = b"".join(p.read_bytes() for p in isolated_cache.parent.glob("cache.sqlite*"))
        assert b"sk-test-secret-123" not in blob

        # A re-run is served from the cache: no request reaches the server.
        before = srv.count()
        res2 = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                   "--out", str(tmp_path / "out2")])
        assert res2.exit_code == 0, res2.output
        doc2 = json.loads((tmp_path / "out2" / "results.json").read_text())
        assert srv.count() == before and doc2["calls"] == doc["calls"] | {
            "made": 0, "cached": 24, "retries": 0, "prompt_tokens": 0,
            "completion_tokens": 0, "errors": {}, "retried": {}, "first_error": None}


def test_evaluate_auth_error_fails_at_once_with_a_clear_message(tmp_path, isolated_cache,
                                                                no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 3)
    with FakeLLMServer(api_keys=["right-key"]) as srv:
        spec = f"openai:m?base_url={srv.openai_url}&api_key=wrong-key-xyz"
        res = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--out", str(tmp_path / "out"), "--concurrency", "1"])
        assert res.exit_code == 3
        assert "wrong-key-xyz" not in res.output and "401" in res.output
        assert srv.count() == 1  # not retried, and the run stops at the first fatal error


def test_evaluate_sim_and_cache_stats(tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", "--judge", "sim?position=0.5&seed=1", "--data",
                              "builtin:arithmetic", "--limit", "30", "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "results.json").read_text())
    for key in ("n", "n_invalid", "accuracy", "position_consistency", "cohen_kappa", "calls",
                "judge", "data", "prompt_hash", "version"):
        assert key in doc, key
    assert doc["n"] == 30 and doc["calls"]["made"] == 60
    # the estimate, and the pairs counted with an order that gave no verdict (8fd3ef9)
    assert set(doc["accuracy"]) == {"value", "ci95", "n", "method", "n_no_verdict_failed",
                                    "n_no_verdict_unreadable"}
    stats = runner.invoke(app, ["cache", "stats"])
    assert "60 entries" in stats.output and "sim:default" in stats.output
    cleared = runner.invoke(app, ["cache", "clear", "--provider", "sim", "--yes"])
    assert "deleted 60" in cleared.output


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--data", "jsonl:/nonexistent/x.jsonl"], "x.jsonl"),
        (["--data", "nosuchkind:x"], "unknown data kind"),
        (["--judge", "nosuchprovider:x"], "unknown provider"),
        (["--judge", "openai"], "needs a model name"),
    ],
)
def test_bad_input_is_a_clear_error(args, needle, tmp_path, isolated_cache):
    res = runner.invoke(app, ["evaluate", *args, "--out", str(tmp_path)])
    assert res.exit_code == 2 and needle in res.output, res.output


def test_bad_jsonl_line_names_file_line_and_field(tmp_path, isolated_cache):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"id": "a", "prompt": "q", "response_1": "x", "response_2": "y", "label": 1}\n'
                 '{"id": "b", "prompt": "q", "response_1": "x", "response_2": "y", "label": 7}\n')
    res = runner.invoke(app, ["evaluate", "--judge", "sim", "--data", f"jsonl:{p}",
                              "--out", str(tmp_path)])
    assert res.exit_code == 2
    assert "bad.jsonl:2" in res.output and "label" in res.output


def test_fail_on_a_probe_not_run_names_the_probes_run_and_the_closest(tmp_path, isolated_cache):
    """A misspelt release gate ("positon") is refused before any call, with the probe it
    probably meant, as unknown (it said "names probe(s) not run: positon")."""
    res = runner.invoke(app, ["audit", "--judge", "sim", "--fail-on", "positon", "--out",
                              str(tmp_path / "a")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "--fail-on names unknown probe(s): positon; did you mean position?" in text
    assert not (tmp_path / "a" / "results.json").exists()
    res = runner.invoke(app, ["audit", "--judge", "sim", "--probes", "verbosity", "--fail-on",
                              "position", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    text = " ".join(res.output.split())
    assert "not run: position (run: verbosity)" in text


def test_rank_says_when_the_true_top_k_is_tied_at_the_boundary(tmp_path, isolated_cache):
    """Items of one quality across the k-th place are interchangeable: recall counts any of
    them as a hit, and the terminal and report say so. Before, recall was scored against
    the first tied ids in file order: a pool of equal items scored 0.00."""
    pool = tmp_path / "pool.jsonl"
    pool.write_text("".join(json.dumps({"id": f"r{i}", "prompt": "Explain water boiling.",
                                        "response": "Water boils. " * (i + 1),
                                        "quality": i % 4}) + "\n" for i in range(10)))
    args = ["rank", "--judge", "sim?length=1", "--items", f"jsonl:{pool}", "--budget", "30"]
    tied = runner.invoke(app, [*args, "--k", "3", "--out", str(tmp_path / "a")])
    assert tied.exit_code == 0, tied.output
    text = " ".join(tied.output.split())
    assert "the true top-3 is tied at the boundary" in text
    assert "recall counts any of them as a hit" in text
    assert runner.invoke(app, ["report", str(tmp_path / "a")]).exit_code == 0
    assert "any of them counts as a hit" in (tmp_path / "a" / "report.html").read_text()
    clear = runner.invoke(app, [*args, "--k", "2", "--out", str(tmp_path / "b")])
    assert clear.exit_code == 0 and "tied at the boundary" not in clear.output

    equal = tmp_path / "equal.jsonl"
    equal.write_text("".join(json.dumps({"id": f"e{i}", "prompt": "Explain water boiling.",
                                         "response": "Water boils. " * (i + 1),
                                         "quality": 1}) + "\n" for i in range(6)))
    res = runner.invoke(app, ["rank", "--judge", "sim?length=1", "--items", f"jsonl:{equal}",
                              "--budget", "10", "--k", "2", "--out", str(tmp_path / "c")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "c" / "results.json").read_text())
    assert doc["recall"] == {"naive": 1.0, "bias_aware": 1.0}
    res = runner.invoke(app, ["rank-eval", "--oracle", "sim?length=1", "--items",
                              f"jsonl:{equal}", "--k", "2", "--budgets", "4,8", "--seeds", "2",
                              "--samples", "100", "--out", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "d" / "results.json").read_text())
    assert all(v["mean"] == 1.0 for v in doc["full_data"].values())
    assert all(cell["mean"] == 1.0 for rules in doc["recall"].values()
               for cells in rules.values() for cell in cells.values())
    assert "recall counts any of them as a hit" in " ".join(res.output.split())


def test_verbose_shows_the_traceback_of_bad_input_with_its_secrets_masked(
        tmp_path, isolated_cache, monkeypatch):
    """The README says `-v` shows the traceback of an input error; it showed the one line
    only. Keys in it are masked as in the message."""
    from judgeaudit.cli import progress

    monkeypatch.setattr(progress, "SHOW_TRACEBACKS", False)  # restored after the -v runs
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "prompt": "q", "response_1": "x", "response_2": "y", '
                   '"label": 1}\n{bad\n')
    args = ["evaluate", "--judge", "sim", "--data", f"jsonl:{bad}", "--out", str(tmp_path)]
    quiet, loud = runner.invoke(app, args), runner.invoke(app, ["-v", *args])
    assert quiet.exit_code == loud.exit_code == 2
    assert "Traceback (most recent call last)" not in quiet.output
    assert "Traceback (most recent call last)" in loud.output and "bad.jsonl:2" in loud.output
    spec = "openai:m?base_url=http://127.0.0.1:9/v1&api_key=sk-SECRET123&bogus=1"
    res = runner.invoke(app, ["-v", "evaluate", "--judge", spec, "--out", str(tmp_path)])
    assert res.exit_code == 2 and "Traceback" in res.output
    assert "SECRET123" not in res.output


def test_messages_name_the_users_input_not_an_internal_file(tmp_path, isolated_cache):
    """report --out to a place that cannot be written named the report's temp file; an empty
    JSON object read as a results file of schema_version None to re-run; a missing
    --references file gave a bare [Errno 2]."""
    res = runner.invoke(app, ["audit", "--judge", "sim", "--n", "5", "--probes", "position",
                              "--out", str(tmp_path / "a")])
    assert res.exit_code == 0, res.output
    if Path("/proc/self").exists():  # a place nobody, root included, can write a file
        res = runner.invoke(app, ["report", str(tmp_path / "a"), "--out", "/proc/r.html"])
        text = " ".join(res.output.split())
        assert res.exit_code == 2 and "--out /proc/r.html: cannot write the report" in text
        assert ".tmp" not in text
    empty = tmp_path / "empty.json"
    empty.write_text("{}")
    res = runner.invoke(app, ["report", str(empty)])
    assert res.exit_code == 2
    assert "not a results.json written by judgeaudit" in " ".join(res.output.split())
    res = runner.invoke(app, ["scoring-bias", "--judge", "sim", "--limit", "3", "--references",
                              str(tmp_path / "nope.json"), "--out", str(tmp_path / "s")])
    text = " ".join(res.output.split())
    assert res.exit_code == 2 and "--references" in text and "cannot read it" in text


def test_audit_list_with_json_prints_the_probes_as_json():
    """`audit --list --json` printed the plain text list on stdout."""
    from judgeaudit.audit.probe import probe_names

    res = runner.invoke(app, ["audit", "--list", "--json"])
    assert res.exit_code == 0
    first = res.stdout.splitlines()[0]
    doc = json.loads(first)
    assert [p["name"] for p in doc["probes"]] == probe_names()
    assert {p["name"] for p in doc["probes"] if p["default"]} >= {"position", "verbosity"}


def test_a_threshold_the_budget_left_unchecked_does_not_pass_a_flag_gate(tmp_path,
                                                                          isolated_cache):
    """--max-calls cut the adaptive audit's first round before beauty's equal-substance
    check got a verdict: its flag was left out, the row looked like a probe without a
    threshold, and --fail-on flag exited 0 (with the budget to run it, it exits 1)."""
    args = ["audit", "--judge", "sim?markdown=4&seed=5", "--adaptive", "--data",
            "builtin:facts?seeds=0-2", "--no-cache", "--fail-on", "flag", "--json"]
    cut = runner.invoke(app, [*args, "--max-calls", "300", "--out", str(tmp_path / "a")])
    assert cut.exit_code == 3, cut.output
    text = " ".join(cut.output.split())
    assert "fail-on flag: the threshold check of beauty could not be made" in text
    assert "unchecked (n=0)" in text
    doc = json.loads((tmp_path / "a" / "results.json").read_text())
    flag = doc["probes"]["beauty"]["flag"]
    assert flag["exceeds"] is None and flag["n"] == 0 and "could not be checked" in flag["reason"]
    summary = json.loads(cut.stdout.splitlines()[0])
    assert summary["flags_unchecked"] == ["beauty"]
    # exit 3 with ok: true before; the JSON now says why the gate cannot pass
    assert summary["ok"] is False and summary["gate"]["outcome"] == "unchecked"
    assert "the threshold check of beauty could not be made" in summary["reason"]
    assert "unchecked" in (tmp_path / "a" / "report.html").read_text()
    whole = runner.invoke(app, [*args, "--max-calls", "600", "--out", str(tmp_path / "b")])
    assert whole.exit_code == 1, whole.output
    assert json.loads((tmp_path / "b" / "results.json").read_text())["probes"]["beauty"][
        "flag"]["exceeds"] is True


def test_max_calls_counts_calls_sent_not_answers_from_the_cache(tmp_path):
    """Cached answers are free (--max-calls' help): a re-run on a warm cache goes on past
    the round the first run stopped at. It stopped at the same round, counting cached
    answers, and without a cache stopped after sending 1,800 of a 3,000 budget."""
    cache = tmp_path / "c.sqlite"
    args = ["audit", "--judge", "sim?position=0.3&seed=5", "--adaptive", "--data",
            "builtin:facts?seeds=0-2", "--max-calls", "3000", "--cache", str(cache)]
    docs = []
    for run in ("a", "b"):
        res = runner.invoke(app, [*args, "--out", str(tmp_path / run)])
        assert res.exit_code == 0, res.output
        docs.append(json.loads((tmp_path / run / "results.json").read_text()))
    first, second = docs
    assert first["adaptive"]["stopped_by"] == "max_calls"
    assert first["calls"]["made"] <= 3000 and second["calls"]["made"] <= 3000
    assert second["adaptive"]["rounds"] > first["adaptive"]["rounds"]
    nocache = runner.invoke(app, [*args[:-2], "--no-cache", "--out", str(tmp_path / "c")])
    assert nocache.exit_code == 0, nocache.output
    made = json.loads((tmp_path / "c" / "results.json").read_text())["calls"]["made"]
    assert made > 3000 - 700  # a round's calls short of the cap at most (it stopped at 1800)


def test_scoring_bias_refuses_a_replay_judge_and_references_of_other_items(tmp_path,
                                                                           isolated_cache):
    """A replay judge serves one recorded score per item whatever the prompt: every
    perturbation read 'no effect' (FP 0, MAD 0) and a template was recommended. A references
    file whose ids match no item gave rows of n = 0 without a word."""
    data = tmp_path / "p.jsonl"
    data.write_text("".join(json.dumps({"id": f"p{i}", "prompt": "q", "response": f"r{i}",
                                        "score": i % 5 + 1}) + "\n" for i in range(6)))
    scores = tmp_path / "s.csv"
    scores.write_text("item_id,score\n" + "".join(f"p{i},{i % 5 + 1}\n" for i in range(6)))
    res = runner.invoke(app, ["scoring-bias", "--judge", f"replay:{scores}", "--data",
                              f"jsonl:{data}", "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "a replay judge serves" in " ".join(res.output.split())
    refs = tmp_path / "refs.json"
    refs.write_text(json.dumps({f"X{i}": {str(k): f"ref {k}" for k in range(1, 6)}
                                for i in range(3)}))
    res = runner.invoke(app, ["scoring-bias", "--judge", "sim?seed=0", "--data",
                              f"jsonl:{data}", "--references", str(refs), "--perturbations",
                              "ref_1", "--out", str(tmp_path / "b")])
    assert res.exit_code == 2
    assert "none of its 3 item ids is an item of the data" in " ".join(res.output.split())


def test_one_order_recordings_are_judged_in_their_order_and_a_missing_item_is_left_out(
        tmp_path, isolated_cache):
    """A recording with one order per pair (`order=12`, alpaca_eval) passed replay-check
    but evaluate asked for order 21 and failed the run; an item missing from a recording
    failed the whole run ('0 of 6 items have a valid verdict') instead of being left out."""
    data = tmp_path / "d.jsonl"
    items = [{"id": f"t{i}", "prompt": f"Q t{i}?", "response_1": f"one t{i}",
              "response_2": f"two t{i}", "label": 1 + i % 2} for i in range(6)]
    data.write_text("".join(json.dumps(it) + "\n" for it in items))
    one = tmp_path / "o12.csv"
    one.write_text("qid,pick\n" + "".join(f"t{i},{1 + i % 2 if i else 2}\n" for i in range(6)))
    alp = tmp_path / "alp.json"
    alp.write_text(json.dumps([{"instruction": it["prompt"], "output_1": it["response_1"],
                                "output_2": it["response_2"], "preference": it["label"]}
                               for it in items]))
    for spec, acc in ((f"replay:{one}?item=qid&verdict=pick&order=12", 5 / 6),
                      (f"replay:{alp}", 1.0)):
        res = runner.invoke(app, ["evaluate", "--judge", spec, "--data", f"jsonl:{data}",
                                  "--out", str(tmp_path / "o")])
        assert res.exit_code == 0, res.output
        doc = json.loads((tmp_path / "o" / "results.json").read_text())
        assert doc["calls"]["made"] == 6 and doc["calls"]["failed"] == 0
        assert doc["accuracy"]["value"] == pytest.approx(acc) and doc["n_single_order"] == 6
    both = tmp_path / "both.csv"
    both.write_text("item_id,order,verdict\n" + "".join(
        f"t{i},12,{it['label']}\nt{i},21,{it['label']}\n" for i, it in enumerate(items[:5])))
    res = runner.invoke(app, ["evaluate", "--judge", f"replay:{both}", "--data",
                              f"jsonl:{data}", "--out", str(tmp_path / "m")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "m" / "results.json").read_text())
    assert doc["calls"]["failed"] == 2 and doc["calls"]["errors"] == {"not_recorded": 2}
    assert doc["accuracy_valid"]["value"] == 1.0 and doc["accuracy_valid"]["n"] == 5


def test_gold_scores_outside_the_rubric_scale_are_warned_about(tmp_path, isolated_cache):
    """Gold scores 0 and 6-10 against a 1..5 rubric passed silently (exact agreement 0%)."""
    data = tmp_path / "p.jsonl"
    data.write_text("".join(json.dumps({"id": f"q{i}", "prompt": "q", "response": f"r{i}",
                                        "score": i % 11}) + "\n" for i in range(12)))
    scores = tmp_path / "s.csv"
    scores.write_text("item_id,score\n" + "".join(f"q{i},{i % 5 + 1}\n" for i in range(12)))
    res = runner.invoke(app, ["evaluate", "--judge", f"replay:{scores}", "--data",
                              f"jsonl:{data}", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads((tmp_path / "o" / "results.json").read_text())
    assert any("7 gold score(s) lie outside the rubric's 1..5 (e.g. 0, 6, 7)" in w
               for w in doc["warnings"])


def test_per_verdict_rates_are_clustered_by_item(tmp_path, isolated_cache):
    """An item's two orders are not two independent draws: decisive verdicts and the
    first-position rate take the item-clustered interval (a plain Wilson over the 40
    verdicts of 20 items was too narrow: 89% coverage at nominal 95%)."""
    from judgeaudit.stats import wilson

    data = tmp_path / "d.jsonl"
    rec = tmp_path / "v.csv"
    lines = ["item_id,order,verdict"]
    with data.open("w") as f:
        for i in range(20):
            label = 1 + i % 2
            f.write(json.dumps({"id": f"i{i}", "prompt": "q", "response_1": f"a{i}",
                                "response_2": f"b{i}", "label": label}) + "\n")
            w = label if i < 14 else 3 - label  # both orders agree on every item
            lines += [f"i{i},12,{w}", f"i{i},21,{w}"]
    rec.write_text("\n".join(lines) + "\n")
    res = runner.invoke(app, ["evaluate", "--judge", f"replay:{rec}", "--data",
                              f"jsonl:{data}", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    dec = json.loads((tmp_path / "o" / "results.json").read_text())["decisive_accuracy"]
    assert dec["value"] == 0.7 and dec["n"] == 40
    assert dec["method"].startswith("wilson-clustered (design effect 2.")
    lo, hi = wilson(28, 40)
    assert dec["ci95"][0] < lo and dec["ci95"][1] > hi  # wider than the unclustered one
    item_lo, item_hi = wilson(14, 20)  # about one item's worth per pair
    assert abs(dec["ci95"][0] - item_lo) < 0.02 and abs(dec["ci95"][1] - item_hi) < 0.02


@pytest.mark.parametrize("gate", ["", " ", ",", " , "])
def test_an_empty_release_gate_is_refused_not_turned_off(gate, tmp_path, isolated_cache):
    """`--fail-on "$GATE"` with GATE unset passed a biased judge (exit 0); audit and compare
    now refuse it before any call."""
    res = runner.invoke(app, ["audit", "--judge", "sim?position=3", "--probes", "position",
                              "--n", "10", "--fail-on", gate, "--out", str(tmp_path / "a")])
    assert res.exit_code == 2 and "--fail-on is empty" in " ".join(res.output.split())
    assert not (tmp_path / "a" / "results.json").exists()
    res = runner.invoke(app, ["compare", str(tmp_path / "x"), str(tmp_path / "y"),
                              "--fail-on", gate])
    assert res.exit_code == 2 and "--fail-on" in res.output


def test_the_gate_outcome_is_in_results_and_json_not_only_the_exit_code(tmp_path,
                                                                        isolated_cache):
    """`--fail-on biased` exited 1 while --json said ok: true with no gate; a script reading
    the JSON (or results.json later) could not tell a tripped gate from a passed one."""
    args = ["audit", "--probes", "position", "--n", "20", "--json"]
    res = runner.invoke(app, [*args, "--judge", "sim?position=3", "--fail-on", "biased",
                              "--out", str(tmp_path / "a")])
    assert res.exit_code == 1
    gate = {"fail_on": "biased", "outcome": "tripped", "by": ["position"]}
    summary = json.loads(res.stdout.strip().splitlines()[-1])
    assert summary["gate"] == gate
    assert json.loads((tmp_path / "a" / "results.json").read_text())["gate"] == gate
    res = runner.invoke(app, [*args, "--judge", "sim", "--fail-on", "position",
                              "--out", str(tmp_path / "b")])
    assert res.exit_code == 0
    assert json.loads(res.stdout.strip().splitlines()[-1])["gate"]["outcome"] == "passed"


def test_json_on_bad_input_prints_one_object_saying_why(tmp_path, isolated_cache):
    """Exit 2 with --json left stdout empty: a script parsing it failed instead of reading
    the reason."""
    res = runner.invoke(app, ["evaluate", "--judge", "sim", "--data",
                              f"jsonl:{tmp_path / 'nope.jsonl'}", "--json"])
    assert res.exit_code == 2
    doc = json.loads(res.stdout.strip())
    assert doc["ok"] is False and doc["exit_code"] == 2 and "no such file" in doc["reason"]
    assert doc["command"] == "evaluate"


@pytest.mark.parametrize(("args", "said"), [
    (["audit", "--n", "0"], "--n: expected an integer >= 1, got 0"),
    (["audit", "--nosuchopt"], "No such option: --nosuchopt"),
    (["audit", "--config", "/nonexistent/c.toml"], "no such file"),
])
def test_json_on_an_option_the_parser_refuses_prints_one_object(args, said, tmp_path):
    """Errors the option parser raises (before the command runs) printed no JSON at all with
    --json; the console entry point now prints one object with the parser's message."""
    import subprocess
    import sys

    res = subprocess.run([sys.executable, "-m", "judgeaudit.cli.main", *args, "--json"],
                         capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    doc = json.loads(res.stdout.strip())
    assert doc["ok"] is False and doc["exit_code"] == 2 and said in doc["reason"]
    assert doc["command"] == "audit"  # as every other --json object names it
