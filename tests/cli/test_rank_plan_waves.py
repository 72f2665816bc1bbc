"""`rank --plan-only` on a pool with an item too long for the judge: a live run sends a round
in waves and asks such an item at most twice (0e5d2b8, c7d1f66), while the plan holds the
round's every pick and cannot know which item is too long. The plan says so when it holds
more than two requests with an item that has no verdict yet (more than a live run asks a
too-long item): for an item over the judge's context it is an upper bound. Checked against a
real loopback server's request log (`fakeserver`) for the live run and the plan's lines."""

from __future__ import annotations

import json
import re

import pytest
from fakeserver import FakeLLMServer

from tests.cli.test_plan_ingest import invoke

NOTE = re.compile(r"note: the plan holds the (round|budget)'s every pick, up to (\d+) requests "
                  r"with one item that has no verdict yet \((it-\d\d)\); a live run sends them "
                  r"in waves and asks an item too long for the judge at most twice")


def _pool(path, long: bool = True) -> None:
    rows = [{"id": f"it-{i:02d}", "prompt": "question", "quality": float(i),
             "response": ("LONGITEM " if long and i == 2 else "") + "word " * (3 + i)
             + f"ITEM{i:02d}X"}
            for i in range(10)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _too_long(req, attempt):
    return "too_long" if "LONGITEM" in req.prompt_text else None


def _per_item(lines: list[str]) -> dict[str, int]:
    """Planned requests per item (its marker in the request's text)."""
    out: dict[str, int] = {}
    for line in lines:
        for m in set(re.findall(r"ITEM(\d\d)X", line)):
            out[f"it-{m}"] = out.get(f"it-{m}", 0) + 1
    return out


@pytest.mark.parametrize(("rule", "what"), [("topk", "round"), ("random", "budget")])
def test_a_plan_with_more_requests_on_an_item_than_a_live_run_sends_says_it_is_an_upper_bound(
        rule, what, tmp_path, monkeypatch, no_keys):
    pool = tmp_path / "pool.jsonl"
    _pool(pool)
    with FakeLLMServer(rule=_too_long, answer="A") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        args = ["rank", "--judge", spec, "--items", f"jsonl:{pool}", "--k", "2", "--budget",
                "40", "--rule", rule, "--samples", "100", "--lam", "1", "--covariates",
                "length", "--max-failed", "0.9", "--seed", "2"]
        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "direct.sqlite"))
        invoke(*args, "--out", tmp_path / "direct")
        live_long = sum("LONGITEM" in r.prompt_text for r in srv.snapshot())
        monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "planned.sqlite"))
        plan = tmp_path / "plan.jsonl"
        res = invoke("--plan-only", plan, *args, "--out", tmp_path / "planned")
        res_json = invoke("--plan-only", tmp_path / "plan2.jsonl", *args, "--json", "--out",
                          tmp_path / "planned2")
    lines = plan.read_text().splitlines()
    per = _per_item(lines)
    plan_long = sum("LONGITEM" in x for x in lines)
    # the live run asked the long item twice; the plan holds more requests with it
    assert live_long == 2 and plan_long > live_long, (live_long, plan_long)
    text = " ".join(res.output.split())
    m = NOTE.search(text)
    assert m, text
    top = max(per.values())
    assert m.group(1) == what and int(m.group(2)) == top >= plan_long
    assert per[m.group(3)] == top and m.group(3) == min(i for i, c in per.items() if c == top)
    assert ("So the plan is the " + what + " a live run sends unless an item is too long for "
            "the judge; for such an item it is an upper bound") in text
    doc = json.loads(res_json.stdout)
    assert doc["stopped_note"].startswith(m.group(0)[len("note: "):])


def test_a_plan_whose_items_all_have_verdicts_has_no_note(tmp_path, monkeypatch, no_keys):
    """A round whose items all have a verdict goes out in one wave: the plan is the round."""
    pool = tmp_path / "pool.jsonl"
    _pool(pool)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    with FakeLLMServer(answer="A") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        args = ["rank", "--judge", spec, "--items", f"jsonl:{pool}", "--k", "2",
                "--samples", "100", "--lam", "1", "--covariates", "none", "--seed", "2"]
        invoke(*args, "--budget", "24", "--out", tmp_path / "live")  # every item answered
        res = invoke("--plan-only", tmp_path / "plan.jsonl", *args, "--budget", "32",
                     "--out", tmp_path / "planned")
    live = json.loads((tmp_path / "live" / "results.json").read_text())
    assert live["n_uncompared"] == 0  # every item has a verdict before the planned round
    assert len((tmp_path / "plan.jsonl").read_text().splitlines()) > 0
    text = " ".join(res.output.split())
    assert "depends on their answers" in text and "note:" not in text, text


def test_a_plan_with_two_requests_on_an_item_has_no_note(tmp_path, monkeypatch, no_keys):
    """Two requests with an item that has no verdict are no more than a live run asks a
    too-long item: the note (442fb14) said 'up to 2 requests with one item' on an ordinary
    plan with no long item (topk, seed 1, round 1)."""
    pool = tmp_path / "pool.jsonl"
    _pool(pool, long=False)
    monkeypatch.setenv("JUDGEAUDIT_CACHE", str(tmp_path / "c.sqlite"))
    plan = tmp_path / "plan.jsonl"
    with FakeLLMServer(answer="A") as srv:
        spec = f"openai:fake?base_url={srv.openai_url}&api_key=k&logprobs=off"
        res = invoke("--plan-only", plan, "rank", "--judge", spec, "--items", f"jsonl:{pool}",
                     "--k", "2", "--budget", "40", "--rule", "topk", "--samples", "100",
                     "--lam", "1", "--covariates", "length", "--seed", "1", "--json",
                     "--out", tmp_path / "planned")
        assert srv.count() == 0
    per = _per_item(plan.read_text().splitlines())
    assert max(per.values()) == 2, per  # no item of the round has a verdict yet
    assert json.loads(res.stdout)["stopped_note"] is None, res.stdout
