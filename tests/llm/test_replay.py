"""The replay provider: file layouts, order mapping, errors, cache identity, and a
reproduction of all 499 published LLMBar accuracy / positional-agreement numbers from the
recorded verdicts served through `generate()`."""

from __future__ import annotations

import json
import logging
import os
from collections import defaultdict
from pathlib import Path

import pytest

from judgeaudit.data import PairwiseItem
from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.llm import Cache, Client, Request, make_provider
from judgeaudit.llm.base import RequestRejected, request_key
from judgeaudit.llm.providers.replay import (
    UNREADABLE_SCORES,
    ReplayFileError,
    ReplayProvider,
    load_index,
)


def _shared() -> Path:
    env = os.environ.get("JUDGEAUDIT_SHARED_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


@pytest.fixture
def llmbar() -> Path:
    d = _shared() / "llmbar"
    if not (d / "judge_verdicts.csv").exists():
        pytest.skip(f"shared data absent: {d / 'judge_verdicts.csv'} (set JUDGEAUDIT_SHARED_DATA)")
    return d


def req(item: str, order: str = "12", task: str = "pairwise", **meta) -> Request:
    return Request(messages=(), meta={"task": task, "item_id": item, "order": order, **meta})


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


WIDE_CSV = """\
subset,idx,judge,strategy,sample,label,winner_original_order,winner_swapped_order
S,0,J1,V,0,1,1,1
S,1,J1,V,0,2,2,
S,2,J1,Swap,0,1,1,2
S,2,J1,Swap,1,1,2,2
S,0,J1,Swap,0,1,1,1
S,1,J1,Swap,0,2,2,2
S,0,J2,V,0,1,2,1
S,1,J2,V,0,2,0,2
"""


# ---- order mapping and layouts ----------------------------------------------------------------

async def test_wide_layout_maps_original_numbering_to_presented_labels(tmp_path):
    p = ReplayProvider(str(write(tmp_path, "v.csv", WIDE_CSV)), {"judge": "J1", "strategy": "V"})
    # Item 0: output_1 won in both orders. Shown first in "12" -> A; shown second in "21" -> B.
    assert (await p.generate(req("S:0", "12"))).text == "A"
    assert (await p.generate(req("S:0", "21"))).text == "B"
    # Item 1: output_2 won when shown second -> B; the swapped verdict was unparseable -> "".
    assert (await p.generate(req("S:1", "12"))).text == "B"
    r = await p.generate(req("S:1", "21"))
    assert r.text == "" and r.probs is None
    j2 = ReplayProvider(str(tmp_path / "v.csv"), {"judge": "J2"})
    assert (await j2.generate(req("S:0", "12"))).text == "B"   # "2" shown second
    assert (await j2.generate(req("S:0", "21"))).text == "B"   # "1" shown second
    assert (await j2.generate(req("S:1", "12"))).text == "tie"  # recorded "0"


async def test_highest_sample_supersedes_the_first_stage_verdict(tmp_path):
    p = ReplayProvider(str(write(tmp_path, "v.csv", WIDE_CSV)), {"judge": "J1", "strategy": "Swap"})
    # sample 0 said (1, 2); the review verdict (sample 1) says output_2 in both orders.
    assert (await p.generate(req("S:2", "12"))).text == "B"
    assert (await p.generate(req("S:2", "21"))).text == "A"


async def test_long_layout_letters_digits_tie_and_raw_text(tmp_path):
    path = write(tmp_path, "v.jsonl", "\n".join(json.dumps(r) for r in [
        {"item_id": "x", "order": "12", "verdict": "A"},
        {"item_id": "x", "order": "21", "verdict": 1},       # original numbering, JSON number
        {"item_id": "y", "order": "12", "verdict": "tie"},
        {"item_id": "y", "order": "21", "verdict": "Both are fine"},
        {"item_id": "z", "order": "21", "verdict": None},
    ]) + "\n")
    p = make_provider("replay", str(path))
    assert (await p.generate(req("x", "12"))).text == "A"
    assert (await p.generate(req("x", "21"))).text == "B"  # output_1 was shown second
    assert (await p.generate(req("y", "12"))).text == "tie"
    assert (await p.generate(req("y", "21"))).text == "Both are fine"
    assert (await p.generate(req("z", "21"))).text == ""
    with pytest.raises(RequestRejected, match=r"item 'z' order 12"):
        await p.generate(req("z", "12"))


async def test_pointwise_score_column(tmp_path):
    path = write(tmp_path, "s.csv", "item_id,judge,score\na,M,4\nb,M,2\na,N,1\n")
    p = ReplayProvider(str(path), {"judge": "M"})
    assert (await p.generate(req("a", task="pointwise"))).text == "4"
    letters = ["E", "D", "C", "B", "A"]
    assert (await p.generate(req("b", task="pointwise", score_ids=letters))).text == "D"
    with pytest.raises(RequestRejected, match="no recorded score for item 'c'"):
        await p.generate(req("c", task="pointwise"))


async def test_an_empty_score_is_an_answer_and_benchmark_formats_are_read(tmp_path):
    """An empty score cell was a missing record (a failed call); it is a recorded answer
    that reads as invalid. Prometheus's and FastChat's formats give their number."""
    path = write(tmp_path, "s.csv", "item_id,score\na,\nb,Good. [RESULT] 2\nc,[[5]]\n")
    p = ReplayProvider(str(path), {})
    assert (await p.generate(req("a", task="pointwise"))).text == ""
    assert (await p.generate(req("b", task="pointwise"))).text == "2"
    assert (await p.generate(req("c", task="pointwise"))).text == "5"


async def test_text_matched_records_are_served_from_the_texts_shown(tmp_path, caplog):
    """An alpaca_eval record is found from Request.meta's prompt and shown texts, whatever
    the item id; the format read is logged."""
    recs = [{"instruction": "p", "output_1": "r1", "output_2": "r2", "preference": 2}]
    path = write(tmp_path, "a.json", json.dumps(recs))
    with caplog.at_level(logging.INFO, logger="judgeaudit.llm"):
        p = ReplayProvider(str(path), {})
    assert "format alpaca_eval (detected: fields preference, output_1, output_2)" in caplog.text
    assert (await p.generate(req("any", "12", prompt="p", shown=["r1", "r2"]))).text == "B"
    # the same pair shown the other way round was not recorded
    with pytest.raises(RequestRejected, match=r"item 'any' order 21 \(nor by its prompt and "
                                                 r"response texts\) in a.json"):
        await p.generate(req("any", "21", prompt="p", shown=["r2", "r1"]))


# ---- errors ---------------------------------------------------------------------------------

async def test_missing_record_names_item_order_and_filters(tmp_path):
    p = ReplayProvider(str(write(tmp_path, "v.csv", WIDE_CSV)), {"judge": "J1", "strategy": "V"})
    with pytest.raises(RequestRejected) as e:
        await p.generate(req("S:17", "21"))
    assert str(e.value) == (
        "no recorded verdict for item 'S:17' order 21 in v.csv with judge=J1, strategy=V")


def test_filters_that_leave_several_runs_name_the_varying_columns(tmp_path):
    path = str(write(tmp_path, "v.csv", WIDE_CSV))
    with pytest.raises(ValueError, match=r"differ in column\(s\) strategy") as e:
        ReplayProvider(path, {"judge": "J1"})
    assert "strategy=..." in str(e.value)
    with pytest.raises(ValueError, match=r"differ in column\(s\) judge, strategy"):
        ReplayProvider(path, {})


def test_unknown_filter_column_lists_the_columns(tmp_path):
    path = str(write(tmp_path, "v.csv", WIDE_CSV))
    with pytest.raises(ValueError, match=r"v.csv: parameter 'judgee' is neither an option .* "
                                         r"nor a column of the file \(columns: subset, idx, judge,"
                                         r".*\); did you mean 'judge'\?"):
        ReplayProvider(path, {"judgee": "J1"})


def test_conflicting_duplicate_records_name_both_lines(tmp_path):
    path = str(write(tmp_path, "v.csv", "item_id,winner_original_order,winner_swapped_order\n"
                                        "a,1,1\na,2,2\n"))
    with pytest.raises(ValueError, match="lines 2 and 3 record different verdicts for item 'a'"):
        ReplayProvider(path, {})


def test_bad_files_are_named(tmp_path):
    with pytest.raises(ValueError, match="no verdict columns"):
        ReplayProvider(str(write(tmp_path, "a.csv", "item_id,foo\nx,1\n")), {})
    with pytest.raises(ValueError, match=r"b.jsonl:2: not valid JSON"):
        ReplayProvider(str(write(tmp_path, "b.jsonl", '{"item_id": "x"}\n{oops\n')), {})
    with pytest.raises(ValueError, match="replay file .*nope.csv"):
        ReplayProvider(str(tmp_path / "nope.csv"), {})


# ---- cache identity and the client/judge path ------------------------------------------------

def test_changed_file_changes_the_cache_key(tmp_path):
    path = write(tmp_path, "v.csv", "item_id,winner_original_order,winner_swapped_order\na,1,1\n")
    before = ReplayProvider(str(path), {})
    path.write_text("item_id,winner_original_order,winner_swapped_order\na,2,1\n")
    after = ReplayProvider(str(path), {})
    r = req("a")
    assert before.cache_identity()["file"] != after.cache_identity()["file"]
    assert request_key(before, r) != request_key(after, r)
    filtered = ReplayProvider(str(path), {"winner_swapped_order": "1"})
    assert request_key(filtered, r) != request_key(after, r)


async def test_replay_through_client_cache_and_pairwise_judge(tmp_path):
    path = write(tmp_path, "v.csv", WIDE_CSV)
    items = [PairwiseItem(id=f"S:{i}", prompt="p", response_1=f"r1-{i}", response_2=f"r2-{i}")
             for i in range(2)]
    cache = Cache(tmp_path / "cache.sqlite")
    client = Client(ReplayProvider(str(path), {"judge": "J1", "strategy": "V"}), cache)
    verdicts = await PairwiseJudge(client).judge(items)
    assert [v.winner for v in verdicts] == [1, None]  # item 1: swapped verdict unparseable
    assert verdicts[1].orders[1].raw == "" and verdicts[1].orders[0].winner == 2
    again = Client(ReplayProvider(str(path), {"judge": "J1", "strategy": "V"}), cache)
    await PairwiseJudge(again).judge(items)
    assert again.stats.cached == 4 and again.stats.made == 0


# ---- reproduction of the published LLMBar statistics -------------------------------------------

def _pct(s: str) -> float:
    """'95.5%' or '37 / 54 = 68.5%' -> 0.955 / 0.685."""
    return float(s.split("=")[-1].strip().rstrip("%")) / 100


_BACK = {"12": {"A": 1, "B": 2}, "21": {"A": 2, "B": 1}}


def _original(text: str, order: str) -> int | None:
    """Presented verdict -> original output number; tie -> 0; unparseable -> None."""
    if text == "tie":
        return 0
    return _BACK[order].get(text)


def _credit(winner: int | None, label: int) -> float:
    return 1.0 if winner == label else 0.5 if winner == 0 else 0.0


async def test_reproduces_all_499_published_llmbar_statistics(llmbar):
    stats = [json.loads(line) for line in (llmbar / "judge_statistics.jsonl").open()]
    assert len(stats) == 499
    datasets: dict[str, list[dict]] = {}
    strict_mismatch = 0
    by_key: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for st in stats:
        by_key[st["judge"], st["strategy"]].append(st)
    csv_path = str(llmbar / "judge_verdicts.csv")
    for (judge, strategy), rows in by_key.items():
        provider = ReplayProvider(csv_path, {"judge": judge, "strategy": strategy})
        for st in rows:
            subset = st["subset"]
            if subset not in datasets:
                dataset = llmbar / "data" / subset / "dataset.json"
                datasets[subset] = json.loads(dataset.read_text())
            data = datasets[subset]
            correct = agree = agree_strict = 0.0
            unreadable = 0
            for idx, item in enumerate(data):
                item_id = f"{subset}:{idx}"
                t12 = (await provider.generate(req(item_id, "12"))).text
                w12 = _original(t12, "12")
                w21 = _original((await provider.generate(req(item_id, "21"))).text, "21")
                unreadable += t12.startswith(UNREADABLE_SCORES)
                # Accuracy: each order scores 1 if it names the gold output, a tie (Rating's
                # equal scores) half; unparseable (None) counts as wrong; the item scores the
                # mean over the two orders.
                correct += (_credit(w12, item["label"]) + _credit(w21, item["label"])) / 2
                # Positional agreement as the authors count it: same recorded winner in both
                # orders, where two unparseable verdicts also count as agreeing.
                agree += w12 == w21
                agree_strict += w12 == w21 and w12 is not None
            n = len(data)
            where = f"{subset} {judge} {strategy}"
            if strategy.startswith("Rating"):
                # Read from the scores: LLMBar gave an unreadable score half a pair (its
                # except branch picks the first-shown output in both orders), replay counts
                # it invalid; each output was rated alone, so the orders always agree (the
                # published `equal` counts LLMBar's tie-break of equal scores as a flip).
                assert correct / n == pytest.approx(
                    _pct(st["correct_average"]) - 0.5 * unreadable / n, abs=1e-6), where
                assert agree == n, where
                continue
            assert unreadable == 0, where
            assert correct / n == pytest.approx(_pct(st["correct_average"]), abs=1e-6), where
            assert agree / n == pytest.approx(_pct(st["equal"]), abs=1e-6), where
            strict_mismatch += abs(agree_strict / n - _pct(st["equal"])) > 1e-6
    # The rule matters: counting only valid-and-equal pairs misses the published numbers.
    assert strict_mismatch > 0


async def test_worked_examples_llmbar_natural(llmbar):
    data = json.loads((llmbar / "data" / "LLMBar" / "Natural" / "dataset.json").read_text())
    path = str(llmbar / "judge_verdicts.csv")
    for judge, acc, eq in (("GPT-4", 0.955, 0.95), ("LLaMA2", 0.805, 0.79)):
        p = ReplayProvider(path, {"judge": judge, "strategy": "Vanilla"})
        c = a = 0.0
        for idx, item in enumerate(data):
            w12 = _original((await p.generate(req(f"LLMBar/Natural:{idx}", "12"))).text, "12")
            w21 = _original((await p.generate(req(f"LLMBar/Natural:{idx}", "21"))).text, "21")
            c += ((w12 == item["label"]) + (w21 == item["label"])) / 2
            a += w12 == w21
        assert (c / len(data), a / len(data)) == pytest.approx((acc, eq), abs=1e-9), judge


def test_a_repeated_record_in_a_one_line_json_file_is_not_said_as_lines_1_and_1(tmp_path):
    rec = {"item_id": "a", "order": "12", "verdict": "A"}
    path = tmp_path / "v.json"
    path.write_text(json.dumps([rec, rec]), "utf-8")
    with pytest.raises(ReplayFileError, match="two records on line 1 record the same verdict"):
        load_index(path, {})
