"""A chain of thought's verdict read at its end: an answer that reasons first and ends
"Therefore, Output (b) is better." was invalid when only its opening was read (all 924 of
LLMBar's GPT-4 CoT answers). The end reads only when one verdict sentence names one winner
with nothing turning it; anything ambiguous stays invalid, and a concluding sentence that
disagrees with the verdict read makes any answer invalid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgeaudit.judges.pairwise import PairwiseJudge
from judgeaudit.judges.parse import parse_choice
from judgeaudit.llm import Response

REASONS = ("Output (a) lists four items although the instruction asks for three. Output (b) "
           "lists exactly three, each with a short example.\n\n")

# ---- 1. a verdict at the end reads (each was None before) ----------------------------------

@pytest.mark.parametrize(("end", "want"), [
    ("Therefore, Output (a) is better.", "A"),
    ("Therefore, Output (b) is better.", "B"),
    ("So the better output is Output (b).", "B"),
    ("Final verdict: [[A]]", "A"),
    ("Output (b) is the better choice.", "B"),
    ("Therefore, Output (a) is better than Output (b).", "A"),
    ("Thus Response B wins.", "B"),
    ("My final verdict is [[B]].", "B"),
    ("I would choose Output (a) over Output (b).", "A"),
    ("Based on the evaluation above, Output (a) is the better response.", "A"),
    ("Overall, Output (b) is clearly better because it follows the instruction.", "B"),
    # LLMBar's own: a concession naming no winner, and clauses naming no choice, before it
    ("Therefore, even though both outputs are not perfect, Output (a) is better because it "
     "at least attempts to follow the instruction.", "A"),
    ("Therefore, in line with the rules of evaluation, which prioritize the precise execution "
     "of the instruction, Output (b) is better.", "B"),
    ("Therefore, while Output (a) is more detailed, Output (b) is better.", "B"),
    ("**Therefore, Output (b) is better.**", "B"),
    ("B", "B"),
])
def test_a_verdict_at_the_end_of_a_chain_of_thought_reads(end: str, want: str) -> None:
    assert parse_choice(REASONS + end) == want
    assert parse_choice(REASONS + end, allow_tie=True) == want


def test_the_end_reads_after_the_reasoning_on_the_same_line() -> None:
    text = ("Output (a) does not follow the instruction. On the other hand, Output (b) gives "
            "exactly 8 characters. Therefore, Output (b) is better.")
    assert parse_choice(text) == "B"


def test_the_readers_rules_hold_at_the_end() -> None:
    # end-of-sequence tokens and a closed thinking block are left out, as for an opening
    assert parse_choice(REASONS + "Therefore, Output (a) is better.</s>") == "A"
    assert parse_choice("<think>hmm</think>" + REASONS + "Therefore, Output (b) is better."
                        ) == "B"
    # choices that differ only in case match as written ("m" is not "M")
    mm = ("m", "M")
    assert parse_choice(REASONS + "Therefore, Output (m) is better.", mm) == "m"
    assert parse_choice(REASONS + "Therefore, Output (M) is better.", mm) == "M"
    assert parse_choice(REASONS + "Therefore, m is better.", mm) == "m"
    # numbered choices by their label
    assert parse_choice(REASONS + "Therefore, Response 2 is better.", ("1", "2")) == "2"


def test_a_pairwise_judge_reads_the_end_in_either_order() -> None:
    text = REASONS + "Therefore, Output (b) is better."
    first = PairwiseJudge.read("12", Response(text=text))
    swapped = PairwiseJudge.read("21", Response(text=text))
    assert (first.choice, first.winner) == ("B", 2)  # the response shown second
    assert (swapped.choice, swapped.winner) == ("B", 1)


# ---- 2. anything ambiguous stays invalid ---------------------------------------------------

@pytest.mark.parametrize("end", [
    "Therefore, both Output (a) and Output (b) are good.",
    "Therefore, Output (a) and Output (b) are equally good.",
    "Therefore, neither output is better.",
    "Therefore, it's a tie.",
    "Therefore, Output (a) is not better.",
    "I would not choose Output (a).",
    "Therefore, Output (a) may be better.",
    "Therefore, Output (a) is probably better.",
    "Therefore it seems Output (a) is better.",
    "Therefore, it is unclear whether Output (a) is better.",
    "Therefore, if accuracy matters most, Output (a) is better.",
    "Therefore, Output (a) is better, but Output (b) is more accurate.",
    "Therefore, Output (a) is better only for short prompts.",
    "Therefore, Output (a) is better in terms of fluency.",
    "Therefore, while Output (a) is better at tone, Output (b) is better.",
    "Therefore, Output (a) is better than Output (a).",
    "Therefore, Output (c) is better.",
    "Therefore, a is better.",          # a lower-case letter unlabelled: the article
    "a",
    # a later sentence that turns it, or that is not a verdict
    "Therefore, Output (a) is better. However, Output (b) is more accurate.",
    "Therefore, Output (a) is better. Hope this helps!",
    # a step of the comparison, not its conclusion
    "On the other hand, Output (b) is better.",
])
def test_an_ambiguous_end_stays_invalid(end: str) -> None:
    assert parse_choice(REASONS + end) is None
    assert parse_choice(REASONS + end, allow_tie=True) is None


@pytest.mark.parametrize("text", [
    # an earlier explicit verdict that disagrees with the end
    "Final verdict: [[B]]\n" + REASONS + "Therefore, Output (a) is better.",
    REASONS + "[[B]] was my first thought.\nTherefore, Output (a) is better.",
    REASONS + "Verdict: B\nOn reflection:\nTherefore, Output (a) is better.",
    REASONS + "Therefore, Output (b) is better.\n\nLooking again, therefore, Output (a) is "
    "better.",
    REASONS + "The better response is B\nTherefore, Output (a) is better.",
    # an opening that refuses to choose
    "Both\n" + REASONS + "Therefore, Output (a) is better.",
    "A or B\n" + REASONS + "Therefore, Output (a) is better.",
    "Neither.\n" + REASONS + "Therefore, Output (b) is better.",
])
def test_an_end_that_a_verdict_elsewhere_contradicts_stays_invalid(text: str) -> None:
    assert parse_choice(text) is None


@pytest.mark.parametrize("text", [
    # an opening verdict that the end contradicts: read as the opening's before
    "A\n" + REASONS + "Therefore, Output (b) is better.",
    "Verdict: A\n" + REASONS + "Therefore, Output (b) is better.",
    # a JSON verdict with a concluding sentence after it that names another choice
    '{"verdict": "A"}\nTherefore, Output (b) is better.',
])
def test_a_verdict_its_conclusion_contradicts_is_invalid(text: str) -> None:
    assert parse_choice(text) is None


def test_an_opening_verdict_the_end_agrees_with_still_reads() -> None:
    assert parse_choice("A\n" + REASONS + "Therefore, Output (a) is better.") == "A"
    assert parse_choice('{"verdict": "B"}\nOutput (a) rambles. Therefore, Output (b) is '
                        "better.") == "B"


def test_a_number_about_the_judged_answer_is_no_verdict() -> None:
    # in a math item "the answer is 1" or "2 is the best option" is the math, not a choice
    assert parse_choice("Response 1 says 1. Response 2 says 3.\nSo the answer is 1.",
                        ("1", "2")) is None
    assert parse_choice(REASONS + "So, 2 is the best option.", ("1", "2")) is None


def test_one_sentence_is_read_by_the_openings_rules_only() -> None:
    # no reasoning before it: the opening's rules (a line naming both is no verdict) hold
    assert parse_choice("Output (m) is better than Output (M)", ("m", "M")) is None
    assert parse_choice("Output (a) is fine. On the other hand, Output (b) is better.") is None


# ---- 3. LLMBar's recorded answers -----------------------------------------------------------

RAW = Path("llmbar") / "raw_results_sample" / "LLMBar"
# Answers whose recorded winner is not the answer's own verdict, looked at one by one: the
# review quotes an argument ("Assistant (a) argues that Output (a) is better because ...")
# and ends "Therefore, Output (b) is better." (output_1 in this swapped order); LLMBar
# recorded output_2, the quoted phrase's choice.
RECORDED_WRONG = {("Adversarial/GPTInst/GPT-4/Swap_CoT", 41, "swap = True")}


def _llmbar_counts(raw: Path) -> tuple[dict[str, dict[str, int]], set[tuple[str, int, str]]]:
    """Per folder: answers read as the recorded winner (or not read where none was
    recorded), read otherwise, not read; and which were read otherwise."""
    counts: dict[str, dict[str, int]] = {}
    wrong: set[tuple[str, int, str]] = set()
    for f in sorted(raw.rglob("result.json")):
        folder = str(f.parent.relative_to(raw))
        c = counts.setdefault(folder, {"right": 0, "wrong": 0, "invalid": 0})
        for i, item in enumerate(json.loads(f.read_text(encoding="utf-8"))):
            for entry in item["results"]:
                for order, v in entry.items():
                    text = v["completion"][0] if isinstance(v["completion"], list) \
                        else v["completion"]
                    recorded = str(v.get("winner") or "")
                    got = parse_choice(text)
                    if got is None:
                        c["invalid" if recorded else "right"] += 1
                        continue
                    swapped = order.strip().endswith("True")
                    read = {"A": "2", "B": "1"}[got] if swapped else {"A": "1", "B": "2"}[got]
                    if read == recorded:
                        c["right"] += 1
                    else:
                        c["wrong"] += 1
                        wrong.add((folder, i, order))
    return counts, wrong


def test_llmbar_answers_read_right_and_never_wrong(shared_data: Path) -> None:
    raw = shared_data / RAW
    if not raw.is_dir():
        pytest.skip(f"LLMBar raw answers absent at {raw}")
    counts, wrong = _llmbar_counts(raw)
    assert wrong <= RECORDED_WRONG, f"read otherwise than recorded: {sorted(wrong)}"
    for folder, c in counts.items():
        n = sum(c.values())
        assert c["wrong"] <= 0.01 * n, f"{folder}: {c}"
        if folder.endswith("Vanilla"):
            assert c["right"] == n, f"{folder}: {c}"
        else:  # chain of thought: read at the end, every one of them here
            assert "CoT" in folder and c["right"] >= 0.99 * n, f"{folder}: {c}"
    cot = [c for f, c in counts.items() if "CoT" in f]
    assert sum(sum(c.values()) for c in cot) == 924
    assert sum(c["right"] for c in cot) == 923


def test_a_long_run_of_dots_is_read_in_linear_time() -> None:
    # the end's markup was trimmed by an anchored regex, quadratic in a run of dots: 50,000
    # dots took about 12 s; by str.strip they take milliseconds
    import time
    start = time.perf_counter()
    assert parse_choice(REASONS + "." * 50_000 + "x") is None
    assert time.perf_counter() - start < 2.0


def test_a_long_run_of_blank_lines_is_read_in_linear_time() -> None:
    # end-of-sequence tokens were stripped by "(\s*token)+\s*$", quadratic in a run of
    # whitespace not at the end: 50,000 blank lines took about 35 s; now milliseconds, and
    # the tokens are still left out
    import time
    start = time.perf_counter()
    assert parse_choice(REASONS + " \n" * 50_000 + "x") is None
    assert parse_choice("A" + " \n" * 50_000 + "</s>") == "A"
    assert time.perf_counter() - start < 2.0
    assert parse_choice(REASONS + "Therefore, Output (b) is better. </s>\n<|im_end|>\n") == "B"
