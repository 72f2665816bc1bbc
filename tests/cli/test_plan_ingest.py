"""Plan, execute elsewhere, ingest, re-run: `judgeaudit --plan-only PLAN.jsonl COMMAND` writes
the requests instead of sending them, a test-side executor answers each plan line through
the same loopback OpenAI-compatible server a direct run uses (as `vllm run-batch` would),
`judgeaudit ingest` stores the answers, and the re-run makes no call and writes the same
results as the direct run (timings and call counts aside)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from fakeserver import FakeLLMServer
from typer.testing import CliRunner

from judgeaudit.cli import plan_cmd
from judgeaudit.cli.main import app
from judgeaudit.llm import Cache
from tests.cli.test_cli import write_items

plan_cmd.register(app)  # (until the main module registers it; idempotent)
runner = CliRunner()
# Parts of a results file that differ between any two runs of the same command.
VOLATILE = {"seconds", "calls", "started", "finished", "created", "elapsed", "timings",
            "version", "run", "cache"}


def execute(plan: Path, out: Path, base: str, *, fail: set[str] = frozenset()) -> int:
    """Answer every plan line through the server at `base` (a stand-in for vllm run-batch):
    OpenAI batch output lines; custom_ids in `fail` get an error line instead."""
    n = 0
    with httpx.Client(timeout=30) as http, open(plan) as f, open(out, "w") as w:
        for i, raw in enumerate(f):
            line = json.loads(raw)
            assert set(line) == {"custom_id", "method", "url", "body"}
            assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
            if line["custom_id"] in fail:
                row: dict[str, Any] = {
                    "id": f"vllm-{i}", "custom_id": line["custom_id"],
                    "response": {"status_code": 400, "request_id": f"r{i}", "body": None},
                    "error": "context length exceeded"}
            else:
                r = http.post(base + line["url"], json=line["body"],
                              headers={"Authorization": "Bearer EMPTY"})
                row = {"id": f"vllm-{i}", "custom_id": line["custom_id"],
                       "response": {"status_code": r.status_code, "request_id": f"r{i}",
                                    "body": r.json()}, "error": None}
            w.write(json.dumps(row) + "\n")
            n += 1
    return n


def stable(doc: Any) -> Any:
    if isinstance(doc, dict):
        return {k: stable(v) for k, v in doc.items() if k not in VOLATILE}
    if isinstance(doc, list):
        return [stable(v) for v in doc]
    return doc


def invoke(*args: str, ok: bool = True) -> Any:
    res = runner.invoke(app, [str(a) for a in args])
    if ok:
        assert res.exit_code == 0, res.output
    return res


@pytest.mark.parametrize("command", ["evaluate", "audit"])
def test_plan_execute_ingest_rerun_matches_a_direct_run(command, tmp_path, monkeypatch,
                                                        no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 10)
    extra = ["--limit", "10"] if command == "evaluate" else ["--n", "10"]
    with FakeLLMServer() as srv:
        spec = f"openai:fake-model?base_url={srv.openai_url}&api_key=sk-plan-secret-123"
        args = [command, "--judge", spec, "--data", f"jsonl:{data}", *extra]

        # A direct run in its own cache.
        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "direct.sqlite"))
        invoke(*args, "--out", tmp_path / "direct")
        direct = json.loads((tmp_path / "direct" / "results.json").read_text())
        n_direct = srv.count()
        assert n_direct > 0

        # The same command planned into a fresh cache: no call, no results.
        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "planned.sqlite"))
        plan = tmp_path / "plan.jsonl"
        res = invoke("--plan-only", plan, *args, "--out", tmp_path / "planned")
        assert srv.count() == n_direct
        assert not (tmp_path / "planned" / "results.json").exists()
        lines = [json.loads(x) for x in plan.read_text().splitlines()]
        assert len(lines) == len({x["custom_id"] for x in lines}) == n_direct
        assert f"planned {len(lines)} requests to {plan} (0 already cached)" in \
            " ".join(res.output.split())
        assert "judgeaudit ingest" in res.output
        assert "sk-plan-secret-123" not in plan.read_text()
        assert not list(tmp_path.glob(".plan.jsonl.*"))  # the atomic write left no temp file
        # Every body is exactly what the direct run sent.
        sent = sorted(json.dumps(r.body, sort_keys=True) for r in srv.snapshot())
        assert sorted(json.dumps(x["body"], sort_keys=True) for x in lines) == sent

        # Executed elsewhere, ingested, re-run from the cache: no call, same results.
        output = tmp_path / "output.jsonl"
        execute(plan, output, srv.url)
        before = srv.count()
        res = invoke("ingest", output, "--plan", plan)
        assert f"ingested {len(lines)} answers of {len(lines)} lines" in res.output
        assert "replaced" not in res.output
        # ingested again: said to replace what was cached (it read as new answers)
        again = " ".join(invoke("ingest", output, "--plan", plan).output.split())
        assert f"({len(lines)} of them replaced answers already cached)" in again
        assert srv.count() == before
        res = invoke("--plan-only", tmp_path / "plan2.jsonl", *args, "--out",
                     tmp_path / "planned")
        assert "nothing to plan" in res.output
        assert (tmp_path / "plan2.jsonl").read_text() == ""
        invoke(*args, "--out", tmp_path / "replayed")
        assert srv.count() == before
        replayed = json.loads((tmp_path / "replayed" / "results.json").read_text())
        assert replayed["calls"]["made"] == 0 and replayed["calls"]["failed"] == 0
        assert replayed["calls"]["cached"] == direct["calls"]["made"] + direct["calls"][
            "cached"]
        assert stable(replayed) == stable(direct)


def test_ingest_counts_error_lines_and_never_caches_them(tmp_path, monkeypatch, no_keys):
    data = tmp_path / "items.jsonl"
    write_items(data, 4)
    cache_path = tmp_path / "c.sqlite"
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(cache_path))
    with FakeLLMServer() as srv:
        spec = f"openai:fake-model?base_url={srv.openai_url}"
        args = ["evaluate", "--judge", spec, "--data", f"jsonl:{data}", "--out",
                tmp_path / "out"]
        plan = tmp_path / "plan.jsonl"
        invoke("--plan-only", plan, *args)
        keys = [json.loads(x)["custom_id"] for x in plan.read_text().splitlines()]
        assert len(keys) == 8
        output = tmp_path / "output.jsonl"
        execute(plan, output, srv.url, fail={keys[0], keys[1]})
        with open(output, "a") as f:  # and an OpenAI-style expired line, a stranger, junk
            f.write(json.dumps({"id": "b", "custom_id": keys[2], "response": None,
                                "error": {"code": "batch_expired", "message": "late"}}) + "\n")
            f.write(json.dumps({"id": "c", "custom_id": "f" * 64, "response": {
                "status_code": 200, "body": {"choices": [{"message": {"content": "A"}}]}},
                "error": None}) + "\n")
            f.write("not json\n")
        res = invoke("ingest", output, "--plan", plan)
        text = " ".join(res.output.split())
        assert "ingested 6 answers of 11 lines" in text
        # "context length exceeded": kept as too-long refusals, not as answers (the re-run
        # fails them as a live call failed; tests/cli/test_rank_plan_too_long3.py)
        assert "2 error lines (too_long 2), 2 too-long refusals kept in the cache" in text
        assert "1 answer to a request not planned with this cache" in text
        assert "1 unreadable line in" in text and "(line 11:" in text  # where it is
        assert "planned requests have no answer" not in text
        # A second ingest of nothing counts the answers (and refusals) the first one stored
        # (it said "8 of 8 planned requests have no answer", though 6 were cached).
        (tmp_path / "none.jsonl").write_text("")
        res = invoke("ingest", tmp_path / "none.jsonl", "--plan", plan, ok=False)
        text = " ".join(res.output.split())
        assert "planned requests have no answer" not in text
        assert res.exit_code == 2  # an empty file is an input error (it exited 3, then 0)
        cache = Cache(cache_path)
        assert cache.get(keys[0]) is None and cache.get(keys[1]) is None
        assert cache.refusal(keys[0])[0] == cache.refusal(keys[1])[0] == "too_long"
        assert cache.get(keys[2]) is not None  # its answer came first; the late line is a repeat
        assert cache.get("f" * 64) is None
        cache.close()
        # The next plan asks nothing again: the refused two fail as a live call did.
        res = invoke("--plan-only", tmp_path / "plan2.jsonl", *args)
        assert (tmp_path / "plan2.jsonl").read_text() == ""
        assert "nothing to plan: all 8 requests are cached" in " ".join(res.output.split())


def test_plan_only_refuses_no_cache_and_ingest_refuses_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    res = invoke("--plan-only", tmp_path / "p.jsonl", "evaluate", "--judge", "sim",
                 "--no-cache", "--out", tmp_path / "o", ok=False)
    assert res.exit_code == 2 and "needs the cache" in res.output
    res = invoke("ingest", tmp_path / "nope.jsonl", ok=False)
    assert res.exit_code == 2 and "no such file" in res.output
    # A file with no batch output line in it (a truncated one, the plan itself, ...) is bad
    # input (exit 2, saying where), not a failed run (it exited 3).
    (tmp_path / "cut.jsonl").write_text('{"custom_id":"abc"\n')
    res = invoke("ingest", tmp_path / "cut.jsonl", ok=False)
    assert res.exit_code == 2, res.output
    assert "no line is a batch output line (line 1 first" in " ".join(res.output.split())
    # a folder, an empty file (it ingested "0 answers of 0 lines", exit 0), a --cache typo
    # (it created an empty database there before saying the answers were not planned)
    res = invoke("ingest", tmp_path, ok=False)
    assert res.exit_code == 2 and "is a directory, expected a file" in res.output
    (tmp_path / "empty.jsonl").write_text("")
    res = invoke("ingest", tmp_path / "empty.jsonl", ok=False)
    assert res.exit_code == 2 and "empty file" in res.output
    res = invoke("ingest", tmp_path / "cut.jsonl", "--cache", tmp_path / "typo.sqlite", ok=False)
    assert res.exit_code == 2 and "no such cache file" in " ".join(res.output.split())
    assert not (tmp_path / "typo.sqlite").exists()
    # A command that calls no judge has nothing to plan: it ran in full and wrote no plan.
    for cmd in (["selfcheck"], ["compare", tmp_path / "a", tmp_path / "b"], ["judges"]):
        res = invoke("--plan-only", tmp_path / "p.jsonl", *cmd, ok=False)
        assert res.exit_code == 2 and "calls no judge" in res.output, (cmd, res.output)
    # The planner does not outlive its invocation: the next command runs for real.
    invoke("evaluate", "--judge", "sim", "--limit", "4", "--out", tmp_path / "o")
    assert (tmp_path / "o" / "results.json").exists()


def test_plan_only_on_the_sim_judge_counts_the_default_audit(tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "plan.jsonl"
    res = invoke("--plan-only", plan, "audit", "--judge", "sim", "--n", "30", "--out",
                 tmp_path / "o")
    lines = plan.read_text().splitlines()
    assert len(lines) > 100 and not (tmp_path / "o" / "results.json").exists()
    body = json.loads(lines[0])["body"]
    assert body["model"] == "default" and body["logprobs"] is True
    assert f"planned {len(lines)} requests" in " ".join(res.output.split())


def test_plan_only_with_json_prints_what_it_planned_on_stdout(tmp_path, monkeypatch):
    """stdout was empty: a script could not read how many requests were planned."""
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "plan.jsonl"
    res = runner.invoke(app, ["--plan-only", str(plan), "audit", "--judge", "sim", "--n", "5",
                              "--json", "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["planned"] == len(plan.read_text().splitlines()) > 0 and doc["cached"] == 0
    assert doc["plan"] == str(plan) and doc["prompt_tokens_estimate"] > 0
    assert doc["command"] == "audit" and doc["ok"] is True  # as every --json object says


def test_plan_only_plans_one_adaptive_round_per_run(tmp_path, monkeypatch):
    """Which probes go on to the next round depends on this round's answers, so an adaptive
    audit plans one round and stops (as an active ranking does); it planned every round up to
    --max-n from unanswered verdicts (9,000 requests at the defaults, a fixed-n bill)."""
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    sizes = []
    for max_n in ("20", "500"):  # one round of 20 items either way
        plan = tmp_path / f"plan{max_n}.jsonl"
        res = invoke("--plan-only", plan, "audit", "--judge", "sim", "--adaptive",
                     "--max-n", max_n, "--round-size", "20", "--out", tmp_path / "o")
        sizes.append(len(plan.read_text().splitlines()))
        assert "adaptive round 1:" in " ".join(res.output.split())
    assert sizes[0] == sizes[1] > 0


def test_plan_only_says_what_the_planned_requests_would_use_and_cost(tmp_path, monkeypatch,
                                                                      no_keys):
    """A paying user plans first to see the bill: the plan's prompt tokens (characters / 4,
    `benchmarks/results/plan_estimate.json`: 13-19% above the Qwen2.5 tokenizer's count),
    its completion tokens at most (each request's max_tokens), and their cost at the
    judge's price, named as the calls line names it (the spec's price_in/price_out here: it
    said "at list prices"); a judge that may bill at an unknown price is named."""
    from judgeaudit.llm.plan import CHARS_PER_TOKEN

    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "plan.jsonl"
    judge = "openai:m?base_url=https://api.example.com/v1&api_key=k&price_in=2&price_out=8"
    res = invoke("--plan-only", plan, "audit", "--judge", judge, "--n", "10", "--out",
                 tmp_path / "o")
    bodies = [json.loads(x)["body"] for x in plan.read_text().splitlines()]
    chars = sum(len(m["content"]) for b in bodies for m in b["messages"])
    completion = sum(b["max_tokens"] for b in bodies)
    cost = (chars / CHARS_PER_TOKEN * 2 + completion * 8) / 1e6
    text = " ".join(res.output.split())
    assert (f"about {round(chars / CHARS_PER_TOKEN):,} prompt tokens (characters / 4) and at "
            f"most {completion:,} completion tokens; about ${cost:.4f} at the judge spec's "
            "prices") in text
    assert "--max-cost" not in text
    capped = invoke("--plan-only", tmp_path / "p4.jsonl", "audit", "--judge", judge, "--n",
                    "10", "--max-cost", f"{cost / 4:.6f}", "--out", tmp_path / "o4")
    text = " ".join(capped.output.split())
    assert f"above --max-cost ${cost / 4:.6f}".rstrip("0") in text
    assert "a run with it would stop after about 25% of these requests" in text
    unpriced = invoke("--plan-only", tmp_path / "p2.jsonl", "audit", "--judge",
                      "openai:m?base_url=https://api.example.com/v1&api_key=k", "--n", "10",
                      "--out", tmp_path / "o2")
    text = " ".join(unpriced.output.split())
    assert "the price of openai:m is not known" in text and "at list prices" not in text
    free = invoke("--plan-only", tmp_path / "p3.jsonl", "audit", "--judge", "sim", "--n",
                  "10", "--out", tmp_path / "o3")
    text = " ".join(free.output.split())
    assert "completion tokens" in text and "list prices" not in text and "price" not in text


def _sim_plan_and_answers(tmp_path: Path, monkeypatch) -> tuple[Path, list[str], list[dict]]:
    """A sim audit planned into a fresh cache and an answer line for each of its requests
    (the executor's output, as a provider's batch would write it)."""
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "plan.jsonl"
    invoke("--plan-only", plan, "audit", "--judge", "sim", "--n", "5", "--out", tmp_path / "o")
    lines = plan.read_text().splitlines()
    answers = []
    for i, raw in enumerate(lines):
        key = json.loads(raw)["custom_id"]
        body = {"id": f"chatcmpl-{i}", "object": "chat.completion", "model": "default",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "A"},
                             "finish_reason": "stop"}]}
        answers.append({"id": f"b-{i}", "custom_id": key, "error": None,
                        "response": {"status_code": 200, "body": body}})
    return plan, lines, answers


def _write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def _ingest_text(path: Path) -> tuple[int, str]:
    res = invoke("ingest", path, ok=False)
    return res.exit_code, " ".join(res.output.split())


def test_ingest_names_the_file_and_line_of_every_bad_line(tmp_path, monkeypatch):
    """Repeated custom_ids, answers to requests not planned with this cache and error lines
    were counted with no file or line ("1 repeated custom_ids (the first one kept)", "1
    answers to requests not planned with this cache", "first: 5d2dc76c66c3: HTTP 500");
    two different answers to one request were kept/dropped silently."""
    _, _, ans = _sim_plan_and_answers(tmp_path, monkeypatch)
    other = json.loads(json.dumps(ans[1]))  # the same request answered differently
    other["response"]["body"]["choices"][0]["message"]["content"] = "B"
    rerun = dict(ans[0], id="b-rerun")  # the same answer again (another line id)
    path = _write(tmp_path / "dupdiff.jsonl", [*ans[:5], other, rerun])
    code, text = _ingest_text(path)
    assert code == 0, text
    assert (f"1 repeated custom_id with a different answer than the first in {path} "
            f"(custom_id {ans[1]['custom_id'][:12]} at lines 2 and 6)") in text
    assert "1 more repeats the same answer" in text and "repeated custom_ids" not in text
    cache = Cache(tmp_path / "c.sqlite")
    assert cache.get(ans[1]["custom_id"]).text == "A"  # the first line's answer is kept
    cache.close()
    path = _write(tmp_path / "dup.jsonl", [*ans[:3], rerun])
    code, text = _ingest_text(path)
    assert code == 0 and (f"1 repeated custom_id with the same answer in {path} (custom_id "
                          f"{ans[0]['custom_id'][:12]} at lines 1 and 4)") in text
    assert "different" not in text

    stranger = dict(ans[3], custom_id="f" * 64)
    path = _write(tmp_path / "unknown.jsonl", [*ans[:3], stranger, ans[4]])
    code, text = _ingest_text(path)
    assert code == 0 and ("1 answer to a request not planned with this cache (a different "
                          f"--cache?), not stored; first at {path}:4: custom_id {'f' * 64}"
                          ) in text
    # An answer that is no chat completion (line 2, parsed a chunk later) comes before a
    # server error (line 3): the first error named is line 2's.
    broken = json.loads(json.dumps(ans[1]))
    broken["response"]["body"]["choices"] = []
    failed = {"id": "x", "custom_id": ans[2]["custom_id"], "error": None,
              "response": {"status_code": 500, "body": {"error": {"message": "boom"}}}}
    path = _write(tmp_path / "errors.jsonl", [ans[0], broken, failed, ans[3]])
    code, text = _ingest_text(path)
    assert code == 0 and ("2 error lines (malformed 1, server 1), not cached; first at "
                          f"{path}:2: {ans[1]['custom_id'][:12]}: not a chat completion") in text
    # the rerun's answer after the first run's error line: stored, and said
    path = _write(tmp_path / "rerun.jsonl", [failed, ans[3], ans[2]])
    code, text = _ingest_text(path)
    assert code == 0 and ("1 error line answered by a later line of the same custom_id, the "
                          f"answer kept (first: custom_id {ans[2]['custom_id'][:12]}, error "
                          f"at {path}:1, answer at line 3)") in text
    assert "not cached" not in text
    failed["custom_id"] = ans[5]["custom_id"]  # (a server's message is text, not markup)
    failed["response"]["body"]["error"]["message"] = "boom [/] [bold]"
    path = _write(tmp_path / "error.jsonl", [ans[0], failed])
    code, text = _ingest_text(path)
    assert code == 0 and (f"1 error line (server 1), not cached; first at {path}:2: "
                          f"{ans[5]['custom_id'][:12]}: HTTP 500") in text
    assert "boom [/] [bold]" in text


def test_ingest_refuses_the_plan_given_as_the_answers_and_says_so(tmp_path, monkeypatch):
    """The plan given as the answers file read as "540 error lines (malformed 540)", exit 3,
    with no hint; it is an input error (exit 2) saying what the file is."""
    plan, lines, ans = _sim_plan_and_answers(tmp_path, monkeypatch)
    for extra in ((), ("--plan", plan)):
        res = invoke("ingest", plan, *extra, ok=False)
        text = " ".join(res.output.split())
        assert res.exit_code == 2, text
        assert (f"{plan} is a plan of requests, not answers" in text
                and "give the provider's output file" in text and "error lines" not in text)
    cache = Cache(tmp_path / "c.sqlite")
    assert not cache.has([json.loads(x)["custom_id"] for x in lines])  # nothing stored
    cache.close()
    # A plan's lines among the answers are named and skipped; a request line does not take
    # its custom_id's place (the answer after it is stored, not dropped as a repeat).
    path = _write(tmp_path / "mixed.jsonl", [*ans[:3], lines[3], lines[4], ans[3]])
    code, text = _ingest_text(path)
    assert code == 0 and "ingested 4 answers of 6 lines" in text
    assert (f"2 lines in {path} are requests (method, url, body), not answers (lines 4, 5;"
            in text and "repeated" not in text and "error line" not in text)


def test_ingest_counts_in_the_singular_when_there_is_one(tmp_path, monkeypatch):
    """"ingested 0 answers of 1 lines", "1 answers to requests not planned", "1 unreadable
    lines": one is singular in every count ingest prints."""
    plan, lines, ans = _sim_plan_and_answers(tmp_path, monkeypatch)
    path = _write(tmp_path / "one.jsonl", [dict(ans[0], custom_id="f" * 64)])
    code, text = _ingest_text(path)
    assert code == 2 and "ingested 0 answers of 1 line into" in text
    assert "1 answer to a request not planned with this cache" in text
    path = _write(tmp_path / "two.jsonl", [ans[0], "not json"])
    res = invoke("ingest", path, "--plan", plan)
    text = " ".join(res.output.split())
    assert "ingested 1 answer of 2 lines into" in text
    assert f"1 unreadable line in {path} (line 2:" in text
    assert f"{len(lines) - 1} of {len(lines)} planned requests have no answer" in text
    again = " ".join(invoke("ingest", path).output.split())
    assert "(1 of them replaced an answer already cached)" in again
    path = _write(tmp_path / "rest.jsonl", [*ans[1:-1], dict(ans[0], custom_id="f" * 64)])
    res = invoke("ingest", path, "--plan", plan)
    text = " ".join(res.output.split())
    assert "1 of " + f"{len(lines)} planned requests has no answer: the next --plan-only run " \
           "plans it again" in text
    assert f"1 answer is to a request not in {plan}" in text
    assert "1 answers" not in text and "1 lines" not in text
