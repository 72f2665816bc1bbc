"""Label prefixes, end-of-sequence tokens and one-sentence verdicts (a field tester's
findings): every label followed by ':' reads as "Answer:" does, trailing end-of-sequence
tokens are not part of the verdict, and one short sentence naming exactly one choice reads.
The parser stays strict: an answer naming both choices, negating the one it names, or not
clearly one verdict stays invalid (None), never coerced."""

import pytest

from judgeaudit.judges.parse import parse_choice, parse_score
from judgeaudit.llm import Response
from judgeaudit.llm.providers.anthropic import parse_message


@pytest.mark.parametrize(("text", "expected"), [
    ("Verdict: A", "A"), ("Final verdict: B", "B"), ("Final answer: A", "A"),
    ("Better: Response A", "A"), ("Winner: B", "B"), ("Choice: A", "A"),
    ("Decision: B", "B"), ("Preferred: A", "A"), ("Output: B", "B"), ("Response: A", "A"),
    ("Answer: A", "A"), ("**Verdict:** A", "A"), ("**Final Verdict**: [[B]]", "B"),
    ("## Verdict: Output (b)", "B"), ("Verdict: b", "B"), ("Verdict:\nA", "A"),
    ("Verdict:\n\nB\nBecause it cites its source.", "B"), ("Verdict: tie", "tie"),
    ("My verdict: A", "A"),
])
def test_every_label_with_a_colon_reads_as_answer_does(text, expected):
    assert parse_choice(text, allow_tie=True) == expected


@pytest.mark.parametrize("text", [
    "Verdict: A or B", "Verdict: both", "Verdict: C", "Verdict:", "Verdict:\n\n",
    "Verdict: a tie",             # a lower-case letter in prose is the article
    "Answer: a tie",
    "Verdict: Response A is not better",
    "Here is my verdict: A",      # the label must open the answer
    "The verdict is hard to call",
])
def test_a_label_does_not_loosen_the_rules(text):
    assert parse_choice(text, allow_tie=True) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("A</s>", "A"), ("B<|im_end|>", "B"), ("Verdict: A<|eot_id|>", "A"),
    ("**B**<|endoftext|>\n", "B"), ("A </s></s>", "A"), ("A<|eot_id|><|end_of_text|>", "A"),
    ("A</s> or B", None), ("</s>", None),
])
def test_end_of_sequence_tokens_at_the_end_are_stripped(text, expected):
    assert parse_choice(text) == expected


def test_end_of_sequence_tokens_after_a_score_are_stripped():
    assert parse_score("4</s>") == 4
    assert parse_score("Score: 3<|eot_id|>") == 3


def test_binary_verdicts_read_labels_and_end_tokens():
    # binary.py upper-cases the answer before reading it
    assert parse_choice("Verdict: yes</s>".upper(), ("YES", "NO")) == "YES"
    assert parse_choice("YES, THE ANSWER IS NOT HARMFUL", ("YES", "NO")) == "YES"


def test_anthropics_two_text_blocks_read_as_one_labelled_verdict():
    out = parse_message({"content": [{"type": "text", "text": "Verdict: "},
                                   {"type": "text", "text": "A"}],
                       "usage": {"input_tokens": 5, "output_tokens": 2}})
    assert isinstance(out, Response)
    assert parse_choice(out.text) == "A"


# ---- one short sentence naming one choice --------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("The better response is A.", "A"), ("The better response is Response B", "B"),
    ("I choose A", "A"), ("I choose **B**.", "B"), ("I prefer Output (a)", "A"),
    ("My verdict is B.", "B"), ("The best answer is [[A]]", "A"),
    ("I choose A.\nIt cites its source.", "A"),
])
def test_one_short_sentence_naming_one_choice_reads(text, expected):
    assert parse_choice(text) == expected


@pytest.mark.parametrize("text", [
    "The better response is A, not B", "I choose A over B", "I choose A and B",
    "The better response is C.", "I would not choose A", "I don't choose A",
    "I choose neither", "I think the better response is probably A", "I cannot choose A",
])
def test_sentences_naming_both_or_negated_or_longer_stay_invalid(text):
    assert parse_choice(text) is None


@pytest.mark.parametrize("text", [
    "A is not better", "A isn't better.", "A is worse", "Response B is worse.",
    "B is clearly not the better one", "A does not answer the question", "A fails to answer",
    "A would not be my choice",
])
def test_a_choice_the_line_goes_on_to_reject_is_invalid(text):
    assert parse_choice(text) is None


@pytest.mark.parametrize(("text", "expected"), [
    ("A is better.", "A"), ("A. It is not perfect, but complete.", "A"),
    ("A is better, B is not", None),     # names both: invalid as before
    ("B\nA is not better", "B"),         # only the first line holds the verdict
])
def test_negation_is_read_only_right_after_the_choice(text, expected):
    assert parse_choice(text) == expected
