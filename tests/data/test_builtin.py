"""Built-in generated datasets: determinism, seeds, balanced labels, answers where the
labels say they are, sizes and short texts."""

from __future__ import annotations

import re
from collections import Counter, defaultdict

import pytest

from judgeaudit.data import DataError, PairwiseItem, PointwiseItem, load
from judgeaudit.data.builtin import DATASETS
from judgeaudit.data.builtin.arithmetic import CONVERSIONS
from judgeaudit.data.builtin.bank import FACTS
from judgeaudit.data.builtin.graded import QUESTIONS_PER_SOURCE
from judgeaudit.data.builtin.pairs import ARITHMETIC_COUNTS, FORMAT_PER_VARIANT

PAIRWISE = ["facts", "arithmetic", "mixed", "format"]


def has(text: str, answer: str) -> bool:
    """`answer` as a whole word/number in `text`, ignoring case and markdown emphasis."""
    plain = text.replace("*", "").lower()
    return re.search(rf"(?<![\w.]){re.escape(answer.lower())}(?!\w)", plain) is not None


def test_bank_is_big_varied_and_unambiguous() -> None:
    assert len(FACTS) >= 150
    topics = Counter(f.topic for f in FACTS)
    assert len(topics) >= 6 and min(topics.values()) >= 5
    assert len({f.question for f in FACTS}) == len(FACTS)
    for f in FACTS:
        right, wrong = f.statement(f.answer), f.statement(f.wrong)
        assert f.answer != f.wrong
        assert has(right, f.answer) and not has(wrong, f.answer), f
        assert has(wrong, f.wrong) and not has(right, f.wrong), f
        assert len(right) < 120 and ".." not in right and right.endswith(".")


def test_sizes() -> None:
    expect = {"facts": len(FACTS), "arithmetic": sum(ARITHMETIC_COUNTS.values()),
              "mixed": len(FACTS) + sum(ARITHMETIC_COUNTS.values()),
              "format": 4 * FORMAT_PER_VARIANT, "graded": 2 * QUESTIONS_PER_SOURCE * 5}
    for name, n in expect.items():
        items = load(f"builtin:{name}")
        assert len(items) == n and 150 <= n <= 600, name
        assert len({i.id for i in items}) == n
        assert [i.id for i in items] == [f"builtin:{name}:{k}" for k in range(n)]
    assert set(DATASETS) == set(expect)
    assert [i.id for i in load("builtin")] == [i.id for i in load("builtin:facts")]


@pytest.mark.parametrize("name", [*PAIRWISE, "graded"])
def test_deterministic_under_seed_and_seed_changes_order(name: str) -> None:
    a = [i.model_dump() for i in load(f"builtin:{name}?seed=5")]
    b = [i.model_dump() for i in load(f"builtin:{name}?seed=5")]
    c = [i.model_dump() for i in load(f"builtin:{name}?seed=6")]
    assert a == b
    assert [x["prompt"] for x in a] != [x["prompt"] for x in c]
    if name != "graded":
        assert [x["label"] for x in a] != [x["label"] for x in c]
    # the default seed is 0
    assert load(f"builtin:{name}")[0] == load(f"builtin:{name}?seed=0")[0]


@pytest.mark.parametrize("name", PAIRWISE)
@pytest.mark.parametrize("seed", [0, 1])
def test_labels_balanced_and_answers_where_the_label_says(name: str, seed: int) -> None:
    items = load(f"builtin:{name}?seed={seed}")
    assert all(isinstance(i, PairwiseItem) for i in items)
    decided = [i for i in items if i.label in (1, 2)]
    ones = sum(i.label == 1 for i in decided)
    assert abs(ones - len(decided) / 2) <= 4  # balanced up to one odd item per stratum
    per_topic: dict[str, Counter] = defaultdict(Counter)
    for it in items:
        md = it.metadata
        answer, wrong = md["answer"], md.get("wrong_answer")
        assert md["topic"]
        if it.label == 0:
            assert it.quality is not None and it.quality[0] == it.quality[1]
            assert has(it.response_1, answer) and has(it.response_2, answer)
            continue
        per_topic[md["topic"]][it.label] += 1
        good = it.response_1 if it.label == 1 else it.response_2
        bad = it.response_2 if it.label == 1 else it.response_1
        assert has(good, answer) and not has(bad, answer), it
        assert wrong is not None and has(bad, wrong) and not has(good, wrong), it
        assert it.quality == ((1.0, 0.0) if it.label == 1 else (0.0, 1.0))
        assert len(good) < 220 and len(bad) < 220  # short: small CPU judges
        assert ".." not in good + bad
    if name != "format":
        for topic, c in per_topic.items():
            assert abs(c[1] - c[2]) <= 1, (topic, c)


def test_limit_gives_a_mix_of_topics() -> None:
    items = load("builtin:facts?limit=20")
    assert len(items) == 20 and len({i.metadata["topic"] for i in items}) >= 4
    mixed = load("builtin:mixed?limit=30")
    assert {i.metadata["source"] for i in mixed} == {"facts", "arithmetic"}


def test_arithmetic_answers_are_right() -> None:
    factor = {small: {} for _, _, small, _, _ in CONVERSIONS}
    for big, _, small, f, _ in CONVERSIONS:
        factor[small][big] = f
    for it in load("builtin:arithmetic"):
        md = it.metadata
        q = it.prompt
        if m := re.fullmatch(r"What is (\d+) ([-+×]) (\d+)\?", q):
            a, op, b = int(m.group(1)), m.group(2), int(m.group(3))
            true = {"+": a + b, "-": a - b, "×": a * b}[op]
        else:
            m = re.fullmatch(r"How many (\w+) are in (\d+) (\w+)\?", q)
            assert m, q
            true = int(m.group(2)) * factor[m.group(1)][m.group(3)]
        assert md["answer"] == str(true) and md["wrong_answer"] != str(true)
        assert int(md["wrong_answer"]) > 0


def test_format_variants() -> None:
    items = load("builtin:format")
    by_variant: dict[str, list[PairwiseItem]] = defaultdict(list)
    for it in items:
        by_variant[it.metadata["variant"]].append(it)  # type: ignore[arg-type]
    assert {k: len(v) for k, v in by_variant.items()} == {
        "markdown_tie": FORMAT_PER_VARIANT, "padding_tie": FORMAT_PER_VARIANT,
        "wrong_markdown": FORMAT_PER_VARIANT, "wrong_padded": FORMAT_PER_VARIANT}
    for variant, group in by_variant.items():
        tie = variant.endswith("_tie")
        assert all((i.label == 0) == tie for i in group)
        sides = Counter(i.metadata["styled_side"] for i in group)
        assert abs(sides[1] - sides[2]) <= 1  # which side is styled is balanced too
        for it in group:
            styled = it.response_1 if it.metadata["styled_side"] == 1 else it.response_2
            plain = it.response_2 if it.metadata["styled_side"] == 1 else it.response_1
            if "markdown" in variant:
                assert ("**" in styled or "#" in styled) and "*" not in plain
            else:
                assert len(styled) > 2 * len(plain) and "*" not in styled
            if not tie:  # the styling is on the wrong answer
                assert it.label == 3 - it.metadata["styled_side"]


def test_graded_levels() -> None:
    items = load("builtin:graded")
    assert all(isinstance(i, PointwiseItem) for i in items)
    groups: dict[int, dict[int, PointwiseItem]] = defaultdict(dict)
    for it in items:
        assert it.score == it.metadata["level"] and it.quality == (it.score - 1) / 4
        assert sorted(it.rubric_levels or {}) == ["1", "2", "3", "4", "5"] and it.rubric
        groups[it.metadata["question_group"]][it.metadata["level"]] = it  # type: ignore
    assert len(groups) == 2 * QUESTIONS_PER_SOURCE
    assert Counter(g[5].metadata["source"] for g in groups.values()) == {
        "facts": QUESTIONS_PER_SOURCE, "arithmetic": QUESTIONS_PER_SOURCE}
    for g in groups.values():
        assert sorted(g) == [1, 2, 3, 4, 5]
        assert len({it.prompt for it in g.values()}) == 1
        ans, wrong = g[5].metadata["answer"], g[5].metadata["wrong_answer"]
        assert has(g[5].response, ans) and not has(g[5].response, wrong)
        assert has(g[4].response, ans) and len(g[4].response) < len(g[5].response)
        assert has(g[3].response, ans) and has(g[3].response, wrong)
        assert has(g[2].response, wrong) and not has(g[2].response, ans)
        assert not has(g[1].response, ans) and not has(g[1].response, wrong)
        assert not any(ch.isdigit() for ch in g[1].response)


def test_bad_name_and_params() -> None:
    with pytest.raises(DataError, match="unknown built-in dataset; known: facts"):
        load("builtin:controlled")
    with pytest.raises(DataError, match="parameter 'seed': expected an integer"):
        load("builtin:facts?seed=x")
    with pytest.raises(DataError, match="unknown parameter"):
        load("builtin:facts?sed=1")


def test_seeds_concatenates_the_set_under_each_seed_with_distinct_ids() -> None:
    one, two = load("builtin:facts?seed=1"), load("builtin:facts?seed=2")
    both = load("builtin:facts?seeds=1-2")
    assert len(both) == len(one) + len(two) == 2 * len(FACTS)
    assert len({it.id for it in both}) == len(both)
    assert [it.id for it in both[: len(one)]] == [f"{it.id}@1" for it in one]
    # the items themselves are those of each seed
    assert [(it.prompt, it.response_1, it.response_2, it.label) for it in both[len(one):]] == [
        (it.prompt, it.response_1, it.response_2, it.label) for it in two]
    assert [it.id for it in load("builtin:arithmetic?seeds=2,0")][0].endswith("@2")
    assert len(load("builtin:facts?seeds=0-2&limit=300")) == 300
    for bad in ("2-1", "a", "1,1", "-1", "0-100"):
        with pytest.raises(DataError, match="parameter 'seeds'"):
            load(f"builtin:facts?seeds={bad}")
    with pytest.raises(DataError, match="seed or seeds, not both"):
        load("builtin:facts?seed=1&seeds=0-1")
