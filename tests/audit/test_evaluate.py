"""evaluate's metrics: checked against LLMBar's published statistics (every row) and against
a simulated judge whose accuracy and position preference are known."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from judgeaudit.audit.evaluate import (
    decimal_score,
    evaluate,
    select_items,
    summarize,
    summarize_pointwise,
)
from judgeaudit.data import PairwiseItem, PointwiseItem, load
from judgeaudit.judges import make_judge
from judgeaudit.judges.pairwise import OrderVerdict, PairwiseVerdict
from judgeaudit.judges.parse import parse_score
from judgeaudit.judges.pointwise import ScoreVerdict
from judgeaudit.llm import Cache


def _pct(s: str) -> float:
    return float(s.split("=")[-1].strip().rstrip("%")) / 100


async def test_reproduces_every_published_llmbar_row(shared_data):
    """Accuracy and positional agreement through make_judge(replay) + evaluate equal the
    authors' statistics for all 499 (subset, judge, strategy) rows."""
    root = shared_data / "llmbar"
    rows = [json.loads(line)
            for line in (root / "judge_statistics.jsonl").read_text().splitlines()]
    assert len(rows) == 499
    csv_path = root / "judge_verdicts.csv"
    items_by_subset: dict[str, list[PairwiseItem]] = {}
    checked = 0
    for row in rows:
        subset = row["subset"]
        if subset not in items_by_subset:
            items = load(f"llmbar:{root}?subset={subset}")
            items_by_subset[subset] = [it for it in items if it.id.rsplit(":", 1)[0] == subset]
        items = items_by_subset[subset]
        judge = make_judge(f"replay:{csv_path}?judge={row['judge']}&strategy={row['strategy']}")
        res = await evaluate(judge, items, data_spec=f"llmbar:{subset}", kappa_boot=0)
        acc = _pct(row["correct_average"])
        if row["strategy"].startswith("Rating"):
            # read from the scores: an unreadable score is invalid where LLMBar's except
            # branch gave it half a pair, and equal scores are a tie in both orders, so the
            # orders always agree (each output was rated alone)
            bad = res["n_invalid"] // 2  # an unreadable item is invalid in both orders
            assert res["accuracy"]["value"] == pytest.approx(acc - 0.5 * bad / len(items),
                                                             abs=1e-9), row
            assert res["position_consistency"]["value"] == 1.0, row
            assert res["n"] == len(items)
            checked += 1
            continue
        assert res["accuracy"]["value"] == pytest.approx(acc, abs=1e-9), row
        assert res["position_consistency"]["value"] == pytest.approx(_pct(row["equal"]),
                                                                     abs=1e-9), row
        assert res["n"] == len(items)
        checked += 1
    assert checked == 499


async def test_worked_example_gpt4_vanilla_natural(shared_data):
    root = shared_data / "llmbar"
    items = load(f"llmbar:{root}?subset=LLMBar/Natural")
    judge = make_judge(f"replay:{root / 'judge_verdicts.csv'}?judge=GPT-4&strategy=Vanilla")
    res = await evaluate(judge, items)
    assert res["accuracy"]["value"] == pytest.approx(0.955)
    assert res["position_consistency"]["value"] == pytest.approx(0.95)
    lo, hi = res["accuracy"]["ci95"]
    assert lo < 0.955 < hi and res["accuracy"]["n"] == 100
    assert res["cohen_kappa"]["n"] <= 100 and -1 <= res["cohen_kappa"]["value"] <= 1


async def test_sim_judge_accuracy_and_position_match_the_planted_model(tmp_path):
    """quality=2, position=1.5, noise=1: P(correct | order) = sigmoid(2 +- 1.5), so per-order
    accuracy is known; the first-slot rate among decisive verdicts is above 0.5."""
    items = load("builtin:facts")
    judge = make_judge("sim?quality=2&position=1.5&seed=3", cache=Cache(tmp_path / "c.sqlite"))
    res = await evaluate(judge, items)
    sig = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    expected = (sig(3.5) + sig(0.5)) / 2
    lo, hi = res["accuracy"]["ci95"]
    assert lo <= expected <= hi, (res["accuracy"], expected)
    assert res["first_position_rate"]["value"] > 0.6
    assert res["calls"]["made"] == 2 * len(items) and res["calls"]["cached"] == 0
    again = await evaluate(make_judge("sim?quality=2&position=1.5&seed=3",
                                      cache=Cache(tmp_path / "c.sqlite")), items)
    assert again["calls"]["made"] == 0 and again["calls"]["cached"] == 2 * len(items)
    assert again["accuracy"] == res["accuracy"]


def test_invalid_verdicts_are_counted_not_coerced():
    items = [PairwiseItem(id=f"i{k}", prompt="p", response_1="a", response_2="b", label=1)
             for k in range(4)]
    ok = lambda o, w: OrderVerdict(o, str(w), "A", w)  # noqa: E731
    bad = lambda o: OrderVerdict(o, "Both are fine", None, None)  # noqa: E731
    verdicts = [
        PairwiseVerdict("i0", [ok("12", 1), ok("21", 1)]),
        PairwiseVerdict("i1", [ok("12", 1), bad("21")]),
        PairwiseVerdict("i2", [bad("12"), bad("21")]),
        PairwiseVerdict("i3", [ok("12", 2), ok("21", 1)]),
    ]
    res = summarize(items, verdicts)
    assert res["n_invalid"] == 3 and res["n"] == 4
    # credit: 1, 0.5, 0, 0.5 -> 0.5; valid-only: items 0 and 3 -> 0.75
    assert res["accuracy"]["value"] == pytest.approx(0.5)
    assert res["accuracy_valid"]["value"] == pytest.approx(0.75)
    # same outcome in both orders: i0 (1,1) and i2 (both invalid) -> 2/4 (LLMBar's rule)
    assert res["position_consistency"]["value"] == pytest.approx(0.5)
    assert res["position_consistency_valid"]["value"] == pytest.approx(0.5)
    assert {e["raw"] for e in res["invalid_examples"]} == {"Both are fine"}


# ---------------------------------------------------------------- pair rules, by hand

def _pair_case():
    """Hand-made verdicts covering ties, unparseable and failed orders, single-order items
    and an unlabelled pair. Per item: label, then (order, winner) with "x" = unparseable and
    "f" = failed call."""
    spec = {
        "a": (1, [("12", 1), ("21", 1)]),
        "b": (1, [("12", 1), ("21", 2)]),
        "c": (2, [("12", 2), ("21", 0)]),
        "d": (2, [("12", 2), ("21", "x")]),
        "e": (1, [("12", "f"), ("21", 1)]),
        "f": (1, [("12", 2), ("21", "x")]),
        "g": (1, [("12", 0), ("21", 0)]),
        "h": (0, [("12", 0), ("21", 0)]),
        "i": (0, [("12", 0), ("21", 1)]),
        "j": (0, [("12", 0), ("21", "x")]),
        "k": (0, [("12", 2), ("21", 1)]),
        "l": (2, [("21", 2)]),
        "m": (1, [("12", "x")]),
        "n": (1, [("21", 0)]),
        "o": (None, [("12", 1), ("21", 1)]),
    }
    items, verdicts = [], []
    for key, (label, orders) in spec.items():
        items.append(PairwiseItem(id=key, prompt="p", response_1="r1", response_2="r2",
                                  label=label))
        ovs = []
        for order, w in orders:
            if w == "x":
                ovs.append(OrderVerdict(order, "Both are fine", None, None))
            elif w == "f":
                ovs.append(OrderVerdict(order, "", None, None, error="timeout after 3 retries",
                                            failed="call_failed"))
            else:
                ovs.append(OrderVerdict(order, str(w), "tie" if w == 0 else "A", w))
        verdicts.append(PairwiseVerdict(key, ovs))
    return items, verdicts


# Expected credit per item (mean, sum, both), worked out by hand from the rules:
# a 1/1/1  b .5/0/0  c .5/1/0  d .5/1/0  e .5/1/0  f 0/0/0  g 0/0/0
# h 1/1/1  i .5/0/0  j .5/1/0  k 0/0/0   (tie labels: counted only with ties=keep)
# l 1/1/1  m 0/0/0  n 0/0/0  (single order)  o: unlabelled, never counted
# With ties drop the accuracy is two-way and the mean rule counts a tie verdict half:
# c .75, g .5, n .5 (with ties keep it is three-way and a tie on a decisive label is wrong).
EXPECTED = {
    ("mean", "keep"): (6.0, 14), ("sum", "keep"): (7, 14), ("both", "keep"): (3, 14),
    ("mean", "drop"): (5.25, 10), ("sum", "drop"): (5, 10), ("both", "drop"): (2, 10),
}


@pytest.mark.parametrize(("rule", "ties"), sorted(EXPECTED))
def test_each_pair_rule_counts_exactly(rule, ties):
    items, verdicts = _pair_case()
    res = summarize(items, verdicts, pair_rule=rule, ties=ties, kappa_boot=0)
    right, n = EXPECTED[rule, ties]
    assert res["accuracy"]["n"] == n
    assert res["accuracy"]["value"] == pytest.approx(right / n)
    assert res["accuracy_by_rule"][rule] == res["accuracy"]
    for r in ("mean", "sum", "both"):
        exp_r, exp_n = EXPECTED[r, ties]
        assert res["accuracy_by_rule"][r]["value"] == pytest.approx(exp_r / exp_n)
    conv = res["conventions"]
    assert conv["pair_rule"] == rule and conv["ties"] == ties and not conv["ties_default"]
    assert conv["n_tie_labels"] == 4
    assert rule in conv["description"] and f"ties {ties}" in conv["description"]
    assert "3 such pairs" in conv["description"]  # the single-order items are named
    # kappa's own rule is stated: a flip is a tie (accuracy counts it wrong on a tie label)
    assert "a flip on a tie-labelled pair agrees with it" in conv["description"]


def test_pair_rule_counts_that_do_not_depend_on_the_rule():
    items, verdicts = _pair_case()
    res = summarize(items, verdicts, kappa_boot=0)
    assert res["conventions"]["ties"] == "keep" and res["conventions"]["ties_default"]
    assert "the default: the data has tie labels" in res["conventions"]["description"]
    assert res["n_invalid"] == 5 and res["n_failed_calls"] == 1
    assert res["n_tie_labels"] == 4 and res["n_single_order"] == 3 and res["n_counted"] == 14
    # two-order items without a failed call: 11; same outcome: a, g, h, o
    assert res["position_consistency"]["value"] == pytest.approx(4 / 11)
    # decisive verdicts on decisive labels: a a b b c d e f l = 9, right: a a b c d e l = 7
    assert res["decisive_accuracy"]["value"] == pytest.approx(7 / 9)
    # order 12 among the counted: a b c d e f g h i j k m = 12, right: a b c d h i j = 7
    assert res["per_order_accuracy"]["12"]["value"] == pytest.approx(7 / 12)
    # kappa on items with a consensus: keep -> 9 (with h, i, k), drop -> 6
    assert res["cohen_kappa"]["n"] == 9
    assert summarize(items, verdicts, ties="drop", kappa_boot=0)["cohen_kappa"]["n"] == 6
    # accuracy_valid: counted items whose orders are all valid
    valid = summarize(items, verdicts, pair_rule="both", kappa_boot=0)["accuracy_valid"]
    assert valid["n"] == 9  # a b c g h i k l n
    assert valid["value"] == pytest.approx(3 / 9)


def test_without_tie_labels_the_conventions_say_so():
    items = [PairwiseItem(id=f"i{k}", prompt="p", response_1="a", response_2="b", label=1)
             for k in range(3)]
    ok = lambda o, w: OrderVerdict(o, str(w), "A", w)  # noqa: E731
    verdicts = [PairwiseVerdict(f"i{k}", [ok("12", 1), ok("21", 1)]) for k in range(3)]
    res = summarize(items, verdicts, kappa_boot=0)
    assert res["conventions"]["n_tie_labels"] == 0
    assert "no pair has a tie label" in res["conventions"]["description"]
    assert res["conventions"]["description"].startswith("mean (LLMBar)")


def test_pair_rule_and_ties_are_checked():
    items, verdicts = _pair_case()
    with pytest.raises(ValueError, match="pair rule"):
        summarize(items, verdicts, pair_rule="avg")
    with pytest.raises(ValueError, match="ties"):
        summarize(items, verdicts, ties="maybe")


def _three_way(inverted: bool, n_tie: int = 40, n_dec: int = 20):
    """A judge that names the better response of every decisive pair in both orders and never
    says tie; tie-labelled pairs get a first-slot verdict. `inverted` swaps the decisive
    labels (a file whose 1 means response 2)."""
    items, verdicts = [], []
    for k in range(n_tie + n_dec):
        better = 1 if k % 2 else 2
        label = 0 if k < n_tie else (3 - better if inverted else better)
        items.append(PairwiseItem(id=f"t{k}", prompt="p", response_1="a", response_2="b",
                                  label=label))
        if k < n_tie:
            orders = [OrderVerdict("12", "A", "A", 1), OrderVerdict("21", "A", "A", 2)]
        else:
            orders = [OrderVerdict(o, "A", "A", better) for o in ("12", "21")]
        verdicts.append(PairwiseVerdict(f"t{k}", orders))
    return items, verdicts


def test_inverted_labels_warning_fires_on_three_way_data():
    items, verdicts = _three_way(inverted=True)
    res = summarize(items, verdicts, kappa_boot=500)
    assert res["conventions"]["ties"] == "keep"
    assert res["warnings"] and "labels may be inverted" in res["warnings"][0]
    assert "decisive verdicts name the labelled response 0.0%" in res["warnings"][0]


def test_three_way_accuracy_below_half_is_not_read_as_inverted_labels():
    """40 tie labels the judge never calls: three-way accuracy 1/3 (interval below 0.5), yet
    every decisive verdict is right, so no inverted-labels warning."""
    items, verdicts = _three_way(inverted=False)
    res = summarize(items, verdicts, kappa_boot=500)
    assert res["accuracy"]["ci95"][1] < 0.5
    assert res["decisive_accuracy"]["value"] == 1.0
    assert res["warnings"] == []
    # with ties dropped it is two-way again: accuracy 1.0, no warning either
    assert summarize(items, verdicts, ties="drop", kappa_boot=0)["accuracy"]["value"] == 1.0


def test_two_way_inverted_labels_still_warn():
    items, verdicts = _three_way(inverted=True, n_tie=0, n_dec=30)
    res = summarize(items, verdicts, kappa_boot=500)
    assert "accuracy 0.0% with its 95% interval below 50%" in res["warnings"][0]


def test_failed_or_unreadable_verdicts_are_not_read_as_inverted_labels():
    """Accuracy counts a verdict that failed (or could not be read) as wrong: a run whose
    every call failed, or a judge answering garbage on most items, sits far below 0.5 with
    nothing inverted. Only the decisive verdicts can say the labels are swapped."""
    items, _ = _three_way(inverted=False, n_tie=0, n_dec=30)
    failed = [PairwiseVerdict(it.id, [OrderVerdict(o, "", None, None, error="connection")
                                      for o in ("12", "21")]) for it in items]
    res = summarize(items, failed, kappa_boot=0)
    assert res["accuracy"]["value"] == 0.0 and res["accuracy"]["ci95"][1] < 0.5
    assert res["warnings"] == []
    # 24 of 30 unreadable, the other 6 right: accuracy 0.2, interval below 0.5, no warning
    _, right = _three_way(inverted=False, n_tie=0, n_dec=30)
    garbage = [PairwiseVerdict(v.item_id, [OrderVerdict(o, "???", None, None)
                                           for o in ("12", "21")]) for v in right[:24]]
    res = summarize(items, garbage + right[24:], kappa_boot=0)
    assert res["accuracy"]["ci95"][1] < 0.5 and res["decisive_accuracy"]["value"] == 1.0
    assert res["warnings"] == []


def test_breakdown_by_a_metadata_key_and_by_an_item_field():
    items, verdicts = _pair_case()
    items = [it.model_copy(update={"metadata": {"cat": "x" if it.id < "h" else "y"}})
             for it in items]
    res = summarize(items, verdicts, pair_rule="sum", ties="keep", by="cat", kappa_boot=0)
    rows = {r["value"]: r for r in res["breakdown"]["rows"]}
    # x: a..g -> sum credit 1,0,1,1,1,0,0 = 4/7; y: h..o counted h..n -> 1,0,1,0,1,0,0 = 3/7
    assert rows["x"]["accuracy"]["value"] == pytest.approx(4 / 7)
    assert rows["y"]["accuracy"]["value"] == pytest.approx(3 / 7)
    assert rows["y"]["n_items"] == 8 and rows["y"]["accuracy"]["n"] == 7
    assert rows["x"]["n_invalid"] == 3 and rows["y"]["n_invalid"] == 2
    by_label = summarize(items, verdicts, by="label", kappa_boot=0)["breakdown"]
    assert [r["value"] for r in by_label["rows"]] == ["(missing)", "0", "1", "2"]


async def test_llmbar_sum_and_both_rules_match_a_direct_count(shared_data):
    """JudgeBench's sum rule and the both-orders rule on GPT-4/Vanilla's recorded LLMBar
    verdicts equal a count made straight from judge_verdicts.csv."""
    import csv

    root = shared_data / "llmbar"
    subset = "LLMBar/Adversarial/Neighbor"
    rows = [r for r in csv.DictReader((root / "judge_verdicts.csv").open())
            if r["subset"] == subset and r["judge"] == "GPT-4" and r["strategy"] == "Vanilla"]
    assert rows and {r["sample"] for r in rows} == {"0"}
    right_sum = right_both = 0
    for r in rows:
        label = int(r["label"])
        pts = sum((w == str(label)) - (w == str(3 - label))
                  for w in (r["winner_original_order"], r["winner_swapped_order"]))
        right_sum += pts > 0
        right_both += (r["winner_original_order"] == r["winner_swapped_order"] == str(label))
    items = [it for it in load(f"llmbar:{root}?subset={subset}")]
    assert len(items) == len(rows)
    for rule, right in (("sum", right_sum), ("both", right_both)):
        judge = make_judge(f"replay:{root / 'judge_verdicts.csv'}?judge=GPT-4&strategy=Vanilla")
        res = await evaluate(judge, items, pair_rule=rule, kappa_boot=0)
        assert res["accuracy"]["value"] == pytest.approx(right / len(rows)), rule
        assert res["conventions"]["pair_rule"] == rule


# ---------------------------------------------------------------- item selection

def test_sample_is_seeded_kept_in_data_order_and_not_with_limit():
    items = list(range(50))
    a, sel = select_items(items, sample=10, seed=4)
    b, _ = select_items(items, sample=10, seed=4)
    c, _ = select_items(items, sample=10, seed=5)
    assert a == b != c and a == sorted(a) and len(set(a)) == 10
    assert sel == {"kind": "sample", "n": 10, "requested": 10, "seed": 4, "by": "id_hash",
                   "of": 50}
    first, sel = select_items(items, limit=5)
    assert first == [0, 1, 2, 3, 4] and sel["kind"] == "first"
    everything, sel = select_items(items, sample=80, seed=1)
    assert everything == items and sel["n"] == 50 and sel["requested"] == 80
    with pytest.raises(ValueError, match="--limit and --sample"):
        select_items(items, limit=3, sample=3)


# ---------------------------------------------------------------- pointwise

def _point_case():
    """Gold scores; the judge's answers: ids, decimals, out of range, garbage, a failure."""
    gold = [1, 2, 3, 4, 5, 2, 4, 3.5, 1.5, 3, 4, None]
    raw = ["1", "2", "3.5", "4", "Score: 4.5/5", "7", "great", "3.5", "2", "3", "5", "4"]
    src = ["s1", "s2", "s1", "s2", "s1", "s2", "s1", "s2", "s1", "s2", "s1", "s2"]
    items = [PointwiseItem(id=f"p{k}", prompt="q", response="r", score=g,
                           metadata={"doc": f"d{k // 4}", "src": src[k]})
             for k, g in enumerate(gold)]
    # each verdict as the judge layer reads its answer (decimals too: evaluate does not read
    # the raw answer again)
    verdicts = [ScoreVerdict(f"p{k}", r, parse_score(r)) for k, r in enumerate(raw)]
    verdicts[9] = ScoreVerdict("p9", "", None, error="timeout after 3 retries",
                               failed="call_failed")
    return items, verdicts


def test_pointwise_scores_decimals_invalid_and_failed_are_counted():
    from scipy import stats as sps

    items, verdicts = _point_case()
    res = summarize_pointwise(items, verdicts, n_boot=200, group_by="doc",
                              system_field="src", by="src")
    # p5 "7" (out of 1..5), p6 "great", p9 failed: invalid; p11 has no gold score
    assert res["n_invalid"] == 3 and res["n_failed_calls"] == 1 and res["n_valid"] == 9
    assert res["n_unscored"] == 1 and res["n_decimal"] == 3  # 3.5, 4.5/5, 3.5
    assert {e["item_id"] for e in res["invalid_examples"]} == {"p5", "p6", "p9"}
    judge = np.array([1, 2, 3.5, 4, 4.5, 3.5, 2, 5])
    gold = np.array([1, 2, 3, 4, 5, 3.5, 1.5, 4])
    item = res["correlation"]["item"]
    assert item["n"] == 8
    assert item["pearson"]["value"] == pytest.approx(sps.pearsonr(judge, gold).statistic)
    assert item["spearman"]["value"] == pytest.approx(sps.spearmanr(judge, gold).statistic)
    assert item["kendall"]["value"] == pytest.approx(sps.kendalltau(judge, gold).statistic)
    assert res["exact_agreement"]["value"] == pytest.approx(4 / 8)  # p0 p1 p3 p7
    assert res["mae"]["value"] == pytest.approx(np.abs(judge - gold).mean())
    # every valid judge score, p11 (no gold) included
    assert res["score_counts"] == {"1": 1, "2": 2, "3.5": 2, "4": 2, "4.5": 1, "5": 1}
    grp = res["correlation"]["group"]
    assert grp["field"] == "doc" and grp["n_groups"] == 3
    sysl = res["correlation"]["system"]
    assert sysl["n_systems"] == 2 and sysl["n_items_used"] == 8
    rows = {r["value"]: r for r in res["breakdown"]["rows"]}
    assert rows["s1"]["n_items"] == 6 and rows["s1"]["n"] == 5 and rows["s1"]["n_invalid"] == 1
    assert rows["s2"]["n"] == 3 and rows["s2"]["n_invalid"] == 2
    assert res["conventions"]["pair_rule"] is None
    assert "decimal answers within 1..5" in res["conventions"]["description"]


def test_decimal_scores_only_within_the_rubric_range():
    ids = ("1", "2", "3", "4", "5")
    assert decimal_score("3.5", ids) == 3.5
    assert decimal_score("**4.25**", ids) == 4.25
    assert decimal_score("2.5 / 5\nbecause", ids) == 2.5
    assert decimal_score("0.5", ids) is None and decimal_score("5.5", ids) is None
    assert decimal_score("3.5/10", ids) is None  # another scale
    assert decimal_score("3.5 or 4", ids) is None
    assert decimal_score("3.5", ("A", "B", "C", "D", "E")) is None  # letter ids: no numbers
    assert decimal_score("9.5", tuple(str(k) for k in range(1, 11))) == 9.5


async def test_pointwise_evaluate_through_replay_with_decimal_scores(tmp_path):
    """A recorded judge that averages (half points) on builtin:graded: decimals accepted, an
    unparseable answer counted; the run outcome counts items with a valid score."""
    items = load("builtin:graded")[:40]
    lines = ["item_id,score"]
    for k, it in enumerate(items):
        s = "n/a" if k == 7 else (f"{it.score - 0.5:g}" if k % 3 == 0 and it.score > 1
                                  else f"{it.score:g}")
        lines.append(f"{it.id},{s}")
    path = tmp_path / "scores.csv"
    path.write_text("\n".join(lines) + "\n")
    judge = make_judge(f"replay:{path}", cache=Cache(tmp_path / "c.sqlite"))
    res = await evaluate(judge, items, data_spec="builtin:graded", by="source",
                         group_by="question_group", n_boot=200)
    assert res["task"] == "pointwise" and res["command"] == "evaluate"
    assert res["n_invalid"] == 1 and res["n_valid"] == 39 and res["run"]["status"] == "ok"
    assert res["n_decimal"] > 5
    assert res["correlation"]["item"]["pearson"]["value"] > 0.9
    assert res["template"]["name"] == "pointwise_v1" and res["prompt_hash"]
    assert {r["value"] for r in res["breakdown"]["rows"]} == {"facts", "arithmetic"}
    assert res["verdicts"][3]["score"] == items[3].score - 0.5 or items[3].score == 1
    with pytest.raises(ValueError, match="--pair-rule and --ties apply to pairwise"):
        await evaluate(judge, items, pair_rule="sum")


async def test_prometheus_first_gpt4_score_against_the_mean_of_three(shared_data, tmp_path):
    """Real pointwise data (Prometheus MT-Bench, gold = mean of three GPT-4 scores, thirds):
    replaying the first GPT-4 score as the judge; group level by question, system level by
    response model, all checked against scipy on the same numbers."""
    from scipy import stats as sps

    items = load(f"prometheus:{shared_data / 'prometheus_eval'}?set=mt_bench")
    path = tmp_path / "gpt4_first.csv"
    path.write_text("item_id,score\n" + "".join(
        f"{it.id},{it.metadata['gpt4_scores'][0]}\n" for it in items))
    judge = make_judge(f"replay:{path}", cache=Cache(tmp_path / "c.sqlite"))
    res = await evaluate(judge, items, group_by="idx", system_field="response_source",
                         n_boot=200)
    x = np.array([it.metadata["gpt4_scores"][0] for it in items], float)
    y = np.array([it.score for it in items], float)
    item = res["correlation"]["item"]
    assert item["n"] == len(items) == 320 and res["n_invalid"] == 0
    assert item["pearson"]["value"] == pytest.approx(sps.pearsonr(x, y).statistic)
    assert item["kendall"]["value"] == pytest.approx(sps.kendalltau(x, y).statistic)
    systems = sorted({it.metadata["response_source"] for it in items})
    mx = [x[[i for i, it in enumerate(items) if it.metadata["response_source"] == s]].mean()
          for s in systems]
    my = [y[[i for i, it in enumerate(items) if it.metadata["response_source"] == s]].mean()
          for s in systems]
    sysl = res["correlation"]["system"]
    assert sysl["n_systems"] == len(systems)
    assert sysl["spearman"]["value"] == pytest.approx(sps.spearmanr(mx, my).statistic)
    grp = res["correlation"]["group"]
    assert grp["n_groups"] == len({it.metadata["idx"] for it in items})
    assert 0 < grp["n_groups_used"] <= grp["n_groups"]
    # exact agreement on the integer gold scores only (163 of 320 are means of 3 ratings)
    whole = int(sum(float(it.score).is_integer() for it in items))
    assert res["exact_agreement"]["n"] == whole == 157
    assert res["exact_agreement"]["n_gold_non_integer"] == 320 - whole


def _kappa_case(labels, winners):
    items = [PairwiseItem(id=f"i{k}", prompt="p", response_1="a", response_2="b", label=lab)
             for k, lab in enumerate(labels)]
    ok = lambda o, w: OrderVerdict(o, str(w), "A", w)  # noqa: E731
    verdicts = [PairwiseVerdict(f"i{k}", [ok("12", w), ok("21", w)])
                for k, w in enumerate(winners)]
    return summarize(items, verdicts, kappa_boot=200)


def test_the_kappa_sentence_says_no_interval_only_when_kappa_has_none():
    """The conventions said 'no interval where the consensus is one answer throughout, which
    makes kappa 0 by construction' of every run, one whose kappa had an interval too: the
    clause is there only when kappa's interval was left out for that, naming the side."""
    mixed = _kappa_case([1, 2] * 10, [1, 2, 2, 1] * 5)
    assert mixed["cohen_kappa"]["ci95"][0] is not None
    text = mixed["conventions"]["description"]
    assert "kappa compares the pair's consensus with the label (orders that disagree make a " \
           "tie, so a flip on a tie-labelled pair agrees with it)" in text
    assert "no interval" not in text and "by construction" not in text

    judge_constant = _kappa_case([1, 2] * 10, [1] * 20)
    assert judge_constant["cohen_kappa"]["ci95"] == [None, None]
    assert ("a flip on a tie-labelled pair agrees with it; no interval: the consensus is one "
            "answer throughout, which makes kappa 0 by construction)"
            in judge_constant["conventions"]["description"])

    labels_constant = _kappa_case([1] * 20, [1, 2] * 10)
    assert labels_constant["cohen_kappa"]["ci95"] == [None, None]
    assert ("no interval: the labels are one answer throughout, which makes kappa 0 by "
            "construction)" in labels_constant["conventions"]["description"])


def test_the_inverted_labels_warning_names_an_adversarial_set_as_the_other_reason():
    """LLMBar's Adversarial subsets are built so judges fall below chance (its authors publish
    22.76% for one): the warning said only "labels may be inverted" there (tester t-data)."""
    items, verdicts = _three_way(inverted=True, n_tie=0, n_dec=30)
    warning = summarize(items, verdicts, kappa_boot=0)["warnings"][0]
    assert warning.startswith("labels may be inverted (A/B or 1/2 swapped?)")
    assert "unless the set is adversarial" in warning and "labels are right" in warning
